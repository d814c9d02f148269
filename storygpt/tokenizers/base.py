"""The contract every storygpt tokenizer implements (docs/design.md, "Tokenizers").

The model and the command-line tools only use :class:`Tokenizer`, so they work with
every kind alike.  Besides the interface this module holds the text rules every kind
shares: the end-of-text token :data:`EOT`, :func:`clean_text` (lone surrogates),
tiktoken's special-token rules (:func:`resolve_special`, :func:`check_no_special`) and
:func:`require` for optional packages.  It imports no tokenizer class.
"""

from __future__ import annotations

import hashlib
import importlib
import operator
import os
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Iterator, Sequence

import numpy as np
import regex

from storygpt.atomic import write_text

from . import io as _io

#: Name of the end-of-text special token (document separator) in every tokenizer.
EOT = "<|endoftext|>"


def clean_text(text: str) -> str:
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


#: Optional packages -> the extra of pyproject.toml that installs them (``pip install -e .[EXTRA]``).
EXTRAS = {p: "interop" for p in ("tiktoken", "tokenizers", "transformers", "safetensors", "gguf", "sentencepiece")}


def missing_package(package: str, what: str, extra: str | None = None) -> str:
    """The one-line message for an optional ``package`` that is not installed: what needs it and the extra
    (``extra``, else :data:`EXTRAS`) that installs it, e.g. ``"a tiktoken: SPEC needs the optional package
    tiktoken: pip install -e .[interop] (or pip install tiktoken)"``."""
    top = package.split(".")[0]
    extra = extra or EXTRAS.get(top)
    how = f"pip install -e .[{extra}] (or pip install {top})" if extra else f"pip install {top}"
    return f"{what} needs the optional package {top}: {how}"


def require(package: str, what: str, extra: str | None = None):
    """Import an optional package, or ImportError with :func:`missing_package`'s line.

    Args:
        what: what the user asked for, in their words (a SPEC, a flag, a public function).
    """
    try:
        return importlib.import_module(package)
    except ImportError as e:
        raise ImportError(missing_package(package, what, extra)) from e


