"""Per-character losses: each predicted token's cross-entropy spread over the characters it writes.

The rule, for every tokenizer: a token's loss is spread evenly over the UTF-8 bytes it covers, and a
character's loss is the sum over its bytes; a document boundary is one character with its eot's
whole loss.  The per-character losses add up to the model's total.  When a tokenizer's bytes do not
spell the document (lossy, normalising), the document's loss is spread over its characters and
``exact`` is False.

Why this rule (and not "all on the last character"), and what it cannot resolve inside a token
(SuperBPE, arXiv 2503.13423): docs/attribution.md.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

#: character classes of :func:`char_classes`, in this order (index = class id)
CLASSES = (
    "Latin letters",
    "Cyrillic letters",
    "Greek letters",
    "Han",
    "other scripts",
    "digits",
    "space",
    "newline",
    "punctuation",
    "other",
    "boundary",
)
_LATIN, _CYRILLIC, _GREEK, _HAN, _OTHER_SCRIPT, _DIGIT, _SPACE, _NEWLINE, _PUNCT, _OTHER, _BOUNDARY = range(11)
#: the classes of word characters: letters of every script, and digits
_WORD_CLASSES = (_LATIN, _CYRILLIC, _GREEK, _HAN, _OTHER_SCRIPT, _DIGIT)
#: words of Unicode names that name a script (the first match wins); other letters are "other scripts"
_SCRIPTS = (("LATIN", _LATIN), ("CYRILLIC", _CYRILLIC), ("GREEK", _GREEK))
#: positions of :func:`word_positions`
POSITIONS = ("word start", "word rest", "not in a word")
#: training-text frequency classes of :func:`frequency_classes`
FREQUENCIES = ("frequent", "rare", "unseen", "not in a word")
#: a word seen at least this many times in the training text is "frequent"; 1 .. this - 1 times "rare"
FREQUENT = 100


def document_char_nats(tokenizer: Any, doc: str, ids: Sequence[int], nats: np.ndarray) -> tuple[np.ndarray, bool]:
    """The losses ``nats`` (one per id of ``doc``) spread over the characters of ``doc`` (float64, ``len(doc)``).

    Exact (True) when ``tokenizer.token_bytes`` spells ``doc``'s UTF-8; else the document's total is
    spread evenly over its characters (False).
    """
    nats = np.asarray(nats, dtype=np.float64)
    n_chars = len(doc)
    if len(ids) == 0:
        return np.zeros(n_chars), True
    token_bytes = getattr(tokenizer, "token_bytes", None)
    pieces = None
    if token_bytes is not None:
        try:
            pieces = [token_bytes(int(t)) for t in ids]
        except (ValueError, KeyError, IndexError):
            pieces = None
    raw = doc.encode("utf-8")
    if pieces is None or b"".join(pieces) != raw:
        return np.full(n_chars, float(np.sum(nats)) / n_chars), False
    lengths = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces))
    if (lengths == 0).any():  # a token of no bytes writes nothing: its loss goes to the next byte's character
        return _with_empty_tokens(raw, lengths, nats, n_chars), True
    per_byte = np.repeat(nats / lengths, lengths)
    return np.bincount(byte_to_char(raw), weights=per_byte, minlength=n_chars), True


def _with_empty_tokens(raw: bytes, lengths: np.ndarray, nats: np.ndarray, n_chars: int) -> np.ndarray:
    out = np.zeros(n_chars)
    b2c = byte_to_char(raw)
    pos = 0
    for n, x in zip(lengths.tolist(), nats.tolist()):
        if n:
            np.add.at(out, b2c[pos : pos + n], x / n)
        else:
            out[b2c[min(pos, len(raw) - 1)]] += x
        pos += n
    return out


def byte_to_char(raw: bytes) -> np.ndarray:
    """For each byte of the UTF-8 ``raw``, the index of the character it belongs to (int64)."""
    lead = (np.frombuffer(raw, dtype=np.uint8) & 0xC0) != 0x80
    return np.cumsum(lead) - 1


def char_nats(tokenizer: Any, documents: Sequence[str], token_nats: np.ndarray) -> tuple[np.ndarray, bool]:
    """Per-character losses (nats, float64) of the whole text, from the per-token losses of
    :func:`storygpt.eval.bits.evaluate_bits` (``token_nats``, in stream order).

    The result has :func:`storygpt.eval.bits.count_characters` entries: the characters of each document,
    then (between documents) the boundary.  Its sum equals ``token_nats``'s up to float rounding.

    Raises:
        ValueError: ``token_nats`` is not one value per predicted token.
    """
    token_nats = np.asarray(token_nats, dtype=np.float64)
    parts, exact, at = [], True, 0
    for i, d in enumerate(documents):
        if i:
            parts.append(token_nats[at : at + 1])  # the boundary eot before this document
            at += 1
        ids = tokenizer.encode_ordinary(d)
        if at + len(ids) > len(token_nats):
            break
        per, ok = document_char_nats(tokenizer, d, ids, token_nats[at : at + len(ids)])
        exact &= ok
        parts.append(per)
        at += len(ids)
    if at != len(token_nats):
        raise ValueError(f"{len(token_nats)} token losses, but the text has {at} or more predicted tokens")
    return (np.concatenate(parts) if parts else np.zeros(0)), exact


# ------------------------------------------------------------------ what each character is
@lru_cache(maxsize=65536)
def _class_of(ch: str) -> int:
    if ch == "\n":
        return _NEWLINE
    if ch.isspace():
        return _SPACE
    cat = unicodedata.category(ch)
    if cat[0] in "PS":
        return _PUNCT
    if cat[0] == "N":
        return _DIGIT
    if cat[0] in "LM":
        if ord(ch) < 0x250 and cat[0] == "L":
            return _LATIN
        name = unicodedata.name(ch, "")
        if name.startswith("CJK UNIFIED IDEOGRAPH") or name.startswith("CJK COMPATIBILITY IDEOGRAPH"):
            return _HAN
        for prefix, cls in _SCRIPTS:
            if name.startswith(prefix) or f" {prefix} " in f" {name} ":
                return cls
        return _OTHER_SCRIPT
    return _OTHER


def char_classes(documents: Sequence[str]) -> np.ndarray:
    """Class id (index into :data:`CLASSES`) of every counted character (boundaries: ``boundary``).

    Latin, Cyrillic, Greek letters: letters of that script (by their Unicode names); Han: CJK ideographs;
    other scripts: letters of any other script (Arabic, Devanagari, kana, ...); a combining mark takes the
    class of the letter it follows (other scripts when it follows no letter); digits: any Unicode number;
    space: white space other than a new line; newline: ``\\n``; punctuation: Unicode punctuation and
    symbols; other: the rest (controls, private use).
    """
    table = np.array([_class_of(chr(c)) for c in range(128)], dtype=np.int8)
    parts = []
    for i, d in enumerate(documents):
        if i:
            parts.append(np.array([_BOUNDARY], dtype=np.int8))
        cps = np.frombuffer(d.encode("utf-32-le"), dtype=np.uint32)
        out = np.empty(len(cps), dtype=np.int8)
        ascii_ = cps < 128
        out[ascii_] = table[cps[ascii_]]
        for j in np.flatnonzero(~ascii_):
            c = _class_of(d[j])
            if unicodedata.category(d[j])[0] == "M" and j and out[j - 1] <= _OTHER_SCRIPT:
                c = out[j - 1]  # a combining mark belongs to its letter's script
            out[j] = c
        parts.append(out)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int8)


def _word_mask(documents: Sequence[str]) -> np.ndarray:
    """True for characters that are part of a word (``str.isalnum`` or a combining mark, ``_`` no)."""
    cls = char_classes(documents)
    return np.isin(cls, _WORD_CLASSES)


def word_positions(documents: Sequence[str]) -> np.ndarray:
    """Position id (index into :data:`POSITIONS`) of every counted character: the first character of a
    word (a run of letters and digits of any script), another character of a word, or no word."""
    w = _word_mask(documents)
    start = w & ~np.concatenate([[False], w[:-1]])
    return np.where(start, 0, np.where(w, 1, 2)).astype(np.int8)


def words_of(documents: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """The words of the text (runs of :func:`word_positions`) and, for each counted character, the index
    of its word (-1 outside words)."""
    w = _word_mask(documents)
    text = "\n".join(documents)  # a boundary is one character, as counted (never part of a word)
    idx = np.full(len(w), -1, dtype=np.int64)
    if not w.any():
        return idx, []
    edges = np.flatnonzero(np.diff(np.concatenate([[0], w.view(np.int8), [0]])))
    starts, stops = edges[::2], edges[1::2]
    words = [text[a:b] for a, b in zip(starts.tolist(), stops.tolist())]
    lengths = stops - starts
    idx[w] = np.repeat(np.arange(len(words)), lengths)
    return idx, words


def count_words(documents: Iterable[str]) -> dict[str, int]:
    """How often each word (as :func:`words_of` cuts them, case kept) occurs in ``documents``.

    A piece of a document at a time (a word never spans a new line or a document boundary), so
    ``documents`` may be a stream (storygpt.data.docstream.iter_documents): memory grows with the
    distinct words, not the text.
    """
    from collections import Counter

    counts: Counter[str] = Counter()
    for doc in documents:
        start = 0
        while start < len(doc):  # pieces of about _COUNT_PIECE characters cut at a new line (never in a word)
            end = doc.find("\n", start + _COUNT_PIECE)
            end = len(doc) if end < 0 else end
            counts.update(words_of([doc[start:end]])[1])
            start = end + 1
    return dict(counts)


_COUNT_PIECE = 1 << 20  # characters count_words cuts at once: words_of holds 9 bytes per character


def frequency_classes(documents: Sequence[str], train_counts: dict[str, int]) -> np.ndarray:
    """Frequency id (index into :data:`FREQUENCIES`) of every counted character: the word it is part of
    occurs at least :data:`FREQUENT` times in the training text, 1 .. FREQUENT - 1 times, never; or the
    character is not in a word."""
    idx, words = words_of(documents)
    per_word = np.array(
        [0 if (c := train_counts.get(w, 0)) >= FREQUENT else 1 if c else 2 for w in words], dtype=np.int8
    )
    out = np.full(len(idx), 3, dtype=np.int8)
    inside = idx >= 0
    out[inside] = per_word[idx[inside]]
    return out
