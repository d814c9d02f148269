"""Byte-level BPE: the vocabulary class, :class:`BPETokenizer`, its constructors and :func:`train_bpe`.

:class:`BPETokenizer` is the vocabulary (as tiktoken's ``Encoding``), built by :func:`train_bpe`
or the classmethods ``from_merges``, ``from_merges_ids``, ``from_vocab``, ``from_ranks``,
``from_parts``, ``from_dict``/``load``; checks in :mod:`~storygpt.tokenizers.bpe_vocab`.  The last
release's spellings (``BPETokenizer.train``, ``.from_tiktoken``, ``tok.save_hf``, ...) still work
and warn ``DeprecationWarning`` naming their replacement (:mod:`~storygpt.tokenizers.bpe_legacy`); many texts
at once: :mod:`~storygpt.tokenizers.bpe_batch`.  BPE (Sennrich et al. 2016), byte-level
as in GPT-2, with :mod:`~storygpt.tokenizers.bpe_reference`'s semantics, run by the C++ core or the
reference; merge rules ``"merges"`` (trained, GPT-2) and ``"ranks"`` (tiktoken files).

Public names: docs/api.md; merge rules and formats: docs/tokenizers.md.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import regex

from . import bpe_reference, bpe_train
from . import io as _io
from .base import (
    CUT_RX,
    EOT,
    Tokenizer,
    check_no_special,
    clean_text,
    resolve_special,
    safe_cut,
)
from .bpe_batch import BatchEncoding
from .bpe_legacy import LastReleaseSpellings, deprecated
from .bpe_reference import DEFAULT_PATTERN
from .bpe_vocab import (
    MAX_ID_GAP,
    MAX_VOCAB_SIZE,
    MERGE_RULES,
    check_backend,
    check_merges,
    check_tables,
    load_cpp,
    parts_from_dict,
    rank_merges,
    special_dict,
    vocab_triples,
)
from .interop_base import BPEParts, InteropError

__all__ = ["MAX_ID_GAP", "MAX_VOCAB_SIZE", "BPETokenizer", "ByteTokenizer", "load_cpp", "train_bpe"]


class BPETokenizer(LastReleaseSpellings, BatchEncoding, Tokenizer):
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

    Usually built by :func:`train_bpe`, :meth:`load`, :meth:`from_merges`, :meth:`from_vocab`,
    :meth:`from_ranks` or an importer of :mod:`~storygpt.tokenizers.interop` (``from_tiktoken``,
    ``from_gpt2_files``, ``from_hf``).

    Raises:
        ValueError: inconsistent vocabulary, merges or special tokens (named; with
            rule ``"merges"``, a vocab entry that is neither a byte nor made by a merge,
            two merges that make one id, two ids with the same bytes: both named),
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
        pattern: str = DEFAULT_PATTERN,
        merge_rule: str = "merges",
        backend: str = "cpp",
    ):
        bpe_reference._check_pattern(pattern)
        check_backend(backend)
        if merge_rule not in MERGE_RULES:
            raise ValueError(f"unknown merge_rule {merge_rule!r}; expected one of {MERGE_RULES}")
        self.pattern = pattern
        self.merge_rule = merge_rule
        self.backend = backend
        self._vocab, self._byte_ids, self._special = check_tables(vocab, special_tokens)
        byte_ids = self._byte_ids
        self._pad = self._special.get("<pad>")

        if merge_rule == "merges":
            if merges is None:
                raise ValueError("merge_rule 'merges' needs a merges list")
            self._merges = [tuple(int(x) for x in m) for m in merges]
            check_merges(self._vocab, self._merges, byte_ids)
            enc_merges, enc_ranks = self._merges, None
        else:
            if merges is not None:
                raise ValueError("merge_rule 'ranks' takes no merges list (the vocabulary ranks are the model)")
            self._merges = None
            enc_merges, enc_ranks = rank_merges(self._vocab)

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
            self._encoder = load_cpp().Encoder(enc_merges, byte_ids, pattern, enc_ranks)
            # made with the encoder, not by the first encode (~4 ms for 100k ids on a busy machine)
            self._id_objects = list(range(size))
        else:
            self._encoder = bpe_reference.Encoder(enc_merges, byte_ids, pattern, enc_ranks)

    # ----------------------------------------------------------- constructors
    @classmethod
    def from_merges_ids(
        cls,
        merges: Sequence[tuple[int, int]],
        special_tokens=("<pad>", EOT),
        pattern: str = DEFAULT_PATTERN,
        backend="cpp",
    ):
        """From merges as id pairs (``bpe_reference.train`` output): merge ``i`` makes id ``256 + i``.

        Raises:
            ValueError: a merge that uses an id not defined before it (named); two merges
                that make the same bytes (both named, 0-based).
        """
        vocab = {b: bytes([b]) for b in range(256)}
        maker: dict[bytes, int] = {}
        triples = []
        for k, (a, b) in enumerate(merges):
            if a not in vocab or b not in vocab:
                raise ValueError(f"merge {k} ({a}, {b}) uses an id not defined before it")
            new = vocab[a] + vocab[b]
            if new in maker:
                j = maker[new]
                raise ValueError(
                    f"merges {j} {tuple(merges[j])} and {k} ({a}, {b}) both make {new!r}: "
                    "each token must be made by one merge"
                )
            maker[new] = k
            vocab[256 + k] = new
            triples.append((a, b, 256 + k))
        return cls(vocab, triples, special_dict(special_tokens, len(vocab)), pattern, "merges", backend)

    @classmethod
    def from_merges(
        cls,
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens=("<pad>", EOT),
        pattern: str = DEFAULT_PATTERN,
        backend="cpp",
    ):
        """From merges as byte-string pairs (rank = list order).

        Ids: byte ``b`` is ``b``, merge ``i`` makes ``256 + i``, special tokens
        follow (a sequence) or keep their ids (a dict str -> id).

        Raises:
            ValueError: a merge uses a token not made by an earlier merge (named); two
                merges make the same bytes (both named, 0-based).
        """
        by_bytes = {bytes([b]): b for b in range(256)}
        pairs = []
        for k, (a, b) in enumerate(merges):
            a, b = bytes(a), bytes(b)
            if a not in by_bytes or b not in by_bytes:
                raise ValueError(f"merge {k} ({a!r}, {b!r}) uses a token not made by an earlier merge")
            if a + b in by_bytes:
                j = by_bytes[a + b] - 256
                raise ValueError(
                    f"merges {j} ({merges[j][0]!r}, {merges[j][1]!r}) and {k} ({a!r}, {b!r}) both make {a + b!r}: "
                    "each token must be made by one merge"
                )
            pairs.append((by_bytes[a], by_bytes[b]))
            by_bytes[a + b] = 256 + k
        return cls.from_merges_ids(pairs, special_tokens, pattern, backend)

    @classmethod
    def from_vocab(
        cls,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens=(EOT,),
        pattern: str = DEFAULT_PATTERN,
        backend: str = "cpp",
    ):
        """From someone else's vocabulary and merges, keeping their ids (rank = merges order).

        Args:
            vocab: id -> token bytes (distinct; the 256 single bytes included).
            merges: ``(left bytes, right bytes)`` pairs; ``left + right`` must be in ``vocab``.
            special_tokens: dict str -> id (kept), or a sequence (ids after the largest id);
                ``None``: none.

            A special token whose bytes are already a token of ``vocab`` keeps that id.  An
            entry of ``vocab`` that is no single byte, is made by no merge (nor by any two
            entries: that is a merge missing, refused) and was not declared special (GPT-2's
            ``<|endoftext|>`` at 50256 in ``encoder.json``) is kept at its id as an added token,
            encoded only when allowed like a special token, with a ``UserWarning`` naming it
            (as Hugging Face ``tokenizers`` and tiktoken hold such tokens).

        Raises:
            ValueError: two ids with the same bytes; a merge whose parts or result is not in
                ``vocab``; two merges that make the same token (each named: both ids, both merges).
        """
        vocab, triples, specials = vocab_triples(vocab, merges, special_tokens)
        return cls(vocab, triples, specials, pattern, "merges", backend)

    @classmethod
    def from_ranks(
        cls,
        ranks: Mapping[bytes, int],
        special_tokens: Mapping[str, int] | Sequence[str] = (EOT,),
        pattern: str = "gpt2",
        backend: str = "cpp",
    ):
        """From tiktoken-style mergeable ranks (token bytes -> rank = id); merge rule ``"ranks"``.

        Raises:
            ValueError: two tokens with one rank (both named), a token no two tokens make.
        """
        vocab: dict[int, bytes] = {}
        for b, i in ranks.items():
            i = int(i)
            if i in vocab:
                raise ValueError(f"tokens {vocab[i]!r} and {bytes(b)!r} both have rank {i}")
            vocab[i] = bytes(b)
        specials = special_dict(special_tokens, max(vocab) + 1)
        return cls(vocab, None, specials, pattern, "ranks", backend)

    @classmethod
    def from_parts(cls, parts: BPEParts, backend: str = "cpp"):
        """From what an importer of :mod:`~storygpt.tokenizers.interop` read (ranks, or a
        vocabulary and merges): :meth:`from_ranks` or :meth:`from_vocab`.

        Raises:
            ``parts.error`` (ValueError or InteropError): what those raise, after ``parts.source``.
        """
        try:
            if parts.ranks is not None:
                return cls.from_ranks(parts.ranks, parts.specials, parts.pattern, backend)
            return cls.from_vocab(parts.vocab, parts.merges, parts.specials, parts.pattern, backend)
        except InteropError:
            raise
        except ValueError as e:
            raise parts.error(f"{parts.source}: {e}") from None

    @classmethod
    def from_dict(cls, d: dict, backend: str = "cpp"):
        """Rebuild from :meth:`to_dict` output (or a loaded file).

        Raises:
            TokenizerFileError: wrong format, version or kind.
            ValueError, KeyError, TypeError: malformed content (the checks of the class).
        """
        vocab, merges, specials, pattern, rule = parts_from_dict(d)
        return cls(vocab, merges, specials, pattern, rule, backend)

    @classmethod
    def load(cls, path, backend: str = "cpp") -> BPETokenizer:
        """Load a BPE tokenizer file (see :meth:`Tokenizer.load`)."""
        return super().load(path, backend=backend)

    # ------------------------------------ spellings of the last release (DeprecationWarning; bpe_legacy)
    @classmethod
    def train(cls, text_or_files, vocab_size: int, *args, **kwargs) -> BPETokenizer:
        """Deprecated: :func:`storygpt.tokenizers.train_bpe` (a text, or a list of files)."""
        deprecated("BPETokenizer.train(text_or_files, ...)", "storygpt.tokenizers.train_bpe(text_or_files, ...)")
        if not isinstance(text_or_files, (str, bytes, bytearray, os.PathLike, list, tuple)):
            text_or_files = list(text_or_files)  # the last release read any other iterable as paths
        return train_bpe(text_or_files, vocab_size, *args, **kwargs)

    @classmethod
    def train_from_iterator(cls, texts: Iterable[str | bytes], vocab_size: int, *args, **kwargs) -> BPETokenizer:
        """Deprecated: :func:`storygpt.tokenizers.train_bpe` with ``iter(texts)``."""
        deprecated("BPETokenizer.train_from_iterator(texts, ...)", "storygpt.tokenizers.train_bpe(iter(texts), ...)")
        if isinstance(texts, (str, bytes, bytearray)):
            raise TypeError("texts must be an iterable of texts, not a single text")
        return train_bpe(iter(texts), vocab_size, *args, **kwargs)

    @classmethod
    def train_from_counts(
        cls, counts: Mapping, vocab_size: int, pattern=DEFAULT_PATTERN, special_tokens=("<pad>", EOT), *args, **kwargs
    ) -> BPETokenizer:
        """Deprecated: :func:`storygpt.tokenizers.train_bpe` with the counts (a mapping chunk -> count)."""
        deprecated("BPETokenizer.train_from_counts(counts, ...)", "storygpt.tokenizers.train_bpe(counts, ...)")
        if not isinstance(counts, Mapping):
            raise TypeError(f"counts must be a mapping chunk -> count, got {type(counts).__name__}")
        if len(args) == 3:  # the last release's order: min_frequency, tie_break, progress
            kwargs["progress"] = args[2]
            args = args[:2]
        return train_bpe(counts, vocab_size, pattern, special_tokens, *args, **kwargs)

    # ------------------------------------------------------------- properties
    @property
    def vocab(self) -> dict[int, bytes]:
        """id -> bytes of every token that is not special (a copy)."""
        return dict(self._vocab)

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
        text = clean_text(text)
        allowed, disallowed = resolve_special(allowed_special, disallowed_special, self._special)
        check_no_special(text, disallowed)
        rx, _ = self._special_rx(allowed)
        parts = self._split(text, rx)
        if len(parts) == 1 and isinstance(parts[0], str):  # no special token: the core's list, not a copy
            return self._encode_bytes(parts[0].encode("utf-8"))
        out: list[int] = []
        for piece in parts:
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
        return self._encode_bytes(clean_text(text).encode("utf-8"))

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
        return lambda text: safe_cut(text, rx, maxlen, self._cut_rx)

    #: Reverse-search regex whose match end is a chunk boundary no later text moves
    #: (subclasses with other patterns replace it; SuperBPETokenizer does).
    _cut_rx = CUT_RX

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
        # "simple" is fixed here, not a default: no merges, and its files and checkpoints record it
        super().__init__({b: bytes([b]) for b in range(256)}, [], {EOT: 256}, "simple", "merges", backend)

    def __repr__(self) -> str:
        return f"ByteTokenizer(vocab_size={self.vocab_size}, backend={self.backend!r})"


def train_bpe(
    source: str | bytes | Sequence[str | os.PathLike] | Iterable[str | bytes] | Mapping[str | bytes, int],
    vocab_size: int,
    pattern: str = DEFAULT_PATTERN,
    special_tokens: Sequence[str] = ("<pad>", EOT),
    min_frequency: int = 1,
    tie_break: str = "smallest_ids",
    num_threads: int = 0,
    backend: str = "cpp",
    progress: bpe_train.Progress | None = None,
) -> BPETokenizer:
    """Learn a byte-level BPE vocabulary (Sennrich et al. 2016; GPT-2's byte level).

    Args:
        source: what to learn from (:mod:`~storygpt.tokenizers.bpe_train`): a text (``str``: lone surrogates
            become U+FFFD; ``bytes``: trained on as bytes, UTF-8 or not), a list of file
            paths (read as bytes; a single path must still be a list), any other
            iterable of ``str``/``bytes`` texts (each a separate text: chunks never cross
            texts; the merges equal those of the texts joined by a special token), or a
            mapping chunk -> count (``str`` or ``bytes`` chunks, ``"a"`` and ``b"a"``
            adding up; ``pattern`` is then only recorded for encoding).
        vocab_size: final vocabulary size: 256 bytes + merges + special tokens (fewer
            merges are learned when the text runs out of pairs; a ``UserWarning`` then
            gives the size reached).
        pattern: pre-tokenization pattern name (``"simple"``, ``"gpt2"``, ``"gpt4"``, ``"o200k"``;
            default :data:`~storygpt.tokenizers.bpe_reference.DEFAULT_PATTERN`).
        special_tokens: registered special tokens, a list of ``str``; they split the
            training text, are never merged, and get the last ids.
        min_frequency: a positive integer: stop when the best pair occurs fewer times.
        tie_break: ``"smallest_ids"`` or ``"largest_bytes"`` (see bpe_reference).
        num_threads: counting threads (an integer >= 0); 0 chooses from the work size and
            the machine (``bpe_train.default_train_threads``).  Merges never depend on it.
        backend: ``"cpp"`` (``storygpt._bpe``) or ``"reference"`` (not for counts).
        progress: ``callback(stage, done, total)``, called now and then (``cpp``
            backend): stage ``"count"`` with bytes, ``"merge"`` with merges; ``total``
            is 0 when unknown.  An exception it raises ends training.

    Returns:
        A :class:`BPETokenizer` with ids: bytes ``0..255``, merge ``i`` at ``256 + i``,
        then the special tokens in the order given.

    Raises:
        ValueError: bad arguments (``bpe_train.check_train_args``); counts that are not
            positive integers, or so large that a pair count could exceed ``2**63 - 1``
            (the sum over chunks of ``count * (len(chunk bytes) - 1)``); counts with
            ``backend="reference"``.
        TypeError: as ``check_train_args``; one path instead of a list; an item of
            the texts or a key of the counts that is neither ``str`` nor ``bytes`` (named).
        FileNotFoundError, IsADirectoryError, OSError: a listed file (named).
    """
    args = bpe_train.check_train_args(
        vocab_size, special_tokens, pattern, min_frequency, tie_break, num_threads, backend
    )
    pairs = bpe_train.learn_merges(source, args, progress)
    tok = BPETokenizer.from_merges_ids(pairs, special_tokens=args.specials.keys(), pattern=pattern, backend=backend)
    if tok.vocab_size < args.vocab_size:
        warnings.warn(
            f"BPE training stopped at vocab_size {tok.vocab_size:,} ({len(pairs):,} merges), short of the "
            f"{args.vocab_size:,} asked: the text ran out of pairs occurring at least "
            f"min_frequency={args.min_frequency} times",
            stacklevel=2,
        )
    return tok
