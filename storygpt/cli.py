"""What every command-line tool does around its ``main()``, and the error text its one-line messages quote."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

from storygpt.helpformat import DefaultsOnceHelpFormatter


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


class ToolParser(argparse.ArgumentParser):
    """The argument parser of every tool: a bad argument is one line ``TOOL: error: ...`` on stderr and exit
    status 2 (argparse's own errors, :func:`check_ranges` and the tools' ``parser.error`` alike)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def check_ranges(parser: argparse.ArgumentParser, args: argparse.Namespace, ranges: dict) -> None:
    """Stop with ``parser.error`` (exit status 2) at the first flag outside its range.

    ``ranges`` maps an argument name to ``(low, high)`` or ``(low, high, "strict")``: ``low`` is
    inclusive unless ``"strict"`` is given, ``high`` inclusive, ``None`` for no bound.  A flag left
    at ``None`` (not given, no default) is skipped; every float must be finite.  The message names
    the flag, e.g. ``--seed must be in 0 .. 9223372036854775807, got -1``.
    """
    for name, bounds in ranges.items():
        value = getattr(args, name)
        why = None if value is None else range_error(f"--{name.replace('_', '-')}", value, bounds)
        if why:
            parser.error(why)


def _bound(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def range_error(name: str, value, bounds: tuple) -> str | None:
    """``"NAME must be ..., got VALUE"`` when the number ``value`` lies outside ``bounds`` (``(low, high)`` or
    ``(low, high, "strict")``, as :func:`check_ranges` takes them) or is not finite, else None."""
    low, high, *strict = bounds
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name} must be a finite number, got {value}"
    if strict and high is not None and not low < value <= high:
        return f"{name} must be above {_bound(low)} and at most {_bound(high)}, got {value}"
    if high is not None and not low <= value <= high:
        return f"{name} must be in {_bound(low)} .. {_bound(high)}, got {value}"
    if low is not None and (value <= low if strict else value < low):
        return f"{name} must be {'>' if strict else '>='} {_bound(low)}, got {value}"
    return None


def range_text(bounds: tuple) -> str:
    """``bounds`` (as :func:`check_ranges` takes them) in words: ``"0 .. 0.999"``, ``"above 0, at most 1"``, ``">= 0"``."""
    low, high, *strict = bounds
    if high is None:
        return f"{'>' if strict else '>='} {_bound(low)}"
    return f"above {_bound(low)}, at most {_bound(high)}" if strict else f"{_bound(low)} .. {_bound(high)}"


def stored_flag_error(parser: argparse.ArgumentParser, saved: dict, ranges: dict, skip=frozenset()) -> str | None:
    """Why ``saved`` (a run's flags as stored: dest -> value) could not have come from ``parser``: a number flag
    (``type`` int or float) or a yes/no flag (``store_true``) holding another type, a None where the flag has a
    default, or a number outside ``ranges``; else None.  Dests in ``skip`` and dests not stored are not checked.
    The message names the flag, e.g. ``--lr must be a number, got 'abc'``."""
    for action in parser._actions:
        dest = action.dest
        if dest in skip or dest not in saved or not action.option_strings:
            continue
        flag, value = action.option_strings[-1], saved[dest]
        if isinstance(action, argparse._StoreTrueAction):
            if not isinstance(value, bool):
                return f"{flag} must be a yes/no (a bool), got {value!r}"
            continue
        if action.type not in (int, float):
            continue
        if value is None and action.default is None:
            continue
        why = number_error(flag, value, action.type is int, ranges.get(dest))
        if why:
            return why
    return None


