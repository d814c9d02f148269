"""Documents streamed from text files, a block of whole lines at a time.

:func:`iter_documents` (the rules of :func:`storygpt.data.corpora.read_documents`) and
:func:`iter_stories` (those of ``iter_tinystories``) hold one 1 MiB block and the current document,
never the file; :class:`DocumentFile` can be iterated again and again.  Errors name the file:
``FileNotFoundError``, ``ValueError`` (empty, no documents, not UTF-8 with the byte offset),
``OSError`` (a failed read, with the offset).  See docs/data.md.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from storygpt.tokenizers.base import EOT

from .corpora import SEPARATOR, normalize_newlines

#: Bytes read from the file at a time.
BLOCK_BYTES = 1 << 20

OnBytes = Callable[[int], None] | None
_ASCII_SPACE = " \t\n\r\x0b\x0c"  # what bytes.strip() removes: read_text's test for an empty file


def _open_binary(path: Path):
    """The file opened for reading bytes (a seam for tests that make reads fail part way)."""
    return open(path, "rb")


def check_text_file(path: str | os.PathLike) -> Path:
    """``path`` as a Path; FileNotFoundError when it is missing or a folder (the message says which)."""
    path = Path(path)
    if path.is_dir():
        raise FileNotFoundError(f"{path}: is a folder, not a text file")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    return path


def _decode(piece: bytes, path: Path, offset: int) -> str:
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = piece[e.start : e.start + 4]
        raise ValueError(
            f"{path}: not UTF-8 text: invalid byte sequence {bad!r} at byte offset {offset + e.start} ({e.reason})"
        ) from None


def iter_text_blocks(
    path: str | os.PathLike, on_bytes: OnBytes = None, block_bytes: int = BLOCK_BYTES
) -> Iterator[str]:
    """The text of a UTF-8 file in pieces that each end at a line break (the last one may not).

    The pieces joined equal ``corpora.read_text(path)`` (byte-order mark dropped,
    newlines normalised); a piece is about ``block_bytes`` long, longer only when
    one line is.  A line break is never split (``\\r`` ending a block waits for a
    possible ``\\n``), so a multi-byte character never is either.

    Args:
        path: the file.
        on_bytes: called with the number of file bytes each piece consumed.
        block_bytes: bytes per read.

    Raises:
        FileNotFoundError: no such file, or a folder.
        ValueError: not UTF-8 (file and byte offset of the first bad byte named).
        OSError: a read failed (file and byte offset named).
    """
    path = check_text_file(path)
    buf = bytearray()
    offset = 0  # file offset of buf[0]
    first = True
    with _open_binary(path) as f:
        while True:
            try:
                chunk = f.read(block_bytes)
            except OSError as e:
                raise OSError(f"{path}: read failed at byte offset {offset + len(buf):,}: {e.strerror or e}") from None
            if chunk:
                start = len(buf)
                buf += chunk
                cut = max(buf.rfind(b"\n", start), buf.rfind(b"\r", max(start - 1, 0), len(buf) - 1)) + 1
                if cut == 0:  # no line break yet: one long line, keep reading
                    continue
            else:
                cut = len(buf)
                if cut == 0:
                    return
            text = _decode(bytes(buf[:cut]), path, offset)
            del buf[:cut]
            offset += cut
            if first:
                first = False
                if text.startswith("\ufeff"):
                    text = text[1:]
            if on_bytes is not None:
                on_bytes(cut)
            yield normalize_newlines(text)
            if not chunk:
                return


def _separator_line(text: str, i: int) -> tuple[int, int] | None:
    """(start, end) of the line holding ``text[i:i + len(EOT)]`` when that line is a separator line."""
    start = text.rfind("\n", 0, i) + 1
    end = text.find("\n", i)
    end = len(text) if end < 0 else end
    return (start, end) if text[start:end].strip() == EOT else None


def _starts_with_bom(path) -> bool:
    with open(path, "rb") as f:
        return f.read(3) == b"\xef\xbb\xbf"


def _finish(parts: list[str]) -> str | None:
    """The document assembled from ``parts`` (one trailing newline belongs to the separator), or None if blank."""
    doc = "".join(parts)
    if doc.endswith("\n"):
        doc = doc[:-1]
    return doc if doc and not doc.isspace() else None


def iter_documents(path: str | os.PathLike, on_bytes: OnBytes = None, block_bytes: int = BLOCK_BYTES) -> Iterator[str]:
    """Stream the documents of a file separated by ``<|endoftext|>`` lines.

    Yields exactly ``corpora.read_documents(path)``, one document at a time.

    Args:
        path: the file.
        on_bytes: called with the file bytes consumed, a block at a time (progress bars).
        block_bytes: bytes per read.

    Raises:
        FileNotFoundError, OSError: see :func:`iter_text_blocks`.
        ValueError: not UTF-8 (byte offset named), the file is empty (only white
            space), or it holds no document (only separators and white space);
            the last two at the end of the stream.
    """
    parts: list[str] = []
    seen_text = count = 0
    for text in iter_text_blocks(path, on_bytes, block_bytes):
        if not seen_text and text.strip(_ASCII_SPACE):
            seen_text = 1
        pos = search = 0
        while (i := text.find(EOT, search)) >= 0:
            line = _separator_line(text, i)
            search = i + len(EOT)
            if line is None:  # "<|endoftext|>" inside a line is text
                continue
            parts.append(text[pos : line[0]])
            doc = _finish(parts)
            parts = []
            if doc is not None:
                count += 1
                yield doc
            pos = search = line[1] + 1
        if pos < len(text):
            parts.append(text[pos:])
    doc = _finish(parts)
    if doc is not None:
        count += 1
        yield doc
    if not seen_text and not _starts_with_bom(path):  # only ASCII white space (or nothing) in the file
        raise ValueError(f"{path}: the file is empty (no text in it)")
    if not count:
        raise ValueError(f"{path}: no documents found (only separators and white space)")


def iter_stories(path: str | os.PathLike, on_bytes: OnBytes = None, block_bytes: int = BLOCK_BYTES) -> Iterator[str]:
    """Stream the stories of a TinyStories file: ``<|endoftext|>`` anywhere separates them.

    Each story is stripped of surrounding white space and empty ones are
    skipped; the same stories as ``corpora.iter_tinystories(path)``.

    Raises:
        FileNotFoundError, OSError: see :func:`iter_text_blocks`.
        ValueError: the file is empty, has no stories, or is not UTF-8 (byte offset named).
    """
    path = check_text_file(path)
    if path.stat().st_size == 0:
        raise ValueError(f"{path}: the file is empty (no text in it)")
    parts: list[str] = []
    count = 0
    for text in iter_text_blocks(path, on_bytes, block_bytes):
        pieces = text.split(EOT)
        for piece in pieces[:-1]:
            parts.append(piece)
            story = "".join(parts).strip()
            parts = []
            if story:
                count += 1
                yield story
        parts.append(pieces[-1])
    story = "".join(parts).strip()
    if story:
        count += 1
        yield story
    if count == 0:
        raise ValueError(f"{path}: no stories found (only separators and white space)")


class DocumentFile:
    """A file of documents that can be iterated as often as needed, a block at a time.

    Args:
        path: the file.
        stories: read it with TinyStories rules (:func:`iter_stories`) instead of
            ``<|endoftext|>`` lines (:func:`iter_documents`).
    """

    def __init__(self, path: str | os.PathLike, stories: bool = False):
        self.path = Path(path)
        self.stories = stories

    @property
    def size(self) -> int:
        """The file's size in bytes (FileNotFoundError when it is missing)."""
        return check_text_file(self.path).stat().st_size

    def iter(self, on_bytes: OnBytes = None) -> Iterator[str]:
        """The documents, reporting file bytes consumed to ``on_bytes`` (see :func:`iter_documents`)."""
        return (iter_stories if self.stories else iter_documents)(self.path, on_bytes)

    def __iter__(self) -> Iterator[str]:
        return self.iter()

    def __repr__(self) -> str:
        return f"DocumentFile({str(self.path)!r}{', stories=True' if self.stories else ''})"


class DocumentWriter:
    """Append documents to an open binary file in the ``<|endoftext|>``-line format, counting and hashing.

    What it writes equals ``corpora.format_documents(docs).encode()`` once :meth:`finish`
    has added the final newline; ``sha256`` is that content's digest, computed on the way.

    Args:
        f: a file opened for writing bytes (e.g. from :func:`storygpt.atomic.atomic_write`).
    """

    def __init__(self, f):
        self._f = f
        self._sha = hashlib.sha256()
        self.documents = 0
        self.characters = 0
        self.bytes = 0

    def write(self, doc: str) -> None:
        """Append one document (a non-blank ``str``); UnicodeEncodeError for lone surrogates."""
        data = ((SEPARATOR if self.documents else "") + doc).encode("utf-8")
        self._f.write(data)
        self._sha.update(data)
        self.documents += 1
        self.characters += len(doc)
        self.bytes += len(data)

    def finish(self) -> str:
        """Write the final newline; returns the hex sha256 of everything written."""
        self._f.write(b"\n")
        self._sha.update(b"\n")
        self.bytes += 1
        return self._sha.hexdigest()
