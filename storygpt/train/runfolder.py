"""The run folder's bookkeeping (``checkpoints/<corpus>/<rope|learned>-<slug>`` by default): its files, the
lock (pid and host of the writer), metrics.jsonl, summary.json, leftovers of a killed run, loss.png.
docs/training.md gives each file's fields; ckpt.pt and best.pt are storygpt.checkpoint's."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import socket
import sys
from pathlib import Path

from storygpt import atomic
from storygpt.cli import show
from storygpt.runtime import Dist


class RunError(Exception):
    """A problem the command line reports in one line (the message names the file or flag)."""


class Paused(Exception):
    """A trunk stopped after writing its last branch (storygpt.train.branch, ``pause``): ``args`` = (step, its
    ckpt.pt); ``--resume`` continues it."""


class Interrupted(Exception):
    """The run stopped on SIGINT/SIGTERM after writing a checkpoint (exit status 130)."""


class RunFiles:
    """The files of a run folder: ``ckpt``, ``best``, ``metrics``, ``summary``, ``lock`` (paths in ``folder``)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        names = ("ckpt.pt", "best.pt", "metrics.jsonl", "summary.json", "lock")
        self.ckpt, self.best, self.metrics, self.summary, self.lock = (self.folder / n for n in names)


def log_master(msg: str) -> None:
    """Print ``msg`` on rank 0, between progress-bar redraws, flushed (whole lines even into a pipe)."""
    if Dist.from_env().master:
        from tqdm import tqdm

        with tqdm.external_write_mode(file=sys.stdout):
            print(msg, file=sys.stdout, flush=True)


def os_reason(e: OSError) -> str:
    """The operating system's words for ``e`` ("Permission denied", "No space left on device")."""
    return e.strerror or os.strerror(e.errno or errno.EIO)


# -------------------------------------------------------------------- lock
@contextlib.contextmanager
def locked(files: RunFiles, master: bool):
    """Create the run folder and hold its lock while inside (rank 0 only); an empty new folder is removed,
    and so are the empty folders above it made for it (a refused first run leaves no ``checkpoints/NAME/``)."""
    if not master:
        yield
        return
    existing, new = files.folder.absolute(), []
    while not existing.exists() and existing != existing.parent:
        new.append(existing)
        existing = existing.parent
    if not existing.is_dir():
        raise RunError(f"cannot create the run folder {show(files.folder)}: {show(existing)} is a file, not a folder")
    try:
        files.folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunError(f"cannot create the run folder {show(files.folder)}: {e.strerror}") from None
    acquire_lock(files.lock)
    try:
        yield
    finally:
        release_lock(files.lock)
        for folder in new:  # deepest first, while empty
            if any(folder.iterdir()):
                break
            folder.rmdir()


def acquire_lock(path: Path) -> None:
    """Create ``path`` holding this pid; a lock of a dead process on this machine is taken over.

    Raises:
        RunError: another live process holds the lock, or the folder cannot be written.
    """
    me = f"{os.getpid()} {socket.gethostname()}\n"
    for _ in range(3):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                pid_text, _, host = path.read_text(encoding="utf-8").strip().partition(" ")
                pid = int(pid_text)
            except (OSError, ValueError):
                pid, host = None, ""
            if pid is not None and (host != socket.gethostname() or alive(pid)):
                where = f" on {host}" if host else ""
                raise RunError(
                    f"{show(path.parent)} is being written by process {pid}{where} (lock file {show(path)}); "
                    "wait for it to end or stop it"
                ) from None
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # stale: its process is gone
            continue
        except OSError as e:  # a read-only run folder, a full disk, ...
            raise RunError(
                f"cannot write in the run folder {show(path.parent)} (lock file {show(path)}): {os_reason(e)}"
            ) from None
        with os.fdopen(fd, "w") as f:
            f.write(me)
        return
    raise RunError(f"cannot take the lock file {path}")


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def release_lock(path: Path) -> None:
    """Remove ``path`` if this process holds it."""
    with contextlib.suppress(OSError, ValueError):
        if int(path.read_text(encoding="utf-8").split()[0]) == os.getpid():
            path.unlink()


def remove_leftovers(folder: Path) -> None:
    """Temporary files a killed run (kill -9, power loss) left in ``folder``; the files under final names are whole."""
    for name in ("ckpt.pt", "best.pt", "summary.json", "metrics.jsonl"):
        for stale in atomic.leftovers(folder / name):
            stale.unlink(missing_ok=True)


