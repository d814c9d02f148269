"""The checks and conversions of a byte-level BPE vocabulary (no tokenizer class here).

What :class:`~storygpt.tokenizers.bpe.BPETokenizer` and its constructors share: the limits
(:data:`MAX_VOCAB_SIZE`, :data:`MAX_ID_GAP`), the C++ core's loader, special tokens as a
dict, the checks that make a vocabulary whole (every token made by exactly one merge, no two
ids with the same bytes, with rule ``"merges"``; every token split into two tokens, with rule
``"ranks"``), someone else's vocabulary and merges as id triples (:func:`vocab_triples`),
and a tokenizer file's dict as constructor arguments (:func:`parts_from_dict`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence

from . import io as _io

#: The largest vocabulary: the C++ encoder takes token ids in [0, 2**26).
MAX_VOCAB_SIZE = 1 << 26

#: Unused ids allowed below the largest id (OpenAI's cl100k_base leaves 20 between its
#: special tokens); more would make the id tables grow with the largest id, not the tokens.
MAX_ID_GAP = 1024

MERGE_RULES = ("merges", "ranks")
BACKENDS = ("cpp", "reference")


def load_cpp():
    """The C++ core ``storygpt._bpe``.

    Raises:
        ImportError: not built, or older than its Python code (how to rebuild named).
    """
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
    """ValueError naming ``backend`` unless it is one of :data:`BACKENDS`."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")


def special_dict(special_tokens, first_id: int) -> dict[str, int]:
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


def added_tokens(vocab: dict[int, bytes], made: Mapping[int, int], specials: Mapping[str, int]) -> dict[str, int]:
    """The entries of ``vocab`` that are no single byte, that no merge makes (``made``: id ->
    merge) and that no two entries make either (such an entry is a merge missing from a cut
    list, which the constructor refuses), valid UTF-8 and not yet special: str -> id, with
    one ``UserWarning`` naming them."""
    tokens = set(vocab.values())
    added = {}
    for i, b in sorted(vocab.items()):
        if len(b) > 1 and i not in made and not any(b[:k] in tokens and b[k:] in tokens for k in range(1, len(b))):
            try:
                s = b.decode("utf-8")
            except UnicodeDecodeError:
                continue  # not text: the constructor refuses it, naming it
            if s not in specials and s not in added:
                added[s] = i
    if added:
        shown = ", ".join(f"{i} ({s!r})" for s, i in list(added.items())[:5]) + (", ..." if len(added) > 5 else "")
        warnings.warn(
            f"{len(added)} vocabulary {'entry' if len(added) == 1 else 'entries'} made by no merge and not declared "
            f"special kept at their ids as added tokens (encoded only when allowed, like special tokens): {shown}",
            stacklevel=3,
        )
    return added


def check_all_made(vocab: Mapping[int, bytes], merges: Sequence[tuple[int, int, int]], byte_ids: list[int]) -> None:
    """Every vocab entry is a byte token or made by a merge (rule ``"merges"``).

    An entry no merge makes is never produced by encoding, and the encoder
    cannot decode it: such a vocabulary is a cut or corrupt file.

    Raises:
        ValueError: the first such entry, with its id and bytes.
    """
    made = set(byte_ids)
    made.update(new for _, _, new in merges)
    for i in sorted(vocab):
        if i not in made:
            b = vocab[i]
            extra = f"; byte {b[0]:#04x} is id {byte_ids[b[0]]}" if len(b) == 1 else ""
            raise ValueError(
                f"vocab entry {i} (token {b!r}) is not produced by any merge and is not a byte or special token" + extra
            )


def rank_merges(vocab: Mapping[int, bytes]) -> tuple[list[tuple[int, int, int]], list[int]]:
    """Every split (a, b) of every token with a, b tokens: merge (a, b) -> a+b at rank id(a+b)."""
    by_bytes: dict[bytes, int] = {}
    for i, b in vocab.items():
        if b in by_bytes:
            raise ValueError(f"merge_rule 'ranks' needs distinct tokens; {b!r} has ids {by_bytes[b]} and {i}")
        by_bytes[b] = i
    merges: list[tuple[int, int, int]] = []
    ranks: list[int] = []
    unreachable = []
    get = by_bytes.get
    # shorter tokens first (then by id), so that every part is defined before it is used
    for i, b in sorted(vocab.items(), key=lambda kv: (len(kv[1]), kv[0])):
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


