"""What a tokenizer comparison concludes from its runs: seeds, intervals, a winner or none, sweeps, fits.

Works on :class:`storygpt.compare.report.RunResult` rows (one per tokenizer x budget x seed) and uses
:mod:`storygpt.eval.stats` for the numbers (paired bootstrap, Spearman); the power-law fit of a sweep,
L(C) = E + A * C**(-alpha) with alpha profiled, is :func:`fit_power_law` here.  A run is **eligible** to be named best when it is neither
under-trained (fewer optimizer steps than its warm-up, or fewer than :data:`MIN_EVALS` evaluations) nor
lossy (a held-out document that does not round-trip, or a ``<unk>`` token).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from storygpt.checkpoint import MIN_EVALS as _MIN_EVALS
from storygpt.eval import stats

#: A run with fewer held-out evaluations than this is under-trained (its curve says nothing).
MIN_EVALS = _MIN_EVALS  # one rule with pretrain.py and bits.py (storygpt.checkpoint)
#: The kinds of budget: compare.py's argument -> (flag, metrics.jsonl key, words).  A run's budget label
#: (``flops1e12``, settings.budget_label) starts with the short name in :data:`SHORT`.
BUDGETS = {
    "budget_flops": ("--budget-flops", "flops", "training FLOPs"),
    "budget_chars": ("--budget-chars", "chars", "training characters"),
    "budget_tokens": ("--budget-tokens", "tokens", "training tokens"),
    "minutes": ("--minutes", "elapsed", "minutes of wall time"),
}
SHORT = {"budget_flops": "flops", "budget_chars": "chars", "budget_tokens": "tokens", "minutes": "minutes"}
#: Bootstrap replicates and interval level of the report.
REPLICATES = 10_000
LEVEL = 0.95
#: The intrinsic measures set beside the measured bits/char (bits.json fields).
INTRINSIC = ("fertility", "chars_per_token", "renyi_efficiency", "vocab_used_share", "mean_token_bytes")


def budget_kind(label: str | None) -> str:
    """The key of :data:`BUDGETS` of a budget label (``flops1e12 -> budget_flops``; FLOPs when empty)."""
    label = label or "flops"
    return next((key for key, short in SHORT.items() if label.startswith(short)), "minutes")


def budget_to_train(value: float, steps: float, warmup: int | None, evals: int | None = None) -> float | None:
    """The budget that trains a run that got ``steps`` optimizer steps (and ``evals`` evaluations) from
    ``value``: about twice its warm-up steps (at least :data:`MIN_EVALS`), and :data:`MIN_EVALS` evaluations
    at its evaluation spacing; None when ``value`` already does (budgets scale steps linearly)."""
    factor = 1.0
    if warmup is not None and steps < warmup:
        factor = max(2 * warmup, MIN_EVALS) / max(steps, 1e-9)
    if evals is not None and evals < MIN_EVALS:
        factor = max(factor, MIN_EVALS / max(evals, 1))
    return value * factor if factor > 1 else None


@dataclass
class Group:
    """The runs of one tokenizer at one budget (one per seed)."""

    spec: str
    budget: float
    runs: list

    @property
    def bpc(self) -> list[float]:
        return [r.bits_per_char for r in self.runs]

    @property
    def mean(self) -> float:
        return float(np.mean(self.bpc))

    @property
    def spread(self) -> float | None:
        """Sample standard deviation over the seeds (None with one seed)."""
        return float(np.std(self.bpc, ddof=1)) if len(self.runs) > 1 else None

    @property
    def flops(self) -> float:
        return float(np.mean([r.flops for r in self.runs]))

    @property
    def under_trained(self) -> bool:
        return any(r.under_trained for r in self.runs)

    @property
    def lossy(self) -> bool:
        return any(r.lossy for r in self.runs)

    @property
    def eligible(self) -> bool:
        return not (self.under_trained or self.lossy)

    def budget_to_train(self) -> float | None:
        """The budget at which every seed of an under-trained group is trained (:func:`budget_to_train`)."""
        need = [budget_to_train(r.budget_value, r.steps, r.warmup_steps, r.evals) for r in self.runs if r.budget_value]
        return max((n for n in need if n is not None), default=None)

    def block_matrix(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(nats: seeds x blocks, characters per block), or None when a run has no block losses or the
        runs' blocks differ."""
        rows, chars = [], None
        for r in self.runs:
            if not r.block_nats or not r.block_characters:
                return None
            if chars is not None and list(r.block_characters) != chars:
                return None
            chars = list(r.block_characters)
            rows.append(r.block_nats)
        return np.array(rows, dtype=np.float64), np.array(chars, dtype=np.float64)


