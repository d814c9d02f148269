"""Where a comparison's runs train: ``--jobs N`` on this machine, Ray (``--executor ray``) or Slurm
through submitit (``--executor slurm``).

Every run is a picklable :class:`Job` on a :class:`Slot`; :func:`execute` resubmits killed or
preempted runs (:class:`RunKilled`, resumed from ``ckpt.pt``) and names failed ones
(:class:`RunFailed`) while the others go on.  Results do not depend on the engine or N
(docs/compare.md).  Ray and submitit are imported only by their engines.
"""

from __future__ import annotations

import concurrent.futures
import os
import queue
import shutil
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from storygpt.cli import first_line, shorten
from storygpt.compare.settings import CompareError, CompareOptions
from storygpt.compare.toolrun import HERE

#: exit statuses of a pretrain.py stopped from outside: 130 (SIGINT/SIGTERM caught, checkpoint written),
#: a negative status or 128+N (killed by signal N before it could catch it)
KILLED_STATUSES = {130, 137, 143}


class RunKilled(Exception):
    """The run was stopped from outside (a signal, preemption, a lost worker); its checkpoint is kept."""


class RunFailed(Exception):
    """The run failed; the message names what failed and the log to read."""


def killed(rc: int) -> bool:
    """Whether a tool's exit status says it was stopped from outside rather than failing."""
    return rc < 0 or rc in KILLED_STATUSES


@dataclass(frozen=True)
class Slot:
    """The resources of one run: CPU threads (None: the tool's own choice), the device (None: the tool's
    default), and the GPUs a cluster task asks for."""

    threads: int | None = None
    device: str | None = None
    gpus: int = 0


@dataclass
class Job:
    """One run: ``call(slot)`` trains and measures it (raises RunKilled or RunFailed); ``log`` is its log."""

    label: str
    log: Path
    call: Callable[[Slot], object]


@dataclass
class Outcome:
    job: Job
    ok: bool
    message: str = ""
    attempts: int = 1
    result: object = None


# ------------------------------------------------------------------ this machine
def gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def usable_cores() -> int:
    from storygpt.runtime import usable_cores as cores

    return cores()


