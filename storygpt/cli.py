"""What every command-line tool does around its ``main()``."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def run(main: Callable[[], object]) -> None:
    """Run a tool's ``main()`` and exit with its status (0 when it returns anything but an int).

    A reader that stops early (``python sample.py ... | head``) closes the pipe: the tool then exits
    quietly with status 141 (128 + SIGPIPE, as a shell reports it) instead of printing a
    ``BrokenPipeError`` traceback.  Python's documentation (``signal``, "Note on SIGPIPE") gives
    the same recipe: point stdout at /dev/null so the interpreter's final flush cannot fail again.
    """
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(141)
    sys.exit(status if isinstance(status, int) else 0)
