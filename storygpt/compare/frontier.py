"""IsoFLOP frontiers: for each compute budget, which model size and which tokenizer give the lowest bits per char.

For one budget and tokenizer, a parabola in log parameters through the sizes' points gives the
compute-optimal size (Hoffmann et al. 2022, approach 2), taken on the sizes' range ("at the
edge" otherwise).  Intervals: a paired bootstrap over held-out blocks and seeds, the fit redone
per replicate; a tokenizer is named best only when every other's difference lies above zero.
Under-trained or lossy runs are left out.  Details: docs/compare.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

LN2 = math.log(2)
REPLICATES = 2_000
LEVEL = 0.95


@dataclass
class Cell:
    """The runs of one tokenizer, model size and budget (one per seed)."""

    spec: str
    size: str
    budget: float
    params: float  # mean over seeds (the same model: the same count)
    vocab_size: int
    bpc: list[float]  # bits per character of each seed's final model
    nats: np.ndarray | None  # seeds x held-out blocks, or None when a run has no block losses
    chars: np.ndarray | None  # characters per block
    eligible: bool

    @property
    def mean(self) -> float:
        return float(np.mean(self.bpc))


def cells(results: Sequence) -> list[Cell]:
    """RunResult rows (with ``size``) grouped by (budget, SPEC, size), in order of first appearance."""
    grouped: dict[tuple, list] = {}
    for r in results:
        spec = r.spec.rsplit("@", 1)[0] if f"@{r.size}" in r.spec else r.spec  # compare.py's rows: SPEC@SIZE
        grouped.setdefault((r.budget_value, spec, r.size), []).append(r)
    out = []
    for (budget, spec, size), runs in grouped.items():
        blocks = [(r.block_nats, r.block_characters) for r in runs]
        same = all(n and c and list(c) == list(blocks[0][1]) for n, c in blocks)
        nats = np.array([n for n, _ in blocks], dtype=np.float64) if same else None
        chars = np.array(blocks[0][1], dtype=np.float64) if same else None
        eligible = not any(r.under_trained or r.lossy for r in runs)
        params = float(np.mean([r.params for r in runs]))
        bpc = [r.bits_per_char for r in runs]
        out.append(Cell(spec, size, float(budget), params, int(runs[0].vocab_size), bpc, nats, chars, eligible))
    return out


@dataclass
class Optimum:
    """The minimum of one isoFLOP curve on the sizes' range (log-parameters ``x``)."""

    params: float  # the compute-optimal parameter count
    bpc: float  # the curve's value there
    edge: bool  # the minimum is at the smallest or largest size trained (not a vertex inside the range)
    coeffs: tuple[float, ...]  # the parabola a*x^2 + b*x + c in x = ln(params) (two points: the line)


def isoflop_minimum(params: Sequence[float], bpc: Sequence[float]) -> Optimum:
    """The minimum over ``[min params, max params]`` of the least-squares parabola in ln(params) through the
    points (a line with two points; the point itself with one).

    Raises:
        ValueError: no points, or lengths that differ.
    """
    n = np.asarray(params, dtype=np.float64)
    x = np.log(n)
    y = np.asarray(bpc, dtype=np.float64)
    if x.size == 0 or x.size != y.size:
        raise ValueError(f"isoflop_minimum: {x.size} sizes and {y.size} values")
    if x.size == 1:
        return Optimum(float(n[0]), float(y[0]), True, (float(y[0]),))
    deg = 2 if np.unique(x).size >= 3 else 1
    coeffs = np.polyfit(x, y, deg)
    lo, hi = float(x.min()), float(x.max())
    candidates = [lo, hi]
    if deg == 2 and coeffs[0] > 0:
        vertex = -coeffs[1] / (2 * coeffs[0])
        if lo < vertex < hi:
            candidates.append(float(vertex))
    values = np.polyval(coeffs, candidates)
    i = int(np.argmin(values))
    at = (float(n.min()), float(n.max()), float(np.exp(candidates[-1])))[i]  # the ends: the sizes themselves
    return Optimum(at, float(values[i]), i < 2, tuple(float(c) for c in coeffs))


@dataclass
class Curve:
    """One tokenizer's isoFLOP curve at one budget: its eligible cells, the fitted optimum and its interval."""

    spec: str
    budget: float
    vocab_size: int
    cells: list[Cell]
    optimum: Optimum
    params_interval: tuple[float, float] | None = None
    bpc_interval: tuple[float, float] | None = None
    best_size: str = ""  # the trained size nearest the optimum (in log parameters)