def local_slots(
    jobs: int | None, runs: int, device: str | None, threads: int | None, gpus: int | None = None
) -> tuple[list[Slot], list[str]]:
    """The slots of ``--jobs`` on this machine, and the lines that say how they were chosen.

    On a machine with several GPUs (``--device`` unset, ``auto`` or ``cuda``): one run per GPU, each given its
    own ``cuda:N``.  Otherwise (a CPU): the cores split between the runs, ``threads`` each (cut to cores / N, and
    said, when N runs of ``threads`` would not fit; cores / N when unset).  The default N is the number of GPUs,
    or the cores divided by ``threads`` (1 when unset: tiny models train fastest on one thread each,
    docs/training.md).  More jobs than runs are cut to the runs, and said.  A run's figures depend on its
    thread count (float32 sums in another order), never on N: at equal threads per run they are bit for bit
    the same.

    Raises:
        ValueError: ``jobs`` below 1.
    """
    if jobs is not None and jobs < 1:
        raise ValueError(f"--jobs {jobs}: give 1 or more runs at once")
    lines = []
    gpus = gpu_count() if gpus is None and (device or "auto") in ("auto", "cuda") else (gpus or 0)
    cores = usable_cores()
    n = jobs if jobs is not None else (gpus if gpus > 1 else max(1, cores // (threads or 1)))
    if runs and n > runs:
        if jobs is not None:
            lines.append(f"--jobs {jobs}: only {runs} run{'s' if runs != 1 else ''} to train: {runs} at once")
        n = runs
    n = max(1, n)
    if gpus > 1:
        slots = [Slot(threads, f"cuda:{i % gpus}") for i in range(n)]
        how = f"one per GPU ({gpus} GPUs)"
    else:
        per = threads or max(1, cores // n)
        if threads and n * threads > cores and n <= cores:
            per = max(1, cores // n)
            lines.append(f"threads per run: {per}, not {threads}: {n} runs share {cores} cores")
        slots = [Slot(per, device) for _ in range(n)]
        how = f"{cores} CPU core{'s' if cores != 1 else ''}, {per} thread{'s' if per != 1 else ''} each"
    chosen = "given" if jobs is not None else "chosen from the machine; --jobs N to change"
    lines.append(f"jobs: {n} run{'s' if n != 1 else ''} at once ({how}; {chosen})")
    return slots, lines


class LocalEngine:
    """Threads that each run one job at a time on a free slot (the tools are subprocesses: no GIL contention)."""

    name = "local"

    def __init__(self, slots: list[Slot]):
        self.slots: queue.Queue = queue.Queue()
        for s in slots:
            self.slots.put(s)
        self.capacity = len(slots)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=len(slots))
        self.running: dict = {}

    def _call(self, job: Job):
        slot = self.slots.get()
        try:
            return job.call(slot)
        finally:
            self.slots.put(slot)

    def submit(self, job: Job) -> None:
        self.running[self.pool.submit(self._call, job)] = job

    def next_done(self):
        done, _ = concurrent.futures.wait(list(self.running), return_when=concurrent.futures.FIRST_COMPLETED)
        fut = next(iter(done))
        job = self.running.pop(fut)
        exc = fut.exception()
        return job, exc, None if exc else fut.result()

    def stop(self) -> None:
        """Ctrl-C: every running tool gets SIGINT (pretrain.py writes its checkpoint), then the threads end."""
        from storygpt.compare import toolrun

        toolrun.stop_all()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


# ------------------------------------------------------------------ Ray
def _import(package: str, extra: str):
    import importlib

    try:
        return importlib.import_module(package)
    except ImportError:
        raise RunFailed(f"--executor {extra} needs the {package} package: pip install -e .[{extra}]") from None


def check_ray_address(address: str, timeout: float = 5.0) -> None:
    """Refuse an address whose host and port cannot be reached, in one line (before anything trains).

    ``auto`` (a cluster this machine belongs to) and ``local`` are left to Ray.

    Raises:
        RunFailed: an address that is not HOST:PORT (optionally ray://), or one nothing answers at.
    """
    if address in ("auto", "local"):
        return
    where = address.removeprefix("ray://")
    host, _, port = where.rpartition(":")
    if not host or not port.isdigit():
        raise RunFailed(f"--ray-address {address}: expected HOST:PORT (or ray://HOST:PORT, auto)")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as e:
        why = e.strerror or str(e) or type(e).__name__
        raise RunFailed(f"--ray-address {address}: cannot reach it ({why}); is the Ray head running there?") from None


def _ray_call(job: Job, slot: Slot):
    return job.call(slot)


class RayEngine:
    """Each run a Ray task asking for its slot's CPUs and GPUs; Ray places it on the cluster (or a local Ray).

    The runs' files are written by the workers: on a cluster, the repository, --data-root and --out-dir must
    be on a file system every node shares, at the same paths (docs/compare.md).
    """

    name = "ray"

    def __init__(self, address: str | None, slot: Slot, repo: Path, cpus: int | None = None):
        ray = _import("ray", "ray")
        if address:
            check_ray_address(address)
        env = {"PYTHONPATH": os.pathsep.join(p for p in (str(repo), os.environ.get("PYTHONPATH", "")) if p)}
        try:
            kw = dict(address=address) if address else dict(num_cpus=cpus or usable_cores())
            ray.init(
                **kw,
                runtime_env={"env_vars": env},
                include_dashboard=False,
                log_to_driver=False,
                ignore_reinit_error=True,
                logging_level="ERROR",
                configure_logging=True,
            )
        except Exception as e:  # ConnectionError, RuntimeError, ray's own errors
            raise RunFailed(f"--executor ray: cannot start or join Ray ({first_line(e)})") from None
        self.ray = ray
        self.slot = slot
        self.remote = ray.remote(_ray_call).options(
            num_cpus=slot.threads or 1, num_gpus=slot.gpus, max_retries=0, retry_exceptions=False
        )
        self.running: dict = {}
        self.capacity = None  # Ray queues the tasks and runs as many as the resources allow

    def submit(self, job: Job) -> None:
        self.running[self.remote.remote(job, Slot(self.slot.threads, self.slot.device, self.slot.gpus))] = job

    def next_done(self):
        ray = self.ray
        (ref,), _ = ray.wait(list(self.running), num_returns=1)
        job = self.running.pop(ref)
        try:
            return job, None, ray.get(ref)
        except ray.exceptions.RayTaskError as e:
            cause = e.cause if getattr(e, "cause", None) is not None else e
            if isinstance(cause, (RunKilled, RunFailed)):
                return job, cause, None
            return job, RunFailed(f"{type(cause).__name__}: {cause}"), None
        except (
            ray.exceptions.WorkerCrashedError,
            ray.exceptions.NodeDiedError,
            ray.exceptions.TaskCancelledError,
        ) as e:
            return job, RunKilled(f"the Ray worker was lost ({type(e).__name__})"), None
        except ray.exceptions.RayError as e:
            return job, RunKilled(f"Ray: {type(e).__name__}"), None

    def stop(self) -> None:
        for ref in list(self.running):
            self.ray.cancel(ref)  # KeyboardInterrupt in the task: its tool writes a checkpoint
        for ref in list(self.running):
            try:
                self.ray.get(ref, timeout=120)
            except Exception:  # noqa: S110 (cancelled or failed: either way it has stopped)
                pass
        self.close()

    def close(self) -> None:
        self.ray.shutdown()


# ------------------------------------------------------------------ Slurm (submitit)
@dataclass
class SlurmOptions:
    """``--slurm-*`` flags: partition, time limit (minutes), GPUs and CPUs per run, other sbatch settings
    (``KEY=VALUE``, as submitit's ``slurm_KEY``), and the cluster (``slurm``; ``local`` runs the jobs here,
    through submitit's local executor, as the tests do)."""

    partition: str | None = None
    time_minutes: int = 60
    gpus: int = 0
    cpus: int = 1
    params: dict = field(default_factory=dict)
    cluster: str | None = None


def parse_slurm_params(items) -> dict:
    """``["mem_gb=8", "qos=high"]`` -> ``{"mem_gb": 8, "qos": "high"}`` (digits become integers).

    Raises:
        RunFailed: an item without ``=``.
    """
    out = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise RunFailed(f"--slurm-param {item!r}: expected KEY=VALUE (a submitit slurm_KEY setting)")
        out[key.strip()] = int(value) if value.strip().isdigit() else value.strip()
    return out


class SlurmEngine:
    """Each run a Slurm job submitted by submitit (its own log folder: REPORT/slurm/)."""

    name = "slurm"

    def __init__(self, folder: Path, options: SlurmOptions, repo: Path):
        submitit = _import("submitit", "slurm")
        self.submitit = submitit
        try:
            self.executor = submitit.AutoExecutor(folder=str(folder), cluster=options.cluster)
        except RuntimeError as e:  # no sbatch/srun here
            raise RunFailed(f"--executor slurm: {e} (--slurm-cluster local runs the jobs on this machine)") from None
        params = dict(
            timeout_min=options.time_minutes,
            gpus_per_node=options.gpus,
            cpus_per_task=options.cpus,
            name="storygpt-compare",
        )
        if options.partition:
            params["slurm_partition"] = options.partition
        params |= {f"slurm_{k}": v for k, v in options.params.items()}
        try:
            self.executor.update_parameters(**params)
        except (NameError, ValueError, TypeError, AssertionError) as e:
            raise RunFailed(f"--executor slurm: submitit refused the settings: {first_line(e)}") from None
        self.slot = Slot(options.cpus, "cuda" if options.gpus else None, options.gpus)
        self.repo = repo
        self.running: dict = {}
        self.capacity = None  # Slurm queues the jobs

    def submit(self, job: Job) -> None:
        before = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(self.repo), before or "") if p)
        try:
            self.running[self.executor.submit(job.call, self.slot)] = job
        finally:
            if before is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = before

    def next_done(self):
        while True:
            for sjob, job in list(self.running.items()):
                if sjob.done():
                    del self.running[sjob]
                    return (job, *self._result(sjob))
            time.sleep(1.0)

    def _result(self, sjob):
        utils = self.submitit.core.utils
        try:
            return None, sjob.result()
        except utils.FailedJobError as e:  # the job's Python raised (a subclass of the next)
            text = str(e)
            for kind in (RunKilled, RunFailed):
                marker = f"{kind.__module__}.{kind.__name__}: "
                if marker in text:
                    return kind(text.rsplit(marker, 1)[1].splitlines()[0]), None
            return RunFailed(f"Slurm job {sjob.job_id} failed (logs: {sjob.paths.stderr})"), None
        except utils.UncompletedJobError as e:  # preempted, out of time, cancelled, the node lost
            why = shorten(
                " ".join(str(e).splitlines()[:2])
            )  # submitit's "Job N ... with path P" / "has not produced..."
            return RunKilled(f"Slurm job {sjob.job_id} did not complete ({why})"), None
        except (RunKilled, RunFailed) as e:
            return e, None

    def stop(self) -> None:
        for sjob in list(self.running):
            sjob.cancel(check=False)

    def close(self) -> None:
        pass


# ------------------------------------------------------------------ the loop
def execute(
    engine, jobs: list[Job], retries: int, say: Callable[[str], None], done: Callable[[Outcome], None] | None = None
) -> list[Outcome]:
    """Run ``jobs`` on ``engine``: killed runs submitted again (at most ``retries`` times each), failed runs
    named; returns an Outcome per job (in the order they ended; ``done`` is called with each that succeeded).
    Ctrl-C stops the engine's runs (each writes its checkpoint) and raises KeyboardInterrupt."""
    pending = deque(jobs)
    attempts = {id(j): 0 for j in jobs}
    outcomes = []
    running = 0
    try:
        while pending or running:
            while pending and (engine.capacity is None or running < engine.capacity):
                job = pending.popleft()
                attempts[id(job)] += 1
                engine.submit(job)
                running += 1
            job, exc, result = engine.next_done()
            running -= 1
            n = attempts[id(job)]
            if exc is None:
                outcomes.append(Outcome(job, True, "", n, result))
                if done is not None:
                    done(outcomes[-1])
            elif isinstance(exc, RunKilled) and n <= retries:
                say(f"{job.label}: {exc or 'stopped from outside'}; again from its checkpoint (retry {n}/{retries})")
                pending.appendleft(job)
            elif isinstance(exc, KeyboardInterrupt):
                raise KeyboardInterrupt
            else:
                why = str(exc) or type(exc).__name__
                if isinstance(exc, RunKilled):
                    why = f"stopped from outside {n} times ({why})"
                elif not isinstance(exc, RunFailed):
                    why = f"{type(exc).__name__}: {why}"
                named = f"(log: {job.log})" in why  # compare.py's run jobs name their log themselves
                outcomes.append(Outcome(job, False, why if named else f"{why} (log: {job.log})", n))
                say(f"{job.label}: failed: {outcomes[-1].message}")
    except KeyboardInterrupt:
        engine.stop()
        raise
    engine.close()
    return outcomes


# ------------------------------------------------------------------ compare.py's flags
#: the flags of each cluster engine: given beside another --executor they would be ignored, so compare.py
#: refuses them
ENGINE_FLAGS = {
    "ray": ("ray_address", "ray_gpus"),
    "slurm": ("slurm_partition", "slurm_time", "slurm_gpus", "slurm_cpus", "slurm_param", "slurm_cluster"),
}


def add_arguments(p) -> None:
    """compare.py's flags for where the runs train (and the model sizes of an isoFLOP sweep, the tracking)."""
    g = p.add_argument_group(
        "runs at once, on a cluster (docs/compare.md; a run's figures never depend on these, only on its threads)"
    )
    g.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="train N runs at once on this machine: the CPU cores split between them (--threads, or the probed "
        "count, each; cut to cores/N), or one run per GPU. Default: chosen from the machine and printed",
    )
    g.add_argument(
        "--executor",
        choices=["local", "ray", "slurm"],
        default="local",
        help="where the runs train: this machine (--jobs), Ray tasks (pip install -e .[ray]) or Slurm jobs through "
        "submitit (pip install -e .[slurm])",
    )
    g.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="a running Ray cluster to join (or auto); default: start a local Ray on this machine's cores",
    )
    g.add_argument("--ray-gpus", type=float, default=0, metavar="N", help="GPUs each Ray task asks for")
    g.add_argument("--slurm-partition", metavar="NAME", help="Slurm partition of the runs' jobs")
    g.add_argument("--slurm-time", type=int, default=60, metavar="MINUTES", help="time limit of each run's job")
    g.add_argument("--slurm-gpus", type=int, default=0, metavar="N", help="GPUs per run's job")
    g.add_argument("--slurm-cpus", type=int, default=1, metavar="N", help="CPUs per run's job (its --threads)")
    g.add_argument(
        "--slurm-param",
        action="append",
        metavar="KEY=VALUE",
        help="any other sbatch setting, as submitit's slurm_KEY (e.g. mem_gb=8, qos=high); repeat for more",
    )
    g.add_argument(
        "--slurm-cluster",
        choices=["slurm", "local"],
        default="slurm",
        help="local: run the jobs on this machine through submitit's local executor (for trying it out)",
    )
    g.add_argument(
        "--retries",
        type=int,
        default=2,
        metavar="N",
        help="times a run stopped from outside (killed, preempted, a lost worker) is submitted again; it continues "
        "from its checkpoint",
    )
    g.add_argument(
        "--sizes",
        metavar="NAME[,NAME...]",
        help="model sizes (pretrain.py presets, e.g. tiny,small,base): every tokenizer at every size; with several "
        "--budget-flops the report gives the compute-optimal size and tokenizer per budget (isoFLOP frontier)",
    )
    g.add_argument(
        "--log",
        metavar="KIND[,KIND]",
        help="pretrain.py --log for every run: tensorboard, wandb or tensorboard,wandb (the run folders' tracking)",
    )