def groups(results: Sequence) -> list[Group]:
    """The runs grouped by (budget, SPEC), in the order of first appearance."""
    out: dict[tuple, Group] = {}
    for r in results:
        key = (r.budget_value, r.spec)
        out.setdefault(key, Group(r.spec, r.budget_value, [])).runs.append(r)
    return list(out.values())


@dataclass
class Verdict:
    """One budget's conclusion: the lowest eligible mean, every other group's difference from it (with a
    bootstrap interval when block losses are there), and the winner when every interval excludes zero."""

    budget: float
    best: Group | None
    intervals: dict = field(default_factory=dict)  # spec -> stats.Interval (other minus best), or None
    winner: str | None = None
    tied: list = field(default_factory=list)  # eligible specs the intervals cannot tell from the best
    ineligible: list = field(default_factory=list)
    unfair: list = field(default_factory=list)  # under-trained groups that leave no fair verdict (see verdict)
    budget_needed: float | None = None  # the budget at which they would be trained


def unfair_groups(budget_groups: Sequence[Group]) -> list[Group]:
    """The under-trained (lossless) groups without which no run can fairly be named best: those with a lower
    mean than the lowest eligible one, or all of them when they leave fewer than two eligible groups (a run
    left alone is best only because the others were excluded).  Lossy groups are never best, trained or not."""
    under = [g for g in budget_groups if g.under_trained and not g.lossy]
    eligible = [g for g in budget_groups if g.eligible]
    if not under or not eligible:
        return []
    if len(eligible) < 2:
        return under
    low = min(g.mean for g in eligible)
    return [g for g in under if g.mean < low]


def verdict(budget_groups: Sequence[Group], replicates: int = REPLICATES) -> Verdict:
    """The conclusion at one budget (the groups of that budget): none (``unfair``, ``budget_needed``) when
    an under-trained run would decide it (:func:`unfair_groups`)."""
    eligible = [g for g in budget_groups if g.eligible]
    v = Verdict(budget_groups[0].budget if budget_groups else math.nan, None)
    v.ineligible = [g.spec for g in budget_groups if not g.eligible]
    unfair = unfair_groups(budget_groups)
    if unfair:  # no run is named best because another was excluded
        v.unfair = [g.spec for g in sorted(unfair, key=lambda g: g.mean)]
        v.budget_needed = max((n for n in (g.budget_to_train() for g in unfair) if n is not None), default=None)
        return v
    if not eligible:
        under = [n for n in (g.budget_to_train() for g in budget_groups if g.under_trained) if n is not None]
        v.budget_needed = max(under, default=None)
        return v
    best = min(eligible, key=lambda g: g.mean)
    v.best = best
    best_blocks = best.block_matrix()
    for g in budget_groups:
        if g is best:
            continue
        mine = g.block_matrix()
        if best_blocks is None or mine is None or len(mine[1]) != len(best_blocks[1]) or len(mine[1]) < 2:
            v.intervals[g.spec] = None
            continue
        v.intervals[g.spec] = stats.paired_bootstrap(
            mine[0], best_blocks[0], best_blocks[1], replicates=replicates, level=LEVEL
        )
    others = [g.spec for g in eligible if g is not best]
    v.tied = [s for s in others if v.intervals.get(s) is None or not v.intervals[s].excludes_zero]
    if not v.tied:
        v.winner = best.spec
    return v