@dataclass
class BudgetFrontier:
    """One budget's conclusion: each tokenizer's curve, the best, and the others' differences from it."""

    budget: float
    curves: list[Curve]
    best: Curve | None = None
    differences: dict = field(default_factory=dict)  # spec -> (diff, low, high) of its minimum minus the best's
    winner: str | None = None  # the best, when every difference interval lies above zero
    tied: list[str] = field(default_factory=list)  # specs the intervals cannot tell from the best
    left_out: list[str] = field(default_factory=list)  # "SPEC SIZE" cells left out (under-trained or lossy)


def _replicate_means(group: list[Cell], rng, replicates: int, weights) -> np.ndarray | None:
    """Bits/char per replicate of each cell (replicates x cells), or None without block losses."""
    out = np.empty((replicates, len(group)))
    for j, c in enumerate(group):
        if c.nats is None or weights is None or c.chars.shape[0] != weights.shape[1]:
            return None
        per_seed = weights @ c.nats.T / (LN2 * (weights @ c.chars))[:, None]  # replicates x seeds
        picks = rng.integers(0, c.nats.shape[0], size=(replicates, c.nats.shape[0]))
        out[:, j] = np.take_along_axis(per_seed, picks, axis=1).mean(axis=1)
    return out


def frontiers(results: Sequence, replicates: int = REPLICATES, level: float = LEVEL, seed: int = 0) -> list:
    """The :class:`BudgetFrontier` of every budget (in increasing order) of RunResult rows with ``size``."""
    all_cells = cells(results)
    out = []
    for budget in sorted({c.budget for c in all_cells}):
        here = [c for c in all_cells if c.budget == budget]
        bf = BudgetFrontier(budget, [])
        bf.left_out = [f"{c.spec} {c.size}" for c in here if not c.eligible]
        blocks = next((c.chars for c in here if c.chars is not None), None)
        rng = np.random.default_rng(seed)
        weights = None
        if blocks is not None and blocks.shape[0] >= 2:
            n = blocks.shape[0]
            weights = rng.multinomial(n, np.full(n, 1.0 / n), size=replicates).astype(np.float64)
        samples = {}
        for spec in dict.fromkeys(c.spec for c in here):
            group = sorted((c for c in here if c.spec == spec and c.eligible), key=lambda c: c.params)
            if not group:
                continue
            opt = isoflop_minimum([c.params for c in group], [c.mean for c in group])
            nearest = min(group, key=lambda c: abs(math.log(c.params) - math.log(opt.params)))
            curve = Curve(spec, budget, group[0].vocab_size, group, opt, best_size=nearest.size)
            reps = _replicate_means(group, rng, replicates, weights)
            if reps is not None:
                fits = [isoflop_minimum([c.params for c in group], row) for row in reps]
                ps, bs = np.array([f.params for f in fits]), np.array([f.bpc for f in fits])
                tail = (1 - level) / 2
                curve.params_interval = tuple(float(v) for v in np.exp(np.quantile(np.log(ps), [tail, 1 - tail])))
                curve.bpc_interval = tuple(float(v) for v in np.quantile(bs, [tail, 1 - tail]))
                samples[spec] = bs
            bf.curves.append(curve)
        if not bf.curves:
            out.append(bf)
            continue
        bf.best = min(bf.curves, key=lambda c: c.optimum.bpc)
        for c in bf.curves:
            if c is bf.best:
                continue
            diff = c.optimum.bpc - bf.best.optimum.bpc
            if c.spec in samples and bf.best.spec in samples:
                d = samples[c.spec] - samples[bf.best.spec]
                tail = (1 - level) / 2
                low, high = (float(v) for v in np.quantile(d, [tail, 1 - tail]))
                bf.differences[c.spec] = (diff, low, high)
            else:
                bf.differences[c.spec] = (diff, None, None)
        bf.tied = [s for s, (_, low, _) in bf.differences.items() if low is None or low <= 0]
        if not bf.tied and (len(bf.curves) > 1 or bf.best.spec in samples):
            bf.winner = bf.best.spec
        out.append(bf)
    return out


