"""Byte-level BPE tokenizer: training, encoding with special tokens, files, other vocabularies.

Algorithm: byte-pair encoding (Sennrich, Haddow & Birch 2016) made byte-level as
in GPT-2 (Radford et al. 2019); the exact semantics (pre-tokenization patterns,
tie-breaks, lowest-rank-first merging) are those of
:mod:`storygpt.tokenizers.bpe_reference`.  The work is done by the C++ core
``storygpt._bpe`` (``backend="cpp"``, default) or by the Python reference
(``backend="reference"``, slow, for tests).

Two merge rules exist (recorded as ``"merge_rule"`` in the file):

* ``"merges"``: the merges list is the model; merge ``i`` has rank ``i``
  (trained tokenizers, :meth:`BPETokenizer.from_merges`, GPT-2's ``vocab.bpe``).
* ``"ranks"``: the vocabulary is the model, as in OpenAI's ``.tiktoken`` rank
  files and ``tiktoken``: inside a chunk, the adjacent pair whose
  *concatenation* is a token with the lowest id is merged (leftmost on ties),
  for *any* pair of tokens, not only one "official" split.  The encoder gets
  every ``(a, b, id(a + b))`` with ``a``, ``b`` and ``a + b`` all tokens, with
  rank ``id(a + b)``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import regex

from . import bpe_reference
from . import io as _io
from .base import EOT, Tokenizer, as_int, check_no_special, check_texts, resolve_special

#: The largest vocabulary: the C++ encoder takes token ids in [0, 2**26).
MAX_VOCAB_SIZE = 1 << 26

#: Unused ids allowed below the largest id (OpenAI's cl100k_base leaves 20 between its
#: special tokens); more would make the id tables grow with the largest id, not the tokens.
MAX_ID_GAP = 1024

MERGE_RULES = ("merges", "ranks")
BACKENDS = ("cpp", "reference")

#: A safe place to cut a text stream for every pattern: right after a letter or
#: digit that is followed by ASCII white space (see ``encode_iterable``).
_CUT_RX = regex.compile(r"(?r)[\p{L}\p{N}](?=[ \t\n\r])")


def _clean_text(text: str) -> str:
    """Replace lone surrogates by U+FFFD (as tiktoken does) so the text is valid UTF-8.

    Raises:
        TypeError: ``text`` is not a ``str`` (bytes must be decoded first).
    """
    if not isinstance(text, str):
        hint = " (decode it first)" if isinstance(text, (bytes, bytearray)) else ""
        raise TypeError(f"text must be a str, got {type(text).__name__}{hint}")
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _load_cpp():
    try:
        from storygpt import _bpe  # type: ignore
    except ImportError as e:
        raise ImportError(
            "the C++ extension storygpt._bpe is not built; run `python setup.py build_ext --inplace` "
            "in the repository root, or pass backend='reference'"
        ) from e
    if not hasattr(_bpe, "Encoder") or not hasattr(_bpe, "train"):
        raise ImportError(
            "this build of storygpt._bpe has no Encoder/train yet (rebuild with "
            "`python setup.py build_ext --inplace`), or pass backend='reference'"
        )
    return _bpe


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")


def _special_dict(special_tokens, first_id: int) -> dict[str, int]:
    """Specials as a dict: a mapping keeps its ids, a sequence gets ids from ``first_id``.

    Raises:
        TypeError: ``special_tokens`` is a single str/bytes or not iterable, or an item
            is neither str nor UTF-8 bytes (its index named).
        ValueError: an empty or repeated token (named).
    """
    if isinstance(special_tokens, Mapping):
        return {str(k): int(v) for k, v in special_tokens.items()}
    if isinstance(special_tokens, (str, bytes, bytearray)) or not isinstance(special_tokens, Iterable):
        raise TypeError(f"special_tokens must be a list of str, got {type(special_tokens).__name__}")
    out: dict[str, int] = {}
    for k, s in enumerate(special_tokens):
        if isinstance(s, (bytes, bytearray)):
            try:
                s = bytes(s).decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"special_tokens item {k} ({bytes(s)!r}) is not UTF-8") from None
        if not isinstance(s, str):
            raise TypeError(f"special_tokens item {k} must be a str, got {type(s).__name__} ({s!r})")
        if not s:
            raise ValueError("special tokens must be non-empty strings")
        if s in out:
            raise ValueError(f"special token {s!r} given twice")
        out[s] = first_id + len(out)
    return out


#: Texts per C++ counting call in train_from_iterator (bytes).
_ITERATOR_BATCH_BYTES = 8 << 20
#: Below this much text one counting thread is as fast as two or faster (docs/performance.md:
#: on 2 quiet cores after the counting table, 2 threads took 1.17x the time at 50 MB, 1.01x at 200 MB).
_PARALLEL_TRAIN_BYTES = 512 << 20


def default_train_threads(work_bytes: int) -> int:
    """Counting threads for ``work_bytes`` of training text when the caller asks for 0 (auto).

    One thread below 512 MB, where starting threads and the extra passes cost
    about what they save (measured up to 200 MB); above it, the CPUs this process may use that the
    1-minute load average leaves idle (at least 1), so a busy machine gets
    one thread.  Merges never depend on the choice.
    """
    if work_bytes < _PARALLEL_TRAIN_BYTES:
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    idle = cpus - os.getloadavg()[0] if hasattr(os, "getloadavg") else cpus
    return max(1, min(cpus, int(idle + 0.5)))


def _train_args(
    vocab_size, special_tokens, pattern, min_frequency, tie_break, num_threads=0
) -> tuple[int, dict[str, int], list[bytes], int, int]:
    """The training arguments checked in Python, the same for both backends.

    Returns:
        ``(vocab_size, specials as a dict, their bytes, min_frequency, num_threads)``.

    Raises:
        TypeError: a non-integer ``vocab_size``; ``special_tokens`` not a list of str.
        ValueError: ``vocab_size`` too large; an unknown ``pattern`` or ``tie_break``;
            ``min_frequency`` not a positive integer; ``num_threads`` not an integer >= 0.
    """
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
    specials = _special_dict(special_tokens, 0)  # validates
    return vocab_size, specials, [s.encode("utf-8") for s in specials], min_frequency, num_threads


#: Counts and pair counts are int64 in the C++ trainer.
_MAX_COUNT = (1 << 63) - 1


def _checked_counts(counts: Mapping) -> dict[bytes, int]:
    """``counts`` with str keys as UTF-8 (``"a"`` and ``b"a"`` added up), every count checked.

    Raises:
        TypeError: ``counts`` is not a mapping, or a key is neither str nor bytes (named).
        ValueError: a count that is not a positive integer or is 2**63 or more (its
            chunk named), or counts whose pair counts could overflow int64: the sum over
            chunks of ``count * (len(chunk bytes) - 1)``, a bound on every pair count
            at every step of training, exceeds ``2**63 - 1``.
    """
    if not isinstance(counts, Mapping):
        raise TypeError(f"counts must be a mapping chunk -> count, got {type(counts).__name__}")
    merged: dict[bytes, int] = {}
    for chunk, count in counts.items():
        if isinstance(chunk, str):
            key = _clean_text(chunk).encode("utf-8")
        elif isinstance(chunk, (bytes, bytearray)):
            key = bytes(chunk)
        else:
            raise TypeError(f"train_from_counts: chunk {chunk!r} is {type(chunk).__name__}, not str or bytes")
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(
                f"train_from_counts: the count of chunk {chunk!r} must be a positive integer, got {count!r}"
            )
        total = merged.get(key, 0) + int(count)
        if total > _MAX_COUNT:
            raise ValueError(f"train_from_counts: the count of chunk {chunk!r} must be below 2**63, got {total}")
        merged[key] = total
    bound = sum(c * (len(k) - 1) for k, c in merged.items())
    if bound > _MAX_COUNT:
        raise ValueError(
            "train_from_counts: counts too large: pair counts could exceed 2**63-1 "
            f"(the sum of count * (chunk bytes - 1) is {bound})"
        )
    return merged


def _text_items(texts: Iterable) -> Iterable[bytes]:
    """Each item as UTF-8 bytes; TypeError naming the index and type of a non-text item."""
    for i, item in enumerate(texts):
        if isinstance(item, str):
            yield _clean_text(item).encode("utf-8")
        elif isinstance(item, (bytes, bytearray, memoryview)):
            yield bytes(item)
        else:
            raise TypeError(f"train_from_iterator: item {i} is {type(item).__name__}, not str or bytes")


def _reference_train(
    texts: list[bytes], vocab_size: int, pattern: str, special_bytes: list[bytes], min_frequency: int, tie_break: str
):
    """bpe_reference.train on separate texts: joined by one more special token (and one more vocab slot)."""
    if len(texts) == 1:
        return bpe_reference.train(texts[0], vocab_size, pattern, special_bytes, min_frequency, tie_break)
    sep = b"\x00<storygpt-text-separator>\x00"
    return bpe_reference.train(
        sep.join(texts), vocab_size + 1, pattern, special_bytes + [sep], min_frequency, tie_break
    )


class BPETokenizer(Tokenizer):
    """Byte-level BPE tokenizer (no unknown token: every string is encodable).

    Args:
        vocab: id -> token bytes for every non-special token; must hold the 256
            single bytes.
        merges: ``(left_id, right_id, new_id)`` triples in rank order (rule
            ``"merges"``); ``None`` for rule ``"ranks"``.
        special_tokens: special-token string -> id (ids not used by ``vocab``).
        pattern: pre-tokenization pattern name (``"simple"``, ``"gpt2"``, ``"gpt4"``, ``"o200k"``).
        merge_rule: ``"merges"`` or ``"ranks"`` (module docstring).
        backend: ``"cpp"`` (``storygpt._bpe.Encoder``) or ``"reference"`` (Python).

    Usually built by :meth:`train`, :meth:`load`, :meth:`from_merges`,
    :meth:`from_vocab`, :meth:`from_tiktoken` or :meth:`from_gpt2_files`.

    Raises:
        ValueError: inconsistent vocabulary, merges or special tokens (named; with
            rule ``"merges"``, a vocab entry that is neither a byte nor made by a merge),
            unknown pattern, merge rule or backend; a largest id of :data:`MAX_ID_GAP`
            or more beyond the number of tokens (named).
        ImportError: ``backend="cpp"`` without the built extension.
    """

    kind = "bpe"

    def __init__(
        self,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[int, int, int]] | None,
        special_tokens: Mapping[str, int],
        pattern: str = "simple",
        merge_rule: str = "merges",
        backend: str = "cpp",
    ):
        bpe_reference._check_pattern(pattern)
        _check_backend(backend)
        if merge_rule not in MERGE_RULES:
            raise ValueError(f"unknown merge_rule {merge_rule!r}; expected one of {MERGE_RULES}")
        self.pattern = pattern
        self.merge_rule = merge_rule
        self.backend = backend
        self._vocab: dict[int, bytes] = {}
        for i, b in vocab.items():
            i = int(i)
            if i < 0:
                raise ValueError(f"negative token id {i}")
            if not isinstance(b, (bytes, bytearray)) or not b:
                raise ValueError(f"token {i} must be non-empty bytes, got {b!r}")
            self._vocab[i] = bytes(b)
        byte_ids = [-1] * 256
        for i, b in sorted(self._vocab.items()):
            if len(b) == 1 and byte_ids[b[0]] < 0:
                byte_ids[b[0]] = i
        missing = [b for b in range(256) if byte_ids[b] < 0]
        if missing:
            raise ValueError(f"vocabulary lacks {len(missing)} single-byte tokens, e.g. byte {missing[0]:#04x}")
        self._byte_ids = byte_ids

        self._special: dict[str, int] = {}
        for s, i in special_tokens.items():
            if not isinstance(s, str) or not s:
                raise ValueError(f"special token {s!r} must be a non-empty string")
            i = int(i)
            if i < 0 or i in self._vocab or i in self._special.values():
                raise ValueError(f"special token {s!r} has id {i}, which is negative or already used")
            self._special[s] = i

        if merge_rule == "merges":
            if merges is None:
                raise ValueError("merge_rule 'merges' needs a merges list")
            self._merges = [tuple(int(x) for x in m) for m in merges]
            for k, (a, b, new) in enumerate(self._merges):
                for t in (a, b, new):
                    if t not in self._vocab:
                        raise ValueError(f"merge {k} ({a}, {b}) -> {new} uses id {t}, not in the vocabulary")
                if self._vocab[a] + self._vocab[b] != self._vocab[new]:
                    raise ValueError(
                        f"merge {k}: token {new} = {self._vocab[new]!r} is not {self._vocab[a]!r} + {self._vocab[b]!r}"
                    )
            self._check_all_made(byte_ids)
            enc_merges, enc_ranks = self._merges, None
        else:
            if merges is not None:
                raise ValueError("merge_rule 'ranks' takes no merges list (the vocabulary ranks are the model)")
            self._merges = None
            enc_merges, enc_ranks = self._rank_merges()

        size = max(list(self._vocab) + list(self._special.values())) + 1
        n_tokens = len(self._vocab) + len(self._special)
        if size > n_tokens + MAX_ID_GAP:
            raise ValueError(
                f"token id {size - 1} is far beyond the {n_tokens:,} tokens: ids must be below the number of "
                f"tokens + {MAX_ID_GAP:,} (unused ids cost memory in the encoder)"
            )
        self._id_bytes: list[bytes | None] = [None] * size
        for i, b in self._vocab.items():
            self._id_bytes[i] = b
        for s, i in self._special.items():
            self._id_bytes[i] = s.encode("utf-8")
        self._vocab_size = size
        self._known = np.array([b is not None for b in self._id_bytes], dtype=bool)
        self._is_special = np.zeros(size, dtype=bool)
        self._is_special[list(self._special.values())] = True

        self._id_objects: list[int] | None = None  # list(range(vocab size)) for encode_list
        if backend == "cpp":
            self._encoder = _load_cpp().Encoder(enc_merges, byte_ids, pattern, enc_ranks)
            # made with the encoder, not by the first encode (~4 ms for 100k ids on a busy machine)
            self._id_objects = list(range(size))
        else:
            self._encoder = bpe_reference.Encoder(enc_merges, byte_ids, pattern, enc_ranks)

    def _check_all_made(self, byte_ids: list[int]) -> None:
        """Every vocab entry is a byte token or made by a merge (rule ``"merges"``).

        An entry no merge makes is never produced by encoding, and the encoder
        cannot decode it: such a vocabulary is a cut or corrupt file.

        Raises:
            ValueError: the first such entry, with its id and bytes.
        """
        made = set(byte_ids)
        made.update(new for _, _, new in self._merges)
        for i in sorted(self._vocab):
            if i not in made:
                b = self._vocab[i]
                extra = f"; byte {b[0]:#04x} is id {byte_ids[b[0]]}" if len(b) == 1 else ""
                raise ValueError(
                    f"vocab entry {i} (token {b!r}) is not produced by any merge and is not a byte or special token"
                    + extra
                )

    def _rank_merges(self) -> tuple[list[tuple[int, int, int]], list[int]]:
        """Every split (a, b) of every token with a, b tokens: merge (a, b) -> a+b at rank id(a+b)."""
        by_bytes: dict[bytes, int] = {}
        for i, b in self._vocab.items():
            if b in by_bytes:
                raise ValueError(f"merge_rule 'ranks' needs distinct tokens; {b!r} has ids {by_bytes[b]} and {i}")
            by_bytes[b] = i
        merges: list[tuple[int, int, int]] = []
        ranks: list[int] = []
        unreachable = []
        get = by_bytes.get
        # shorter tokens first (then by id), so that every part is defined before it is used
        for i, b in sorted(self._vocab.items(), key=lambda kv: (len(kv[1]), kv[0])):
            n = len(b)
            if n < 2:
                continue
            before = len(merges)
            for k in range(1, n):
                left = get(b[:k])
                if left is not None:
                    right = get(b[k:])
                    if right is not None:
                        merges.append((left, right, i))
                        ranks.append(i)
            if len(merges) == before:
                unreachable.append(b)
        if unreachable:
            raise ValueError(f"{len(unreachable)} tokens cannot be split into two tokens, e.g. {unreachable[0]!r}")
        return merges, ranks

    # ------------------------------------------------------------ construction
    @classmethod
    def train(
        cls,
        text_or_files: str | bytes | Sequence[str | os.PathLike],
        vocab_size: int,
        pattern: str = "simple",
        special_tokens: Sequence[str] = ("<pad>", EOT),
        min_frequency: int = 1,
        tie_break: str = "smallest_ids",
        num_threads: int = 0,
        backend: str = "cpp",
        progress: Callable[[str, int, int], None] | None = None,
    ) -> BPETokenizer:
        """Learn a BPE vocabulary.

        Args:
            text_or_files: the training text (``str`` or ``bytes``), or a list of
                file paths (streamed in windows by the C++ trainer, never read whole;
                each file is a separate text, chunks never cross files).  Bytes and
                files are trained on as bytes (byte-level BPE): they are never
                decoded, so bytes that are not UTF-8 are counted and merged like any
                others.  A single path must still be a list.
            vocab_size: final vocabulary size: 256 bytes + merges + special
                tokens (fewer merges are learned when the text runs out of pairs;
                a ``UserWarning`` then gives the size reached).
            pattern: pre-tokenization pattern name (``"simple"``, ``"gpt2"``,
                ``"gpt4"``, ``"o200k"``).
            special_tokens: registered special tokens, a list of ``str``; they
                split the training text, are never merged, and get the last ids.
            min_frequency: a positive integer: stop when the best pair occurs
                fewer times.
            tie_break: ``"smallest_ids"`` or ``"largest_bytes"`` (see bpe_reference).
            num_threads: counting threads (an integer >= 0); 0 chooses from the work
                size and the machine (:func:`default_train_threads`).  Merges never
                depend on it.
            backend: ``"cpp"`` (``storygpt._bpe.train``) or ``"reference"``.
            progress: ``callback(stage, done, total)``, called now and then
                (``cpp`` backend): stage ``"count"`` with bytes, ``"merge"`` with
                merges; ``total`` is 0 when unknown.  An exception it raises ends
                training.

        Returns:
            A tokenizer with ids: bytes ``0..255``, merge ``i`` at ``256 + i``,
            then the special tokens in the order given.

        Raises:
            ValueError: bad ``vocab_size``, pattern, tie-break, ``min_frequency`` or
                ``num_threads`` (checked in Python for both backends, the value named).
            TypeError: ``special_tokens`` is not a list of str (a single str
                included); ``text_or_files`` is one path instead of a list.
            FileNotFoundError: a listed file does not exist (named).
            IsADirectoryError: a listed path is a folder (named).
            OSError: a listed file cannot be read (named).
        """
        _check_backend(backend)
        vocab_size, specials, special_bytes, min_frequency, num_threads = _train_args(
            vocab_size, special_tokens, pattern, min_frequency, tie_break, num_threads
        )
        if isinstance(text_or_files, os.PathLike):
            raise TypeError(f"text_or_files: pass a list of paths, not one path ({os.fspath(text_or_files)!r})")
        if isinstance(text_or_files, (str, bytes, bytearray)):
            data = (
                _clean_text(text_or_files).encode("utf-8") if isinstance(text_or_files, str) else bytes(text_or_files)
            )
            files = None
            work = len(data)
        else:
            data = None
            files = [os.fspath(p) for p in text_or_files]
            for p in files:
                if os.path.isdir(p):
                    raise IsADirectoryError(f"training file {p} is a folder, not a file")
                if not os.path.isfile(p):
                    raise FileNotFoundError(f"training file not found: {p}")
            work = sum(os.path.getsize(p) for p in files)
        threads = num_threads if num_threads > 0 else default_train_threads(work)
        if backend == "cpp":
            pairs = _load_cpp().train(
                data=data,
                files=files,
                vocab_size=vocab_size,
                pattern=pattern,
                special_tokens=special_bytes,
                min_frequency=min_frequency,
                tie_break=tie_break,
                num_threads=threads,
                progress=progress,
            )
        else:
            texts = [data] if files is None else [open(p, "rb").read() for p in files]
            pairs = _reference_train(texts, vocab_size, pattern, special_bytes, min_frequency, tie_break)
        tok = cls.from_merges_ids(
            [tuple(p) for p in pairs], special_tokens=specials.keys(), pattern=pattern, backend=backend
        )
        if tok.vocab_size < vocab_size:
            warnings.warn(
                f"BPE training stopped at vocab_size {tok.vocab_size:,} ({len(pairs):,} merges), short of the "
                f"{vocab_size:,} asked: the text ran out of pairs occurring at least min_frequency={min_frequency} times",
                stacklevel=2,
            )
        return tok

    @classmethod
    def train_from_iterator(
        cls,
        texts: Iterable[str | bytes],
        vocab_size: int,
        pattern: str = "simple",
        special_tokens: Sequence[str] = ("<pad>", EOT),
        min_frequency: int = 1,
        tie_break: str = "smallest_ids",
        num_threads: int = 0,
        backend: str = "cpp",
        progress: Callable[[str, int, int], None] | None = None,
    ) -> BPETokenizer:
        """Learn a BPE vocabulary from texts that arrive one by one (a generator, a dataset).

        Each item is a separate text: chunks never cross items.  The texts are
        counted a batch of about 8 MB at a time and then dropped, so memory
        holds the distinct chunks and one batch, not the corpus.  The merges
        equal :meth:`train` on the texts joined by a special token.

        Args:
            texts: ``str`` (lone surrogates become U+FFFD) or ``bytes`` items
                (trained on as bytes, UTF-8 or not, as :meth:`train`).
            vocab_size, pattern, special_tokens, min_frequency, tie_break,
            num_threads, backend, progress: as :meth:`train`; progress reports
                ``"count"`` with the bytes counted so far (total 0: unknown).

        Raises:
            TypeError: an item is neither ``str`` nor ``bytes`` (its index and type
                named); ``special_tokens`` as :meth:`train`.
            ValueError: as :meth:`train`.
        """
        _check_backend(backend)
        vocab_size, specials, special_bytes, min_frequency, num_threads = _train_args(
            vocab_size, special_tokens, pattern, min_frequency, tie_break, num_threads
        )
        if isinstance(texts, (str, bytes, bytearray)):
            raise TypeError("texts must be an iterable of texts, not a single text (use train())")
        if backend == "reference":
            pairs = _reference_train(
                list(_text_items(texts)), vocab_size, pattern, special_bytes, min_frequency, tie_break
            )
        else:
            counter = None
            batch: list[bytes] = []
            batch_bytes = done = 0

            def flush(last: bool) -> None:
                nonlocal counter, batch, batch_bytes, done
                if counter is None:  # threads chosen from the first batch: small work, one thread
                    work = batch_bytes if last else _ITERATOR_BATCH_BYTES * 4
                    threads = num_threads if num_threads > 0 else default_train_threads(work)
                    counter = _load_cpp().ChunkCounter(pattern, special_bytes, threads)
                if batch:
                    counter.add_texts(batch)
                done += batch_bytes
                batch, batch_bytes = [], 0
                if progress is not None:
                    progress("count", done, 0)

            for item in _text_items(texts):
                batch.append(item)
                batch_bytes += len(item)
                if batch_bytes >= _ITERATOR_BATCH_BYTES:
                    flush(last=False)
            flush(last=True)
            pairs = counter.learn_merges(
                vocab_size=vocab_size, min_frequency=min_frequency, tie_break=tie_break, progress=progress
            )
        return cls.from_merges_ids(
            [tuple(p) for p in pairs], special_tokens=specials.keys(), pattern=pattern, backend=backend
        )

    @classmethod
    def train_from_counts(
        cls,
        counts: Mapping[str | bytes, int],
        vocab_size: int,
        pattern: str = "simple",
        special_tokens: Sequence[str] = ("<pad>", EOT),
        min_frequency: int = 1,
        tie_break: str = "smallest_ids",
        progress: Callable[[str, int, int], None] | None = None,
    ) -> BPETokenizer:
        """Learn a BPE vocabulary from chunk counts, e.g. word counts gathered elsewhere.

        Each key is one pre-tokenization chunk, used as is (not split again);
        ``pattern`` is only recorded in the tokenizer, for encoding.  The merges
        equal :meth:`train` on any text whose chunks have these counts
        (``bpe_reference.count_chunks``).  C++ backend only.

        Args:
            counts: chunk (``str`` or UTF-8 ``bytes``; ``"a"`` and ``b"a"`` add
                up) -> count, a positive integer.
            vocab_size, pattern, special_tokens, min_frequency, tie_break,
            progress: as :meth:`train`.

        Raises:
            TypeError: a key is neither ``str`` nor ``bytes`` (named).
            ValueError: a count is not a positive integer below ``2**63`` (its chunk
                named); counts so large that a pair count could exceed ``2**63 - 1``
                (the C++ trainer counts in int64): the sum over chunks of
                ``count * (len(chunk bytes) - 1)`` must stay below it; as :meth:`train`.
        """
        vocab_size, specials, special_bytes, min_frequency, _ = _train_args(
            vocab_size, special_tokens, pattern, min_frequency, tie_break
        )
        merged = _checked_counts(counts)
        counter = _load_cpp().ChunkCounter(pattern, special_bytes, 1)
        counter.add_counts(merged)
        pairs = counter.learn_merges(
            vocab_size=vocab_size, min_frequency=min_frequency, tie_break=tie_break, progress=progress
        )
        return cls.from_merges_ids([tuple(p) for p in pairs], special_tokens=specials.keys(), pattern=pattern)

    @classmethod
    def from_merges_ids(
        cls,
        merges: Sequence[tuple[int, int]],
        special_tokens=("<pad>", EOT),
        pattern: str = "simple",
        backend: str = "cpp",
    ) -> BPETokenizer:
        """From merges as id pairs (``bpe_reference.train`` output): merge ``i`` makes id ``256 + i``."""
        vocab = {b: bytes([b]) for b in range(256)}
        triples = []
        for k, (a, b) in enumerate(merges):
            if a not in vocab or b not in vocab:
                raise ValueError(f"merge {k} ({a}, {b}) uses an id not defined before it")
            vocab[256 + k] = vocab[a] + vocab[b]
            triples.append((a, b, 256 + k))
        return cls(vocab, triples, _special_dict(special_tokens, len(vocab)), pattern, "merges", backend)

    @classmethod
    def from_merges(
        cls,
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens=("<pad>", EOT),
        pattern: str = "simple",
        backend: str = "cpp",
    ) -> BPETokenizer:
        """From merges as byte-string pairs (rank = list order).

        Ids: byte ``b`` is ``b``, merge ``i`` makes ``256 + i``, special tokens
        follow (a sequence) or keep their ids (a dict str -> id).

        Raises:
            ValueError: a merge uses a token not made by an earlier merge (named).
        """
        by_bytes = {bytes([b]): b for b in range(256)}
        pairs = []
        for k, (a, b) in enumerate(merges):
            a, b = bytes(a), bytes(b)
            if a not in by_bytes or b not in by_bytes:
                raise ValueError(f"merge {k} ({a!r}, {b!r}) uses a token not made by an earlier merge")
            pairs.append((by_bytes[a], by_bytes[b]))
            by_bytes.setdefault(a + b, 256 + k)
        return cls.from_merges_ids(pairs, special_tokens, pattern, backend)

    @classmethod
    def from_vocab(
        cls,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens=(EOT,),
        pattern: str = "simple",
        backend: str = "cpp",
    ) -> BPETokenizer:
        """From someone else's vocabulary and merges, keeping their ids (rank = merges order).

        Args:
            vocab: id -> token bytes (distinct; the 256 single bytes included).
            merges: ``(left bytes, right bytes)`` pairs; ``left + right`` must be in ``vocab``.
            special_tokens: dict str -> id (kept), or a sequence (ids after the largest id).

            A special token whose bytes are already a token of ``vocab`` keeps that id.

        Raises:
            ValueError: a merge whose parts or result is not in ``vocab`` (named); two
                merges that make the same token (both named).
        """
        vocab = {int(i): bytes(b) for i, b in vocab.items()}
        by_bytes: dict[bytes, int] = {}
        for i, b in vocab.items():
            if b in by_bytes:
                raise ValueError(f"token {b!r} appears twice (ids {by_bytes[b]} and {i})")
            by_bytes[b] = i
        # A special token already in the vocabulary keeps its id (it is not given a second one).
        if isinstance(special_tokens, Mapping):
            specials = {str(k): int(v) for k, v in special_tokens.items()}
        else:
            specials = {}
            next_id = max(by_bytes.values()) + 1
            for s in _special_dict(special_tokens, 0):
                if s.encode("utf-8") in by_bytes:
                    specials[s] = by_bytes[s.encode("utf-8")]
                else:
                    specials[s] = next_id
                    next_id += 1
        for s, i in specials.items():
            if vocab.get(i) == s.encode("utf-8"):
                del vocab[i], by_bytes[s.encode("utf-8")]
        triples = []
        made: dict[int, int] = {}
        for k, (a, b) in enumerate(merges):
            a, b = bytes(a), bytes(b)
            for t in (a, b, a + b):
                if t not in by_bytes:
                    raise ValueError(f"merge {k} ({a!r}, {b!r}): token {t!r} is not in the vocabulary")
            new = by_bytes[a + b]
            if new in made:
                j = made[new]
                raise ValueError(
                    f"merges {j} ({merges[j][0]!r}, {merges[j][1]!r}) and {k} ({a!r}, {b!r}) both make token {new} "
                    f"({a + b!r}): each token must be made by one merge"
                )
            made[new] = k
            triples.append((by_bytes[a], by_bytes[b], new))
        return cls(vocab, triples, specials, pattern, "merges", backend)

    @classmethod
    def from_ranks(
        cls,
        ranks: Mapping[bytes, int],
        special_tokens: Mapping[str, int] | Sequence[str] = (EOT,),
        pattern: str = "gpt2",
        backend: str = "cpp",
    ) -> BPETokenizer:
        """From tiktoken-style mergeable ranks (token bytes -> rank = id); merge rule ``"ranks"``."""
        vocab = {int(i): bytes(b) for b, i in ranks.items()}
        specials = _special_dict(special_tokens, max(vocab) + 1)
        return cls(vocab, None, specials, pattern, "ranks", backend)

    @classmethod
    def from_tiktoken(
        cls,
        name_or_path: str | os.PathLike,
        pattern: str | None = None,
        special_tokens: Mapping[str, int] | Sequence[str] | None = None,
        backend: str = "cpp",
    ) -> BPETokenizer:
        """OpenAI's vocabularies (``"gpt2"``, ``"cl100k_base"``, ``"o200k_base"``, or a ``.tiktoken``
        file); see :func:`storygpt.tokenizers.interop.from_tiktoken`."""
        from . import interop

        return interop.from_tiktoken(name_or_path, pattern, special_tokens, backend)

    @classmethod
    def from_gpt2_files(
        cls, encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike, pattern: str = "gpt2", backend: str = "cpp"
    ) -> BPETokenizer:
        """GPT-2's ``encoder.json`` and ``vocab.bpe``; see :func:`storygpt.tokenizers.interop.from_gpt2_files`."""
        from . import interop

        return interop.from_gpt2_files(encoder_json, vocab_bpe, pattern, backend)

    @classmethod
    def from_hf(cls, path: str | os.PathLike, backend: str = "cpp") -> BPETokenizer:
        """A byte-level BPE Hugging Face ``tokenizer.json``; see :func:`storygpt.tokenizers.interop.from_hf`."""
        from . import interop

        return interop.from_hf(path, backend)

    def save_hf(self, path: str | os.PathLike) -> None:
        """Write a Hugging Face ``tokenizer.json``; see :func:`storygpt.tokenizers.interop.save_hf`."""
        from . import interop

        interop.save_hf(self, path)

    def to_tiktoken(self, name: str | None = None):
        """A ``tiktoken.Encoding`` with the same ids; see :func:`storygpt.tokenizers.interop.to_tiktoken`."""
        from . import interop

        return interop.to_tiktoken(self, name)

    def save_tiktoken(self, path: str | os.PathLike) -> None:
        """Write a ``.tiktoken`` rank file; see :func:`storygpt.tokenizers.interop.save_tiktoken`."""
        from . import interop

        interop.save_tiktoken(self, path)

    # ------------------------------------------------------------- properties
    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._special)

    @property
    def pad_id(self) -> int | None:
        return self._special.get("<pad>")

    @property
    def eot_id(self) -> int | None:
        return self._special.get(EOT)

    @property
    def unk_id(self) -> None:
        return None

    @property
    def byte_ids(self) -> list[int]:
        """``byte_ids[b]``: the id of the single byte ``b``."""
        return list(self._byte_ids)

    @property
    def merges(self) -> list[tuple[int, int, int]] | None:
        """``(left, right, new)`` id triples in rank order (rule ``"merges"``), else None."""
        return None if self._merges is None else list(self._merges)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one token (a special token: its UTF-8).

        Raises:
            ValueError: unknown id (named).
        """
        t = int(token_id)
        b = self._id_bytes[t] if 0 <= t < self._vocab_size else None
        if b is None:
            raise ValueError(f"unknown token id {t} (vocab_size {self._vocab_size})")
        return b

    def id_to_token(self, token_id: int) -> str:
        """Printable token: its text, with undecodable bytes shown as ``\\xNN``."""
        return self.token_bytes(token_id).decode("utf-8", errors="backslashreplace")

    # ---------------------------------------------------------------- encode
    def _special_rx(self, allowed: frozenset):
        """``(compiled alternation of the allowed special tokens or None, longest length)``, cached."""
        cache = self.__dict__.setdefault("_rx_cache", {})
        if allowed not in cache:
            names = sorted(allowed, key=lambda s: (-len(s), s))  # longest first: the longest match wins
            cache[allowed] = (
                (regex.compile("|".join(regex.escape(s) for s in names)), max(len(s) for s in names))
                if names
                else (None, 0)
            )
        return cache[allowed]

    def _split(self, text: str, rx) -> list[str | int]:
        """Plain pieces (str, non-empty) and special-token ids (int), in order."""
        if rx is None:
            return [text] if text else []
        out: list[str | int] = []
        pos = 0
        for m in rx.finditer(text):
            if m.start() > pos:
                out.append(text[pos : m.start()])
            out.append(self._special[m.group()])
            pos = m.end()
        if pos < len(text):
            out.append(text[pos:])
        return out

    def _encode_bytes(self, data: bytes | str) -> list[int]:
        """Ids of ``data`` (bytes, or a str without lone surrogates) as a list."""
        if self.backend == "cpp":  # one shared int object per id, not one new int per token
            return self._encoder.encode_list(data, self._id_list())
        if isinstance(data, str):
            data = data.encode("utf-8")
        return list(self._encoder.encode(data))

    def encode(self, text: str, allowed_special=frozenset(), disallowed_special="all") -> list[int]:
        """Encode ``text`` to ids (tiktoken's rules for special tokens).

        Allowed special tokens found in ``text`` become their ids (longest match
        first); they are never merged with neighbours.  Lone surrogates become U+FFFD.

        Args:
            text: any string.
            allowed_special: ``"all"`` or a set of special-token strings to recognise
                (default: none).
            disallowed_special: ``"all"`` (default: the special tokens not allowed) or a
                set: finding one in ``text`` raises ValueError; ``()``: plain text.

        Returns:
            list of int ids in ``range(vocab_size)``.

        Raises:
            ValueError: a disallowed special token in ``text`` (named); an argument
                that names an unregistered token.
        """
        text = _clean_text(text)
        allowed, disallowed = resolve_special(allowed_special, disallowed_special, self._special)
        check_no_special(text, disallowed)
        rx, _ = self._special_rx(allowed)
        out: list[int] = []
        for piece in self._split(text, rx):
            if isinstance(piece, int):
                out.append(piece)
            else:
                out.extend(self._encode_bytes(piece.encode("utf-8")))
        return out

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode with every special token treated as plain text."""
        if isinstance(text, str):
            try:
                return self._encode_bytes(text)
            except UnicodeEncodeError:  # lone surrogates: replaced below
                pass
        return self._encode_bytes(_clean_text(text).encode("utf-8"))

    def _id_list(self) -> list[int]:
        """``list(range(vocab_size))``, made once: the int objects the C++ core puts in its lists."""
        if self._id_objects is None:
            self._id_objects = list(range(self._vocab_size))
        return self._id_objects

    def _batch_plan(self, texts: list, allowed_special, disallowed_special) -> tuple[list[str], list | None]:
        """``(pieces, split)``: the plain pieces of ``texts`` to encode, and each text's parts.

        ``split`` is None when no special token is allowed (the pieces are then the
        texts themselves), else each text's parts as :meth:`_split` gives them.

        Raises:
            TypeError: an item that is not a str.
            ValueError: a disallowed special token in a text (named).
        """
        for t in texts:
            if not isinstance(t, str):
                _clean_text(t)  # raises the TypeError
        allowed, disallowed = resolve_special(allowed_special, disallowed_special, self._special)
        for t in texts:
            check_no_special(t, disallowed)
        rx, _ = self._special_rx(allowed)
        if rx is None:
            return texts, None
        split = [self._split(t, rx) for t in texts]
        return [p for parts in split for p in parts if isinstance(p, str)], split

    def _with_clean_retry(self, encode, texts: Sequence[str]):
        """``encode(list of texts)``, again with lone surrogates replaced if the UTF-8 encoding fails."""
        check_texts(texts)
        texts = list(texts)
        try:
            return encode(texts)
        except UnicodeEncodeError:  # rare: clean every text only then
            return encode([_clean_text(t) for t in texts])

    def _encode_many(self, pieces: list[str], num_threads: int) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, offsets)`` of plain pieces, as the core's ``encode_batch`` returns them."""
        if self.backend == "cpp":
            return self._encoder.encode_batch(pieces, num_threads)
        arrays = [np.asarray(self._encoder.encode(p.encode("utf-8")), dtype=np.uint32) for p in pieces]
        offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
        np.cumsum([len(a) for a in arrays], out=offsets[1:])
        ids = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.uint32)
        return ids.astype(np.uint32, copy=False), offsets

    def encode_batch_numpy(
        self, texts: Sequence[str], num_threads: int = 0, allowed_special=frozenset(), disallowed_special="all"
    ):
        """Encode many texts at once (C++: one multi-threaded call); specials as :meth:`encode`.

        Args:
            texts: a list (or other sequence) of str.
            num_threads: threads of the C++ core (0: all cores).
            allowed_special, disallowed_special: as :meth:`encode`.

        Returns:
            ``(ids, offsets)``: uint32 ids of all texts concatenated, int64
            offsets of shape ``(len(texts) + 1,)``; text k is ``ids[offsets[k]:offsets[k + 1]]``.

        Raises:
            TypeError: ``texts`` is a single str, or an item is not a str.
            ValueError: a disallowed special token in a text (named).
        """
        return self._with_clean_retry(
            lambda t: self._batch_numpy(t, num_threads, allowed_special, disallowed_special), texts
        )

    def _batch_numpy(self, texts: list, num_threads: int, allowed_special, disallowed_special):
        pieces, split = self._batch_plan(texts, allowed_special, disallowed_special)
        ids, offsets = self._encode_many(pieces, num_threads)
        if split is None:
            return ids, offsets
        arrays: list[np.ndarray] = []
        out_offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        total = j = 0
        for k, parts in enumerate(split):
            for p in parts:
                if isinstance(p, int):
                    a = np.array([p], dtype=np.uint32)
                else:
                    a = ids[offsets[j] : offsets[j + 1]]
                    j += 1
                arrays.append(a)
                total += len(a)
            out_offsets[k + 1] = total
        out = np.concatenate(arrays).astype(np.uint32, copy=False) if arrays else np.zeros(0, dtype=np.uint32)
        return out, out_offsets

    def encode_batch(
        self, texts: Sequence[str], num_threads: int = 0, allowed_special=frozenset(), disallowed_special="all"
    ) -> list[list[int]]:
        """Encode many texts; one list of ids per text; specials as :meth:`encode`.

        With the C++ core the lists are built while its threads encode (one
        shared int object per id), so threads speed up the whole call.

        Args:
            texts: a list (or other sequence) of str.
            num_threads: threads of the C++ core (0: all cores).
            allowed_special, disallowed_special: as :meth:`encode`.

        Returns:
            ``len(texts)`` lists of int ids in ``range(vocab_size)``.

        Raises:
            TypeError: ``texts`` is a single str, or an item is not a str.
            ValueError: a disallowed special token in a text (named).
        """
        return self._with_clean_retry(
            lambda t: self._batch_lists(t, num_threads, allowed_special, disallowed_special), texts
        )

    def _batch_lists(self, texts: list, num_threads: int, allowed_special, disallowed_special) -> list[list[int]]:
        pieces, split = self._batch_plan(texts, allowed_special, disallowed_special)
        if self.backend == "cpp":
            lists = self._encoder.encode_batch_lists(pieces, self._id_list(), num_threads)
        else:
            lists = [list(self._encoder.encode(p.encode("utf-8"))) for p in pieces]
        if split is None:
            return lists
        encoded = iter(lists)
        out: list[list[int]] = []
        for parts in split:
            row: list[int] = []
            for p in parts:
                if isinstance(p, int):
                    row.append(p)
                else:
                    row.extend(next(encoded))
            out.append(row)
        return out

    def _safe_cut_for(self, specials: frozenset):
        """Where :meth:`encode_iterable` may cut its buffer.

        A safe cut is a position right after a letter or digit
        (``\\p{L}``/``\\p{N}``) that is followed by ASCII white space (space,
        tab, newline, carriage return), not inside a special token and at
        least one special-token length before the buffer end, or the end of a
        special token.  No pre-tokenization chunk of any of the three patterns
        crosses such a position, and the text before it does not end in white
        space (so patterns with ``$`` or look-ahead see the same chunks), which
        is why chunks that span ``"\\n"`` (``gpt2``/``gpt4``) are safe.  Text
        without any safe cut (no letter before white space) is held until one
        comes or the input ends.
        """
        # Lone surrogates are not cleaned before cutting: one at the end may pair with the
        # next line's (encode() cleans each part; a safe cut never falls between two surrogates).
        rx, maxlen = self._special_rx(frozenset(specials))
        return lambda text: self._safe_cut(text, rx, maxlen, self._cut_rx)

    #: Reverse-search regex whose match end is a chunk boundary no later text moves
    #: (subclasses with other patterns replace it; SuperBPETokenizer does).
    _cut_rx = _CUT_RX

    @staticmethod
    def _safe_cut(text: str, rx, maxlen: int, cut_rx=_CUT_RX) -> int:
        """The largest safe cut position in ``text`` (0 if none); see :meth:`_safe_cut_for`."""
        limit = len(text) - max(maxlen, 1)
        if limit <= 0:
            return 0
        spans = [m.span() for m in rx.finditer(text)] if rx is not None else []
        best_special = max((e for s, e in spans if e <= limit), default=0)
        end = limit + 1  # the look-ahead may see text[limit]
        while end > best_special:
            m = cut_rx.search(text, 0, end)
            if m is None:
                break
            p = m.end()
            inside = [s for s, e in spans if s < p < e]
            if not inside:
                return max(p, best_special)
            end = min(inside)
        return best_special

    # ---------------------------------------------------------------- decode
    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The concatenated bytes of ``ids`` (special tokens as their UTF-8).

        Raises:
            ValueError: an unknown id (named).
        """
        arr = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids))
        if arr.size == 0:
            return b""
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise ValueError(f"ids must be a 1-D sequence of integers, got shape {arr.shape} dtype {arr.dtype}")
        arr = arr.astype(np.int64, copy=False)
        bad = (arr < 0) | (arr >= self._vocab_size)
        if not bad.any():
            bad = ~self._known[arr]
        if bad.any():
            i = int(arr[np.argmax(bad)])
            raise ValueError(f"unknown token id {i} (vocab_size {self._vocab_size})")
        if self.backend != "cpp":
            return b"".join(map(self._id_bytes.__getitem__, arr.tolist()))
        # C++ decode for runs of ordinary ids; special tokens (unknown to the encoder) in between
        special_at = np.flatnonzero(self._is_special[arr])
        if special_at.size == 0:
            return self._encoder.decode(arr.astype(np.uint32))
        parts = []
        start = 0
        for k in special_at.tolist():
            if k > start:
                parts.append(self._encoder.decode(arr[start:k].astype(np.uint32)))
            parts.append(self._id_bytes[int(arr[k])])
            start = k + 1
        if start < arr.size:
            parts.append(self._encoder.decode(arr[start:].astype(np.uint32)))
        return b"".join(parts)

    def decode(self, ids: Iterable[int]) -> str:
        """Decode ids to text: all bytes joined, then UTF-8 with ``errors="replace"``.

        A character split across tokens comes back whole; invalid byte
        sequences become U+FFFD.

        Raises:
            ValueError: an unknown id (named).
        """
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    # --------------------------------------------------------------- storage
    def to_dict(self) -> dict:
        d = {
            "format": _io.FORMAT_NAME,
            "version": _io.FORMAT_VERSION,
            "kind": "bpe",
            "pattern": self.pattern,
            "merge_rule": self.merge_rule,
            "token_encoding": 'utf-8 string, or {"hex": ...} for bytes that are not plain UTF-8 text',
            "special_tokens": dict(sorted(self._special.items(), key=lambda kv: kv[1])),
            "vocab": [[i, _io.token_to_json(b)] for i, b in sorted(self._vocab.items())],
        }
        if self._merges is not None:
            d["merges"] = [list(m) for m in self._merges]
        return d

    @classmethod
    def from_dict(cls, d: dict, backend: str = "cpp") -> BPETokenizer:
        """Rebuild from :meth:`to_dict` output (or a loaded file).

        Raises:
            TokenizerFileError: wrong format, version or kind.
            ValueError, KeyError, TypeError: malformed content.
        """
        kind = _io.check_header(d)
        if kind != "bpe":
            raise _io.TokenizerFileError(f"expected a 'bpe' tokenizer, got {kind!r}")
        vocab = {}
        for entry in d["vocab"]:
            if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], int)):
                raise ValueError(f"bad vocab entry {entry!r}: expected [id, token]")
            if entry[0] in vocab:
                raise ValueError(f"token id {entry[0]} appears twice in vocab")
            vocab[entry[0]] = _io.token_from_json(entry[1])
        rule = d.get("merge_rule", "merges")
        merges = None
        if rule == "merges":
            merges = []
            for m in d["merges"]:
                if not (isinstance(m, list) and len(m) == 3 and all(isinstance(x, int) for x in m)):
                    raise ValueError(f"bad merge {m!r}: expected [left_id, right_id, new_id]")
                merges.append(tuple(m))
        specials = d["special_tokens"]
        if not isinstance(specials, dict):
            raise ValueError("special_tokens must be an object {token: id}")
        return cls(vocab, merges, specials, d["pattern"], rule, backend)

    @classmethod
    def load(cls, path, backend: str = "cpp") -> BPETokenizer:
        """Load a BPE tokenizer file (see :meth:`Tokenizer.load`)."""
        return super().load(path, backend=backend)

    def __repr__(self) -> str:
        return (
            f"BPETokenizer(vocab_size={self.vocab_size}, pattern={self.pattern!r}, "
            f"merge_rule={self.merge_rule!r}, specials={list(self._special)}, backend={self.backend!r})"
        )


class ByteTokenizer(BPETokenizer):
    """The 256 bytes and no merges: byte ``b`` is id ``b``, ``<|endoftext|>`` is id 256.

    What the SPEC ``byte`` builds: every UTF-8 byte of the text is one token (a baseline
    with the smallest vocabulary and the longest sequences).  Stored as a ``"bpe"``
    tokenizer without merges, so its files and checkpoints load as a
    :class:`BPETokenizer` with the same ids.

    Args:
        backend: ``"cpp"`` or ``"reference"``.
    """

    def __init__(self, backend: str = "cpp"):
        super().__init__({b: bytes([b]) for b in range(256)}, [], {EOT: 256}, "simple", "merges", backend)

    def __repr__(self) -> str:
        return f"ByteTokenizer(vocab_size={self.vocab_size}, backend={self.backend!r})"


def gpt2_bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible table byte -> printable character used by ``encoder.json``/``vocab.bpe``.

    Bytes that are printable Latin-1 characters (``!``..``~``, ``¡``..``¬``,
    ``®``..``ÿ``) map to themselves; the other 68 bytes map, in increasing
    order, to code points 256, 257, ... (Radford et al. 2019, GPT-2's encoder.py).
    """
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table = {b: chr(b) for b in keep}
    n = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + n)
            n += 1
    return dict(sorted(table.items()))
