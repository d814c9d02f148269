"""The statistics of a tokenizer comparison, in numpy only: paired bootstrap, power-law fit, ranks, Rényi efficiency.

:func:`paired_bootstrap` (percentile intervals over held-out character blocks and seeds; Koehn 2004,
Efron and Tibshirani 1993), :func:`fit_power_law` (L(C) = E + A * C**(-alpha), alpha profiled),
:func:`spearman`/:func:`spearman_p_exact` and :func:`renyi_efficiency` (Zouhar et al. 2023,
alpha 2.5).  How the report uses them: docs/compare.md.
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


# ------------------------------------------------------------------ power law
@dataclass
class PowerLawFit:
    """L(C) = E + A * C**(-alpha) fitted to ``n`` points with C in ``[c_min, c_max]``.

    ``*_se``: standard errors from the Jacobian (None when ``n <= 3``: the curve then passes through the
    points and the data cannot say how uncertain it is).  ``at_bound``: alpha ended at the edge of the
    search range (the fit is not trustworthy).  The curve is only meant between ``c_min`` and ``c_max``;
    E is its limit at infinite compute, an extrapolation.
    """

    E: float
    A: float
    alpha: float
    E_se: float | None
    A_se: float | None
    alpha_se: float | None
    rss: float
    n: int
    c_min: float
    c_max: float
    at_bound: bool

    def __call__(self, c) -> np.ndarray:
        return self.E + self.A * np.asarray(c, dtype=np.float64) ** (-self.alpha)


ALPHA_RANGE = (1e-3, 4.0)


def _linear_given_alpha(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """(E, A', rss) of y = E + A' x**(-alpha) by least squares (x scaled to start at 1)."""
    X = np.column_stack([np.ones_like(x), x ** (-alpha)])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    r = y - X @ coef
    return float(coef[0]), float(coef[1]), float(r @ r)


def fit_power_law(c, loss) -> PowerLawFit:
    """Least-squares fit of L(C) = E + A * C**(-alpha) (numpy only).

    For each alpha the model is linear in (E, A), so alpha is profiled: a log-spaced grid over
    :data:`ALPHA_RANGE`, then golden-section search around the best grid point.  C is scaled by its smallest
    value for the conditioning (A is scaled back).

    Args:
        c: compute of each point (FLOPs; positive), at least 3 distinct values.
        loss: the loss at each point (bits/char).

    Raises:
        ValueError: fewer than 3 distinct compute values, or a non-positive one.
    """
    c = np.asarray(c, dtype=np.float64)
    y = np.asarray(loss, dtype=np.float64)
    if c.shape != y.shape or c.ndim != 1:
        raise ValueError("compute and loss must be 1-D and of the same length")
    if np.any(c <= 0):
        raise ValueError("compute must be positive")
    if len(np.unique(c)) < 3:
        raise ValueError(f"a 3-parameter curve needs at least 3 distinct compute values, got {len(np.unique(c))}")
    c0 = float(c.min())
    x = c / c0
    grid = np.geomspace(*ALPHA_RANGE, 400)
    rss = np.array([_linear_given_alpha(x, y, a)[2] for a in grid])
    i = int(np.argmin(rss))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (math.sqrt(5) - 1) / 2
    for _ in range(100):  # golden-section search on the profiled residual
        m1, m2 = hi - g * (hi - lo), lo + g * (hi - lo)
        if _linear_given_alpha(x, y, m1)[2] <= _linear_given_alpha(x, y, m2)[2]:
            hi = m2
        else:
            lo = m1
    alpha = (lo + hi) / 2
    E, A_scaled, rss_best = _linear_given_alpha(x, y, alpha)
    alpha = float(alpha)
    at_bound = bool(alpha <= ALPHA_RANGE[0] * 1.01 or alpha >= ALPHA_RANGE[1] * 0.99)
    n = len(c)
    se = (None, None, None)
    if n > 3:
        J = np.column_stack([np.ones_like(x), x ** (-alpha), -A_scaled * x ** (-alpha) * np.log(x)])
        cov = rss_best / (n - 3) * np.linalg.pinv(J.T @ J)
        e_se, a_se, al_se = np.sqrt(np.clip(np.diag(cov), 0, None))
        # A = A' c0**alpha: its error from A' and alpha (delta method)
        dA = np.array([0.0, c0**alpha, A_scaled * c0**alpha * math.log(c0)])
        se = (float(e_se), float(math.sqrt(max(dA @ cov @ dA, 0.0))), float(al_se))
    return PowerLawFit(
        E=E,
        A=A_scaled * c0**alpha,
        alpha=alpha,
        E_se=se[0],
        A_se=se[1],
        alpha_se=se[2],
        rss=rss_best,
        n=n,
        c_min=c0,
        c_max=float(c.max()),
        at_bound=at_bound,
    )


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
