"""BPE training: the merges behind :func:`storygpt.tokenizers.bpe.train_bpe`.

This module only learns the merges (:func:`learn_merges`); ``train_bpe`` (bpe.py) makes them a
:class:`~storygpt.tokenizers.bpe.BPETokenizer`.  Sources: one ``str``/``bytes`` text, a list of
file paths (streamed by the C++ trainer, each a separate text), any other iterable of texts
(counted about 8 MB at a time) or a ``Mapping`` chunk -> count (C++ only).  They differ in how
chunks are counted, never in the merges learned from the same chunks; all go through
:func:`check_train_args` and give the one warning when pairs run out before ``vocab_size``.
Details: docs/tokenizers.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from . import bpe_reference
from .base import as_int, clean_text
from .bpe_vocab import MAX_VOCAB_SIZE, check_backend, load_cpp, special_dict

#: Texts per C++ counting call for an iterator of texts (bytes).
ITERATOR_BATCH_BYTES = 8 << 20
#: Below this much text one counting thread is as fast as two or faster (docs/performance.md:
#: on 2 quiet cores after the counting table, 2 threads took 1.17x the time at 50 MB, 1.01x at 200 MB).
PARALLEL_TRAIN_BYTES = 512 << 20
#: Counts and pair counts are int64 in the C++ trainer.
MAX_COUNT = (1 << 63) - 1

Progress = Callable[[str, int, int], None]


def default_train_threads(work_bytes: int) -> int:
    """Counting threads for ``work_bytes`` of training text when the caller asks for 0 (auto).

    One thread below 512 MB, where starting threads and the extra passes cost
    about what they save (measured up to 200 MB); above it, the CPUs this process may use that the
    1-minute load average leaves idle (at least 1), so a busy machine gets
    one thread.  Merges never depend on the choice.
    """
    if work_bytes < PARALLEL_TRAIN_BYTES:
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    idle = cpus - os.getloadavg()[0] if hasattr(os, "getloadavg") else cpus
    return max(1, min(cpus, int(idle + 0.5)))


@dataclass(frozen=True)
class TrainArgs:
    """The training arguments, checked (:func:`check_train_args`)."""

    vocab_size: int
    specials: dict[str, int]  # special token -> its index among the specials
    pattern: str
    min_frequency: int
    tie_break: str
    num_threads: int  # 0: chosen from the work size
    backend: str

    @property
    def special_bytes(self) -> list[bytes]:
        return [s.encode("utf-8") for s in self.specials]

    def threads(self, work_bytes: int) -> int:
        return self.num_threads if self.num_threads > 0 else default_train_threads(work_bytes)


def check_train_args(vocab_size, special_tokens, pattern, min_frequency, tie_break, num_threads, backend) -> TrainArgs:
    """The one check of the training arguments, the same for every source and backend.

    Raises:
        TypeError: a non-integer ``vocab_size``; ``special_tokens`` not a list of str.
        ValueError: ``vocab_size`` too large; an unknown ``pattern``, ``tie_break`` or
            ``backend``; ``min_frequency`` not a positive integer; ``num_threads`` not an
            integer >= 0.
    """
    check_backend(backend)
    vocab_size = as_int(vocab_size, "vocab_size")
    if vocab_size > MAX_VOCAB_SIZE:
        raise ValueError(f"vocab_size={vocab_size:,} is too large: at most {MAX_VOCAB_SIZE:,} token ids")
    if not isinstance(pattern, str) or pattern not in bpe_reference.PATTERNS:
        raise ValueError(
            f"unknown pre-tokenization pattern {pattern!r}; expected one of {sorted(bpe_reference.PATTERNS)}"
        )
    if not isinstance(tie_break, str) or tie_break not in bpe_reference.TIE_BREAKS:
        raise ValueError(f"unknown tie_break {tie_break!r}; expected one of {bpe_reference.TIE_BREAKS}")
    min_frequency = as_int(min_frequency, "min_frequency", ValueError)
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be a positive integer, got {min_frequency}")
    num_threads = as_int(num_threads, "num_threads", ValueError)
    if num_threads < 0:
        raise ValueError(f"num_threads must be >= 0 (0: chosen from the work size), got {num_threads}")
    specials = special_dict(special_tokens, 0)  # validates
    return TrainArgs(vocab_size, specials, pattern, min_frequency, tie_break, num_threads, backend)


def learn_merges(source, args: TrainArgs, progress: Progress | None = None) -> list[tuple[int, int]]:
    """The merges (id pairs; merge ``i`` makes id ``256 + i``) learned from ``source``, which is
    what :func:`storygpt.tokenizers.bpe.train_bpe` takes (module docstring); ``args`` checked by
    :func:`check_train_args`.

    Raises:
        TypeError: one path instead of a list; an item of the texts or a key of the counts
            that is neither ``str`` nor ``bytes`` (named).
        ValueError: counts that are not positive integers or too large; counts with
            ``backend="reference"``.
        FileNotFoundError, IsADirectoryError, OSError: a listed file (named).
    """
    if isinstance(source, os.PathLike):
        raise TypeError(f"source: pass a list of paths, not one path ({os.fspath(source)!r})")
    if isinstance(source, (str, bytes, bytearray)):
        data = _utf8(source) if isinstance(source, str) else bytes(source)
        pairs = _learn_text(data, args, progress)
    elif isinstance(source, Mapping):
        pairs = _learn_counts(source, args, progress)
    elif isinstance(source, (list, tuple)):
        pairs = _learn_files([os.fspath(p) for p in source], args, progress)
    else:
        pairs = _learn_texts(source, args, progress)
    return [tuple(p) for p in pairs]


def _learn_text(data: bytes, args: TrainArgs, progress: Progress | None) -> list:
    if args.backend == "reference":
        return _reference_train([data], args)
    return load_cpp().train(data=data, files=None, progress=progress, **_cpp_kwargs(args, len(data)))


def check_train_files(paths) -> list[str]:
    """The training files as ``str`` paths, each checked to be a file.

    Raises:
        FileNotFoundError, IsADirectoryError: a path that is missing or a folder (named).
    """
    files = [os.fspath(p) for p in paths]
    for p in files:
        if os.path.isdir(p):
            raise IsADirectoryError(f"training file {p} is a folder, not a file")
        if not os.path.isfile(p):
            raise FileNotFoundError(f"training file not found: {p} (texts go in as an iterator: iter(texts))")
    return files


def _learn_files(files: list[str], args: TrainArgs, progress: Progress | None) -> list:
    check_train_files(files)
    if args.backend == "reference":
        texts = []
        for p in files:
            with open(p, "rb") as f:
                texts.append(f.read())
        return _reference_train(texts, args)
    work = sum(os.path.getsize(p) for p in files)
    return load_cpp().train(data=None, files=files, progress=progress, **_cpp_kwargs(args, work))


def _cpp_kwargs(args: TrainArgs, work_bytes: int) -> dict:
    return dict(
        vocab_size=args.vocab_size,
        pattern=args.pattern,
        special_tokens=args.special_bytes,
        min_frequency=args.min_frequency,
        tie_break=args.tie_break,
        num_threads=args.threads(work_bytes),
    )


def _learn_texts(texts: Iterable, args: TrainArgs, progress: Progress | None) -> list:
    """Texts counted a batch of about :data:`ITERATOR_BATCH_BYTES` at a time, then dropped.

    The C++ counter takes the items itself (str read as UTF-8 without a copy in Python)
    and counts each batch with the GIL released.
    """
    if args.backend == "reference":
        return _reference_train(list(_text_items(texts)), args)
    # threads as for a few batches of work (small work: one thread), unless num_threads is given
    counter = load_cpp().ChunkCounter(args.pattern, args.special_bytes, args.threads(4 * ITERATOR_BATCH_BYTES))
    counter.add_texts(texts, batch_bytes=ITERATOR_BATCH_BYTES, progress=progress, label="train_bpe texts")
    return _learn_merges(counter, args, progress)


def _learn_counts(counts: Mapping, args: TrainArgs, progress: Progress | None) -> list:
    if args.backend != "cpp":
        raise ValueError("training from counts needs backend='cpp'")
    counter = load_cpp().ChunkCounter(args.pattern, args.special_bytes, 1)
    counter.add_counts(_checked_counts(counts))
    return _learn_merges(counter, args, progress)


def _learn_merges(counter, args: TrainArgs, progress: Progress | None) -> list:
    return counter.learn_merges(
        vocab_size=args.vocab_size, min_frequency=args.min_frequency, tie_break=args.tie_break, progress=progress
    )


def _checked_counts(counts: Mapping) -> dict[bytes, int]:
    """``counts`` with str keys as UTF-8 (``"a"`` and ``b"a"`` added up), every count checked.

    Raises:
        TypeError: a key is neither str nor bytes (named).
        ValueError: a count that is not a positive integer or is 2**63 or more (its chunk
            named), or counts whose pair counts could overflow int64: the sum over chunks
            of ``count * (len(chunk bytes) - 1)``, a bound on every pair count at every
            step of training, exceeds ``2**63 - 1``.
    """
    merged: dict[bytes, int] = {}
    for chunk, count in counts.items():
        if isinstance(chunk, str):
            key = _utf8(chunk)
        elif isinstance(chunk, (bytes, bytearray)):
            key = bytes(chunk)
        else:
            raise TypeError(f"train_bpe counts: chunk {chunk!r} is {type(chunk).__name__}, not str or bytes")
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(
                f"train_bpe counts: the count of chunk {chunk!r} must be a positive integer, got {count!r}"
            )
        total = merged.get(key, 0) + int(count)
        if total > MAX_COUNT:
            raise ValueError(f"train_bpe counts: the count of chunk {chunk!r} must be below 2**63, got {total}")
        merged[key] = total
    bound = sum(c * (len(k) - 1) for k, c in merged.items())
    if bound > MAX_COUNT:
        raise ValueError(
            "train_bpe counts: counts too large: pair counts could exceed 2**63-1 "
            f"(the sum of count * (chunk bytes - 1) is {bound})"
        )
    return merged


def _utf8(text: str) -> bytes:
    """``clean_text(text).encode("utf-8")``, encoding only once when there is no lone surrogate."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return clean_text(text).encode("utf-8")


def _text_items(texts: Iterable) -> Iterable[bytes]:
    """Each item as UTF-8 bytes; TypeError naming the index and type of a non-text item."""
    for i, item in enumerate(texts):
        if isinstance(item, str):
            yield _utf8(item)
        elif isinstance(item, (bytes, bytearray, memoryview)):
            yield bytes(item)
        else:
            raise TypeError(f"train_bpe texts: item {i} is {type(item).__name__}, not str or bytes")


def _reference_train(texts: list[bytes], args: TrainArgs) -> list:
    """bpe_reference.train on separate texts: joined by one more special token (and one more vocab slot)."""
    special_bytes = args.special_bytes
    if len(texts) == 1:
        return bpe_reference.train(
            texts[0], args.vocab_size, args.pattern, special_bytes, args.min_frequency, args.tie_break
        )
    sep = b"\x00<storygpt-text-separator>\x00"
    return bpe_reference.train(
        sep.join(texts), args.vocab_size + 1, args.pattern, special_bytes + [sep], args.min_frequency, args.tie_break
    )
