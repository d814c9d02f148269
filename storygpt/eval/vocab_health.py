"""Vocabulary health of a trained run: the tokens its training tokens hold never or too seldom to learn.

* never / rarely seen (below :data:`RARE`) in ``train-SLUG.bin``, and their share of the held-out
  tokens (Land & Bartolo 2024, "Fishing for Magikarp");
* the ``wte`` row norms of unseen tokens against seen ones;
* intermediate merge steps (PickyBPE, arXiv 2409.04599: Intersection over Self at
  :data:`IOS_THRESHOLD`, measured on the final tokens; tokenizers with merges only).

What each measure tells and cannot tell: docs/attribution.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

RARE = 10
IOS_THRESHOLD = 0.9
CHUNK = 1 << 24


def token_counts(path: str | Path, vocab_size: int) -> np.ndarray:
    """How often each id occurs in a token file (int64, ``vocab_size``), read in chunks.

    Raises:
        FileNotFoundError, ValueError: see storygpt.data.read_tokens; ids outside the vocabulary.
    """
    from storygpt.data.binfile import iter_ids

    counts = np.zeros(vocab_size, dtype=np.int64)
    for block in iter_ids(path, CHUNK):  # read, not memmapped: the file's pages stay out of the RSS
        part = block.astype(np.int64)
        if len(part) and int(part.max()) >= vocab_size:
            raise ValueError(f"{path}: id {int(part.max())} is outside the vocabulary of {vocab_size}")
        counts += np.bincount(part, minlength=vocab_size)
    return counts


def intermediate_tokens(counts: np.ndarray, merges: list[tuple[int, int, int]] | None) -> np.ndarray | None:
    """Ids of the tokens that occur almost only as parts of longer tokens (module docstring), or None
    without a merges list."""
    if not merges:
        return None
    inside = counts.astype(np.float64).copy()
    made = np.zeros(len(counts), dtype=bool)
    for left, right, new in reversed(merges):  # a token is made before every merge that uses it
        inside[left] += inside[new]
        inside[right] += inside[new]
        made[new] = True
    used_further = inside > counts
    with np.errstate(invalid="ignore", divide="ignore"):
        own = np.where(inside > 0, counts / inside, 1.0)
    return np.flatnonzero(made & used_further & (own <= 1 - IOS_THRESHOLD))


def vocab_health(
    tokenizer: Any, model: Any, train_counts: np.ndarray, heldout_ids: np.ndarray, examples: int = 10
) -> dict:
    """The measures of the module docstring for one run.

    Args:
        tokenizer: the run's tokenizer (``vocab_size``, optional ``merges``, ``eot_id``, ``id_to_token``).
        model: the run's GPT (``wte``), or None to leave the norms out.
        train_counts: :func:`token_counts` of the training token file.
        heldout_ids: the predicted held-out tokens.

    Returns:
        a dict of counts, shares and norms (keys as documented in docs/bits.md).
    """
    v = int(tokenizer.vocab_size)
    counts = np.asarray(train_counts, dtype=np.int64)
    never = counts == 0
    rare = (counts > 0) & (counts < RARE)
    held = np.bincount(np.asarray(heldout_ids, dtype=np.int64), minlength=v)
    n_held = max(int(held.sum()), 1)
    out = {
        "vocab_size": v,
        "training_tokens": int(counts.sum()),
        "never_seen": int(never.sum()),
        "rarely_seen": int(rare.sum()),
        "rare_below": RARE,
        "unlearned_share": float((never | rare).sum() / v),
        "heldout_tokens": int(held.sum()),
        "heldout_share_never_seen": float(held[never].sum() / n_held),
        "heldout_share_rarely_seen": float(held[rare].sum() / n_held),
    }
    name = getattr(tokenizer, "id_to_token", None)

    def show(ids):
        return [name(int(i)) if name else int(i) for i in ids[:examples]]

    out["never_seen_examples"] = show(np.flatnonzero(never))
    wte = getattr(model, "wte", None)
    if wte is not None:
        norms = wte.weight.detach().float().norm(dim=1).cpu().numpy()[:v]
        out["embedding_norm_seen"] = float(norms[~never].mean()) if (~never).any() else None
        out["embedding_norm_never_seen"] = float(norms[never].mean()) if never.any() else None
        out["embedding_norm_rarely_seen"] = float(norms[rare].mean()) if rare.any() else None
    inter = intermediate_tokens(counts, getattr(tokenizer, "merges", None))
    out["intermediate"] = None if inter is None else len(inter)
    out["intermediate_share"] = None if inter is None else len(inter) / v
    out["intermediate_examples"] = None if inter is None else show(inter)
    return out


def format_health(name: str, h: dict) -> str:
    """One run's vocabulary health in two lines."""
    line = (
        f"{name}: {h['never_seen']:,} of {h['vocab_size']:,} tokens never seen in training, {h['rarely_seen']:,} "
        f"seen 1-{h['rare_below'] - 1} times ({h['unlearned_share']:.1%} of the vocabulary never or rarely seen in "
        f"the training tokens); held-out tokens through them: {h['heldout_share_never_seen']:.3%} never, "
        f"{h['heldout_share_rarely_seen']:.3%} rarely seen"
    )
    if h.get("embedding_norm_seen") is not None:
        unseen = h.get("embedding_norm_never_seen")
        line += f"\n  embedding norm: seen {h['embedding_norm_seen']:.3f}, never seen " + (
            f"{unseen:.3f}" if unseen is not None else "-"
        )
    if h.get("intermediate") is not None:
        line += f"; {h['intermediate']:,} tokens only steps towards longer merges ({h['intermediate_share']:.1%})"
    return line
