"""Building a :class:`~storygpt.tokenizers.bpe.BPETokenizer` from other forms of a vocabulary.

The constructors :meth:`from_merges`, :meth:`from_merges_ids`, :meth:`from_vocab`,
:meth:`from_ranks` and :meth:`from_dict` (a mixin of ``BPETokenizer``: merges as bytes or
ids, someone else's vocabulary and merges, tiktoken ranks, a storygpt tokenizer file), and the checks that make a vocabulary whole:
every token made by a merge (rule ``"merges"``), every token split into two tokens (rule
``"ranks"``), special tokens named once.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence

from . import io as _io
from .base import EOT


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


class BPEBuilders:
    """The alternative constructors of ``BPETokenizer`` (each ends in ``cls(vocab, merges, specials, ...)``)."""

    @classmethod
    def from_merges_ids(
        cls,
        merges: Sequence[tuple[int, int]],
        special_tokens=("<pad>", EOT),
        pattern: str = "simple",
        backend: str = "cpp",
    ):
        """From merges as id pairs (``bpe_reference.train`` output): merge ``i`` makes id ``256 + i``."""
        vocab = {b: bytes([b]) for b in range(256)}
        triples = []
        for k, (a, b) in enumerate(merges):
            if a not in vocab or b not in vocab:
                raise ValueError(f"merge {k} ({a}, {b}) uses an id not defined before it")
            vocab[256 + k] = vocab[a] + vocab[b]
            triples.append((a, b, 256 + k))
        return cls(vocab, triples, special_dict(special_tokens, len(vocab)), pattern, "merges", backend)

    @classmethod
    def from_merges(
        cls,
        merges: Sequence[tuple[bytes, bytes]],
        special_tokens=("<pad>", EOT),
        pattern: str = "simple",
        backend: str = "cpp",
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
        pattern: str = "simple",
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
            ``<|endoftext|>`` at 50256 in ``encoder.json``) is kept at its id as an added token, encoded only when allowed like a special
            token, with a ``UserWarning`` naming it (as Hugging Face ``tokenizers`` and
            tiktoken hold such tokens).

        Raises:
            ValueError: a merge whose parts or result is not in ``vocab`` (named); two
                merges that make the same token (both named).
        """
        vocab = {int(i): bytes(b) for i, b in vocab.items()}
        special_tokens = () if special_tokens is None else special_tokens
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
        return cls(vocab, triples, specials, pattern, "merges", backend)

    @classmethod
    def from_ranks(
        cls,
        ranks: Mapping[bytes, int],
        special_tokens: Mapping[str, int] | Sequence[str] = (EOT,),
        pattern: str = "gpt2",
        backend: str = "cpp",
    ):
        """From tiktoken-style mergeable ranks (token bytes -> rank = id); merge rule ``"ranks"``."""
        vocab = {int(i): bytes(b) for b, i in ranks.items()}
        specials = special_dict(special_tokens, max(vocab) + 1)
        return cls(vocab, None, specials, pattern, "ranks", backend)

    @classmethod
    def from_dict(cls, d: dict, backend: str = "cpp"):
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
