"""Byte-level BPE vocabulary: build, encode (special tokens included), decode, save.

:class:`BPETokenizer` is the vocabulary, as tiktoken's ``Encoding``: training lives in
:mod:`storygpt.tokenizers.bpe_train` (:func:`~storygpt.tokenizers.bpe_train.train_bpe`), the
constructors from merges, ranks or a file's dict in :mod:`storygpt.tokenizers.bpe_build`, other
libraries' formats in :mod:`storygpt.tokenizers.interop`.

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

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import regex

from . import bpe_reference
from . import io as _io
from .base import EOT, Tokenizer, check_no_special, check_texts, clean_text, resolve_special
from .bpe_build import BPEBuilders, check_all_made, rank_merges
from .bpe_build import special_dict as special_dict  # imported from here by bpe_train

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


def load_cpp():
    try:
        from storygpt import _bpe  # type: ignore
    except ImportError as e:
        raise ImportError(
            "the C++ extension storygpt._bpe is not built; run `python setup.py build_ext --inplace` "
            "in the repository root, or pass backend='reference'"
        ) from e
    if not hasattr(_bpe, "Encoder") or not hasattr(_bpe, "train") or not hasattr(_bpe.Encoder, "split_stages"):
        raise ImportError(
            "this build of storygpt._bpe is older than its Python code (no Encoder/train/split_stages; rebuild with "
            "`python setup.py build_ext --inplace`), or pass backend='reference'"
        )
    return _bpe


def check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")


class BPETokenizer(BPEBuilders, Tokenizer):
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

    Usually built by :func:`~storygpt.tokenizers.bpe_train.train_bpe`, :meth:`load`,
    :meth:`from_merges`, :meth:`from_vocab`, :meth:`from_ranks` or an importer of
    :mod:`~storygpt.tokenizers.interop` (``from_tiktoken``, ``from_gpt2_files``, ``from_hf``).

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
        check_backend(backend)
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
        self._pad = self._special.get("<pad>")

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
            check_all_made(self._vocab, self._merges, byte_ids)
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
                clean_text(t)  # raises the TypeError
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
            return encode([clean_text(t) for t in texts])

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