def intrinsic_correlations(budget_groups: Sequence[Group], replicates: int = REPLICATES) -> list:
    """For each of :data:`INTRINSIC`: Spearman's rho with bits/char over the lossless tokenizers of one budget (a
    lossy model's bits/char leaves part of the text out), on the held-out text and, when the runs have several,
    on each evaluation set (bits.json ``sets``), with p-values and bootstrap intervals over the held-out blocks
    (storygpt.eval.rankcorr.correlate; a list of its Correlation)."""
    from storygpt.eval import rankcorr

    gs = [g for g in budget_groups if not g.lossy]
    if not gs:
        return []
    measures = {m: [getattr(g.runs[0], m, None) for g in gs] for m in INTRINSIC}
    blocks = [g.block_matrix() for g in gs]
    same = all(b is not None for b in blocks) and len({tuple(b[1]) for b in blocks}) == 1
    texts = {
        "held-out text": ([g.mean for g in gs], *(([b[0] for b in blocks], blocks[0][1]) if same else (None, None)))
    }
    runs = [r for g in gs for r in g.runs]
    names = [n for n in (runs[0].sets or {}) if all(n in (r.sets or {}) for r in runs)]
    for name in names if len(names) > 1 else []:
        figs = [[r.sets[name] for r in g.runs] for g in gs]
        bpc = [float(np.mean([f["bits_per_character"] for f in fs])) for fs in figs]
        chars = [f.get("block_characters") for fs in figs for f in fs]
        if all(c and c == chars[0] for c in chars) and all("block_nats" in f for fs in figs for f in fs):
            nats = [np.array([f["block_nats"] for f in fs], dtype=np.float64) for fs in figs]
            texts[name] = (bpc, nats, np.array(chars[0], dtype=np.float64))
        else:
            texts[name] = (bpc, None, None)
    return rankcorr.correlate(measures, texts, replicates=replicates)


@dataclass
class Sweep:
    """Bits/char against compute per tokenizer over the budgets, with fits and crossovers."""

    budgets: list
    series: dict  # spec -> list of Group, by budget
    fits: dict  # spec -> PowerLawFit or a str saying why there is none
    crossovers: list  # (spec_a, spec_b, low budget, high budget, compute estimate)


def sweep(all_groups: Sequence[Group]) -> Sweep | None:
    """The sweep of a report with several budgets (None with one)."""
    budgets = sorted({g.budget for g in all_groups})
    if len(budgets) < 2:
        return None
    series: dict[str, list[Group]] = {}
    for g in sorted(all_groups, key=lambda g: g.budget):
        series.setdefault(g.spec, []).append(g)
    fits: dict = {}
    for spec, gs in series.items():
        if len({g.budget for g in gs}) < 3:
            fits[spec] = "fewer than 3 budgets: no curve is fitted"
            continue
        c = [r.flops for g in gs for r in g.runs]
        y = [r.bits_per_char for g in gs for r in g.runs]
        try:
            fits[spec] = fit_power_law(c, y)
        except ValueError as e:
            fits[spec] = str(e)
    crossovers = []
    specs = list(series)
    for i, a in enumerate(specs):
        for b in specs[i + 1 :]:
            pa = {g.budget: g for g in series[a]}
            pb = {g.budget: g for g in series[b]}
            common = [x for x in budgets if x in pa and x in pb]
            for lo, hi in zip(common, common[1:]):
                d0, d1 = pa[lo].mean - pb[lo].mean, pa[hi].mean - pb[hi].mean
                if d0 * d1 < 0:
                    c0 = (pa[lo].flops + pb[lo].flops) / 2
                    c1 = (pa[hi].flops + pb[hi].flops) / 2
                    t = d0 / (d0 - d1)  # linear in log compute
                    crossovers.append((a, b, lo, hi, float(math.exp(math.log(c0) + t * (math.log(c1) - math.log(c0))))))
    return Sweep(budgets, series, fits, crossovers)


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
