"""Token files: a 64-byte header (magic ``b"SGPTTOK\\0"``, version 2, dtype, count, tokenizer
fingerprint, crc32 of the ids) followed by the token ids, little-endian.

Ids are uint16 when the vocabulary has at most 65,536 tokens, else uint32.  :func:`read_tokens`
checks the checksum (in 8 MiB blocks) and returns a read-only ``numpy.memmap`` over the ids, so
training never loads a whole corpus and a flipped id is an error naming the file.  Version 1
files (no checksum) are refused with a message to run data.py again.

The header byte by byte and the read speed: docs/data.md.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from storygpt.atomic import atomic_write

MAGIC = b"SGPTTOK\0"
VERSION = 2
HEADER_SIZE = 64
_HEADER = struct.Struct("<8sIIQ32sII")
#: Bytes read at a time when the checksum is verified.
CHECK_BLOCK_BYTES = 8 << 20
assert _HEADER.size == HEADER_SIZE

_DTYPES = {2: np.dtype("<u2"), 4: np.dtype("<u4")}


def dtype_for_vocab(vocab_size: int) -> np.dtype:
    """uint16 when every id fits (vocab_size <= 65,536), else uint32."""
    if vocab_size < 1:
        raise ValueError(f"vocab_size must be positive, got {vocab_size}")
    return _DTYPES[2] if vocab_size <= 1 << 16 else _DTYPES[4]


def _fingerprint_of(tokenizer_or_fingerprint: Any) -> bytes:
    fp = tokenizer_or_fingerprint
    if hasattr(fp, "fingerprint"):
        fp = fp.fingerprint()
    fp = str(fp).encode("ascii")[:32]
    return fp.ljust(32, b"\0")


class _Aborted(Exception):
    """Raised into :func:`storygpt.atomic.atomic_write` to drop a :class:`TokenWriter`'s temporary file."""


class TokenWriter:
    """Write a token file incrementally and atomically.

    Tokens are appended to a temporary file beside ``path``; :meth:`close`
    writes the header with the final count and renames the file into place,
    so an interrupted run never leaves a half-written file under the final
    name.  Use as a context manager: on an exception the temporary file is
    removed and nothing is renamed.

    Args:
        path: destination file.
        tokenizer: the tokenizer that produced the ids (or its fingerprint
            string); its ``vocab_size`` chooses the dtype when given.
        vocab_size: used to choose the dtype when ``tokenizer`` is a string.
    """

    def __init__(self, path: str | os.PathLike, tokenizer: Any, vocab_size: int | None = None):
        self.path = Path(path)
        if self.path.is_dir():
            raise IsADirectoryError(f"{self.path}: is a folder; give the token file's path")
        if vocab_size is None:
            vocab_size = getattr(tokenizer, "vocab_size", None)
        if vocab_size is None:
            raise ValueError("vocab_size is needed when tokenizer is a fingerprint string")
        self.vocab_size = int(vocab_size)
        self.dtype = dtype_for_vocab(self.vocab_size)
        self.fingerprint = _fingerprint_of(tokenizer)
        self.count = 0
        self.crc = 0
        # the temporary file, its mode, fsync, rename and clean-up: storygpt.atomic; entered here, left in close/abort
        self._atomic = atomic_write(self.path, "wb")
        self._f = self._atomic.__enter__()
        self._closed = False
        try:
            self._f.write(b"\0" * HEADER_SIZE)
        except BaseException:
            self.abort()
            raise

    def write(self, ids) -> None:
        """Append ids (any integer array-like); ValueError for non-integer ids or one out of range."""
        arr = np.asarray(ids)
        if arr.size == 0:
            return
        if not np.issubdtype(arr.dtype, np.integer):  # floats would be truncated silently (1.5 -> 1)
            raise ValueError(f"{self.path}: token ids must be integers, got an array of {arr.dtype}")
        if arr.min() < 0 or arr.max() >= self.vocab_size:
            bad = int(arr.min()) if arr.min() < 0 else int(arr.max())
            raise ValueError(f"{self.path}: token id {bad} is outside the vocabulary (size {self.vocab_size})")
        data = arr.astype(self.dtype, copy=False).tobytes()
        self._f.write(data)
        self.crc = zlib.crc32(data, self.crc)
        self.count += int(arr.size)

    def close(self) -> None:
        """Write the header, flush to disk and rename into place."""
        if self._closed:
            return
        try:
            self._f.seek(0)
            self._f.write(_HEADER.pack(MAGIC, VERSION, self.dtype.itemsize, self.count, self.fingerprint, self.crc, 0))
        except BaseException:  # e.g. the disk is full: keep no temporary file
            self.abort()
            raise
        self._closed = True
        self._atomic.__exit__(None, None, None)  # flush, fsync, rename; on failure (a folder there) it cleans up

    def abort(self) -> None:
        """Drop the temporary file; the destination is left untouched."""
        if self._closed:
            return
        self._closed = True
        aborted = _Aborted()
        self._atomic.__exit__(_Aborted, aborted, None)  # closes and removes the temporary file

    def __enter__(self) -> TokenWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def write_tokens(path: str | os.PathLike, tokens, tokenizer: Any, vocab_size: int | None = None) -> None:
    """Write ``tokens`` (1-D integer array-like) to ``path`` atomically."""
    with TokenWriter(path, tokenizer, vocab_size) as w:
        w.write(np.asarray(tokens).reshape(-1))