# ------------------------------------------------------------ metrics.jsonl
class MetricsLog:
    """``metrics.jsonl``: rows appended and flushed one by one, so a killed run keeps its rows; each row also
    goes to the ``trackers`` (storygpt/train/tracking.py: TensorBoard, wandb; closed with the file)."""

    def __init__(self, path: Path, trackers=()):
        self.path = path
        self.file = None
        self.trackers = list(trackers)

    @staticmethod
    def read(path: Path) -> list[dict]:
        """The whole rows of a metrics.jsonl (a last line cut short by a kill is dropped)."""
        rows = []
        with contextlib.suppress(FileNotFoundError):
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    break
        return rows

    def open(self, step: int | None, evaluated: bool = False) -> None:
        """Start the file afresh (``step`` None) or keep the rows up to a resumed run's ``step``: its step row,
        and its eval row when that step was ``evaluated``."""
        rows = []
        if step is not None:
            for r in self.read(self.path):
                if r["step"] < step or (r["step"] == step and (r["kind"] == "step" or evaluated)):
                    rows.append(r)
        atomic.write_text(self.path, "".join(json.dumps(r) + "\n" for r in rows))
        self.file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())

    def write(self, row: dict) -> None:
        self.file.write(json.dumps(row) + "\n")
        self.file.flush()
        for t in self.trackers:
            t.log(row)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
        while self.trackers:
            self.trackers.pop().close()


def counters(state) -> dict:
    """The counters of a :class:`storygpt.train.loop.TrainState` every metrics.jsonl row starts with."""
    return {
        "step": state.step,
        "tokens": state.tokens,
        "chars": state.chars,
        "flops": state.flops,
        "elapsed": round(state.elapsed, 3),
    }


# ------------------------------------------------------------- summary.json
def summary(run, state) -> dict:
    """summary.json of a :class:`storygpt.train.loop.Run` at a TrainState (the contract in docs/training.md).

    ``tokens_per_sec`` counts wall-clock seconds of the optimizer steps, ``tokens_per_cpu_sec`` this
    process's CPU seconds (all threads) in them: together they show how busy the cores were.
    """
    import torch

    from storygpt.checkpoint import under_trained_reason

    last = state.history[-1] if state.history else {}
    emb, non_emb = run.params
    m = run.meta
    return {
        **{k: m[k] for k in ("spec", "slug", "corpus")},
        "params": emb + non_emb,
        "params_embedding": emb,
        "params_non_embedding": non_emb,
        "steps": state.step,
        **{k: getattr(state, k) for k in ("tokens", "chars", "flops", "elapsed", "train_time")},
        "stop_reason": state.stop_reason,
        "evals": len(state.history),
        "warmup_steps": run.hyper.warmup_steps,
        "under_trained": under_trained_reason(state.step, run.hyper.warmup_steps, len(state.history)),
        "val_loss": last.get("val_loss"),
        "val_bpc": last.get("val_bpc"),
        "best_val_bpc": state.best_bpc if state.best_bpc < math.inf else None,
        "compile_time": state.compile_time,
        "tokens_per_sec": state.tokens / state.train_time if state.train_time > 0 else None,
        "train_cpu_time": state.train_cpu_time,
        "tokens_per_cpu_sec": state.tokens / state.train_cpu_time if state.train_cpu_time > 0 else None,
        "flops_per_token": run.flops_per_token,
        # model FLOPs per second (flops_per_token x tokens_per_sec) and MFU against the device's bf16 peak
        # (CUDA devices of storygpt.model.sizing.BF16_PEAKS only; else None)
        "flops_per_sec": (state.tokens / state.train_time) * run.flops_per_token if state.train_time > 0 else None,
        "peak_flops": run.peak_flops,
        "mfu": (
            state.tokens / state.train_time * run.flops_per_token / (run.peak_flops * run.dist.world)
            if state.train_time > 0 and run.peak_flops
            else None
        ),
        "max_memory_allocated": torch.cuda.max_memory_allocated(run.device) if run.device.type == "cuda" else None,
        "chars_per_token": run.chars_per_token,
        "config": m["config"],
        "optim": m["optim"],  # the OptimConfig (storygpt/model/optim.py): the recipe's optimizer
        "recipe": m.get("recipe"),  # storygpt.model.recipes.Recipe.to_dict(): name, model parts, optimizer
        "batch_windows": run.hyper.batch_size * run.hyper.grad_accum * run.dist.world,
        "processes": run.dist.world,
        "device": str(run.device),
        "heldout_chars": run.heldout.characters,
        # provenance (compare.py's results.json): the resolved flags, the compute dtype, the CPU threads
        "args": m["args"],
        "dtype": str(getattr(run.autocast, "fast_dtype", "torch.float32")).replace("torch.", ""),
        "threads": torch.get_num_threads(),
    }


def write_summary(files: RunFiles, summary: dict) -> None:
    """Write summary.json atomically (OSError when it cannot be written)."""
    atomic.write_text(files.summary, json.dumps(summary, indent=2) + "\n")


def refresh_plot(files: RunFiles, log) -> None:
    """Redraw RUN/loss.png (training loss and held-out bits/char against steps and time, storygpt.plot);
    a plot that fails never stops training."""
    from storygpt.plot import write_loss_png

    try:
        write_loss_png(files.folder)
    except (OSError, ValueError) as e:
        log(f"warning: loss.png not refreshed: {e}")
