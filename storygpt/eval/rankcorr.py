"""Rank correlation of the tokenizers' own measures with the bits per character their models reach.

Across T tokenizers: Spearman's rho between one intrinsic measure (chars/token, fertility, ...; one value per
tokenizer, fixed) and held-out bits per character, with

- a two-sided p-value (:func:`spearman_p`): exact, by enumerating the T! orderings, for T <= :data:`EXACT_MAX`;
  beyond, a Monte-Carlo permutation test of :data:`PERMUTATIONS` random orderings (fixed seed) with the
  estimate (1 + hits) / (1 + permutations) (Phipson and Smyth 2010), never 0;
- a percentile bootstrap interval (:func:`rho_interval`): each replicate draws the held-out character blocks
  with replacement, once for every tokenizer (the same text), and each tokenizer's seeds with replacement,
  recomputes each tokenizer's bits/char (a ratio of sums) and then rho (Efron and Tibshirani 1993).  It says
  how much rho moves with the held-out text, not with another set of tokenizers.

:func:`correlate` does it for every measure and evaluation text; :func:`section_lines` is compare.py's report
section.  Ranks average their ties (storygpt.eval.stats.ranks).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from storygpt.eval import stats

#: Tokenizers up to which the p-value enumerates every ordering (8! = 40,320).
EXACT_MAX = 8
#: Random orderings of the Monte-Carlo permutation test beyond :data:`EXACT_MAX` tokenizers.
PERMUTATIONS = 10_000
#: Bootstrap replicates and coverage of the interval of rho.
REPLICATES = 10_000
LEVEL = 0.95
#: Fewest tokenizers a rank correlation is computed over (with 3, the smallest exact p-value is 1/3).
MIN_TOKENIZERS = 3
#: The measures' names in the report.
NAMES = {
    "fertility": "tokens per word (fertility)",
    "chars_per_token": "chars/token",
    "renyi_efficiency": "Renyi efficiency (alpha 2.5)",
    "vocab_used_share": "vocabulary used",
    "mean_token_bytes": "mean token bytes",
}


def average_ranks(a) -> np.ndarray:
    """1-based ranks along the last axis of ``a`` (shape ``(n,)`` or ``(R, n)``), ties sharing their mean rank
    (row by row the same as :func:`storygpt.eval.stats.ranks`)."""
    a = np.asarray(a, dtype=np.float64)
    less = (a[..., None, :] < a[..., :, None]).sum(axis=-1)
    equal = (a[..., None, :] == a[..., :, None]).sum(axis=-1)
    return less + (equal + 1) / 2


def _rho_rows(rx: np.ndarray, ry: np.ndarray) -> np.ndarray:
    """Pearson correlation of the fixed ranks ``rx`` (n,) with each row of ``ry`` (R, n); nan for a constant row."""
    xc = rx - rx.mean()
    yc = ry - ry.mean(axis=1, keepdims=True)
    den = np.sqrt(float(xc @ xc) * (yc * yc).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (yc @ xc) / np.where(den > 0, den, 1.0), np.nan)


@dataclass
class PValue:
    """A two-sided p-value of rho: ``method`` ``exact`` (``orderings`` = n!) or ``permutation`` (``orderings``
    random ones, seed ``seed``)."""

    p: float
    method: str
    orderings: int
    seed: int | None = None


def spearman_p(x, y, *, permutations: int = PERMUTATIONS, seed: int = 0) -> PValue:
    """Two-sided p-value of Spearman's rho between ``x`` and ``y``: the share of orderings of ``y`` whose |rho| is
    at least the observed one; exact for ``len(x) <= EXACT_MAX``, else ``permutations`` random orderings
    (``seed``), (1 + hits) / (1 + permutations).  p is nan when one side is constant.

    Raises:
        ValueError: lengths differ, fewer than 2 points, or ``permutations < 1``.
    """
    rho = stats.spearman(x, y)
    n = len(x)
    if permutations < 1:
        raise ValueError(f"permutations must be at least 1, got {permutations}")
    exact = n <= EXACT_MAX
    if math.isnan(rho):
        return PValue(math.nan, "exact" if exact else "permutation", math.factorial(n) if exact else permutations)
    rx, ry = stats.ranks(x), stats.ranks(y)
    if exact:
        orders = np.array(list(itertools.permutations(range(n))))
        r = _rho_rows(rx, ry[orders])
        return PValue(float(np.mean(np.abs(r) >= abs(rho) - 1e-12)), "exact", len(orders))
    rng = np.random.default_rng(seed)
    orders = rng.permuted(np.tile(np.arange(n), (permutations, 1)), axis=1)
    hits = int(np.sum(np.abs(_rho_rows(rx, ry[orders])) >= abs(rho) - 1e-12))
    return PValue((1 + hits) / (1 + permutations), "permutation", permutations, seed)


def rho_interval(
    x,
    nats: Sequence,
    chars,
    *,
    replicates: int = REPLICATES,
    level: float = LEVEL,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval ``(low, high)`` of Spearman's rho between the fixed ``x`` and the
    tokenizers' bits per character on resampled held-out blocks.

    Args:
        x: the measure of each of the T tokenizers, shape ``(T,)``.
        nats: per tokenizer, cross-entropy in nats of each block, shape ``(blocks,)`` or ``(seeds, blocks)``.
        chars: characters of each block, shape ``(blocks,)`` (the same blocks for every tokenizer).
        replicates, level, seed: as storygpt.eval.stats.paired_bootstrap's.

    Each replicate draws the blocks with replacement (one draw for every tokenizer) and each tokenizer's
    seeds with replacement; a replicate whose rho is undefined (tied bits/char everywhere) is left out.

    Raises:
        ValueError: T differs between ``x`` and ``nats``, fewer than 2 tokenizers or blocks, mismatched
            block counts, a level outside (0, 1), or a constant ``x``.
    """
    x = np.asarray(x, dtype=np.float64)
    chars = np.asarray(chars, dtype=np.float64)
    mats = [np.atleast_2d(np.asarray(m, dtype=np.float64)) for m in nats]
    if len(mats) != len(x) or len(x) < 2:
        raise ValueError(f"{len(x)} measures for {len(mats)} tokenizers' blocks (at least 2 needed)")
    if any(m.shape[1] != len(chars) for m in mats):
        raise ValueError(f"block counts differ: {[m.shape[1] for m in mats]} nats vs {len(chars)} character counts")
    if len(chars) < 2:
        raise ValueError(f"a bootstrap needs at least 2 blocks, got {len(chars)}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    if np.all(x == x[0]):
        raise ValueError("the measure is the same for every tokenizer: rho is undefined")
    rng = np.random.default_rng(seed)
    b = len(chars)
    weights = rng.multinomial(b, np.full(b, 1.0 / b), size=replicates).astype(np.float64)
    bpc = np.column_stack(
        [stats._replicates(m, chars, weights, rng.integers(0, m.shape[0], size=(replicates, m.shape[0]))) for m in mats]
    )
    r = _rho_rows(stats.ranks(x), average_ranks(bpc))
    r = r[np.isfinite(r)]
    tail = (1 - level) / 2
    low, high = np.quantile(r, [tail, 1 - tail])
    return float(low), float(high)


@dataclass
class Correlation:
    """Spearman's rho between one measure and bits/char on one evaluation text, over ``n`` tokenizers;
    ``p`` None and ``low``/``high`` None where they could not be computed (rho nan: a constant measure)."""

    text: str
    measure: str
    n: int
    rho: float
    p: PValue | None
    low: float | None = None
    high: float | None = None


def correlate(
    measures: dict[str, Sequence],
    texts: dict[str, tuple[Sequence[float], Sequence | None, Sequence | None]],
    *,
    replicates: int = REPLICATES,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> list[Correlation]:
    """Every measure against bits/char on every text.

    Args:
        measures: measure name -> its value per tokenizer (None or nan: not measured; that tokenizer is left
            out of this measure's correlations).
        texts: text name -> (bits/char per tokenizer, block nats per tokenizer (``(seeds, blocks)``) or None,
            characters per block or None); without blocks there is no interval.

    Returns:
        One :class:`Correlation` per (text, measure) with at least :data:`MIN_TOKENIZERS` tokenizers, text by
        text in the order given.
    """
    out = []
    for text, (bpc, nats, chars) in texts.items():
        for m, values in measures.items():
            keep = [i for i, v in enumerate(values) if v is not None and math.isfinite(v)]
            if len(keep) < MIN_TOKENIZERS:
                continue
            xs, ys = [float(values[i]) for i in keep], [float(bpc[i]) for i in keep]
            rho = stats.spearman(xs, ys)
            if math.isnan(rho):
                out.append(Correlation(text, m, len(keep), rho, None))
                continue
            c = Correlation(text, m, len(keep), rho, spearman_p(xs, ys, permutations=permutations, seed=seed))
            if nats is not None and chars is not None and len(chars) >= 2:
                c.low, c.high = rho_interval(xs, [nats[i] for i in keep], chars, replicates=replicates, seed=seed)
            out.append(c)
    return out


def _cell(c: Correlation) -> str:
    if math.isnan(c.rho):
        return "the same for every tokenizer"
    iv = "" if c.low is None else f" [{c.low:+.2f}, {c.high:+.2f}]"
    return f"{c.rho:+.2f}{iv}, p {c.p.p:.3g}"


def section_lines(correlations: Sequence[Correlation], lossless: int, total: int) -> list[str]:
    """compare.py's report lines on the correlations (after the table of measures): the held-out text first, then
    one table of the evaluation sets when there are several; or why there is none (``lossless`` of ``total``
    tokenizers have a lossless model; :data:`MIN_TOKENIZERS` are needed)."""
    if not correlations:
        left = f" ({total - lossless} lossy left out)" if lossless != total else ""
        return [
            f"Too few tokenizers for a rank correlation: this report has {lossless} lossless tokenizer"
            f"{'s' if lossless != 1 else ''}{left} with these measures, and a correlation needs at least "
            f"{MIN_TOKENIZERS}.",
            "",
        ]
    texts = list(dict.fromkeys(c.text for c in correlations))
    first = [c for c in correlations if c.text == texts[0]]
    n = max(c.n for c in first)
    methods = {c.p.method for c in correlations if c.p is not None}
    test = (
        f"exact: the share of the {math.factorial(n):,} orderings of the tokenizers that correlate at least as strongly"
        if methods == {"exact"}
        else f"Monte-Carlo permutation test, {PERMUTATIONS:,} random orderings, seed 0, (1 + hits) / (1 + orderings)"
    )
    lines = [
        f"Spearman's rank correlation of each measure with bits/char on the {texts[0]}, over the {n} lossless "
        f"tokenizers (two-sided p-value, {test}; 95% bootstrap interval: {REPLICATES:,} times the held-out "
        "blocks drawn with replacement, once for every tokenizer, and each tokenizer's seeds, then each "
        "tokenizer's bits/char and rho again; the measures stay fixed):",
        "",
        "| measure | tokenizers | rho | 95% interval | p |",
        "|---|---:|---:|---:|---:|",
    ]
    for c in first:
        if math.isnan(c.rho):
            lines.append(f"| {NAMES.get(c.measure, c.measure)} | {c.n} | the same for every tokenizer | - | - |")
            continue
        iv = "no blocks" if c.low is None else f"[{c.low:+.3f}, {c.high:+.3f}]"
        lines.append(f"| {NAMES.get(c.measure, c.measure)} | {c.n} | {c.rho:+.3f} | {iv} | {c.p.p:.3g} |")
    if len(texts) > 1:
        measures = list(dict.fromkeys(c.measure for c in correlations))
        by = {(c.text, c.measure): c for c in correlations}
        lines += [
            "",
            "Per evaluation set (bits/char on the set; the measures are the tokenizers' on the whole held-out "
            "text; rho [95% interval], p):",
            "",
            "| set | " + " | ".join(NAMES.get(m, m) for m in measures) + " |",
            "|---|" + "---:|" * len(measures),
        ]
        for t in texts[1:]:
            lines.append(f"| {t} | " + " | ".join(_cell(by[t, m]) if (t, m) in by else "-" for m in measures) + " |")
    lines += [
        "",
        f"This is what it is: {n} tokenizers, one corpus, one small model and budget. With {n} points a perfect "
        f"rank correlation arises by chance with probability {2 / math.factorial(n):.3g}; the interval covers "
        "other held-out text, not other tokenizers, and none of it shows that a measure predicts bits/char "
        "elsewhere (Zouhar et al. 2023 report their correlation over many more tokenizers, on translation).",
        "",
    ]
    return lines