def number_error(name: str, value, whole: bool = False, bounds: tuple | None = None) -> str | None:
    """Why a stored ``value`` is not a number of its flag ``name``: not an int or float (a bool, None, text),
    not whole where ``whole``, or outside ``bounds`` (:func:`range_error`); else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{name} must be a number, got {value!r}"
    if whole and not isinstance(value, int):
        return f"{name} must be a whole number, got {value!r}"
    return range_error(name, value, bounds) if bounds else None


def check_output(parser: argparse.ArgumentParser, flag: str, path, folder: bool = False) -> None:
    """Stop with ``parser.error`` (exit 2) when ``path`` (the value of ``flag``) cannot be written: a file
    above it (``afile/x.json``), or ``path`` itself of the other kind (a folder for a file, ``folder`` False;
    a file for a folder).  Checked before any work, so nothing is measured only to fail at the end."""
    if path is None or path == "-":
        return
    path = Path(path)
    for above in path.parents:
        if above.exists():
            if not above.is_dir():
                parser.error(f"{flag} {path}: {above} is not a folder")
            break
    if path.exists() and path.is_dir() != folder:
        parser.error(f"{flag} {path}: {'not a folder' if folder else 'is a folder, not a file'}")


def table_parser(
    prog: str, description: str, groups: dict, choices: dict, suppress_defaults: bool = False
) -> argparse.ArgumentParser:
    """An argparse parser built from a table: ``{group title: [(flag, type, default, help), ...]}``.

    A ``type`` of ``None`` makes a ``store_true`` flag, ``list`` a repeatable one (its metavar the help's
    text before the first colon); ``choices`` maps a flag to its allowed
    values.  With ``suppress_defaults`` no defaults are set, so that parsing returns only the
    flags given on the command line (how ``pretrain.py`` tells a given flag from a default).
    """
    p = ToolParser(
        prog=prog,
        description=description,
        formatter_class=DefaultsOnceHelpFormatter,
        argument_default=argparse.SUPPRESS if suppress_defaults else None,
    )
    for title, flags in groups.items():
        g = p.add_argument_group(title)
        for flag, typ, default, help in flags:
            kw = {} if suppress_defaults else {"default": default}
            if typ is None:
                g.add_argument(flag, action="store_true", help=help, **kw)
            elif typ is list:  # a repeatable flag: its values in a list
                g.add_argument(flag, action="append", metavar=help.split(":")[0], help=help, **kw)
            else:
                g.add_argument(flag, type=typ, help=help, choices=choices.get(flag), **kw)
    return p


def show(path: Path | str) -> str:
    """``path`` as the tools print it: relative to the working directory when it lies below it, else
    absolute (``"."`` for the working directory itself)."""
    p = Path(path).absolute()
    try:
        return str(p.relative_to(Path.cwd())) or "."
    except ValueError:
        return str(p)


# error text quoted inside storygpt's own one-line messages: never cut mid-sentence, mid-URL or mid-path
#: characters; a quoted line longer than this is shortened at a sentence or word boundary (:func:`shorten`)
LIMIT = 500


def shorten(text: str, limit: int = LIMIT) -> str:
    """``text`` whole when it has at most ``limit`` characters; else cut at a boundary, with ``...``.

    The cut is after the last sentence (``. ``, ``! ``, ``? ``, ``; ``) that ends in the second half of
    ``limit``; failing that, before the last word (whitespace-separated, so a URL or a path stays whole)
    that would cross ``limit``.  A first word longer than ``limit`` is kept whole.
    """
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    ends = [head.rfind(mark, 0, limit) for mark in (". ", "! ", "? ", "; ")]
    end = max(ends)
    if end >= limit // 2:
        return text[: end + 1] + " ..."
    space = head.rfind(" ")
    if space <= 0:
        word_end = text.find(" ")
        return text if word_end < 0 else text[:word_end] + " ..."
    return text[:space].rstrip() + " ..."


def first_line(e: BaseException | str, limit: int = LIMIT) -> str:
    """The first non-empty line of an error's text (its type's name when it has none), by :func:`shorten`."""
    text = str(e)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return type(e).__name__ if isinstance(e, BaseException) else ""
    return shorten(lines[0], limit)
