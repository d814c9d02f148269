"""Run a command-line tool as a subprocess: its output to a log, Ctrl-C passed on, progress following it.

compare.py runs data.py, pretrain.py and bits.py (:func:`python_tool`) through :func:`run_tool` (looked up on
this module, so that tests can put a stand-in in its place).  While pretrain.py trains, its metrics.jsonl is
followed (:class:`MetricsTail`) by a tqdm bar on a terminal, or by :class:`ProgressLines` (a plain line on stdout
every :data:`PROGRESS_EVERY` seconds) when stdout or stderr is not one (:func:`progress_for`).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import shlex
import signal
import subprocess
import sys
import threading
import time
from importlib import metadata
from pathlib import Path

from storygpt.atomic import sha256_file
from storygpt.cli import shorten

#: The checkout: data.py, pretrain.py and bits.py lie beside storygpt/.
HERE = Path(__file__).resolve().parents[2]
#: Seconds between two plain progress lines (stdout or stderr not a terminal).
PROGRESS_EVERY = 10.0

#: the tools running now (several at once under compare.py --jobs N): a Ctrl-C reaches them all (stop_all)
LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()


def python_tool(name: str) -> list[str]:
    """The command that runs the checkout's tool ``name`` (e.g. ``pretrain.py``) with this Python."""
    return [sys.executable, str(HERE / name)]


def _reap(proc: subprocess.Popen, cpu: list | None) -> int | None:
    """The exit status of ``proc`` once it has ended (None while it runs), its CPU seconds appended to ``cpu``
    (os.wait4: this child's own usage, whatever other tools this process runs at the same time)."""
    if not hasattr(os, "wait4"):
        try:
            return proc.wait(timeout=0.8)
        except subprocess.TimeoutExpired:
            return None
    try:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    except ChildProcessError:  # reaped elsewhere
        return proc.wait()
    if pid == 0:
        return None
    proc.returncode = os.waitstatus_to_exitcode(status)
    if cpu is not None:
        cpu.append(usage.ru_utime + usage.ru_stime)
    return proc.returncode


def stop_all(signum: int = signal.SIGINT) -> None:
    """Send ``signum`` to every tool running now (those started from other threads too)."""
    with _LIVE_LOCK:
        for proc in list(LIVE):
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signum)


def last_line(path: Path) -> str:
    """The last non-empty line of a log file (a tool's one-line error), or ''."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    lines = [ln.strip() for ln in lines if ln.strip()]
    return shorten(lines[-1]) if lines else ""


class MetricsTail:
    """Follow a growing metrics.jsonl: the latest ``step`` row's value of one key (and the row, :attr:`row`)."""

    def __init__(self, path: Path, key: str):
        self.path, self.key, self.offset, self.value = path, key, 0, 0.0
        self.row: dict | None = None

    def poll(self) -> float:
        try:
            size = self.path.stat().st_size
            if size < self.offset:  # rewritten (a resume drops rows past its checkpoint)
                self.offset = 0
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return self.value
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and row.get("kind") == "step" and isinstance(row.get(self.key), (int, float)):
                self.value = float(row[self.key])
                self.row = row
        return self.value


class ProgressLines:
    """A tqdm bar's part in :func:`run_tool` for a log or a pipe: a plain line on ``file`` (stdout) every
    ``every`` seconds while the tool runs, with the latest step, tokens, loss and elapsed seconds of ``follow``
    (``label: step 120, 245,760 tokens, loss 2.3456, 31 s (40%)``), or the seconds waited for its first step
    (``label: starting, 10 s``)."""

    def __init__(self, label: str, total: float, follow: MetricsTail, file=None, every: float = PROGRESS_EVERY):
        self.label, self.total, self.follow, self.file, self.every = label, total, follow, file, every
        self.n = 0.0
        self._start = self._last = time.monotonic()

    def refresh(self) -> None:
        now = time.monotonic()
        if now - self._last < self.every:
            return
        self._last = now
        row = self.follow.row
        text = self.line(row) if row is not None else f"{self.label}: starting, {now - self._start:.0f} s"
        print(text, file=self.file or sys.stdout, flush=True)

    def line(self, row: dict) -> str:
        parts = [f"step {row.get('step', '?')}"]
        if isinstance(row.get("tokens"), (int, float)):
            parts.append(f"{int(row['tokens']):,} tokens")
        loss = row.get("loss", row.get("train_loss"))
        if isinstance(loss, (int, float)):
            parts.append(f"loss {loss:.4f}")
        if isinstance(row.get("elapsed"), (int, float)):
            parts.append(f"{row['elapsed']:.0f} s")
        share = f" ({100 * min(self.n, self.total) / self.total:.0f}%)" if self.total else ""
        return f"{self.label}: {', '.join(parts)}{share}"

    def close(self) -> None:
        pass


