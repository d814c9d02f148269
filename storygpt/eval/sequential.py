"""Adding training seeds until the order of the tokenizers is decided, with a stated error rate (numpy only).

The statistical core of ``compare.py --seeds auto[:MAX]`` (issue 45; the rounds: storygpt/compare/seeds_auto.py).
Every tokenizer starts with 2 seeds; after each seed round ("look") the still-open tokenizers are compared
with the current best, and only those whose difference from it is undecided (and the best) get another seed,
until every one is decided or MAX seeds are reached.

Method: a group-sequential paired t-test with Bonferroni-split alpha spending.

* One observation per seed round and pair: ``d_i = bpc_A(seed i) - bpc_B(seed i)`` in bits per character,
  both measured on the same held-out characters.  The seed-to-seed spread of ``d`` is the noise that matters
  across seeds; the held-out text is held fixed (its own sampling error is what the paired block bootstrap of
  :func:`storygpt.eval.stats.paired_bootstrap` adds, not this).  Assumed: the ``d_i`` of a pair are
  independent, identically and normally distributed (seeds are independent training runs; the t-test is
  robust to mild non-normality, and the simulation in tests/compare/test_sequential.py checks the rate).
* Look ``j`` (``j = 1 .. MAX-1``) uses the first ``n = j + 1`` seeds.  Its share ``alpha_j`` of the error
  rate is the increment of a Lan-DeMets spending function at information fraction ``n / MAX`` (Lan and DeMets
  1983, "Discrete sequential boundaries for clinical trials", Biometrika 70(3), 659-663; default: the
  O'Brien-Fleming-type ``2 - 2 Phi(z_{alpha/2} / sqrt(t))``), so ``sum_j alpha_j = alpha``.  Each share is
  split evenly (Bonferroni) over all ``m = K (K-1) / 2`` pairs of the K tokenizers: which tokenizer is the
  best is read from the data and may change between looks, so every pair may be tested.
* The interval of a pair at look j is ``mean(d) +- t_{n-1}(1 - alpha_j / (2 m)) * sd(d) / sqrt(n)``.  By
  the union bound over the looks and pairs, with probability at least ``1 - alpha`` every interval of every
  pair at every look holds the pair's true difference: a confidence sequence over the looks n = 2 .. MAX
  (time-uniform over this fixed schedule, not over an unbounded one; Bonferroni is used instead of exact
  group-sequential boundaries, which for a t statistic with unknown variance have no closed form; it is
  conservative, never anti-conservative, whatever the correlation between looks and pairs).
* A tokenizer is *decided worse* when its interval against the current best lies above zero; it gets no
  more seeds.  The best is *decided better* (the named winner) when every other tokenizer is decided worse.

What is controlled: the family-wise probability of at least one false statement "A is worse than B" (true
mean bits/char of A at most that of B) over the whole procedure, at most ``alpha``.  Hence the probability
of naming a winner that is not the strict true best, in particular of naming any winner when there is no
true difference, is at most ``alpha``; a named winner comes with "decided worse" statements that are all
true at the same time with probability at least ``1 - alpha``.  "Undecided" at MAX states nothing.  The
seeds continue to be paired: a tokenizer's seed i is compared with the best's seed i.

Why not re-read the fixed-sample test after each seed: every look is another chance of a false verdict, and
the error rate grows with the looks (14.9% instead of at most 5% with 3 tokenizers and 2..6 seeds, measured by
the simulation in tests/compare/test_sequential.py and docs/compare.md).

The Student t distribution is computed exactly for integer degrees of freedom (Abramowitz and Stegun 1964,
26.7.3-26.7.4), so nothing beyond numpy and math is needed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

SPENDINGS = ("obrien-fleming", "pocock", "uniform", "fixed")
BETTER, WORSE, UNDECIDED = "decided-better", "decided-worse", "undecided"
FIRST_SEEDS = 2


# ------------------------------------------------------------------ Student t, exact for integer df
def t_two_sided_p(t: float, df: int) -> float:
    """``P(|T| >= |t|)`` for Student's T with ``df`` (an integer >= 1) degrees of freedom.

    Closed forms of Abramowitz and Stegun 26.7.3 (odd df) and 26.7.4 (even df), with
    ``theta = atan(|t| / sqrt(df))``; exact to rounding (about 1e-15 absolute).

    Raises:
        ValueError: df not an integer >= 1, or t not a number.
    """
    if int(df) != df or df < 1:
        raise ValueError(f"degrees of freedom must be an integer >= 1, got {df}")
    if math.isnan(t):
        raise ValueError("t is not a number")
    df = int(df)
    if math.isinf(t):
        return 0.0
    theta = math.atan(abs(t) / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    if df % 2:  # odd: A = 2/pi (theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ...)), df - 2 terms of cos
        term, total = 1.0, 0.0
        if df > 1:
            total = term = c
            for k in range(1, (df - 3) // 2 + 1):
                term *= c * c * (2 * k) / (2 * k + 1)
                total += term
        inside = 2 / math.pi * (theta + s * total)
    else:  # even: A = sin (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...)
        term = total = 1.0
        for k in range(1, (df - 2) // 2 + 1):
            term *= c * c * (2 * k - 1) / (2 * k)
            total += term
        inside = s * total
    return min(1.0, max(0.0, 1.0 - inside))


@lru_cache(maxsize=4096)
def t_critical(two_sided_level: float, df: int) -> float:
    """The ``t`` with ``P(|T| >= t) = two_sided_level`` for ``df`` degrees of freedom (bisection on
    :func:`t_two_sided_p`, relative precision 1e-12; df = 1 with level 0.0005 gives 1273.2).

    Raises:
        ValueError: a level outside (0, 1) or a bad df.
    """
    if not 0 < two_sided_level < 1:
        raise ValueError(f"level must be between 0 and 1, got {two_sided_level}")
    lo, hi = 0.0, 1.0
    while t_two_sided_p(hi, df) > two_sided_level:
        lo, hi = hi, hi * 2
        if hi > 1e300:
            raise ValueError(f"level {two_sided_level} is too small for df {df}")
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_two_sided_p(mid, df) > two_sided_level:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


def _z(p: float) -> float:
    """The standard normal quantile (bisection on erfc; |error| < 1e-12)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if _phi(mid) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# ------------------------------------------------------------------ alpha spending over the looks
