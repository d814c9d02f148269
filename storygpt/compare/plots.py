"""The plots of a tokenizer comparison (compare.py's report): curves per tokenizer and budget, the sweep
(final bits/char against FLOPs with fitted curves), and labelled points against vocabulary size.

Drawn on bare Agg figures (:mod:`storygpt.plot`, which also draws a run's loss.png); written atomically.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from storygpt.plot import BPC_LABEL, Curve, canvas, log_ticks, save_png, short_number, use_log


def colours_for(labels: Sequence[str]) -> dict[str, str]:
    """One colour per label (a tokenizer SPEC), in order, kept across every plot of a report."""
    return {lab: f"C{i % 10}" for i, lab in enumerate(dict.fromkeys(labels))}


def style_curves(curves: Sequence[Curve], results: Sequence, colours: dict[str, str]) -> list[Curve]:
    """One curve per tokenizer and budget: the mean over its seeds (``results[i]`` belongs to ``curves[i]``)
    with a band from the lowest to the highest seed, its tokenizer's colour, dashed when under-trained,
    dotted when lossy.  Seeds are lined up by evaluation (equal budgets evaluate at the same steps); the
    mean is taken over the evaluations every seed has."""
    groups: dict[tuple, list] = {}
    for c, r in zip(curves, results):
        if len(c):
            groups.setdefault((r.budget_value, r.spec), []).append((c, r))
    several_budgets = len({b for b, _ in groups}) > 1
    out = []
    for (budget, spec), members in groups.items():
        n = min(len(c) for c, _ in members)
        cs = [c for c, _ in members]
        mean = lambda key: [sum(getattr(c, key)[i] for c in cs) / len(cs) for i in range(n)]  # noqa: E731
        label = spec + (f" @{short_number(budget)}" if several_budgets and budget else "")
        under = any(r.under_trained for _, r in members)
        lossy = any(r.lossy for _, r in members)
        label += " (under-trained)" if under else ""
        label += " (lossy)" if lossy else ""
        curve = Curve(label, step=cs[0].step[:n], flops=mean("flops"), chars=mean("chars"), elapsed=mean("elapsed"))
        curve.bpc = mean("bpc")
        curve.color = colours.get(spec)
        curve.linestyle = ":" if lossy else "--" if under else "-"
        if len(cs) > 1:
            curve.band_low = [min(c.bpc[i] for c in cs) for i in range(n)]
            curve.band_high = [max(c.bpc[i] for c in cs) for i in range(n)]
        out.append(curve)
    return out


def plot_sweep(sw, path: str | os.PathLike, colours: dict[str, str], title: str | None = None) -> Path:
    """Final bits/char against training FLOPs per tokenizer over the budgets of a sweep (storygpt.compare.analysis.Sweep):
    the mean at each budget with a bar from the lowest to the highest seed, the fitted curve where there is one
    (dashed, only over the compute it was fitted on), crossovers as grey vertical lines; under-trained or lossy
    points hollow."""
    import numpy as np

    from storygpt.compare.analysis import PowerLawFit

    fig = canvas()
    ax = fig.subplots()
    xs_all = []
    for spec, gs in sw.series.items():
        color = colours.get(spec)
        x = [g.flops for g in gs]
        y = [g.mean for g in gs]
        lo = [g.mean - min(g.bpc) for g in gs]
        hi = [max(g.bpc) - g.mean for g in gs]
        xs_all += x
        ax.errorbar(x, y, yerr=[lo, hi], color=color, linestyle="-", linewidth=1, capsize=3, label=spec)
        for g, xi, yi in zip(gs, x, y):
            hollow = not g.eligible
            ax.scatter([xi], [yi], s=30, zorder=3, edgecolors=color, facecolors="white" if hollow else color)
        fit = sw.fits.get(spec)
        if isinstance(fit, PowerLawFit) and not fit.at_bound:  # a fit at the edge of its range is not drawn
            cs = np.geomspace(fit.c_min, fit.c_max, 100)
            ax.plot(cs, fit(cs), color=color, linestyle="--", linewidth=1)
    for _a, _b, _lo, _hi, c in sw.crossovers:
        ax.axvline(c, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    log_ticks(ax.xaxis)
    ax.set_xlabel("training FLOPs")
    ax.set_ylabel("final " + BPC_LABEL)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", title="hollow: under-trained or lossy; dashed: fit", title_fontsize="x-small")
    if title:
        ax.set_title(title)
    return save_png(fig, path)


def plot_points(
    labels: Sequence[str],
    xs: Sequence[float],
    ys: Sequence[float],
    path: str | os.PathLike,
    *,
    xlabel: str,
    ylabel: str,
    title: str | None = None,
    logx: bool = True,
    colours: Sequence[str] | None = None,
) -> Path:
    """:func:`points_figure` written to the PNG ``path``; returns ``path``."""
    fig = points_figure(labels, xs, ys, xlabel=xlabel, ylabel=ylabel, title=title, logx=logx, colours=colours)
    return save_png(fig, path)


def points_figure(
    labels: Sequence[str],
    xs: Sequence[float],
    ys: Sequence[float],
    *,
    xlabel: str,
    ylabel: str,
    title: str | None = None,
    logx: bool = True,
    colours: Sequence[str] | None = None,
):
    """A scatter plot with every point labelled (e.g. final bits/char against vocabulary size).

    Points whose x or y is not a finite number are left out.  ``logx`` makes
    the x axis logarithmic (base 2) when every x drawn is positive and they
    span at least a factor of 4.

    Returns:
        A matplotlib ``Figure`` (Agg canvas) with one axes; point ``i`` is its collection ``i``.

    Raises:
        ValueError: the three sequences differ in length, or no point is finite.
    """
    if not len(labels) == len(xs) == len(ys):
        raise ValueError(f"plot_points: {len(labels)} labels, {len(xs)} x values and {len(ys)} y values")
    colours = list(colours) if colours is not None else [f"C{i % 10}" for i in range(len(labels))]
    keep = [
        (lab, float(x), float(y), col)
        for lab, x, y, col in zip(labels, xs, ys, colours)
        if x is not None and y is not None and math.isfinite(float(x)) and math.isfinite(float(y))
    ]
    if not keep:
        raise ValueError("nothing to plot: no point has finite coordinates")
    fig = canvas()
    ax = fig.subplots()
    for lab, x, y, col in keep:
        ax.scatter([x], [y], color=col, zorder=3)
        ax.annotate(lab, (x, y), textcoords="offset points", xytext=(5, 5), fontsize="small")
    if logx and use_log([x for _, x, _, _ in keep], span=4.0):
        from matplotlib.ticker import FuncFormatter

        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))  # 1,024 rather than 2^10
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.margins(x=0.15, y=0.15)
    if title:
        ax.set_title(title)
    return fig


def plot_bits_per_byte(report_dir: Path, results: Sequence, title: str | None = None) -> Path:
    """``bpb_vs_vocab.png``: the final held-out bits per byte of each tokenizer (mean over its seeds, last
    budget; from each run's bits.json) against its vocabulary size (compare.py --bits-per-byte)."""
    import json

    import numpy as np

    last = results[-1].budget
    groups: dict[str, list] = {}
    for r in results:
        if r.budget == last:
            groups.setdefault(r.spec, []).append(r)
    bpb = {}
    for spec, rs in groups.items():
        vals = []
        for r in rs:
            [row] = json.loads((Path(r.run_dir) / "bits.json").read_text(encoding="utf-8"))["results"]
            vals.append(float(row["bits_per_byte"]))
        bpb[spec] = float(np.mean(vals))
    colours = colours_for(list(groups))
    return plot_points(
        list(groups),
        [rs[0].vocab_size for rs in groups.values()],
        list(bpb.values()),
        Path(report_dir) / "bpb_vs_vocab.png",
        xlabel="vocabulary size",
        ylabel="final held-out bits per byte (mean over seeds)",
        title=title,
        colours=[colours[s] for s in groups],
    )