def read_header(path: str | os.PathLike) -> dict:
    """Read and check a token file's header.

    Returns:
        ``{"version", "dtype", "count", "fingerprint", "checksum"}`` (checksum: the crc32
        the header records for the ids; :func:`verify_checksum` compares it with the file).

    Raises:
        FileNotFoundError: no such file.
        ValueError: wrong magic or version, unknown dtype, or a file length
            that disagrees with the token count (the message names the file).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"token file not found: {path} (run data.py first)")
    size = path.stat().st_size
    with open(path, "rb") as f:
        raw = f.read(HEADER_SIZE)
    if len(raw) < HEADER_SIZE:
        raise ValueError(f"{path}: not a storygpt token file (only {size} bytes, header needs {HEADER_SIZE})")
    magic, version, code, count, fingerprint, checksum, _ = _HEADER.unpack(raw)
    if magic != MAGIC:
        raise ValueError(f"{path}: not a storygpt token file (bad magic {magic!r})")
    if version != VERSION:
        older = " (written before token files carried a checksum); run data.py again" if version < VERSION else ""
        raise ValueError(f"{path}: unsupported token file version {version} (this storygpt reads {VERSION}){older}")
    if code not in _DTYPES:
        raise ValueError(f"{path}: unknown dtype code {code} in header")
    expected = HEADER_SIZE + count * code
    if size != expected:
        raise ValueError(
            f"{path}: file is {size} bytes but its header promises {count} tokens "
            f"({expected} bytes); the file is truncated or corrupt"
        )
    return {
        "version": version,
        "dtype": _DTYPES[code],
        "count": count,
        "fingerprint": fingerprint.rstrip(b"\0").decode("ascii", errors="replace"),
        "checksum": checksum,
    }


def payload_crc32(path: str | os.PathLike, block_bytes: int = CHECK_BLOCK_BYTES) -> int:
    """zlib.crc32 of a token file's bytes after the header, read in blocks (no memmap:
    the pages are not kept in the process's resident memory)."""
    crc = 0
    buf = bytearray(block_bytes)
    view = memoryview(buf)
    with open(path, "rb") as f:
        f.seek(HEADER_SIZE)
        while n := f.readinto(buf):
            crc = zlib.crc32(view[:n], crc)
    return crc


def iter_ids(path: str | os.PathLike, block_bytes: int = CHECK_BLOCK_BYTES) -> Iterator[np.ndarray]:
    """The ids of a token file in blocks of about ``block_bytes`` (read, not memmapped, like
    :func:`payload_crc32`: going through ``read_tokens(path)`` would leave every page it touched
    resident).  Each block is a fresh array; together they are ``read_tokens(path)``.

    Raises:
        FileNotFoundError, ValueError: see :func:`read_header`.
    """
    header = read_header(path)
    dtype = np.dtype(header["dtype"])
    per_block = max(block_bytes // dtype.itemsize, 1)
    left = header["count"]
    with open(path, "rb") as f:
        f.seek(HEADER_SIZE)
        while left > 0:
            ids = np.fromfile(f, dtype=dtype, count=min(per_block, left))
            if not len(ids):
                return
            left -= len(ids)
            yield ids


def max_id(path: str | os.PathLike, block_bytes: int = CHECK_BLOCK_BYTES) -> int | None:
    """The largest id in a token file (None when it holds none), read in blocks (:func:`iter_ids`).

    Raises:
        FileNotFoundError, ValueError: see :func:`read_header`.
    """
    best = None
    for ids in iter_ids(path, block_bytes):
        m = int(ids.max())
        best = m if best is None else max(best, m)
    return best


def verify_checksum(path: str | os.PathLike, header: dict | None = None) -> None:
    """Check that a token file's ids are the ones written (the header's crc32).

    Raises:
        FileNotFoundError, ValueError: see :func:`read_header`; ValueError naming the
            file when the ids differ from those written (a flipped bit, a corrupt copy).
    """
    header = header or read_header(path)
    got = payload_crc32(path)
    if got != header["checksum"]:
        raise ValueError(
            f"{path}: checksum mismatch (crc32 of the ids {got:08x}, header says {header['checksum']:08x}): "
            f"the token file is corrupt; run data.py again"
        )


def read_tokens(path: str | os.PathLike, tokenizer: Any = None, verify: bool = True) -> np.ndarray:
    """Open a token file as a read-only numpy memmap.

    Args:
        path: a file written by :func:`write_tokens` / :class:`TokenWriter`.
        tokenizer: when given (a tokenizer or its fingerprint string), the
            file must have been written with it.
        verify: check the ids against the header's checksum first (:func:`verify_checksum`).

    Returns:
        A 1-D ``numpy.memmap`` of dtype uint16 or uint32, length = token count.

    Raises:
        FileNotFoundError, ValueError: see :func:`read_header`; also a
            fingerprint that does not match ``tokenizer``, or ids that do not match the checksum.
    """
    header = read_header(path)
    if tokenizer is not None:
        want = _fingerprint_of(tokenizer).rstrip(b"\0").decode("ascii")
        if header["fingerprint"] != want:
            raise ValueError(
                f"{path}: written by another tokenizer (fingerprint {header['fingerprint'][:12]}..., "
                f"expected {want[:12]}...); run data.py again for this tokenizer"
            )
    if verify:
        verify_checksum(path, header)
    if header["count"] == 0:
        return np.zeros(0, dtype=header["dtype"])
    return np.memmap(path, dtype=header["dtype"], mode="r", offset=HEADER_SIZE, shape=(header["count"],))
