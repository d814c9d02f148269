"""Where an export may go: the format, the checkpoint and OUT checked without importing torch.

export.py runs :func:`check_paths` before anything heavy, so a wrong CKPT or OUT is refused at once.
"""

from __future__ import annotations

import os
from pathlib import Path

FORMATS = ("hf", "gguf")


class ExportError(ValueError):
    """A checkpoint, tokenizer or destination that cannot be exported exactly; one line naming the reason."""


def check_destination(out: Path, fmt: str, force: bool) -> None:
    """Refuse an ``out`` of the wrong kind (folder for hf, file for gguf), or one in use without ``force``."""
    here = Path.cwd().resolve()
    if out.resolve() == here or out.resolve() in here.parents:
        raise ExportError(f"{str(out) or '.'}: is the working folder or holds it; choose another OUT")
    if fmt == "hf":
        if out.exists() and not out.is_dir():
            raise ExportError(f"{out}: exists and is not a folder (an HF export is a folder)")
        if out.is_dir() and any(out.iterdir()) and not force:
            raise ExportError(f"{out}: folder exists and is not empty (--force replaces it)")
    else:
        if out.is_dir():
            raise ExportError(f"{out}: is a folder (a GGUF export is one file, e.g. {out}.gguf)")
        if out.exists() and not force:
            raise ExportError(f"{out}: file exists (--force replaces it)")
    if out.parent.exists() and not out.parent.is_dir():
        raise ExportError(f"{out}: {out.parent} is not a folder")


def check_not_over_source(out: Path, source: Path) -> None:
    """Refuse an ``out`` that is the checkpoint file ``source``, its run's other checkpoint or a folder holding it."""
    source, target = source.resolve(), out.resolve()
    run_files = {source, source.parent / "ckpt.pt", source.parent / "best.pt"}
    if target in run_files or target in source.parents:
        raise ExportError(f"{out}: holds the checkpoint being exported ({source}); choose another OUT")


def check_paths(checkpoint: str | os.PathLike, out: str | os.PathLike, fmt: str, force: bool) -> tuple[Path, Path]:
    """Check the format, the checkpoint's path and ``out`` (nothing is read or written).

    Returns:
        ``(checkpoint file, out)`` as Paths.

    Raises:
        ExportError: an unknown format, or an ``out`` refused (wrong kind, in use without ``force``,
            the checkpoint's own run).
        FileNotFoundError: no checkpoint file or run folder with one at ``checkpoint``.
    """
    from storygpt.ckptpath import resolve_checkpoint

    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    out = Path(out)
    check_destination(out, fmt, force)
    source = resolve_checkpoint(checkpoint)
    check_not_over_source(out, source)
    return source, out
