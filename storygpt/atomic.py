"""Atomic file writes: a temporary file beside the target, then ``os.replace``.

Every file storygpt writes (token files, tokenizer files, corpora splits,
checkpoints, metrics) goes through :func:`atomic_write`, so an interrupted run
never leaves a half-written file under the final name and the previous
version stays readable until the new one is complete.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

TMP_SUFFIX = ".tmp"


def leftovers(path: str | os.PathLike) -> list[Path]:
    """The temporary files of :func:`atomic_write` for ``path`` that a killed process left beside it."""
    path = Path(path)
    return sorted(path.parent.glob(f".{path.name}.*{TMP_SUFFIX}"))


def file_mode() -> int:
    """The mode a newly created file gets under the current umask (e.g. 0o644)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", encoding: str | None = None) -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success fsync it and rename it to ``path``.

    Args:
        path: the destination; its folder is created when missing.
        mode: ``"wb"`` (bytes) or ``"w"`` (text, UTF-8 with ``"\\n"`` line ends
            unless ``encoding`` says otherwise).
        encoding: text encoding for ``mode="w"``.

    Yields:
        The open temporary file.  When the block raises (including
        ``KeyboardInterrupt``), the temporary file is removed and ``path`` is
        left untouched.

    Raises:
        ValueError: a mode other than ``"w"`` or ``"wb"``.
        OSError: the folder cannot be created or written.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write supports mode 'w' or 'wb', not {mode!r}")
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=folder)
    except OSError as e:  # name the file the caller asked for, not the hidden temporary one
        raise type(e)(e.errno, e.strerror, str(path)) from None
    try:
        os.chmod(tmp, file_mode())  # mkstemp creates 0600; give the usual permissions
        if mode == "w":
            f = os.fdopen(fd, "w", encoding=encoding or "utf-8", newline="\n")
        else:
            f = os.fdopen(fd, "wb")
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write a UTF-8 text file atomically."""
    with atomic_write(path, "w") as f:
        f.write(text)


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write a binary file atomically."""
    with atomic_write(path, "wb") as f:
        f.write(data)


def write_json(path: str | os.PathLike, obj) -> None:
    """Write ``obj`` as indented UTF-8 JSON (``indent=2``, non-ASCII kept, a final new line) atomically."""
    write_text(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
