"""What the converters of :mod:`storygpt.tokenizers.interop` share.

:class:`InteropError`, the patterns as the other libraries read them
(:data:`TEXT_PATTERNS`), the merges list of a rank vocabulary (:func:`merges_from_ranks`),
and the one-id-per-token map that rank files and ``tokenizer.json`` both need
(:func:`ids_by_bytes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import bpe_reference
from .hf import HFFileError

#: Pre-tokenization patterns as regular expressions over *text* for the other libraries.
#: ``simple`` is defined on bytes; on text (valid UTF-8) a byte >= 0x80 belongs to a
#: non-ASCII character and every non-ASCII character is made of such bytes, so the
#: class ``\x{80}-\x{10FFFF}`` gives the same chunks.
TEXT_PATTERNS = {
    "simple": r"[ ]?[A-Za-z0-9\x{80}-\x{10FFFF}]+|[ ]?[^A-Za-z0-9\x{80}-\x{10FFFF}\t\n\x{0B}\x{0C}\r ]+"
    r"|[\t\n\x{0B}\x{0C}\r ]+",
    "gpt2": bpe_reference.PATTERNS["gpt2"],
    "gpt4": bpe_reference.PATTERNS["gpt4"],
    "o200k": bpe_reference.PATTERNS["o200k"],
    "superword": bpe_reference.PATTERNS["superword"].decode("ascii"),  # SuperBPE's stage 2 (ASCII classes only)
}


class InteropError(HFFileError):
    """A file or tokenizer that cannot be converted exactly; the message names the file and component."""


@dataclass(frozen=True)
class BPEParts:
    """What an importer read, before it becomes a ``BPETokenizer`` (``BPETokenizer.from_parts``).

    Attributes:
        pattern: the pre-tokenization pattern name.
        specials: special tokens (str -> id, or a sequence: ids after the largest).
        ranks: token bytes -> rank = id (rule ``"ranks"``), or ``None``.
        vocab: id -> token bytes (rule ``"merges"``, with ``merges``), or ``None``.
        merges: ``(left bytes, right bytes)`` pairs in rank order, or ``None``.
        source: what was read, the prefix of an error raised while building.
        error: the exception class a ValueError raised while building becomes.
    """

    pattern: str
    specials: Mapping[str, int] | Sequence[str]
    ranks: Mapping[bytes, int] | None = None
    vocab: Mapping[int, bytes] | None = None
    merges: Sequence[tuple[bytes, bytes]] | None = None
    source: str = ""
    error: type = ValueError


def merges_from_ranks(ranks: Mapping[bytes, int]) -> list[tuple[bytes, bytes]]:
    """The merges list of a rank vocabulary (tiktoken's ``mergeable_ranks``): one merge per token.

    A token's merge is the pair of parts that byte-level BPE leaves when it runs on the
    token's own bytes with only the ranks *lower* than the token's (lowest rank first,
    leftmost on ties).  Applied in rank order, these merges give the same ids as the
    rank rule on vocabularies made by BPE training (GPT-2, cl100k_base, o200k_base).

    Args:
        ranks: token bytes -> rank; must hold the 256 single bytes.

    Returns:
        ``(left bytes, right bytes)`` pairs in increasing rank of ``left + right``,
        one for every token of two bytes or more.

    Raises:
        ValueError: a token that lower ranks cannot build from two parts (named with its rank).
    """
    out = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) < 2:
            continue
        parts = [bytes([b]) for b in token]
        while len(parts) > 2:
            best = None
            for i in range(len(parts) - 1):
                r = ranks.get(parts[i] + parts[i + 1])
                if r is not None and r < rank and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                raise ValueError(f"token {token!r} (rank {rank}) cannot be built from tokens of lower rank")
            i = best[1]
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        out.append((parts[0], parts[1]))
    return out


def ids_by_bytes(vocab: Mapping[int, bytes], why: str) -> dict[bytes, int]:
    """Token bytes -> id of every entry of ``vocab``, in id order.

    Raises:
        InteropError: two ids with the same bytes (both named), ``why`` said after them.
    """
    out: dict[bytes, int] = {}
    for i, b in sorted(vocab.items()):
        if b in out:
            raise InteropError(f"tokens {out[b]} and {i} are the same bytes {b!r}: {why}")
        out[b] = i
    return out
