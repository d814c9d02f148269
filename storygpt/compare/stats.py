"""The statistics of a tokenizer comparison: the power-law fit of a sweep, and (re-exported from
:mod:`storygpt.eval.stats`) the paired bootstrap, ranks and Rényi efficiency.

:func:`fit_power_law` (L(C) = E + A * C**(-alpha), alpha profiled).  How the report uses them: docs/compare.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from storygpt.eval.stats import (  # noqa: F401  (re-exported: one import for compare's modules)
    LN2,
    Interval,
    bits_per_char,
    paired_bootstrap,
    ranks,
    renyi_efficiency,
    renyi_entropy,
    spearman,
    spearman_p_exact,
)


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
