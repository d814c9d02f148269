"""Chunk counts: BPE training past one machine (count shards anywhere, merge the counts, learn merges on one).

BPE training counts the distinct pre-tokenization chunks (linear, parallel), then runs the merge
loop on them; these functions cut training between the two::

    counts = merge_counts(count_shard([path], pattern="gpt4") for path in shard_paths)
    write_counts("counts.tsv.gz", counts)                         # the pattern travels in the counts
    tok = train_from_counts(read_counts("counts.tsv.gz"), 8192)    # or: python data.py --counts counts.tsv.gz

The merges equal :func:`~storygpt.tokenizers.bpe.train_bpe`'s on the shards as separate texts.
The counts file format and a Ray Data example: docs/tokenizers.md, "Training from counts".
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .base import EOT, clean_text
from .bpe import BPETokenizer, load_cpp, train_bpe
from .bpe_train import MAX_COUNT, check_train_files

FORMAT = "storygpt-chunk-counts"
VERSION = 1
#: the special tokens data.py trains BPE with (they split the text and are never counted)
SPECIAL_TOKENS = ("<pad>", EOT)


@dataclass
class ChunkCounts:
    """Counts of distinct pre-tokenization chunks, with the pattern and special tokens that cut them.

    Attributes:
        counts: chunk bytes -> count (>= 1).
        pattern: the pre-tokenization pattern name (``"gpt4"``, ``"gpt2"``, ``"o200k"``, ``"simple"``).
        special_tokens: the special tokens that split the text (not counted).
    """

    counts: dict[bytes, int]
    pattern: str
    special_tokens: tuple[str, ...] = field(default=SPECIAL_TOKENS)

    @property
    def total(self) -> int:
        """Chunks counted (with repeats)."""
        return sum(self.counts.values())


def count_shard(
    source: str | bytes | Sequence[str | os.PathLike] | Iterable[str | bytes],
    pattern: str,
    special_tokens: Sequence[str] = SPECIAL_TOKENS,
    num_threads: int = 1,
) -> ChunkCounts:
    """Count the chunks of one shard of a corpus (the C++ counter; the same counts as
    :func:`storygpt.tokenizers.bpe_reference.count_chunks` on each text).

    Args:
        source: a text (``str``, lone surrogates as U+FFFD, or ``bytes``), a list of file paths (each read as
            bytes, streamed, a text of its own), or any other iterable of texts (e.g. the documents of a
            ``train.txt``: ``storygpt.data.docstream.DocumentFile(path)``).  Chunks never cross texts.
        pattern: pre-tokenization pattern name; the merge step must use the same one (it is recorded).
        special_tokens: strings that split every text and are left out (data.py: ``<pad>``, ``<|endoftext|>``).
        num_threads: counting threads (>= 1); counts never depend on it.

    Returns:
        A :class:`ChunkCounts`.

    Raises:
        ValueError: an unknown pattern, ``num_threads`` below 1.
        TypeError: one path instead of a list, an item that is neither text nor bytes (named).
        FileNotFoundError, IsADirectoryError, OSError: a listed file (named).
    """
    pattern = _check_pattern(pattern)
    specials = tuple(special_tokens)
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be an integer >= 1, got {num_threads!r}")
    if isinstance(source, os.PathLike):
        raise TypeError(f"source: pass a list of paths, not one path ({os.fspath(source)!r})")
    counter = load_cpp().ChunkCounter(pattern, [s.encode("utf-8") for s in specials], num_threads)
    if isinstance(source, (str, bytes, bytearray)):
        counter.add_texts([source], label="count_shard")
    elif isinstance(source, (list, tuple)):
        for path in check_train_files(source):
            counter.add_file(path)
    else:
        counter.add_texts(_texts(source), label="count_shard texts")
    return ChunkCounts(dict(counter.counts()), pattern, specials)


def merge_counts(shards: Iterable[ChunkCounts]) -> ChunkCounts:
    """The sum of the counts of several shards (chunk by chunk).

    Raises:
        ValueError: no shards; shards cut with different patterns or special tokens (both named); a count
            of ``2**63`` or more.
    """
    merged: dict[bytes, int] | None = None
    first = None
    for i, shard in enumerate(shards):
        if first is None:
            first, merged = shard, dict(shard.counts)
            continue
        if (shard.pattern, tuple(shard.special_tokens)) != (first.pattern, tuple(first.special_tokens)):
            raise ValueError(
                f"merge_counts: shard {i} was cut with pattern {shard.pattern!r} and special tokens "
                f"{list(shard.special_tokens)}, shard 0 with {first.pattern!r} and {list(first.special_tokens)}"
            )
        for chunk, c in shard.counts.items():
            total = merged.get(chunk, 0) + c
            if total > MAX_COUNT:
                raise ValueError(f"merge_counts: the count of chunk {chunk!r} reaches 2**63")
            merged[chunk] = total
    if first is None:
        raise ValueError("merge_counts: no shards given")
    return ChunkCounts(merged, first.pattern, tuple(first.special_tokens))


def write_counts(path: str | os.PathLike, counts: ChunkCounts) -> None:
    """Write ``counts`` in the counts file format (module docstring), atomically; gzip when ``path`` ends in .gz."""
    from storygpt.atomic import atomic_write

    header = {"format": FORMAT, "version": VERSION, "pattern": counts.pattern}
    header["special_tokens"] = list(counts.special_tokens)
    lines = [json.dumps(header, ensure_ascii=False)]
    lines += [f"{counts.counts[k]}\t{k.hex()}" for k in sorted(counts.counts)]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    with atomic_write(path, "wb") as f:
        if str(path).endswith(".gz"):
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as z:
                z.write(data)
        else:
            f.write(data)


def read_counts(path: str | os.PathLike) -> ChunkCounts:
    """Read a counts file (module docstring).

    Raises:
        FileNotFoundError, OSError: the file.
        ValueError: ``PATH:LINE: what is wrong`` for a bad header, an unknown pattern, a line that is not
            ``COUNT<TAB>HEX``, a count below 1, a chunk given twice, or no chunks at all.
    """
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", newline="\n") as f:
            text = f.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"counts file not found: {path}") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"counts file {path} is a folder, not a file") from None
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as e:
        raise ValueError(f"{path}: not a counts file ({e})") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    try:
        header = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f'{path}:1: not a counts file (line 1 must be {{"format": "{FORMAT}", ...}})')
    if header.get("version") != VERSION:
        raise ValueError(f"{path}:1: counts format version {header.get('version')!r}; this storygpt reads {VERSION}")
    try:
        pattern = _check_pattern(header.get("pattern"))
    except ValueError as e:
        raise ValueError(f"{path}:1: {e}") from None
    specials = header.get("special_tokens", [])
    if not isinstance(specials, list) or not all(isinstance(s, str) and s for s in specials):
        raise ValueError(f"{path}:1: special_tokens must be a list of non-empty strings")
    counts: dict[bytes, int] = {}
    for n, line in enumerate(lines[1:], start=2):
        count, tab, hexed = line.partition("\t")
        try:
            if not tab or not count.isascii() or not count.isdigit():
                raise ValueError
            c, chunk = int(count), bytes.fromhex(hexed)
            if c < 1 or not chunk or hexed != chunk.hex():
                raise ValueError
        except ValueError:
            raise ValueError(
                f"{path}:{n}: expected COUNT<TAB>HEX (a positive count, the chunk's bytes in lowercase hex), "
                f"got {line[:60]!r}"
            ) from None
        if chunk in counts:
            raise ValueError(f"{path}:{n}: chunk {chunk!r} is listed twice")
        counts[chunk] = c
    if not counts:
        raise ValueError(f"{path}: no chunks (a counts file of an empty text cannot train a tokenizer)")
    bound = sum(c * (len(k) - 1) for k, c in counts.items())  # bounds every pair count at every merge
    if bound > MAX_COUNT:
        raise ValueError(
            f"{path}: counts too large: pair counts could exceed 2**63-1 (sum of count * (bytes - 1): {bound})"
        )
    return ChunkCounts(counts, pattern, tuple(specials))


def train_from_counts(
    counts: ChunkCounts,
    vocab_size: int,
    min_frequency: int = 1,
    tie_break: str = "smallest_ids",
    progress=None,
) -> BPETokenizer:
    """The merge loop on counts: :func:`~storygpt.tokenizers.bpe.train_bpe` with the counts' pattern and
    special tokens (the tokenizer encodes with them).  Same arguments and errors as ``train_bpe``."""
    return train_bpe(
        counts.counts,
        vocab_size,
        pattern=counts.pattern,
        special_tokens=list(counts.special_tokens),
        min_frequency=min_frequency,
        tie_break=tie_break,
        progress=progress,
    )


def _texts(texts):
    """Each item as UTF-8 bytes (lone surrogates as U+FFFD); TypeError naming the index of a non-text item."""
    for i, item in enumerate(texts):
        if isinstance(item, str):
            yield clean_text(item).encode("utf-8")
        elif isinstance(item, (bytes, bytearray, memoryview)):
            yield bytes(item)
        else:
            raise TypeError(f"count_shard texts: item {i} is {type(item).__name__}, not str or bytes")


#: the patterns BPE training cuts chunks with (data.py --pattern)
PATTERNS = ("simple", "gpt2", "gpt4", "o200k")


def _check_pattern(pattern) -> str:
    if not isinstance(pattern, str) or pattern not in PATTERNS:
        raise ValueError(f"unknown pre-tokenization pattern {pattern!r}; expected one of {', '.join(PATTERNS)}")
    return pattern
