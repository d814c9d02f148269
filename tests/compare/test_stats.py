"""storygpt.eval.stats and the power-law fit of storygpt.compare.analysis against closed forms and independent numpy
computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from storygpt.compare.analysis import fit_power_law
from storygpt.eval import stats


# ------------------------------------------------------------------ bootstrap
def test_constant_difference_per_block_gives_a_zero_width_interval():
    # B predicts every block exactly 100 nats worse than A: every resample gives the same difference
    chars = np.full(20, 1000.0)
    a = np.linspace(1000, 2000, 20)
    iv = stats.paired_bootstrap(a, a + 100, chars, replicates=500)
    want = -100 * 20 / (math.log(2) * 20_000)  # -0.0072135 bits/char
    assert iv.diff == pytest.approx(want, abs=1e-12)
    assert iv.low == pytest.approx(want, abs=1e-12) and iv.high == pytest.approx(want, abs=1e-12)
    assert iv.excludes_zero


def test_interval_width_matches_the_standard_error_of_a_mean():
    # equal blocks: the bits/char difference is mean(d) / (ln 2 * chars per block); the bootstrap's
    # percentile interval of a mean approaches mean +- 1.96 * std(d, ddof=0) / sqrt(n) for large n
    rng = np.random.default_rng(5)
    n, per = 400, 2000.0
    d = rng.normal(3.0, 40.0, n)
    a = rng.normal(3000, 200, n)
    iv = stats.paired_bootstrap(a + d, a, np.full(n, per), replicates=20_000, seed=1)
    scale = math.log(2) * per
    half = 1.959964 * d.std() / math.sqrt(n) / scale
    assert iv.diff == pytest.approx(d.mean() / scale, rel=1e-12)
    assert (iv.high - iv.low) / 2 == pytest.approx(half, rel=0.04)
    assert (iv.high + iv.low) / 2 == pytest.approx(iv.diff, abs=0.1 * half)
    assert not iv.excludes_zero  # mean 3 +- 3.9 nats: zero inside


def test_seeds_widen_the_interval_and_observed_difference_averages_seeds():
    chars = np.full(30, 1000.0)
    base = np.full(30, 1500.0)
    one = stats.paired_bootstrap(base[None] + 10, base, chars, replicates=2000)
    two = stats.paired_bootstrap(np.stack([base + 10, base - 30]), base, chars, replicates=2000)
    assert one.low == one.high  # one seed, a constant difference: no spread
    assert two.diff == pytest.approx(((10 - 30) / 2) * 30 / (math.log(2) * 30_000))
    # the seed draw gives either seed twice or one of each: the interval spans both seeds' differences
    s = 30 / (math.log(2) * 30_000)
    assert two.low == pytest.approx(-30 * s) and two.high == pytest.approx(10 * s)


def test_bootstrap_errors():
    with pytest.raises(ValueError, match="block counts differ"):
        stats.paired_bootstrap(np.ones(3), np.ones(4), np.ones(3))
    with pytest.raises(ValueError, match="at least 2 blocks"):
        stats.paired_bootstrap(np.ones(1), np.ones(1), np.ones(1))


# ------------------------------------------------------------------ power law
def test_power_law_recovers_exact_parameters():
    c = np.array([1e11, 3e11, 1e12, 3e12, 1e13])
    E, A, alpha = 1.8, 40.0, 0.12
    fit = fit_power_law(c, E + A * c**-alpha)
    assert fit.E == pytest.approx(E, rel=1e-5)
    assert fit.A == pytest.approx(A, rel=1e-4)
    assert fit.alpha == pytest.approx(alpha, rel=1e-5)
    assert fit.rss < 1e-14 and fit.n == 5 and not fit.at_bound
    assert (fit.c_min, fit.c_max) == (1e11, 1e13)
    assert fit(np.array([1e12]))[0] == pytest.approx(E + A * 1e12**-alpha, rel=1e-9)


def test_power_law_three_points_has_no_uncertainty():
    c = np.array([1e12, 3e12, 1e13])
    fit = fit_power_law(c, 2.0 + 5.0 * (c / 1e12) ** -0.5)
    assert fit.alpha == pytest.approx(0.5, rel=1e-5) and fit.E == pytest.approx(2.0, rel=1e-5)
    assert fit.E_se is None and fit.alpha_se is None


def test_power_law_standard_errors_match_an_independent_jacobian():
    c = np.array([1e12, 2e12, 4e12, 8e12, 1.6e13, 3.2e13])
    noise = np.array([0.01, -0.012, 0.004, 0.009, -0.007, 0.002])
    y = 2.0 + 3.0 * (c / 1e12) ** -0.4 + noise
    fit = fit_power_law(c, y)
    # numerical Jacobian of L in (E, A, alpha) at the fit, in the original units
    p = np.array([fit.E, fit.A, fit.alpha])

    def model(q):
        return q[0] + q[1] * c ** (-q[2])

    J = np.empty((len(c), 3))
    for k in range(3):
        h = np.zeros(3)
        h[k] = 1e-6 * max(abs(p[k]), 1e-3)
        J[:, k] = (model(p + h) - model(p - h)) / (2 * h[k])
    r = y - model(p)
    assert float(r @ r) == pytest.approx(fit.rss, rel=1e-6)
    cov = float(r @ r) / (len(c) - 3) * np.linalg.inv(J.T @ J)
    se = np.sqrt(np.diag(cov))
    assert fit.E_se == pytest.approx(se[0], rel=1e-3)
    assert fit.A_se == pytest.approx(se[1], rel=1e-3)
    assert fit.alpha_se == pytest.approx(se[2], rel=1e-3)
    # the least-squares optimum: the gradient of the residual sum vanishes
    assert np.abs(J.T @ r).max() < 1e-6


def test_power_law_needs_three_budgets():
    with pytest.raises(ValueError, match="at least 3 distinct compute values, got 2"):
        fit_power_law([1e12, 1e12, 3e12], [2.0, 2.1, 1.9])


# ------------------------------------------------------------------ ranks
def test_ranks_and_spearman_closed_form():
    assert stats.ranks([10, 20, 20, 5]).tolist() == [2, 3.5, 3.5, 1]
    x, y = [1, 2, 3, 4, 5], [2, 1, 4, 3, 5]
    d2 = sum((a - b) ** 2 for a, b in zip([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]))  # no ties: 1 - 6 sum d^2 / n(n^2-1)
    assert stats.spearman(x, y) == pytest.approx(1 - 6 * d2 / (5 * 24))  # 0.8
    assert stats.spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    # ties: Pearson of mean ranks, by hand: ranks x = [1, 2.5, 2.5, 4], y = [1, 2, 3, 4]
    rx, ry = np.array([1, 2.5, 2.5, 4]) - 2.5, np.array([1, 2, 3, 4]) - 2.5
    assert stats.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(rx @ ry / math.sqrt((rx @ rx) * (ry @ ry)))
    assert math.isnan(stats.spearman([1, 1, 1], [1, 2, 3]))


def test_spearman_exact_p_value():
    # n = 4, perfect order: only the identity and the reversal reach |rho| = 1: 2 of 24 orderings
    assert stats.spearman_p_exact([1, 2, 3, 4], [1, 2, 3, 4]) == pytest.approx(2 / 24)
    # n = 3: |rho| >= 0.5 for all 6 orderings (rho is +-1 or +-0.5)
    assert stats.spearman_p_exact([1, 2, 3], [1, 3, 2]) == pytest.approx(1.0)


# ------------------------------------------------------------------ Renyi efficiency
def test_renyi_efficiency_closed_forms():
    assert stats.renyi_efficiency([5, 5, 5, 5], 4) == pytest.approx(1.0)
    assert stats.renyi_efficiency([5, 5, 0, 0], 4) == pytest.approx(0.5)  # log 2 / log 4
    # two tokens with p = (0.8, 0.2), alpha 2.5, |V| = 2: log(0.8^2.5 + 0.2^2.5) / (1 - 2.5) / log 2
    want = math.log(0.8**2.5 + 0.2**2.5) / -1.5 / math.log(2)
    assert stats.renyi_efficiency([8, 2], 2) == pytest.approx(want)
    assert stats.renyi_entropy([8, 2], 1) == pytest.approx(-(0.8 * math.log(0.8) + 0.2 * math.log(0.2)))
    with pytest.raises(ValueError):
        stats.renyi_efficiency([], 4)