def look_levels(max_seeds: int, alpha: float = 0.05, spending: str = "obrien-fleming") -> np.ndarray:
    """Each look's share of ``alpha``, shape ``(max_seeds - 1,)``: entry ``j`` is spent at the look with
    ``j + 2`` seeds.  The shares sum to ``alpha`` (except ``"fixed"``).

    Spending functions of the information fraction ``t = seeds / max_seeds`` (Lan and DeMets 1983):

    * ``"obrien-fleming"`` (default): ``alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t))``; little at the first
      looks, where 2 or 3 seeds give a t statistic with 1 or 2 degrees of freedom that can decide only huge
      differences anyway, most at the last.
    * ``"pocock"``: ``alpha(t) = alpha ln(1 + (e - 1) t)``.
    * ``"uniform"``: ``alpha / (max_seeds - 1)`` at every look (plain Bonferroni).
    * ``"fixed"``: ``alpha`` at every look, the fixed-sample test re-read after each seed.  NOT valid when
      looking more than once (its error rate exceeds alpha); kept to measure that inflation.

    The shares of the first look start from ``t = 0`` (nothing spent before the 2 first seeds).

    Raises:
        ValueError: ``max_seeds < 2``, alpha outside (0, 1), or an unknown spending.
    """
    return np.array(_look_levels(max_seeds, alpha, spending))


