"""Run a top-level tool in this process after one named fault is put in place (the tests' Ctrl-C, full disk, ...).

    python tests/tool_faults.py FAULT[:ARG] TOOL.py [ARGS...]

The fault replaces a library function (``storygpt...``) before the tool's file runs as ``__main__``
(``runpy.run_path``), so the tool sees it as it would see the real failure; the exit status and output are
the tool's.  Faults that record something (what a stand-in was called with) write JSON lines to the file
named by ``ARG``.  tests/conftest.py's ``run_tool(..., fault="NAME[:ARG]")`` starts this script.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Callable

FAULTS: dict[str, Callable[[str], None]] = {}


def fault(fn: Callable[[str], None]) -> Callable[[str], None]:
    """Register ``fn`` under its name; it gets the text after ``NAME:`` ('' when none)."""
    FAULTS[fn.__name__] = fn
    return fn


def interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@fault
def ctrl_c_while_measuring(arg: str) -> None:
    """bits.py: Ctrl-C inside storygpt.eval.bits.evaluate_bits."""
    import storygpt.eval.bits

    storygpt.eval.bits.evaluate_bits = interrupt


@fault
def ctrl_c_while_encoding(arg: str) -> None:
    """data.py: Ctrl-C after the tokenizer is trained, while the documents are encoded."""
    from storygpt.data import prepare

    prepare.encode_documents = interrupt


@fault
def read_only_lock(arg: str) -> None:
    """pretrain.py: the run folder refuses new files (as a read-only folder would; the tests run as root,
    so the folder's mode cannot refuse them): creating the lock file fails with EACCES."""
    import errno
    import os

    real_open = os.open

    def read_only(path, flags, *a):
        if str(path).endswith("lock") and flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *a)

    os.open = read_only


@fault
def full_disk_at_step(arg: str) -> None:
    """pretrain.py: the disk fills while the checkpoint of step ``ARG`` is written (part of it is on disk)."""
    import errno
    import os

    from storygpt.atomic import atomic_write
    from storygpt.train import loop

    real = loop.save_checkpoint

    def full_disk(path, ckpt, during_write=None):
        if ckpt.get("state", {}).get("step") == int(arg):
            with atomic_write(path, "wb") as f:
                f.write(b"PK\x03\x04 part of it")
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, ckpt, during_write)

    loop.save_checkpoint = full_disk


@fault
def signal_at(arg: str) -> None:
    """pretrain.py: ``ARG`` = ``POINT@STEP:ACTION[,...]``: the process sends itself a signal at a named point.

    POINT: ``step`` (as step STEP begins, after the loop's look at the stop flag: the signal arrives during
    the step), ``eval`` (as the evaluation at step STEP begins: it is cut short after its first batch),
    ``save`` (while ckpt.pt of step STEP is written: after its bytes, before the rename), ``exit`` (as
    pretrain.py logs "interrupted: checkpoint written at step STEP", on its way out).
    ACTION: ``INT``, ``TERM``, ``TERM2`` (two SIGTERMs), ``KILL``.
    """
    import os
    import signal
    import time

    from storygpt.train import loop

    points = {}
    for item in arg.split(","):
        where, action = item.split(":")
        point, step = where.split("@")
        points[(point, int(step))] = action

    def fire(point: str, step: int) -> None:
        action = points.pop((point, step), None)
        if action is None:
            return
        sig = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "TERM2": signal.SIGTERM, "KILL": signal.SIGKILL}[action]
        for _ in range(2 if action == "TERM2" else 1):
            os.kill(os.getpid(), sig)
            time.sleep(0.01)  # let the handler run before the next one arrives

    from storygpt.train import runfolder

    real_step, real_evaluate, real_save = loop.train_step, loop.evaluate, loop.save_checkpoint
    real_log = runfolder.log_master

    def train_step(r, live, lr):
        fire("step", live.state.step + 1)
        return real_step(r, live, lr)

    def evaluate(r, live):
        fire("eval", live.state.step)
        return real_evaluate(r, live)

    def save_checkpoint(path, ckpt, during_write=None):
        step = ckpt.get("state", {}).get("step")
        return real_save(path, ckpt, during_write=lambda: fire("save", step))

    def log_master(msg):
        if msg.startswith("interrupted: checkpoint written at step "):
            fire("exit", int(msg.split()[5]))
        return real_log(msg)

    loop.train_step, loop.evaluate, loop.save_checkpoint = train_step, evaluate, save_checkpoint
    runfolder.log_master = log_master  # before pretrain.py imports it