def as_int(value, what: str, error: type = TypeError) -> int:
    """``operator.index(value)``: Python and numpy integers pass, floats, strings and bools do not.

    Raises:
        ``error`` (TypeError by default), naming ``what`` and the value.
    """
    if isinstance(value, (bool, np.bool_)):
        raise error(f"{what} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise error(f"{what} must be an integer, got {value!r} ({type(value).__name__})") from None


def resolve_special(allowed_special, disallowed_special, registered: Collection[str]) -> tuple[frozenset, frozenset]:
    """tiktoken's rules for special tokens in text, the one parser every tokenizer uses.

    Args:
        allowed_special: ``"all"`` or a collection of registered special tokens that are
            recognised in the text and encoded as their ids.
        disallowed_special: ``"all"`` (every registered special token not allowed) or a
            collection; finding one of them in the text is an error.  ``()`` lets every
            special token that is not allowed be encoded as plain text.
        registered: the tokenizer's special tokens.

    Returns:
        ``(allowed, disallowed)`` as frozensets of special-token strings.

    Raises:
        ValueError: an argument that is a string other than ``"all"``, or names a token
            that is not a registered special token (named).
    """
    reg = frozenset(registered)
    out = []
    for name, value in (("allowed_special", allowed_special), ("disallowed_special", disallowed_special)):
        if isinstance(value, str):
            if value != "all":
                raise ValueError(f"{name} must be 'all' or a set of special tokens, got {value!r}")
            out.append(reg if name == "allowed_special" else reg - out[0])
            continue
        given = frozenset(value)
        unknown = given - reg
        if unknown:
            raise ValueError(f"{name} names tokens that are not special tokens of this tokenizer: {sorted(unknown)}")
        out.append(given)
    return out[0], out[1]


def split_special(text: str, allowed: frozenset, ids: dict[str, int]) -> list[str | int]:
    """``text`` cut at the ``allowed`` special tokens: text pieces (str) and their ids (``ids[token]``, int), in
    order; the longest token wins where two start at the same place."""
    if not allowed:
        return [text] if text else []
    rx = regex.compile("|".join(regex.escape(s) for s in sorted(allowed, key=lambda s: (-len(s), s))))
    out: list[str | int] = []
    pos = 0
    for m in rx.finditer(text):
        if m.start() > pos:
            out.append(text[pos : m.start()])
        out.append(ids[m.group()])
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


def check_no_special(text: str, disallowed: frozenset) -> None:
    """Raise ValueError naming the first disallowed special token found in ``text`` (tiktoken's rule)."""
    found = [(text.find(s), s) for s in disallowed if s in text]
    if found:
        token = min(found)[1]
        raise ValueError(
            f"text contains the special token {token!r}: pass allowed_special={{{token!r}}} (or 'all') to encode "
            f"it as its id, or disallowed_special=() or encode_ordinary() to encode it as plain text"
        )


def check_texts(texts) -> None:
    """TypeError when a batch of texts is a single ``str``, ``bytes`` or ``None``."""
    if texts is None or isinstance(texts, (str, bytes, bytearray)):
        raise TypeError(f"texts must be a list of str, got a single {type(texts).__name__} (wrap it in a list)")


def encode_split(texts, specials: dict[str, int], allowed_special, disallowed_special, encode_plain) -> list[list[int]]:
    """Encode a batch with tiktoken's special-token rules around another library's batch encoder.

    Each text is cleaned (:func:`clean_text`), checked for disallowed special tokens and cut at the
    allowed ones (:func:`split_special`); ``encode_plain(list of str) -> list of id lists`` encodes
    all the plain pieces in one call; each text's ids are its parts joined again.

    Raises:
        TypeError: ``texts`` is a single str, or an item is not a str.
        ValueError: a disallowed special token in a text (named).
    """
    check_texts(texts)
    allowed, disallowed = resolve_special(allowed_special, disallowed_special, specials)
    split = []
    for t in texts:
        t = clean_text(t)  # lone surrogates -> U+FFFD; TypeError for non-str
        check_no_special(t, disallowed)
        split.append(split_special(t, allowed, specials))
    plain = [p for parts in split for p in parts if isinstance(p, str)]
    return join_parts(split, iter(encode_plain(plain) if plain else []))


def join_parts(split: list[list[str | int]], encoded: Iterator[list[int]]) -> list[list[int]]:
    """Each text's parts joined again: its special-token ids (int) as they are, each plain
    piece (str) replaced by the next id list of ``encoded``."""
    return [[i for p in parts for i in ([p] if isinstance(p, int) else next(encoded))] for parts in split]


def join_parts_numpy(split: list[list[str | int]], ids: np.ndarray, offsets: np.ndarray):
    """:func:`join_parts` for ids as one array: ``ids[offsets[j]:offsets[j + 1]]`` are the ids of
    the ``j``-th plain piece; returns ``(uint32 ids, int64 offsets of shape (len(split) + 1,))``."""
    arrays: list[np.ndarray] = []
    out_offsets = np.zeros(len(split) + 1, dtype=np.int64)
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


def check_ids(ids, vocab_size: int) -> list[int]:
    """``ids`` (a sequence or 1-D array) as a list of int, each in ``range(vocab_size)``.

    Raises:
        ValueError: an id that is not an integer, or the first unknown id (named).
    """
    ids = [as_int(i, "token id", ValueError) for i in (ids.tolist() if isinstance(ids, np.ndarray) else ids)]
    bad = [i for i in ids if not 0 <= i < vocab_size]
    if bad:
        raise ValueError(f"unknown token id {bad[0]} (vocab_size {vocab_size})")
    return ids


#: A safe place to cut a text stream for every pattern: right after a letter or
#: digit that is followed by ASCII white space (see ``encode_iterable``).
CUT_RX = regex.compile(r"(?r)[\p{L}\p{N}](?=[ \t\n\r])")


def safe_cut(text: str, rx, maxlen: int, cut_rx=None) -> int:
    """The largest safe cut position in ``text`` (0 if none) for ``encode_iterable``: where
    ``cut_rx`` (default :data:`CUT_RX`) matches, not inside a special token (``rx``: their
    alternation, ``maxlen``: the longest), or the end of one (``BPETokenizer._safe_cut_for``)."""
    cut_rx = CUT_RX if cut_rx is None else cut_rx
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


class Tokenizer(ABC):
    """Abstract tokenizer: text <-> lists of integer token ids.

    Subclasses set :attr:`kind` and implement :meth:`encode`, :meth:`decode`,
    :meth:`id_to_token`, :meth:`encode_iterable`, :meth:`to_dict` and :meth:`from_dict`;
    their constructor sets ``_vocab_size``, ``_special`` (str -> id) and, when there are
    such tokens, ``_pad`` and ``_unk`` (what the vocabulary properties return).
    """

    #: ``"bpe"``, ``"word"``, ``"byte"``, ``"hf"`` or a registered kind; also the ``"kind"`` key of the file.
    kind: str = ""

    # ----------------------------------------------------------------- encoding
    @abstractmethod
    def encode(self, text: str, allowed_special=frozenset(), disallowed_special="all") -> list[int]:
        """Encode ``text`` to token ids, with tiktoken's rules for special tokens.

        Args:
            text: any Python string.
            allowed_special: ``"all"`` or a set of special-token strings recognised in
                the text and encoded as their ids (default: none).
            disallowed_special: ``"all"`` (default: every special token not allowed) or
                a set; one of them in the text raises ValueError.  ``()``: they are
                plain text (as in :meth:`encode_ordinary`).

        Raises:
            ValueError: a disallowed special token in the text (named), or bad arguments
                (:func:`resolve_special`).
        """

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` with special tokens treated as plain text."""
        return self.encode(text, allowed_special=frozenset(), disallowed_special=())

    def encode_batch(
        self, texts: Sequence[str], num_threads: int = 0, allowed_special=frozenset(), disallowed_special="all"
    ) -> list[list[int]]:
        """Encode several texts; returns one id list per text (same order); specials as :meth:`encode`.

        Raises:
            TypeError: ``texts`` is a single ``str`` (each character would become a text).
        """
        check_texts(texts)
        return [self.encode(t, allowed_special, disallowed_special) for t in texts]

    def encode_batch_numpy(
        self, texts: Sequence[str], num_threads: int = 0, allowed_special=frozenset(), disallowed_special="all"
    ) -> tuple[np.ndarray, np.ndarray]:
        """Encode several texts into one flat array.

        Returns:
            ``(ids, offsets)``: ``ids`` uint32 of shape ``(total,)``; ``offsets``
            int64 of shape ``(len(texts) + 1,)``; text ``i`` is
            ``ids[offsets[i]:offsets[i + 1]]``.
        """
        lists = self.encode_batch(texts, num_threads, allowed_special, disallowed_special)
        offsets = np.zeros(len(lists) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(x) for x in lists], dtype=np.int64)
        ids = np.fromiter((t for x in lists for t in x), dtype=np.uint32, count=int(offsets[-1]))
        return ids, offsets

    def encode_iterable(
        self,
        lines: Iterable[str],
        allowed_special=frozenset(),
        buffer_chars: int = 1 << 20,
        disallowed_special="all",
    ) -> Iterator[int]:
        """Lazily encode the concatenation of ``lines`` (e.g. an open text file).

        Text is buffered until about ``buffer_chars`` characters are held;
        everything before the last safe cut (:meth:`_safe_cut`, which each
        tokenizer defines) is encoded, in pieces of about :attr:`_piece_chars`
        characters that end at safe cuts, and the rest is held back.  Memory stays
        bounded (the text of one buffer, the ids of one piece) and the ids are
        exactly ``encode("".join(lines), allowed_special, disallowed_special)`` (a
        cut never splits an allowed or disallowed special token).

        Raises:
            TypeError: a line that is not a ``str`` (naming its index), or a ``buffer_chars``
                that is not a number; ValueError: as :meth:`encode` for special tokens.
        """
        if isinstance(buffer_chars, bool) or not isinstance(buffer_chars, (int, float)) or buffer_chars != buffer_chars:
            raise TypeError(f"encode_iterable: buffer_chars must be a number of characters, got {buffer_chars!r}")
        allowed, disallowed = resolve_special(allowed_special, disallowed_special, self.special_tokens)
        cut_at = self._safe_cut_for(allowed | disallowed)
        base, threshold = buffer_chars, buffer_chars
        buf: list[str] = []
        held = 0
        for i, line in enumerate(lines):
            if not isinstance(line, str):
                raise TypeError(f"encode_iterable: line {i} is {type(line).__name__}, not str")
            buf.append(line)
            held += len(line)
            if held < threshold:
                continue
            text = "".join(buf)
            cut = cut_at(text)
            if cut > 0:
                for ids in self._encode_pieces(text, cut, cut_at, allowed, disallowed):
                    yield from ids
                text = text[cut:]
            buf, held = [text], len(text)
            threshold = max(base, 2 * held)  # grows only while nothing can be cut: no quadratic rescans
        text = "".join(buf)
        if text:
            for ids in self._encode_pieces(text, len(text), cut_at, allowed, disallowed):
                yield from ids

    #: Characters :meth:`encode_iterable` encodes in one :meth:`encode` call (about): its
    #: buffer is encoded in pieces of at most this many characters, each ending at a safe
    #: cut, so that no list of ids longer than one piece's is held, whatever the buffer size
    #: (docs/bpe_core.md, "Memory").
    _piece_chars: int = 1 << 14

    def _encode_pieces(self, text: str, end: int, cut_at, allowed, disallowed) -> Iterator[list[int]]:
        """The ids of ``text[:end]`` (``end`` a safe cut, or the end of the input), one list
        per piece: each piece ends at the last safe cut within :attr:`_piece_chars`
        characters of its start, else within 2, 4 or 8 times that; without one there, the
        rest is one piece (a tokenizer that never cuts, or 128K characters without a safe cut)."""
        start = 0
        while end - start > self._piece_chars:
            size = self._piece_chars
            cut = cut_at(text[start : start + size])
            while cut == 0 and size < 8 * self._piece_chars and start + size < end:
                size *= 2  # no safe cut in this window: one twice as long
                cut = cut_at(text[start : min(end, start + size)])
            if cut == 0:
                break
            yield self.encode(text[start : start + cut], allowed, disallowed)
            start += cut
        yield self.encode(text[start:end] if start or end < len(text) else text, allowed, disallowed)

    @abstractmethod
    def _safe_cut_for(self, specials: frozenset):
        """A function ``text -> int``: the largest position where ``text`` may be cut
        so that encoding both parts gives the ids of the whole (0: no such position),
        never inside one of ``specials``."""

    # ----------------------------------------------------------------- decoding
    @abstractmethod
    def decode(self, ids: Iterable[int]) -> str:
        """Turn token ids back into text."""

    @abstractmethod
    def id_to_token(self, token_id: int) -> str:
        """A printable form of one token (for display; not always invertible)."""

    # --------------------------------------------------------------- vocabulary
    # What the properties below read; each kind sets them in its constructor (or overrides the properties).
    _vocab_size: int
    _special: dict[str, int]
    _pad: int | None = None
    _unk: int | None = None

    @property
    def vocab_size(self) -> int:
        """Number of ids: every id is in ``range(vocab_size)`` (the embedding size)."""
        return self._vocab_size

    def __len__(self) -> int:
        return self.vocab_size

    @property
    def pad_id(self) -> int | None:
        """Id of the padding token (``<pad>``), or None when there is none."""
        return self._pad

    @property
    def eot_id(self) -> int:
        """Id of ``<|endoftext|>`` (the document separator)."""
        return self._special.get(EOT)

    @property
    def unk_id(self) -> int | None:
        """Id of the unknown token, or None when every text is representable (BPE)."""
        return self._unk

    @property
    def special_tokens(self) -> dict[str, int]:
        """The special tokens: string -> id (a copy)."""
        return dict(self._special)

    # ------------------------------------------------------------------ storage
    @abstractmethod
    def to_dict(self) -> dict:
        """Everything needed to rebuild this tokenizer, as plain JSON types."""

    @classmethod
    @abstractmethod
    def from_dict(cls, d: dict, **kwargs) -> Tokenizer:
        """Inverse of :meth:`to_dict` (raises ``TokenizerFileError`` on bad content)."""

    def save(self, path: str | os.PathLike) -> None:
        """Write the tokenizer to one JSON file, atomically (format: docs/tokenizers.md)."""
        write_text(path, _io.dumps_readable(self.to_dict()))

    @classmethod
    def load(cls, path: str | os.PathLike, **kwargs) -> Tokenizer:
        """Load a file of this class's kind written by :meth:`save` (any kind:
        :func:`storygpt.tokenizers.load`).

        Raises:
            FileNotFoundError, TokenizerFileError (naming the file); also
            TokenizerFileError if the file holds another kind of tokenizer.
        """
        d = _io.read_json(path)
        kind = _io.check_header(d, str(path))
        if kind != cls.kind:
            raise _io.TokenizerFileError(f"{path}: holds a {kind!r} tokenizer, not {cls.__name__}")
        return _io.call_from_dict(cls, d, str(path), **kwargs)

    def fingerprint(self) -> str:
        """Hex SHA-256 of the canonical JSON of :meth:`to_dict` (stored in token-file headers)."""
        fp = self.__dict__.get("_fingerprint")
        if fp is None:  # tokenizers are immutable: compute once
            fp = hashlib.sha256(_io.canonical_json(self.to_dict())).hexdigest()
            self.__dict__["_fingerprint"] = fp
        return fp
