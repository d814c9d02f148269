"""Per-set differences between two models with paired bootstrap intervals, and their macro and micro means.

Each evaluation set (storygpt/data/evalsets.py) is cut into blocks of characters (the same blocks for both
models).  Per set, the interval is storygpt.eval.stats.paired_bootstrap's.  The macro mean (the mean over
sets of each set's difference) and the micro mean (all nats over all characters) get a stratified
paired bootstrap: each replicate draws blocks with replacement *within* each set (so every set keeps
its size and its place in the mean) and, as paired_bootstrap does, the seeds of each model.
"""

from __future__ import annotations

import numpy as np

from storygpt.eval.stats import LN2, Interval, paired_bootstrap


def block_sums(char_nats: np.ndarray, block_chars: int) -> tuple[np.ndarray, np.ndarray]:
    """``(nats per block, characters per block)`` of consecutive blocks of ``block_chars`` characters
    (the last block shorter)."""
    n = len(char_nats)
    if block_chars < 1:
        raise ValueError(f"block_chars must be positive, got {block_chars}")
    starts = np.arange(0, max(n, 1), block_chars)
    nats = np.add.reduceat(np.asarray(char_nats, dtype=np.float64), starts) if n else np.zeros(1)
    chars = np.diff(np.append(starts, n))
    return nats, chars


def _per_seed(weights: np.ndarray, nats: np.ndarray) -> np.ndarray:
    return weights @ nats.T  # (R, S) weighted nats per replicate and seed


def set_intervals(
    a: dict[str, np.ndarray],
    b: dict[str, np.ndarray],
    chars: dict[str, np.ndarray],
    *,
    replicates: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> dict:
    """Differences A - B in bits per character per set, macro and micro, with paired intervals.

    Args:
        a, b: per set, block nats of shape ``(blocks,)`` or ``(seeds, blocks)``.
        chars: per set, characters of each block ``(blocks,)``.

    Returns:
        ``{"sets": {name: Interval or None (fewer than 2 blocks)}, "macro": Interval, "micro": Interval}``.

    Raises:
        ValueError: no sets, sets that differ between A, B and chars, or mismatched block counts.
    """
    names = list(chars)
    if not names or set(a) != set(names) or set(b) != set(names):
        raise ValueError(f"A, B and the blocks name different sets: {sorted(a)}, {sorted(b)}, {sorted(chars)}")
    A = {k: np.atleast_2d(np.asarray(a[k], dtype=np.float64)) for k in names}
    B = {k: np.atleast_2d(np.asarray(b[k], dtype=np.float64)) for k in names}
    C = {k: np.asarray(chars[k], dtype=np.float64) for k in names}
    for k in names:
        if A[k].shape[1] != len(C[k]) or B[k].shape[1] != len(C[k]):
            raise ValueError(f"set {k}: block counts differ")
    sa, sb = A[names[0]].shape[0], B[names[0]].shape[0]
    rng = np.random.default_rng(seed)
    picks_a = rng.integers(0, sa, size=(replicates, sa))
    picks_b = rng.integers(0, sb, size=(replicates, sb))
    per_set = {}
    macro_rep = np.zeros(replicates)
    tot_a, tot_b, tot_c = np.zeros((replicates, sa)), np.zeros((replicates, sb)), np.zeros(replicates)
    for k in names:
        n = len(C[k])
        per_set[k] = (
            paired_bootstrap(A[k], B[k], C[k], replicates=replicates, level=level, seed=seed) if n >= 2 else None
        )
        w = rng.multinomial(n, np.full(n, 1.0 / n), size=replicates).astype(np.float64)
        wa, wb, wc = _per_seed(w, A[k]), _per_seed(w, B[k]), w @ C[k]
        ra = np.take_along_axis(wa / (LN2 * wc[:, None]), picks_a, axis=1).mean(axis=1)
        rb = np.take_along_axis(wb / (LN2 * wc[:, None]), picks_b, axis=1).mean(axis=1)
        macro_rep += (ra - rb) / len(names)
        tot_a, tot_b, tot_c = tot_a + wa, tot_b + wb, tot_c + wc
    micro_rep = np.take_along_axis(tot_a / (LN2 * tot_c[:, None]), picks_a, axis=1).mean(axis=1) - np.take_along_axis(
        tot_b / (LN2 * tot_c[:, None]), picks_b, axis=1
    ).mean(axis=1)

    def bpc(x, c):
        return float(np.mean(x.sum(axis=1)) / (LN2 * c.sum()))

    macro = float(np.mean([bpc(A[k], C[k]) - bpc(B[k], C[k]) for k in names]))
    all_c = np.concatenate([C[k] for k in names])
    micro = bpc(np.concatenate([A[k] for k in names], axis=1), all_c) - bpc(
        np.concatenate([B[k] for k in names], axis=1), all_c
    )
    tail = (1 - level) / 2
    out = {"sets": per_set}
    for key, obs, rep in (("macro", macro, macro_rep), ("micro", micro, micro_rep)):
        low, high = np.quantile(rep, [tail, 1 - tail])
        out[key] = Interval(obs, float(low), float(high), level)
    return out


def format_intervals(iv: dict, name_a: str, name_b: str) -> str:
    """The per-set, macro and micro differences as a plain-text table."""
    lines = [f"bits/char {name_a} - {name_b} per evaluation set ({iv['micro'].level:.0%} paired intervals):"]
    rows = [(k, v) for k, v in iv["sets"].items()] + [("macro mean", iv["macro"]), ("micro mean", iv["micro"])]
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        if v is None:
            lines.append(f"  {k.ljust(w)}  (too short for an interval)")
        else:
            mark = "" if not v.excludes_zero else "  *"
            lines.append(f"  {k.ljust(w)}  {v.diff:+.4f}  [{v.low:+.4f}, {v.high:+.4f}]{mark}")
    lines.append("  (* the interval excludes 0)")
    return "\n".join(lines)