@fault
def record_progress_bars(arg: str) -> None:
    """data.py: every progress bar made is recorded; at exit ``ARG`` gets one JSON line per bar
    (desc, unit, total, n: the units counted, disable)."""
    import atexit
    import json

    from storygpt.data import progress

    made = []

    class Bar:
        def __init__(self, total=None, desc=None, unit=None, disable=False, **kw):
            self.total, self.desc, self.unit, self.disable, self.n = total, desc, unit, disable, 0
            made.append(self)

        def update(self, k=1):
            self.n += k

        def close(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

    def write():
        with open(arg, "w", encoding="utf-8") as f:
            for bar in made:
                row = {"desc": bar.desc, "unit": bar.unit, "total": bar.total, "n": bar.n, "disable": bar.disable}
                f.write(json.dumps(row) + "\n")

    atexit.register(write)
    progress.tqdm = Bar


@fault
def read_fails_on_open(arg: str) -> None:
    """data.py: the ``ARG``-th file opened by storygpt.data.docstream returns 64 bytes a read, and its
    eleventh read fails with EIO."""
    from storygpt.data import docstream

    class FailingFile:
        def __init__(self, path, ok_reads):
            self.f = open(path, "rb")
            self.left = ok_reads

        def read(self, n):
            if self.left == 0:
                raise OSError(5, "Input/output error")
            self.left -= 1
            return self.f.read(min(n, 64))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    opened = []
    real = docstream._open_binary

    def opener(path):
        opened.append(path)
        return FailingFile(path, 10) if len(opened) == int(arg) else real(path)

    docstream._open_binary = opener


@fault
def record_tools(arg: str) -> None:
    """compare.py: no tool runs; each command it would run is appended to ``ARG`` as a JSON line
    ``{"tool": "pretrain.py", "args": [...]}`` (the arguments after the tool's path), and the tool's part is
    played with fake files (tests/fake_runs.py ``play``); every tool "succeeds" (exit status 0)."""
    import json
    from pathlib import Path

    import fake_runs  # beside this file (the folder of the script run is on sys.path)

    from storygpt.compare import toolrun

    def recorder(cmd, log, verbose, follow=None, bar=None, cpu=None):
        tool = Path(cmd[1]).name
        with open(arg, "a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": tool, "args": cmd[2:]}) + "\n")
        fake_runs.play(tool, cmd[2:])
        return 0

    toolrun.run_tool = recorder


@fault
def tool_fails(arg: str) -> None:
    """compare.py: every tool it runs fails at once with exit status 1, after writing ``lots of output`` and
    then the line ``ARG`` (its one-line error) to its log."""
    from storygpt.compare import toolrun

    def failing(cmd, log, verbose, follow=None, bar=None, cpu=None):
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"lots of output\n{arg}\n", encoding="utf-8")
        return 1

    toolrun.run_tool = failing


@fault
def read_only_report(arg: str) -> None:
    """compare.py: the reports folder refuses files (the tests run as root, so a folder's mode cannot):
    storygpt.compare.report.write_report fails with EACCES on its first temporary file."""
    import errno
    import os

    import storygpt.compare.report

    def read_only(report_dir, *a, **k):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(report_dir / ".report.md.x.tmp"))

    storygpt.compare.report.write_report = read_only


def main(argv: list[str]) -> None:
    name, _, arg = argv[0].partition(":")
    tool, tool_args = argv[1], argv[2:]
    FAULTS[name](arg)
    sys.argv = [tool, *tool_args]
    runpy.run_path(tool, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