def check_tables(vocab: Mapping[int, bytes], special_tokens: Mapping[str, int]):
    """``(vocab, byte_ids, specials)`` of a BPE vocabulary, checked: ids non-negative, tokens
    non-empty bytes, all 256 single bytes present (``byte_ids[b]``: the first id of byte ``b``),
    special tokens non-empty strings with ids of their own.

    Raises:
        ValueError: the first fault, naming the id, byte or special token.
    """
    out: dict[int, bytes] = {}
    for i, b in vocab.items():
        i = int(i)
        if i < 0:
            raise ValueError(f"negative token id {i}")
        if not isinstance(b, (bytes, bytearray)) or not b:
            raise ValueError(f"token {i} must be non-empty bytes, got {b!r}")
        out[i] = bytes(b)
    byte_ids = [-1] * 256
    for i, b in sorted(out.items()):
        if len(b) == 1 and byte_ids[b[0]] < 0:
            byte_ids[b[0]] = i
    missing = [b for b in range(256) if byte_ids[b] < 0]
    if missing:
        raise ValueError(f"vocabulary lacks {len(missing)} single-byte tokens, e.g. byte {missing[0]:#04x}")
    specials: dict[str, int] = {}
    for s, i in special_tokens.items():
        if not isinstance(s, str) or not s:
            raise ValueError(f"special token {s!r} must be a non-empty string")
        i = int(i)
        if i < 0 or i in out or i in specials.values():
            raise ValueError(f"special token {s!r} has id {i}, which is negative or already used")
        specials[s] = i
    return out, byte_ids, specials


def check_distinct(vocab: Mapping[int, bytes]) -> dict[bytes, int]:
    """Token bytes -> id, every token once.

    Raises:
        ValueError: two ids with the same bytes (both ids named): encoding would only
            ever give one of them.
    """
    by_bytes: dict[bytes, int] = {}
    for i in sorted(vocab):
        b = vocab[i]
        if b in by_bytes:
            raise ValueError(f"token ids {by_bytes[b]} and {i} both have the bytes {b!r}: each token must appear once")
        by_bytes[b] = i
    return by_bytes


def check_merges(vocab: Mapping[int, bytes], merges: Sequence[tuple[int, int, int]], byte_ids: list[int]) -> None:
    """The merges list of rule ``"merges"`` against its vocabulary.

    Every merge ``(a, b, new)`` uses ids of ``vocab`` with ``vocab[a] + vocab[b] ==
    vocab[new]``; no two merges make the same id; every entry is a byte or made by a merge
    (:func:`check_all_made`); no two ids have the same bytes.

    Raises:
        ValueError: the first fault, naming the merge(s) (0-based) or id(s).
    """
    made: dict[int, int] = {}
    for k, (a, b, new) in enumerate(merges):
        for t in (a, b, new):
            if t not in vocab:
                raise ValueError(f"merge {k} ({a}, {b}) -> {new} uses id {t}, not in the vocabulary")
        if vocab[a] + vocab[b] != vocab[new]:
            raise ValueError(f"merge {k}: token {new} = {vocab[new]!r} is not {vocab[a]!r} + {vocab[b]!r}")
        if new in made:
            j = made[new]
            raise ValueError(
                f"merges {j} {tuple(merges[j])} and {k} {(a, b, new)} both make token {new} ({vocab[new]!r}): "
                "each token must be made by one merge"
            )
        made[new] = k
    check_all_made(vocab, merges, byte_ids)
    check_distinct(vocab)


def vocab_triples(
    vocab: Mapping[int, bytes], merges: Sequence[tuple[bytes, bytes]], special_tokens
) -> tuple[dict[int, bytes], list[tuple[int, int, int]], dict[str, int]]:
    """Someone else's vocabulary and merges as ``(vocab, id triples, specials)`` for rule
    ``"merges"`` (``BPETokenizer.from_vocab``, whose docstring says what is kept where).

    Raises:
        ValueError: two ids with the same bytes (both named); a merge whose parts or
            result is not in ``vocab`` (named); two merges that make the same token (both named).
    """
    vocab = {int(i): bytes(b) for i, b in vocab.items()}
    special_tokens = () if special_tokens is None else special_tokens
    by_bytes = check_distinct(vocab)
    # A special token already in the vocabulary keeps its id (it is not given a second one).
    if isinstance(special_tokens, Mapping):
        specials = {str(k): int(v) for k, v in special_tokens.items()}
    else:
        specials = {}
        next_id = max(by_bytes.values()) + 1
        for s in special_dict(special_tokens, 0):
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
    added = added_tokens(vocab, made, specials)
    for s, i in added.items():
        del vocab[i]
        specials[s] = i
    return vocab, triples, specials


def parts_from_dict(d: dict) -> tuple[dict[int, bytes], list | None, dict, str, str]:
    """A ``"bpe"`` tokenizer file's dict as ``(vocab, merges, specials, pattern, merge_rule)``.

    Raises:
        TokenizerFileError: wrong format, version or kind.
        ValueError, KeyError, TypeError: malformed content (an id given twice named).
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
    return vocab, merges, specials, d["pattern"], rule
