"""Held-out losses per character block, and what a tokenizer does to the held-out text by itself.

:func:`block_losses` sums each predicted token's cross-entropy into the fixed-size character block
holding its last character (the same blocks for every model: the paired bootstrap); inexact
(``exact`` False) when the tokens do not spell the document.  :func:`intrinsic_measures`:
characters per token, Rényi efficiency, vocabulary used, mean token bytes.  See docs/compare.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from storygpt.data.corpora import chars_per_token
from storygpt.eval.stats import renyi_efficiency

#: Characters per block by default (bits.py --block-chars): 50 blocks in compare.py's 100,000 characters.
DEFAULT_BLOCK_CHARS = 2000


def token_char_ends(tokenizer: Any, doc: str, ids: Sequence[int]) -> tuple[np.ndarray, bool]:
    """For each token of ``doc``, how many characters of ``doc`` are complete after it (int64, one per id).

    Exact (second value True) when ``tokenizer.token_bytes`` exists and the tokens' bytes join to the
    document's UTF-8 (a token that ends inside a character completes none); otherwise token ``k`` of
    ``n`` ends at ``round((k + 1) * len(doc) / n)``.
    """
    n = len(ids)
    if n == 0:
        return np.zeros(0, dtype=np.int64), True
    token_bytes = getattr(tokenizer, "token_bytes", None)
    if token_bytes is not None:
        try:
            pieces = [token_bytes(t) for t in ids]
        except (ValueError, KeyError, IndexError):
            pieces = None
        raw = doc.encode("utf-8")
        if pieces is not None and b"".join(pieces) == raw:
            byte_ends = np.cumsum([len(p) for p in pieces])
            lead = np.frombuffer(raw, dtype=np.uint8) & 0xC0 != 0x80
            char_ends = np.append(np.flatnonzero(lead)[1:], len(raw))  # byte offset where each character ends
            return np.searchsorted(char_ends, byte_ends, side="right").astype(np.int64), True
    return np.rint((np.arange(1, n + 1) * len(doc)) / n).astype(np.int64), False


@dataclass
class BlockLosses:
    """Cross-entropy per character block: ``nats[i]`` over ``chars[i]`` characters (block ``i`` holds the
    characters ``i * block_chars`` .. ``(i + 1) * block_chars - 1`` of the text, the last one fewer)."""

    block_chars: int
    nats: list[float]
    chars: list[int]
    exact: bool


def block_losses(
    tokenizer: Any, documents: Sequence[str], token_nats: np.ndarray, block_chars: int = DEFAULT_BLOCK_CHARS
) -> BlockLosses:
    """Sum ``token_nats`` (one per predicted token, in the order of evaluate.token_stream) into blocks.

    Raises:
        ValueError: ``block_chars`` < 1, or ``token_nats`` not one value per predicted token.
    """
    if block_chars < 1:
        raise ValueError(f"block_chars must be positive, got {block_chars}")
    docs = [d for d in documents if d]
    positions: list[np.ndarray] = []
    exact = True
    start = 0  # character position of the document's first character (boundaries count one each)
    for i, d in enumerate(docs):
        if i:
            positions.append(np.array([start - 1]))  # the eot before this document: its boundary character
        ends, ok = token_char_ends(tokenizer, d, tokenizer.encode_ordinary(d))
        exact &= ok
        positions.append(np.maximum(start + ends - 1, start))
        start += len(d) + 1
    pos = np.concatenate(positions) if positions else np.zeros(0, dtype=np.int64)
    token_nats = np.asarray(token_nats, dtype=np.float64)
    if pos.shape != token_nats.shape:
        raise ValueError(f"{len(token_nats)} token losses for {len(pos)} predicted tokens")
    total = max(start - 1, 0)
    n_blocks = max(1, -(-total // block_chars))
    nats = np.bincount(pos // block_chars, weights=token_nats, minlength=n_blocks)
    chars = [block_chars] * (n_blocks - 1) + [total - (n_blocks - 1) * block_chars]
    return BlockLosses(block_chars, [float(x) for x in nats], chars, exact)


def intrinsic_measures(tokenizer: Any, documents: Sequence[str]) -> dict:
    """What the tokenizer alone does to ``documents`` (the document tokens, boundaries left out).

    Returns:
        ``chars_per_token`` (characters / tokens), ``renyi_efficiency`` (alpha 2.5 over the vocabulary),
        ``vocab_used_share`` (distinct ids used / vocabulary size), ``mean_token_bytes`` (UTF-8 bytes of
        each token, ``token_bytes`` where the tokenizer has it, else its printed form, averaged over the
        tokens).
    """
    vocab = int(tokenizer.vocab_size)
    counts = np.zeros(vocab, dtype=np.int64)
    chars = 0
    for d in documents:
        ids = tokenizer.encode_ordinary(d)
        np.add.at(counts, np.asarray(ids, dtype=np.int64), 1)
        chars += len(d)
    tokens = int(counts.sum())
    used = np.flatnonzero(counts)
    token_bytes = getattr(tokenizer, "token_bytes", None)
    if token_bytes is not None:
        length = np.array([len(token_bytes(int(t))) for t in used])
    else:
        length = np.array([len(tokenizer.id_to_token(int(t)).encode("utf-8")) for t in used])
    return {
        "chars_per_token": chars_per_token(chars, tokens),
        "renyi_efficiency": renyi_efficiency(counts, vocab, 2.5) if tokens else None,
        "vocab_used_share": len(used) / vocab,
        "mean_token_bytes": float((length * counts[used]).sum() / tokens) if tokens else None,
    }
