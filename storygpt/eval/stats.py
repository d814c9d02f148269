"""The statistics of held-out measurement, in numpy only: paired bootstrap, ranks, Rényi efficiency.

:func:`paired_bootstrap` (percentile intervals over held-out character blocks and seeds; Koehn 2004,
Efron and Tibshirani 1993), :func:`spearman`/:func:`spearman_p_exact` and :func:`renyi_efficiency`
(Zouhar et al. 2023, alpha 2.5).  The power-law fit of a sweep is compare's: storygpt.compare.analysis.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

LN2 = math.log(2)


# ------------------------------------------------------------------ bootstrap
@dataclass
class Interval:
    """A difference in bits per character and its bootstrap interval (``low <= high``), at ``level``."""

    diff: float
    low: float
    high: float
    level: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def bits_per_char(nats: np.ndarray, chars: np.ndarray) -> float:
    """``sum(nats) / (ln 2 * sum(chars))`` over blocks (the seeds of a 2-D ``nats`` averaged)."""
    nats = np.atleast_2d(np.asarray(nats, dtype=np.float64))
    return float(np.mean(nats.sum(axis=1)) / (LN2 * float(np.sum(chars))))


def _replicates(nats: np.ndarray, chars: np.ndarray, weights: np.ndarray, seed_picks: np.ndarray) -> np.ndarray:
    """Bits/char per bootstrap replicate: blocks weighted by ``weights`` (R, B), seeds picked by ``seed_picks``
    (R, S): the mean over the picked seeds of each seed's bits/char on the weighted blocks."""
    per_seed = weights @ nats.T / (LN2 * (weights @ chars))[:, None]  # (R, S)
    return np.take_along_axis(per_seed, seed_picks, axis=1).mean(axis=1)


def paired_bootstrap(
    nats_a: np.ndarray,
    nats_b: np.ndarray,
    chars: np.ndarray,
    *,
    replicates: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """bits/char of A minus bits/char of B on the same character blocks, with a paired percentile interval.

    Args:
        nats_a, nats_b: cross-entropy in nats of each held-out block, shape ``(blocks,)`` or
            ``(seeds, blocks)`` (one row per training seed; A and B may have different seed counts).
        chars: characters of each block, shape ``(blocks,)`` (the same blocks for A and B).
        replicates: bootstrap replicates.
        level: the interval's coverage (0.95: the 2.5th and 97.5th percentiles).
        seed: seed of the resampling (the interval is reproducible).

    Each replicate draws the blocks with replacement (one draw for A and B: paired) and, independently
    for A and B, their seeds with replacement; the difference is the mean bits/char over the drawn seeds
    of each, on the drawn blocks (a ratio of sums, as bits/char is).  With one seed only the held-out text
    is resampled: the interval then says nothing about another training seed.

    Returns:
        :class:`Interval` with ``diff`` the observed difference (all blocks, all seeds).

    Raises:
        ValueError: mismatched shapes, fewer than 2 blocks, or a level outside (0, 1).
    """
    a = np.atleast_2d(np.asarray(nats_a, dtype=np.float64))
    b = np.atleast_2d(np.asarray(nats_b, dtype=np.float64))
    chars = np.asarray(chars, dtype=np.float64)
    if a.shape[1] != chars.shape[0] or b.shape[1] != chars.shape[0]:
        raise ValueError(f"block counts differ: {a.shape[1]}, {b.shape[1]} nats vs {chars.shape[0]} character counts")
    if chars.shape[0] < 2:
        raise ValueError(f"a bootstrap needs at least 2 blocks, got {chars.shape[0]}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    rng = np.random.default_rng(seed)
    n = chars.shape[0]
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=replicates).astype(np.float64)
    picks_a = rng.integers(0, a.shape[0], size=(replicates, a.shape[0]))
    picks_b = rng.integers(0, b.shape[0], size=(replicates, b.shape[0]))
    d = _replicates(a, chars, weights, picks_a) - _replicates(b, chars, weights, picks_b)
    tail = (1 - level) / 2
    low, high = np.quantile(d, [tail, 1 - tail])
    return Interval(bits_per_char(a, chars) - bits_per_char(b, chars), float(low), float(high), level)


# ------------------------------------------------------------------ ranks
def ranks(values) -> np.ndarray:
    """1-based ranks, ties sharing their mean rank (``[10, 20, 20, 5] -> [2, 3.5, 3.5, 1]``)."""
    v = np.asarray(values, dtype=np.float64)
    order = np.argsort(v, kind="mergesort")
    r = np.empty(len(v))
    r[order] = np.arange(1, len(v) + 1)
    for u in np.unique(v):
        tied = v == u
        r[tied] = r[tied].mean()
    return r


def spearman(x, y) -> float:
    """Spearman's rank correlation: Pearson's correlation of the ranks (nan when one side is constant).

    Raises:
        ValueError: lengths differ or fewer than 2 points.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or len(x) < 2:
        raise ValueError(f"spearman needs two sequences of the same length >= 2, got {len(x)} and {len(y)}")
    rx, ry = ranks(x) - ranks(x).mean(), ranks(y) - ranks(y).mean()
    den = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry / den) if den > 0 else math.nan


def spearman_p_exact(x, y) -> float:
    """Two-sided p-value of :func:`spearman` by enumerating every ordering of ``y`` (n <= 8: 40,320 orders):
    the share of orderings whose |rho| is at least the observed one.

    Raises:
        ValueError: more than 8 points.
    """
    n = len(x)
    if n > 8:
        raise ValueError(f"the exact test enumerates n! orderings; n = {n} is too many")
    rho = spearman(x, y)
    if math.isnan(rho):
        return math.nan
    y = list(y)
    hits = total = 0
    for perm in itertools.permutations(y):
        r = spearman(x, perm)
        hits += abs(r) >= abs(rho) - 1e-12
        total += 1
    return hits / total


# ------------------------------------------------------------------ tokenizer efficiency
def renyi_entropy(counts, alpha: float = 2.5) -> float:
    """H_alpha(p) = log(sum p_i**alpha) / (1 - alpha) in nats, p the normalised ``counts`` (alpha = 1:
    Shannon entropy).

    Raises:
        ValueError: no counts or a negative one; alpha < 0.
    """
    c = np.asarray(counts, dtype=np.float64)
    if c.size == 0 or np.any(c < 0) or c.sum() <= 0:
        raise ValueError("renyi_entropy needs non-negative counts with a positive sum")
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    p = c[c > 0] / c.sum()
    if alpha == 1:
        return float(-(p * np.log(p)).sum())
    return float(np.log((p**alpha).sum()) / (1 - alpha))


def renyi_efficiency(counts, vocab_size: int, alpha: float = 2.5) -> float:
    """Rényi efficiency H_alpha(p) / log |V| of a token distribution (Zouhar et al. 2023): 1 when every
    token of the vocabulary is equally frequent, towards 0 when a few tokens dominate.

    Args:
        counts: occurrences of each token id on a text (zeros allowed).
        vocab_size: |V|, the tokenizer's vocabulary size (> 1).
    """
    if vocab_size < 2:
        raise ValueError(f"vocab_size must be at least 2, got {vocab_size}")
    return renyi_entropy(counts, alpha) / math.log(vocab_size)
