"""Where and how the tools run: device, dtype, CPU threads, processes (DDP), signals.

The one place that picks a device (``pretrain.py``, ``bits.py`` and ``sample.py``
all go through :func:`resolve_device`).  Imports torch lazily, so that importing
this module (and ``storygpt``) stays light.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass


# ------------------------------------------------------------------ devices
def best_device() -> str:
    """``cuda`` when available, then ``mps``, else ``cpu``."""
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def resolve_device(name: str, flag: str = "--device") -> str:
    """Check a device name given on the command line; ``"auto"`` becomes :func:`best_device`.

    Returns:
        The device string (e.g. ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``).

    Raises:
        ValueError: naming ``flag``, for a name torch does not know, a CUDA or MPS device on a
            machine without one, or a CUDA index past the devices present.
    """
    import torch

    if name == "auto":
        return best_device()
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError, TypeError):
        raise ValueError(f"{flag} {name!r}: not a device name (use auto, cpu, cuda, cuda:N or mps)") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{flag} {name!r}: CUDA is not available on this machine (use cpu or auto)")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"{flag} {name!r}: there are only {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"{flag} {name!r}: MPS is not available on this machine (use cpu or auto)")
    elif dev.type != "cpu":
        raise ValueError(f"{flag} {name!r}: unsupported device type {dev.type!r} (use auto, cpu, cuda, cuda:N or mps)")
    return name


def training_device(name: str, local_rank: int = 0):
    """:func:`resolve_device` as a ``torch.device``; a bare ``cuda`` becomes ``cuda:<local_rank>``.

    Raises:
        ValueError: as :func:`resolve_device`.
    """
    import torch

    dev = torch.device(resolve_device(name))
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", local_rank)
    return dev


def cpu_has_native_bf16() -> bool:
    """True when /proc/cpuinfo lists avx512_bf16 or amx_bf16 (without them bfloat16 is emulated, slowly)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = f.read()
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


def pick_dtype(name: str, device):
    """The compute dtype for ``--dtype NAME`` (``auto``, ``float32``, ``bfloat16``, ``float16``) on ``device``.

    ``auto``: bfloat16 on CUDA when supported, else float16; bfloat16 on a CPU with native bfloat16
    instructions (measured 4-13% faster than float32, same loss per step, docs/training.md); else float32.
    """
    import torch

    if name != "auto":
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "cpu" and cpu_has_native_bf16():
        return torch.bfloat16
    return torch.float32


def autocast_for(device, dtype):
    """The one autocast: matmuls in ``dtype`` on ``device`` (or its name); a no-op for float32 or None."""
    import torch

    if dtype is None or dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=dtype)


def prepare_device(device) -> None:
    """Select a CUDA device and allow TF32 matmuls there; nothing elsewhere."""
    import torch

    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True


# ------------------------------------------------------------------ threads
def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def fastest_threads(work: Callable[[], object], candidates: Sequence[int]) -> tuple[int, dict[int, float]]:
    """``(threads, {threads: seconds})``: the count among ``candidates`` that runs ``work()`` fastest (its second
    run timed, the first warms up); torch is left at it.  The one probe of the training loop and bits.py: on a
    shared CPU more threads are often slower (docs/bits.md, docs/training.md)."""
    import torch

    timings = {}
    for n in dict.fromkeys(candidates):
        torch.set_num_threads(n)
        work()
        t = time.perf_counter()
        work()
        timings[n] = time.perf_counter() - t
    threads = min(timings, key=timings.get)
    torch.set_num_threads(threads)
    return threads, timings


# ---------------------------------------------------------------- processes
@dataclass(frozen=True)
class Dist:
    """This process's place among the processes torchrun started (one process: rank 0 of 1)."""

    world: int = 1
    rank: int = 0
    local_rank: int = 0
    local_world: int = 1

    @classmethod
    def from_env(cls) -> Dist:
        """Read ``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE`` (set by torchrun)."""
        world = int(os.environ.get("WORLD_SIZE", "1"))
        return cls(
            world=world,
            rank=int(os.environ.get("RANK", "0")),
            local_rank=int(os.environ.get("LOCAL_RANK", "0")),
            local_world=int(os.environ.get("LOCAL_WORLD_SIZE", str(world))),
        )

    @property
    def ddp(self) -> bool:
        return self.world > 1

    @property
    def master(self) -> bool:
        return self.rank == 0

    def init(self, device) -> None:
        """Join the process group (NCCL on CUDA, gloo elsewhere); nothing for one process."""
        if self.ddp:
            import torch.distributed as dist

            dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")

    def close(self) -> None:
        """Wait for every rank and leave the process group; nothing for one process."""
        if self.ddp:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.barrier()
                dist.destroy_process_group()


# ------------------------------------------------------------------ signals
class StopFlag:
    """Set by SIGINT/SIGTERM while :meth:`catching`: the loop stops at the next safe point.

    Ctrl-C, ``kill``, ``timeout`` and a scheduler's preemption all ask the run to stop; the training
    loop finishes the step it is in, writes a checkpoint and exits 130.  A second signal (or a third)
    changes nothing: the checkpoint being written is completed, and (with ``until_exit``) the process
    still logs and exits 130.  ``kill -9`` cannot be caught; a killed run resumes from its last checkpoint.
    """

    def __init__(self) -> None:
        self.signum: int | None = None

    def __bool__(self) -> bool:
        return self.signum is not None

    def set(self, signum: int = signal.SIGINT) -> None:
        self.signum = signum

    @contextlib.contextmanager
    def catching(self, on_first=None, until_exit: bool = False) -> Iterator[StopFlag]:
        """Install the handlers (main thread only; elsewhere Python delivers no signals).

        The previous handlers come back when the block ends, unless ``until_exit`` and a stop was asked:
        the process is then on its way out, and a later signal must not kill it before it exits (a tool's
        ``main`` run as a process passes True; a call inside another program leaves it False).
        """
        if threading.current_thread() is not threading.main_thread():
            yield self
            return

        def handler(signum, frame):
            first = self.signum is None
            self.set(signum)
            if first and on_first is not None:
                on_first(signum)

        previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            if not (until_exit and self):
                for s, h in previous.items():
                    signal.signal(s, h)


def setup(device_name: str, dtype_name: str, threads: int | None, dist: Dist, log):
    """Pick the device and dtype, join the process group, set the CPU threads.

    ``threads`` None: cores / processes on this machine (pretrain.py may then time 1 thread against that).
    More threads than usable cores are capped with a warning (too many OpenMP threads crash the process).

    Returns:
        ``(device, dtype, threads)``.

    Raises:
        ValueError: a bad device name (see :func:`resolve_device`).
    """
    import torch

    device = training_device(device_name, dist.local_rank)
    dist.init(device)
    prepare_device(device)
    cores = usable_cores()
    if threads is not None and threads > cores:
        log(f"warning: --threads {threads} is more than the {cores} cores this process may use; using {cores}")
    n = min(threads or max(1, cores // max(1, dist.local_world)), cores)
    torch.set_num_threads(n)
    return device, pick_dtype(dtype_name, device), n
