"""Plain-Python reference for byte-level BPE: pre-tokenization, training, encoding.

The readable definition of what the C++ core (``storygpt._bpe``, ``csrc/``) computes; slow on
purpose, and the tests check the C++ against it token for token.  Byte-pair encoding (Sennrich,
Haddow & Birch 2016) made byte-level as in GPT-2 (Radford et al. 2019): byte ``b`` is id ``b``,
merge ``i`` makes id ``256 + i``; merges never cross a pre-tokenization chunk (:data:`PATTERNS`).

Shared conventions -- invalid UTF-8 through ``surrogateescape``: docs/pretokenization.md;
the tie-breaks ``"smallest_ids"`` (default) and ``"largest_bytes"``: docs/bpe_core.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import regex

#: Pre-tokenization patterns by name.
#:
#: * ``"simple"`` works on raw bytes: a run of *word bytes* (ASCII letters,
#:   ASCII digits and every byte >= 0x80) or a run of *punctuation bytes*
#:   (every other byte that is not ASCII white space), each with one optional
#:   leading space, or a run of white space.  White space is the six ASCII
#:   bytes ``\\t \\n \\v \\f \\r`` and space.
#: * ``"gpt2"``: GPT-2's split pattern (as tiktoken writes it for
#:   ``r50k_base``; it gives the same chunks as the 2019 original
#:   ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``).
#: * ``"gpt4"``: the ``cl100k_base`` pattern used by GPT-4 (case-insensitive
#:   contractions, numbers in groups of at most three digits, new lines kept
#:   apart from other punctuation).
#: * ``"o200k"``: the ``o200k_base`` pattern used by GPT-4o: letters split by
#:   case (an upper-case run then a lower-case run, so ``"HelloWorld"`` is two
#:   chunks), marks (``\\p{M}``) joined to letters, contractions attached to the
#:   word before them, ``/`` kept with a new line after punctuation.
#: * ``"superword"``: SuperBPE's second stage (``superbpe_reference``): white space is no
#:   boundary; a chunk is a run of bytes other than ``\r``, ``\n`` and the sentence
#:   punctuation ``. ! ? ; :``, with the run of such punctuation that ends it, or a run of
#:   that punctuation alone, or a run of ``\r``/``\n``.
PATTERNS: dict[str, str | bytes] = {
    "simple": rb"[ ]?[A-Za-z0-9\x80-\xff]+|[ ]?[^A-Za-z0-9\x80-\xff\t\n\x0b\x0c\r ]+|[\t\n\x0b\x0c\r ]+",
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
    "gpt4": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
    "superword": rb"[^\r\n.!?;:]+[.!?;:]*|[.!?;:]+|[\r\n]+",
}

TIE_BREAKS = ("smallest_ids", "largest_bytes")

#: The default pre-tokenization pattern, set here once for every tokenizer class, trainer and
#: tool (docs/data.md explains the choice); a tokenizer records the pattern it was made with.
DEFAULT_PATTERN = "gpt4"
#: The default of the C++ core's own functions (``storygpt._bpe``), which this reference mirrors
#: argument for argument; the library always passes its pattern to both.
CORE_DEFAULT_PATTERN = "simple"

_COMPILED = {name: regex.compile(p) for name, p in PATTERNS.items()}


def _check_pattern(pattern: str) -> None:
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pre-tokenization pattern {pattern!r}; expected one of {sorted(PATTERNS)}")


def pretokenize(data: bytes, pattern: str = CORE_DEFAULT_PATTERN) -> list[bytes]:
    """Split ``data`` into chunks that merges never cross.

    Args:
        data: the raw bytes to split (any bytes, valid UTF-8 or not).
        pattern: a name from :data:`PATTERNS`.

    Returns:
        The chunks, in order; ``b"".join(chunks) == data`` always holds and no
        chunk is empty.

    Raises:
        ValueError: unknown pattern name.
    """
    _check_pattern(pattern)
    if isinstance(data, str):
        raise TypeError("pretokenize takes bytes; encode str with UTF-8 first")
    rx = _COMPILED[pattern]
    if isinstance(PATTERNS[pattern], bytes):
        chunks = rx.findall(data)
    else:
        text = data.decode("utf-8", errors="surrogateescape")
        chunks = [m.encode("utf-8", errors="surrogateescape") for m in rx.findall(text)]
    assert b"".join(chunks) == data, "pattern must cover the whole input"
    return chunks


def split_special(data: bytes, special_tokens: Sequence[bytes]) -> list[tuple[bytes, bool]]:
    """Split ``data`` around occurrences of special tokens.

    Scans left to right; at each position the longest special token that
    starts there wins.

    Returns:
        A list of ``(piece, is_special)``; plain pieces are never empty.
    """
    specials = sorted({s for s in special_tokens if s}, key=len, reverse=True)
    if not specials:
        return [(data, False)] if data else []
    out: list[tuple[bytes, bool]] = []
    start = 0
    i = 0
    n = len(data)
    while i < n:
        hit = None
        for s in specials:  # longest first
            if data.startswith(s, i):
                hit = s
                break
        if hit is None:
            i += 1
            continue
        if i > start:
            out.append((data[start:i], False))
        out.append((hit, True))
        i += len(hit)
        start = i
    if start < n:
        out.append((data[start:], False))
    return out


def count_chunks(data: bytes, pattern: str, special_tokens: Sequence[bytes] = ()) -> Counter:
    """Count each distinct chunk of ``data`` (special tokens removed first)."""
    counts: Counter = Counter()
    for piece, is_special in split_special(data, special_tokens):
        if not is_special:
            counts.update(pretokenize(piece, pattern))
    return counts


def _merge_word(word: tuple[int, ...], pair: tuple[int, int], new_id: int) -> tuple[int, ...]:
    """Replace every non-overlapping occurrence of ``pair`` (left to right)."""
    out = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == pair[0] and word[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def train(
    data: bytes | str,
    vocab_size: int,
    pattern: str = CORE_DEFAULT_PATTERN,
    special_tokens: Iterable[bytes | str] = (),
    min_frequency: int = 1,
    tie_break: str = "smallest_ids",
) -> list[tuple[int, int]]:
    """Learn BPE merges from ``data``.

    Each distinct chunk is counted once with its count; at every step all pair
    counts are recomputed from scratch (slow but obviously right), the most
    frequent pair is merged everywhere, and its new token gets the next id.

    Args:
        data: training text (``str`` is encoded as UTF-8).
        vocab_size: the size of the final vocabulary: 256 bytes + merges +
            special tokens.  The number of merges asked for is
            ``vocab_size - 256 - len(special_tokens)``.
        pattern: pre-tokenization pattern name (:data:`PATTERNS`).
        special_tokens: strings that split the text; no merge crosses or
            contains them.  They are not counted.
        min_frequency: stop early (without error) when the best pair occurs
            fewer than this many times.
        tie_break: ``"smallest_ids"`` or ``"largest_bytes"`` (module docstring).

    Returns:
        The merges in the order learned: ``merges[i] = (left_id, right_id)``
        makes token id ``256 + i``.  It may be shorter than asked for when the
        text runs out of pairs (or of pairs with ``min_frequency``).

    Raises:
        ValueError: ``vocab_size`` cannot hold 256 bytes and the special
            tokens, unknown pattern or tie-break, ``min_frequency < 1``.
    """
    _check_pattern(pattern)
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"unknown tie_break {tie_break!r}; expected one of {TIE_BREAKS}")
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
    specials = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in special_tokens]
    n_merges = vocab_size - 256 - len(specials)
    if n_merges < 0:
        raise ValueError(
            f"vocab_size={vocab_size} is too small: it must hold the 256 byte tokens "
            f"and {len(specials)} special tokens (at least {256 + len(specials)})"
        )
    if isinstance(data, str):
        data = data.encode("utf-8")

    words = {tuple(chunk): c for chunk, c in count_chunks(data, pattern, specials).items()}
    return continue_merges(words, [], n_merges, min_frequency, tie_break)


def continue_merges(
    words: dict[tuple[int, ...], int],
    merges: Sequence[tuple[int, int]],
    n_merges: int,
    min_frequency: int = 1,
    tie_break: str = "smallest_ids",
) -> list[tuple[int, int]]:
    """Learn up to ``n_merges`` more merges after ``merges`` (the loop of :func:`train`).

    Args:
        words: each distinct chunk as its token ids under ``merges``, with its count.
        merges: the merges learned so far (``merges[i]`` makes id ``256 + i``).
        n_merges: how many more to learn at most.

    Returns:
        ``merges`` followed by the new ones.
    """
    merges = list(merges)
    token_bytes = [bytes([b]) for b in range(256)]
    for a, b in merges:
        token_bytes.append(token_bytes[a] + token_bytes[b])
    for _ in range(n_merges):
        pair_counts: Counter = Counter()
        for word, c in words.items():
            for a, b in zip(word, word[1:]):
                pair_counts[(a, b)] += c
        if not pair_counts:
            break
        best_count = max(pair_counts.values())
        if best_count < min_frequency:
            break
        tied = [p for p, c in pair_counts.items() if c == best_count]
        if tie_break == "smallest_ids":
            pair = min(tied)
        else:
            pair = max(tied, key=lambda p: (token_bytes[p[0]], token_bytes[p[1]]))
        new_id = 256 + len(merges)
        merges.append(pair)
        token_bytes.append(token_bytes[pair[0]] + token_bytes[pair[1]])
        new_words: dict[tuple[int, ...], int] = {}
        for word, c in words.items():
            w = _merge_word(word, pair, new_id) if len(word) > 1 else word
            new_words[w] = new_words.get(w, 0) + c
        words = new_words
    return merges


class Encoder:
    """Reference BPE encoder (ordinary text only: no special tokens).

    Inside each chunk, the adjacent pair with the lowest rank is merged, the
    leftmost one first when several share the lowest rank, again and again
    until no adjacent pair is a merge.

    Args:
        merges: ``(left_id, right_id, new_id)`` triples.  A merge's rank is
            its position in this list unless ``ranks`` is given.
        byte_ids: ``byte_ids[b]`` is the id of the single byte ``b``
            (default: ``b`` itself).  Must hold 256 distinct ids.
        pattern: pre-tokenization pattern name.
        ranks: optional explicit rank per merge (lower merges first; equal
            ranks are allowed).

    Raises:
        ValueError: malformed ``byte_ids``, ``merges`` or ``ranks``.
    """

    def __init__(
        self,
        merges: Sequence[tuple[int, int, int]],
        byte_ids: Sequence[int] | None = None,
        pattern: str = CORE_DEFAULT_PATTERN,
        ranks: Sequence[int] | None = None,
    ):
        _check_pattern(pattern)
        self.pattern = pattern
        if byte_ids is None:
            byte_ids = range(256)
        byte_ids = list(byte_ids)
        if len(byte_ids) != 256 or len(set(byte_ids)) != 256:
            raise ValueError("byte_ids must hold 256 distinct ids")
        if ranks is not None and len(ranks) != len(merges):
            raise ValueError(f"ranks has {len(ranks)} entries for {len(merges)} merges")
        self.byte_ids = byte_ids
        self.vocab: dict[int, bytes] = {tid: bytes([b]) for b, tid in enumerate(byte_ids)}
        self.ranks: dict[tuple[int, int], tuple[int, int]] = {}
        for i, (a, b, new) in enumerate(merges):
            if a not in self.vocab or b not in self.vocab:
                raise ValueError(f"merge {i} ({a}, {b}) -> {new} uses an id not defined before it")
            rank = i if ranks is None else ranks[i]
            made = self.vocab[a] + self.vocab[b]
            if self.vocab.setdefault(new, made) != made:
                raise ValueError(f"merge {i} ({a}, {b}) -> {new} makes an id that already stands for other bytes")
            if (a, b) not in self.ranks:
                self.ranks[(a, b)] = (rank, new)

    def encode_chunk(self, chunk: bytes) -> list[int]:
        ids = [self.byte_ids[b] for b in chunk]
        while len(ids) > 1:
            best = None  # (rank, position)
            for i in range(len(ids) - 1):
                r = self.ranks.get((ids[i], ids[i + 1]))
                if r is not None and (best is None or r[0] < best[0]):
                    best = (r[0], i, r[1])
            if best is None:
                break
            _, i, new = best
            ids[i : i + 2] = [new]
        return ids

    def encode(self, data: bytes) -> list[int]:
        """Encode raw bytes (special tokens are plain text here) to token ids."""
        out: list[int] = []
        for chunk in pretokenize(data, self.pattern):
            out.extend(self.encode_chunk(chunk))
        return out

    def decode(self, ids: Iterable[int]) -> bytes:
        """Concatenate the bytes of ``ids``.

        Raises:
            ValueError: an id that is not in the vocabulary (named).
        """
        parts = []
        for t in ids:
            try:
                parts.append(self.vocab[int(t)])
            except KeyError:
                raise ValueError(f"unknown token id {int(t)}") from None
        return b"".join(parts)

    def token_bytes(self, token_id: int) -> bytes:
        try:
            return self.vocab[token_id]
        except KeyError:
            raise ValueError(f"unknown token id {token_id}") from None


def encoder_from_merges(merges: Sequence[tuple[int, int]], pattern: str = CORE_DEFAULT_PATTERN) -> Encoder:
    """Build an :class:`Encoder` from merges as :func:`train` returns them."""
    return Encoder([(a, b, 256 + i) for i, (a, b) in enumerate(merges)], pattern=pattern)