#: compare.py's allowed values of these flags (storygpt.cli.check_ranges)
RANGES = {"jobs": (1, None), "retries": (0, None), "slurm_time": (1, None), "slurm_gpus": (0, None)}
RANGES |= {"slurm_cpus": (1, None), "ray_gpus": (0, None)}


def cluster_engine(options: CompareOptions, report_dir: Path):
    """The Ray or Slurm engine of --executor (None for this machine).

    Raises:
        CompareError: a missing extra, an unreachable --ray-address, a setting submitit refuses (one line).
    """
    made = None  # submitit makes its log folder at once: the topmost folder it makes is removed after a refusal
    for folder in (report_dir, *report_dir.parents):
        if folder.exists():
            break
        made = folder
    try:
        if options.executor == "ray":
            slot = Slot(options.threads or 1, options.device, options.ray_gpus)
            return RayEngine(options.ray_address, slot, HERE)
        if options.executor == "slurm":
            options = SlurmOptions(
                partition=options.slurm_partition,
                time_minutes=options.slurm_time,
                gpus=options.slurm_gpus,
                cpus=options.slurm_cpus,
                params=parse_slurm_params(options.slurm_param),
                cluster="local" if options.slurm_cluster == "local" else "slurm",
            )
            return SlurmEngine(report_dir.resolve() / "slurm", options, HERE)
    except RunFailed as e:
        if made is not None and made.is_dir():
            shutil.rmtree(made)
        raise CompareError(str(e)) from None
    return None
