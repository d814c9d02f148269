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


def main(argv: list[str]) -> None:
    name, _, arg = argv[0].partition(":")
    tool, tool_args = argv[1], argv[2:]
    FAULTS[name](arg)
    sys.argv = [tool, *tool_args]
    runpy.run_path(tool, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