def as_dict(bf: BudgetFrontier) -> dict:
    """One budget's frontier for results.json."""
    return {
        "budget": bf.budget,
        "best": bf.best.spec if bf.best else None,
        "winner": bf.winner,
        "tied": bf.tied,
        "left_out": bf.left_out,
        "differences": {s: dict(zip(("diff", "low", "high"), d)) for s, d in bf.differences.items()},
        "curves": [
            {
                "spec": c.spec,
                "vocab_size": c.vocab_size,
                "optimal_params": c.optimum.params,
                "optimal_bpc": c.optimum.bpc,
                "edge": c.optimum.edge,
                "params_interval": c.params_interval,
                "bpc_interval": c.bpc_interval,
                "nearest_size": c.best_size,
                "points": [{"size": x.size, "params": x.params, "bits_per_char": x.bpc} for x in c.cells],
            }
            for c in bf.curves
        ],
    }


# ------------------------------------------------------------------ the report's words
def _n(x: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def write(report_dir: Path, results: Sequence, budget_label) -> list:
    """The isoFLOP frontiers of a --sizes comparison written beside its report: a section appended to
    report.md, ``frontiers`` in results.json, isoflop.png; returns them."""
    from storygpt.atomic import write_text

    fronts = frontiers(results)
    path = report_dir / "report.md"
    text = path.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + "\n".join(markdown(fronts, budget_label))
    write_text(path, text.rstrip("\n") + "\n")
    try:
        doc = json.loads((report_dir / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = {}
    doc = doc if isinstance(doc, dict) else {}
    doc["frontiers"] = [as_dict(bf) for bf in fronts]
    write_text(report_dir / "results.json", json.dumps(doc, indent=2) + "\n")
    plot(fronts, report_dir / "isoflop.png", budget_label)
    return fronts


def markdown(fronts: Sequence[BudgetFrontier], budget_label) -> list[str]:
    """The report's "Compute-optimal frontier" section: a table per budget and one verdict line each."""
    lines = [
        "## Compute-optimal frontier (isoFLOP)",
        "",
        "For each budget and tokenizer, a parabola in log parameters through the sizes' bits per character "
        "(Chinchilla's approach 2) gives the compute-optimal model size; intervals (95%) resample held-out "
        'blocks and seeds and redo the fit. "edge": the minimum is at the smallest or largest size trained.',
        "",
    ]
    for bf in fronts:
        lines += [f"### {budget_label(bf.budget)}", ""]
        lines += ["| tokenizer | vocab | optimal params | interval | bits/char at optimum | interval | nearest size |"]
        lines += ["|---|---:|---:|---|---:|---|---|"]
        for c in sorted(bf.curves, key=lambda c: c.optimum.bpc):
            pi = f"{_n(c.params_interval[0])} .. {_n(c.params_interval[1])}" if c.params_interval else "n/a"
            bi = f"{c.bpc_interval[0]:.4f} .. {c.bpc_interval[1]:.4f}" if c.bpc_interval else "n/a"
            edge = " (edge)" if c.optimum.edge else ""
            lines.append(
                f"| {c.spec} | {c.vocab_size:,} | {_n(c.optimum.params)}{edge} | {pi} | {c.optimum.bpc:.4f} | {bi} "
                f"| {c.best_size} |"
            )
        lines += ["", verdict_line(bf, budget_label), ""]
        if bf.left_out:
            lines += [f"Left out of the fits (under-trained or lossy): {', '.join(bf.left_out)}.", ""]
    return lines


def verdict_line(bf: BudgetFrontier, budget_label) -> str:
    """One sentence: the best tokenizer and size at this budget, or that it cannot tell."""
    where = budget_label(bf.budget)
    if bf.best is None:
        return f"At {where}: no eligible run, no frontier."
    b = bf.best
    size = f"{_n(b.optimum.params)} parameters" + (" (at the edge of the sizes trained)" if b.optimum.edge else "")
    if bf.winner:
        gaps = ", ".join(f"{s} +{d:.4f} ({lo:+.4f} .. {hi:+.4f})" for s, (d, lo, hi) in bf.differences.items())
        rest = f"; the others are higher: {gaps}" if gaps else ""
        return f"At {where}: **{b.spec}** at {size} (nearest size {b.best_size}), {b.optimum.bpc:.4f} bits/char{rest}."
    if not bf.differences:
        return (
            f"At {where}: cannot tell: only {b.spec} has a frontier, and without held-out blocks there is no interval."
        )
    tied = ", ".join(bf.tied)
    return (
        f"At {where}: cannot tell {b.spec} (lowest, {b.optimum.bpc:.4f} bits/char at {size}) apart from {tied}: "
        "the difference intervals include zero (more seeds or more held-out text would narrow them)."
    )


def plot(fronts: Sequence[BudgetFrontier], path, budget_label) -> None:
    """isoflop.png: the isoFLOP curves of each tokenizer (one panel each; a curve per budget, fitted parabola,
    optimum marked), the optimal parameters against compute, and the best tokenizer's vocabulary against compute."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from storygpt.atomic import atomic_write

    specs = list(dict.fromkeys(c.spec for bf in fronts for c in bf.curves))
    if not specs:
        return
    fig, axes = plt.subplots(1, len(specs) + 2, figsize=(4.2 * (len(specs) + 2), 3.8), squeeze=False)
    axes = axes[0]
    colors = plt.cm.viridis(np.linspace(0, 0.9, max(1, len(fronts))))
    for ax, spec in zip(axes, specs):
        for color, bf in zip(colors, fronts):
            curve = next((c for c in bf.curves if c.spec == spec), None)
            if curve is None:
                continue
            xs = np.array([c.params for c in curve.cells])
            ax.plot(xs, [c.mean for c in curve.cells], "o", color=color, label=budget_label(bf.budget))
            if len(xs) >= 2:
                grid = np.linspace(np.log(xs.min()), np.log(xs.max()), 50)
                ax.plot(np.exp(grid), np.polyval(curve.optimum.coeffs, grid), "-", color=color, alpha=0.7)
            ax.plot([curve.optimum.params], [curve.optimum.bpc], "*", color=color, markersize=12)
        ax.set_xscale("log")
        label_ticks(
            ax.xaxis, [cell.params for bf in fronts for cur in bf.curves if cur.spec == spec for cell in cur.cells]
        )
        ax.set_title(f"isoFLOP curves: {spec}")
        ax.set_xlabel("parameters")
        ax.set_ylabel("bits per character")
        ax.legend(fontsize=7)
    ax = axes[len(specs)]
    for spec in specs:
        pts = [(bf.budget, c) for bf in fronts for c in bf.curves if c.spec == spec]
        ax.plot([b for b, _ in pts], [c.optimum.params for _, c in pts], "o-", label=spec)
        for b, c in pts:
            if c.params_interval:
                ax.plot([b, b], c.params_interval, "-", color="gray", alpha=0.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    label_ticks(ax.xaxis, [bf.budget for bf in fronts])
    ax.set_title("optimal parameters vs compute")
    ax.set_xlabel("budget")
    ax.set_ylabel("parameters")
    ax.legend(fontsize=7)
    ax = axes[len(specs) + 1]
    best = [(bf.budget, bf.best) for bf in fronts if bf.best is not None]
    ax.plot([b for b, _ in best], [c.vocab_size for _, c in best], "o-")
    for b, c in best:
        ax.annotate(c.spec + ("" if any(bf.winner for bf in fronts if bf.budget == b) else "?"), (b, c.vocab_size))
    ax.set_xscale("log")
    ax.set_yscale("log")
    label_ticks(ax.xaxis, [bf.budget for bf in fronts])
    label_ticks(ax.yaxis, [c.vocab_size for _, c in best])
    ax.set_title("optimal vocabulary vs compute (?: cannot tell)")
    ax.set_xlabel("budget")
    ax.set_ylabel("vocabulary size")
    fig.tight_layout()
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", dpi=90)
    plt.close(fig)


def label_ticks(axis, values) -> None:
    """Ticks of a log ``axis`` at ``values`` only (``131k``, ``3e12``): matplotlib's minor labels overlap
    when the data span about a decade."""
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    values = sorted({float(v) for v in values if v and v > 0})
    if not values:
        return
    axis.set_major_locator(FixedLocator(values))
    axis.set_major_formatter(lambda v, _: short_number(v))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def short_number(v: float) -> str:
    """``131200`` -> ``131k``, ``3e12`` -> ``3e12``, ``2048`` -> ``2048``: a tick label."""
    if v >= 1e7:
        return f"{v:.0e}".replace("e+", "e")
    if v >= 1e4:
        return f"{v / 1e3:.0f}k" if v < 1e6 else f"{v / 1e6:.1f}M"
    return f"{v:g}"