def progress_for(label: str, total: float, follow: MetricsTail, bar_format: str, quiet: bool, unit_seconds: bool):
    """What follows a training run in :func:`run_tool`: a tqdm bar when stdout and stderr are terminals, else
    :class:`ProgressLines` (on stdout, with compare.py's other lines); a disabled bar when ``quiet`` (the tool's
    own output shown, or runs at once)."""
    from tqdm import tqdm

    if not quiet and not (_is_terminal(sys.stdout) and _is_terminal(sys.stderr)):
        return ProgressLines(label.strip(), total, follow)
    return tqdm(
        total=total,
        desc=label,
        unit="s" if unit_seconds else "",
        unit_scale=not unit_seconds,
        leave=False,
        disable=True if quiet else None,
        file=sys.stderr,
        bar_format=bar_format,
    )


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def forward_signals(proc: subprocess.Popen, received: list[int]):
    """While inside, SIGINT and SIGTERM to compare.py are passed on to ``proc`` (and noted in ``received``).

    The tool runs in its own session, so a Ctrl-C at the terminal reaches it once, through here.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def forward(signum, frame):
        received.append(signum)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_tool(
    cmd: list[str], log: Path, verbose: bool, follow: MetricsTail | None = None, bar=None, cpu: list | None = None
) -> int:
    """Run a tool, its output appended to ``log`` (and shown with ``verbose``); returns its exit status.

    ``cpu``: the tool's CPU seconds (user + system, its threads and children) are appended to it.

    While it runs, ``bar`` (a tqdm bar) follows ``follow``.  Ctrl-C or SIGTERM is passed on to the tool,
    which is waited for (pretrain.py writes its checkpoint); then KeyboardInterrupt is raised.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    received: list[int] = []
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"\n$ {shlex.join(cmd)}\n")
        f.flush()
        out = None if verbose else f
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=None if verbose else subprocess.STDOUT, env=env, start_new_session=True
        )
        with _LIVE_LOCK:
            LIVE.add(proc)
        try:
            with forward_signals(proc, received):
                while True:
                    rc = _reap(proc, cpu)
                    if rc is not None:
                        break
                    time.sleep(0.2)
                    if bar is not None and follow is not None:
                        bar.n = min(follow.poll(), bar.total)
                        bar.refresh()
        finally:
            with _LIVE_LOCK:
                LIVE.discard(proc)
        if bar is not None and follow is not None:
            bar.n = min(follow.poll(), bar.total)
            bar.refresh()
    if received:
        raise KeyboardInterrupt
    return rc


# Provenance: where a comparison's figures came from (versions, the git commit, file fingerprints, CPU time).
def git(repo: Path, *args: str) -> str | None:
    """``git -C repo ARGS`` output (stripped), or None when git or the repository is not there."""
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def version_of(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def environment(repo: Path) -> dict:
    """storygpt's version, the commit of ``repo`` and whether its tracked files differ from it (``dirty``),
    the torch, numpy and Python versions and the platform."""
    import storygpt

    status = git(repo, "status", "--porcelain", "--untracked-files=no")
    return {
        "storygpt": storygpt.__version__,
        "commit": git(repo, "rev-parse", "HEAD"),
        "dirty": None if status is None else bool(status),
        "torch": version_of("torch"),
        "numpy": version_of("numpy"),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "executable": sys.executable,
    }


def token_fingerprints(paths: list[Path]) -> dict:
    """file name -> fingerprint: for a ``.bin`` token file its header's tokenizer fingerprint and crc32 of the
    ids (storygpt.data.binfile), for the tokenizer JSON its sha256; None for a missing or unreadable file."""
    from storygpt.data.binfile import read_header

    out = {}
    for p in paths:
        try:
            if p.suffix == ".bin":
                h = read_header(p)
                out[p.name] = f"tokenizer {h['fingerprint']}, {h['count']} ids, crc32 {h['checksum']}"
            else:
                out[p.name] = "sha256 " + sha256_file(p)
        except (OSError, ValueError, KeyError):
            out[p.name] = None
    return out


def children_cpu() -> float:
    """User + system CPU seconds of this process's finished children (the tools it ran)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
