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
    """bits.py: Ctrl-C inside storygpt.evaluate.evaluate_bits."""
    import storygpt.evaluate

    storygpt.evaluate.evaluate_bits = interrupt


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

    from storygpt import train
    from storygpt.atomic import atomic_write

    real = train.save_checkpoint

    def full_disk(path, ckpt, during_write=None):
        if ckpt.get("state", {}).get("step") == int(arg):
            with atomic_write(path, "wb") as f:
                f.write(b"PK\x03\x04 part of it")
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, ckpt, during_write)

    train.save_checkpoint = full_disk


def main(argv: list[str]) -> None:
    name, _, arg = argv[0].partition(":")
    tool, tool_args = argv[1], argv[2:]
    FAULTS[name](arg)
    sys.argv = [tool, *tool_args]
    runpy.run_path(tool, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
