"""What a tokenizer comparison concludes from its runs: seeds, intervals, a winner or none, sweeps, fits.

Works on :class:`storygpt.compare.report.RunResult` rows (one per tokenizer x budget x seed) and uses
:mod:`storygpt.compare.stats` for the numbers.  A run is **eligible** to be named best when it is neither
under-trained (fewer optimizer steps than its warm-up, or fewer than :data:`MIN_EVALS` evaluations) nor
lossy (a held-out document that does not round-trip, or a ``<unk>`` token).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from storygpt.compare import stats

#: A run with fewer held-out evaluations than this is under-trained (its curve says nothing).
MIN_EVALS = 3
#: Bootstrap replicates and interval level of the report.
REPLICATES = 10_000
LEVEL = 0.95
#: The intrinsic measures set beside the measured bits/char (bits.json fields).
INTRINSIC = ("chars_per_token", "renyi_efficiency", "vocab_used_share", "mean_token_bytes")


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


def verdict(budget_groups: Sequence[Group], replicates: int = REPLICATES) -> Verdict:
    """The conclusion at one budget (the groups of that budget)."""
    eligible = [g for g in budget_groups if g.eligible]
    v = Verdict(budget_groups[0].budget if budget_groups else math.nan, None)
    v.ineligible = [g.spec for g in budget_groups if not g.eligible]
    if not eligible:
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


@dataclass
class Correlation:
    """Spearman's rho between one intrinsic measure and the measured bits/char across tokenizers."""

    measure: str
    rho: float
    p: float | None
    n: int


def intrinsic_correlations(budget_groups: Sequence[Group]) -> list[Correlation]:
    """For each of :data:`INTRINSIC`: rho over the lossless tokenizers of one budget (mean bits/char of each; a
    lossy model's bits/char leaves part of the text out), with the exact permutation p-value when there are
    at most 8 tokenizers (None beyond); rho is nan when the measure is the same for every tokenizer."""
    out = []
    for m in INTRINSIC:
        pts = [(getattr(g.runs[0], m, None), g.mean) for g in budget_groups if not g.lossy]
        pts = [(x, y) for x, y in pts if x is not None and math.isfinite(x)]
        if len(pts) < 3:
            continue
        xs, ys = zip(*pts)
        rho = stats.spearman(xs, ys)
        p = stats.spearman_p_exact(xs, ys) if len(pts) <= 8 else None
        out.append(Correlation(m, rho, p, len(pts)))
    return out


@dataclass
class Sweep:
    """Bits/char against compute per tokenizer over the budgets, with fits and crossovers."""

    budgets: list
    series: dict  # spec -> list of Group, by budget
    fits: dict  # spec -> stats.PowerLawFit or a str saying why there is none
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
            fits[spec] = stats.fit_power_law(c, y)
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