@lru_cache(maxsize=256)
def _look_levels(max_seeds: int, alpha: float, spending: str) -> tuple[float, ...]:
    if int(max_seeds) != max_seeds or max_seeds < FIRST_SEEDS:
        raise ValueError(f"max_seeds must be an integer >= {FIRST_SEEDS}, got {max_seeds}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    looks = int(max_seeds) - FIRST_SEEDS + 1
    t = np.arange(FIRST_SEEDS, int(max_seeds) + 1) / max_seeds
    if spending == "obrien-fleming":
        z = _z(1 - alpha / 2)
        cum = np.array([2 - 2 * _phi(z / math.sqrt(x)) for x in t])
    elif spending == "pocock":
        cum = alpha * np.log(1 + (math.e - 1) * t)
    elif spending == "uniform":
        cum = alpha * np.arange(1, looks + 1) / looks
    elif spending == "fixed":
        return (float(alpha),) * looks
    else:
        raise ValueError(f"unknown spending {spending!r}; one of {', '.join(SPENDINGS)}")
    cum[-1] = alpha  # exact sum despite rounding
    return tuple(float(v) for v in np.diff(np.concatenate([[0.0], cum])))


# ------------------------------------------------------------------ the confidence sequence of one pair
@dataclass
class SeqInterval:
    """The paired difference A - B in bits per character after ``seeds`` seeds, with its interval.

    ``level`` is the two-sided error share of this one interval (``alpha_j / m``); the intervals of all pairs
    and looks hold together with probability ``1 - alpha``.  ``low > 0``: A decided worse than B.
    """

    diff: float
    low: float
    high: float
    seeds: int
    level: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def confidence_sequence(
    d,
    max_seeds: int,
    *,
    alpha: float = 0.05,
    pairs: int = 1,
    spending: str = "obrien-fleming",
) -> list[SeqInterval]:
    """The intervals of one pair at every look that ``d`` reaches: looks with 2, 3, ..., ``len(d)`` seeds.

    Args:
        d: per-seed paired differences ``bpc_A(seed i) - bpc_B(seed i)`` in bits/char, shape ``(n,)``,
            ``2 <= n <= max_seeds``, seeds in the order they were trained.
        max_seeds: MAX, the most seeds any tokenizer may get (fixes the schedule of looks).
        alpha: the family-wise error rate over all looks and ``pairs``.
        pairs: the number of pairs sharing ``alpha`` (Bonferroni; ``K (K-1) / 2`` for K tokenizers).
        spending: see :func:`look_levels`.

    Returns:
        one :class:`SeqInterval` per look, ``len(d) - 1`` of them.  A look whose differences have zero spread
        gets an interval from -inf to inf (a t statistic needs an estimate of the noise; no decision).

    Raises:
        ValueError: fewer than 2 or more than ``max_seeds`` differences, a non-finite one, ``pairs < 1``.
    """
    d = np.asarray(d, dtype=np.float64)
    if d.ndim != 1 or not FIRST_SEEDS <= d.shape[0] <= max_seeds:
        raise ValueError(f"need between {FIRST_SEEDS} and max_seeds={max_seeds} differences, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError("a difference is not finite")
    if int(pairs) != pairs or pairs < 1:
        raise ValueError(f"pairs must be an integer >= 1, got {pairs}")
    shares = look_levels(max_seeds, alpha, spending) / pairs
    out = []
    for n in range(FIRST_SEEDS, d.shape[0] + 1):
        x = d[:n]
        mean, sd = float(x.mean()), float(x.std(ddof=1))
        level = float(shares[n - FIRST_SEEDS])
        half = t_critical(level, n - 1) * sd / math.sqrt(n) if sd > 0 else math.inf
        out.append(SeqInterval(mean, mean - half, mean + half, n, level))
    return out


# ------------------------------------------------------------------ the decision over K tokenizers
@dataclass
class Decision:
    """Where the adaptive procedure stands after a look.

    Attributes:
        seeds: seeds of the look (all still-open tokenizers have at least this many).
        look: ``seeds - 1`` (the first look, with 2 seeds, is look 1).
        best: the tokenizer with the lowest mean bits/char among the open ones, on the look's seeds.
        status: per tokenizer: ``"decided-worse"`` (its interval against the best of the look that decided it
            lies above zero), ``"undecided"``, or, for the best, ``"decided-better"`` once every other one is
            decided worse (``"undecided"`` before).
        intervals: per tokenizer other than ``best``, its difference from the best at the look that decided
            it, or at this look when undecided (bits/char, tokenizer minus best).
        decided_at: per decided-worse tokenizer, the seeds of the look that decided it.
        need_seed: the tokenizers that get another seed before the next look (the undecided ones and the
            best); empty when ``done``.
        done: every tokenizer decided, or MAX seeds reached.
        winner: the named best (every other decided worse), else None.
        verdict: ``"best: NAME"``, ``"no winner"`` (MAX reached undecided) or ``"open"`` (another look to come).
    """

    seeds: int
    look: int
    best: str
    status: dict[str, str]
    intervals: dict[str, SeqInterval]
    decided_at: dict[str, int] = field(default_factory=dict)
    need_seed: list[str] = field(default_factory=list)
    done: bool = False
    winner: str | None = None
    verdict: str = "open"


def decide(
    bpc: Mapping[str, object],
    max_seeds: int,
    *,
    alpha: float = 0.05,
    look: int | None = None,
    spending: str = "obrien-fleming",
) -> Decision:
    """Replays the adaptive procedure on the seeds trained so far and says which tokenizers need another seed.

    Args:
        bpc: per tokenizer, its held-out bits/char per seed, shape ``(seeds,)``, in the order the seeds were
            trained; seed i of every tokenizer is the same seed round, measured on the same characters.  The
            open tokenizers have the look's seeds; one decided worse at an earlier look may stop there (it
            may also have more, which are then not used, as are seeds beyond MAX).
        max_seeds: MAX (>= 2).
        alpha: the family-wise error rate (see the module's docstring for what it bounds).
        look: the look to decide (1 = 2 seeds); default: the most seeds the open tokenizers all have, minus 1.
        spending: see :func:`look_levels`.

    Stateless: each call replays the looks from 2 seeds on, so the result depends only on the numbers and
    the schedule (MAX, alpha, spending), fixed before the first seed.

    Returns:
        a :class:`Decision`.

    Raises:
        ValueError: fewer than 2 tokenizers, a tokenizer with fewer than 2 seeds or a non-finite value, a
            ``look`` outside 1 .. MAX-1, or a tokenizer that stopped before it was decided (it needs the next
            seed before the requested look).
    """
    names = list(bpc)
    if len(names) < 2:
        raise ValueError(f"need at least 2 tokenizers to compare, got {len(names)}")
    x = {k: np.asarray(bpc[k], dtype=np.float64).reshape(-1) for k in names}
    for k, v in x.items():
        if v.shape[0] < FIRST_SEEDS:
            raise ValueError(f"{k}: {v.shape[0]} seed(s); the procedure starts with {FIRST_SEEDS}")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"{k}: a bits/char value is not finite")
    shares = look_levels(max_seeds, alpha, spending) / (len(names) * (len(names) - 1) // 2)
    last = None if look is None else int(look) + 1
    if last is not None and not FIRST_SEEDS <= last <= max_seeds:
        raise ValueError(f"look must be between 1 and {max_seeds - 1} for max_seeds={max_seeds}, got {look}")
    open_, decided_at, intervals = list(names), {}, {}
    n = FIRST_SEEDS
    while True:
        short = [k for k in open_ if x[k].shape[0] < n]
        if short:
            if last is None and n > FIRST_SEEDS:
                n -= 1  # the data end here: report the previous look again
                break
            raise ValueError(f"{', '.join(short)}: undecided after {n - 1} seeds; seed {n} is needed for this look")
        means = {k: float(x[k][:n].mean()) for k in open_}
        best = min(open_, key=lambda k: means[k])
        level = float(shares[n - FIRST_SEEDS])
        crit = t_critical(level, n - 1)
        for k in [k for k in open_ if k != best]:
            diff = x[k][:n] - x[best][:n]
            mean, sd = float(diff.mean()), float(diff.std(ddof=1))
            half = crit * sd / math.sqrt(n) if sd > 0 else math.inf
            intervals[k] = SeqInterval(mean, mean - half, mean + half, n, level)
            if mean - half > 0:
                open_.remove(k)
                decided_at[k] = n
        if len(open_) == 1 or n == max_seeds or n == last:
            break
        n += 1
    # rerun the bookkeeping of the reported look (n): the best among the still-open ones
    means = {k: float(x[k][:n].mean()) for k in open_}
    best = min(open_, key=lambda k: means[k])
    status = {k: (WORSE if k in decided_at else UNDECIDED) for k in names}
    winner = best if len(open_) == 1 else None
    if winner is not None:
        status[best] = BETTER
        verdict, done = f"best: {best}", True
    elif n == max_seeds:
        verdict, done = "no winner", True
    else:
        verdict, done = "open", False
    intervals.pop(best, None)
    return Decision(
        seeds=n,
        look=n - 1,
        best=best,
        status=status,
        intervals={k: intervals[k] for k in names if k in intervals},
        decided_at=decided_at,
        need_seed=[] if done else list(open_),
        done=done,
        winner=winner,
        verdict=verdict,
    )


def run_adaptive(draw, names, max_seeds: int, *, alpha: float = 0.05, spending: str = "obrien-fleming"):
    """Runs the whole procedure: 2 seeds of every tokenizer, then one seed round at a time for those in
    ``need_seed``, until :func:`decide` says done.

    Args:
        draw: ``draw(name, i) -> float``, held-out bits/char of tokenizer ``name`` trained with seed round
            ``i`` (0-based); called once per seed used (in compare.py: one training run).
        names: the tokenizers (>= 2).
        max_seeds, alpha, spending: as for :func:`decide`.

    Returns:
        ``(decision, seeds_used)``: the final :class:`Decision` and per tokenizer the seeds it was trained with.
    """
    bpc = {k: [draw(k, 0), draw(k, 1)] for k in names}
    while True:
        dec = decide(bpc, max_seeds, alpha=alpha, spending=spending)
        if dec.done:
            return dec, {k: len(v) for k, v in bpc.items()}
        for k in dec.need_seed:
            bpc[k].append(draw(k, len(bpc[k])))
