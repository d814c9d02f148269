"""Plots of training runs (loss curves), written as PNG files; a comparison's plots: storygpt.compare.plots.

Drawn on a bare :class:`matplotlib.figure.Figure` with the Agg canvas (no pyplot, no global state),
written atomically (:mod:`storygpt.atomic`).  The curves come from a run's ``metrics.jsonl``
(format: docs/design.md): held-out bits per character, one scale for every tokenizer.
``pretrain.py`` calls :func:`write_loss_png` after each evaluation to refresh ``RUN/loss.png``
(:func:`loss_figure`: training loss and held-out bits per character against steps and time).
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from storygpt.atomic import write_bytes

#: x axes of :func:`plot_curves`: metrics.jsonl key -> (axis label, logarithmic).
X_AXES = {
    "flops": ("training FLOPs", True),
    "chars": ("characters seen", True),
    "elapsed": ("wall time (s)", False),
}
BPC_LABEL = "held-out bits per character"


class MetricsError(ValueError):
    """A metrics.jsonl that cannot be read or has nothing to plot; the message names the file."""


@dataclass
class Curve:
    """Held-out bits per character of one run at each evaluation (all lists the same length).

    Attributes:
        label: the legend entry (e.g. the run folder name or the tokenizer SPEC).
        step: optimizer steps.
        flops: training FLOPs spent (float).
        chars: characters of training text seen.
        elapsed: wall-clock seconds since the run started (evaluations included).
        bpc: held-out bits per character (lower is better).
        color: a matplotlib colour (None: the curve's place in the list picks one).
        linestyle: ``-`` a normal run, ``--`` an under-trained one, ``:`` a lossy one (compare.py's report).
        band_low, band_high: the lowest and highest bits/char over seeds at each point (drawn as a band).
    """

    label: str
    step: list[int] = field(default_factory=list)
    flops: list[float] = field(default_factory=list)
    chars: list[float] = field(default_factory=list)
    elapsed: list[float] = field(default_factory=list)
    bpc: list[float] = field(default_factory=list)
    color: str | None = None
    linestyle: str = "-"
    band_low: list[float] | None = None
    band_high: list[float] | None = None

    def __len__(self) -> int:
        return len(self.bpc)


def read_metrics(path: str | os.PathLike) -> list[dict]:
    """The rows of a ``metrics.jsonl`` file, in order.

    A last line without its newline that does not parse is dropped (a run killed
    while writing it); any other line that is not a JSON object is an error.

    Raises:
        FileNotFoundError: no such file (the message names it).
        MetricsError: a malformed line, named as ``FILE:LINE``; a file that is not UTF-8.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise MetricsError(f"{path}: is a folder, not a metrics.jsonl file") from None
    except UnicodeDecodeError as e:
        raise MetricsError(f"{path}: not UTF-8 text (byte {e.start}); not a metrics.jsonl file") from None
    lines = text.split("\n")
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):  # the torn last line of a killed run
                break
            raise MetricsError(f"{path}:{n}: not a JSON object: {line[:60]!r}") from None
        if not isinstance(row, dict):
            raise MetricsError(f"{path}:{n}: not a JSON object: {line[:60]!r}")
        rows.append(row)
    return rows


def eval_curve(rows: Sequence[dict], label: str) -> Curve:
    """The ``"eval"`` rows with a finite ``val_bpc``, as a :class:`Curve`.

    A step evaluated twice (a resumed run that repeated its last evaluation)
    keeps the later row.  Rows are sorted by step.
    """
    by_step: dict[int, dict] = {}
    for row in rows:
        bpc = row.get("val_bpc")
        if row.get("kind") != "eval" or not isinstance(bpc, (int, float)) or not math.isfinite(bpc):
            continue
        by_step[int(row.get("step", 0))] = row
    curve = Curve(label)
    for step in sorted(by_step):
        row = by_step[step]
        curve.step.append(step)
        curve.flops.append(float(row.get("flops", math.nan)))
        curve.chars.append(float(row.get("chars", math.nan)))
        curve.elapsed.append(float(row.get("elapsed", math.nan)))
        curve.bpc.append(float(row["val_bpc"]))
    return curve


def run_curve(run_dir: str | os.PathLike, label: str | None = None) -> Curve:
    """The held-out bits-per-character curve of the run folder ``run_dir`` (its ``metrics.jsonl``).

    Raises:
        FileNotFoundError: ``run_dir`` or its metrics.jsonl is missing (named).
        MetricsError: malformed metrics.jsonl.
    """
    return eval_curve(read_metrics(metrics_path(run_dir)), label or Path(run_dir).name)


def metrics_path(run_dir: str | os.PathLike) -> Path:
    """``RUN/metrics.jsonl``, checked.

    Raises:
        FileNotFoundError: ``run_dir`` or its metrics.jsonl is missing (named).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir}: no such run folder")
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        hint = (
            " (it has only metrics.json, from an older pretrain.py that did not log bits per character)"
            if (run_dir / "metrics.json").is_file()
            else ""
        )
        raise FileNotFoundError(f"{path}: no such file{hint}")
    return path


def labels_for(folders: Sequence[str | os.PathLike]) -> list[str]:
    """A curve label per run folder: its name, or parent/name where two runs share a name (same tokenizer,
    two corpora).  Paths are resolved first, so ``.`` and ``run/..`` give the real names."""
    folders = [Path(f).resolve() for f in folders]
    names = [f.name for f in folders]
    return [f"{f.parent.name}/{n}" if names.count(n) > 1 else n for f, n in zip(folders, names, strict=True)]


def canvas():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_png(fig, path: str | os.PathLike) -> Path:
    """Render ``fig`` (a matplotlib Figure) to PNG and write it atomically to ``path``; returns the path."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    path = Path(path)
    write_bytes(path, buf.getvalue())
    return path


def use_log(values: Sequence[float], span: float = 10.0) -> bool:
    """True when every value is positive and the largest is at least ``span`` times the smallest
    (over less than a decade a logarithmic axis has no labelled major tick)."""
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        return False
    return max(values) >= span * min(values)


def short_number(v: float) -> str:
    """A tick label: ``2e12 -> '2e12'``, ``500 -> '500'``, ``1.5e6 -> '1.5e6'``."""
    if v == 0:
        return "0"
    if 1e-3 <= abs(v) < 1e4:
        return f"{v:g}"
    mant, exp = f"{v:.1e}".split("e")
    return f"{mant.rstrip('0').rstrip('.')}e{int(exp)}"


def log_ticks(axis) -> None:
    """Labelled ticks on a logarithmic axis (a lone power of 10 is not enough to read a value off): at 1, 2
    and 5 times each power of 10, and at every multiple 1..9 when the data span less than a decade.
    Call it after the data are drawn."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = sorted(axis.get_data_interval())
    subs = (1.0, 2.0, 5.0) if lo > 0 and hi / lo >= 10 else tuple(float(k) for k in range(1, 10))
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _: short_number(v)))
    axis.set_minor_formatter(NullFormatter())


def linear_ticks(axis) -> None:
    """At most five ticks on a linear axis, labelled with SI prefixes (``775 k``, ``1.2 M``), so that the
    labels of a narrow span of large values (the characters of a short run) do not run into each other."""
    from matplotlib.ticker import EngFormatter, MaxNLocator

    axis.set_major_locator(MaxNLocator(nbins=5))
    axis.set_major_formatter(EngFormatter(sep=" "))


def plot_curves(
    curves: Sequence[Curve],
    path: str | os.PathLike,
    axes: Sequence[str] = ("flops", "chars", "elapsed"),
    title: str | None = None,
) -> Path:
    """:func:`curves_figure` written to the PNG ``path`` (its folder is created); returns ``path``."""
    return save_png(curves_figure(curves, axes, title), path)


def curves_figure(curves: Sequence[Curve], axes: Sequence[str] = ("flops", "chars", "elapsed"), title=None):
    """Held-out bits per character against each x axis in ``axes``, one panel per axis.

    All curves share every panel (and the y axis), one colour per curve.  A
    curve with a single evaluation is drawn as a marker.  FLOPs and
    characters are on a logarithmic axis when every value is positive and
    they span at least a factor of 10.

    Args:
        curves: the runs, e.g. from :func:`run_curve`.
        axes: keys of :data:`X_AXES`.
        title: figure title.

    Returns:
        A matplotlib ``Figure`` (Agg canvas); panel ``i`` holds one line per curve.

    Raises:
        ValueError: an unknown axis, or no curve has a point to draw.
    """
    for a in axes:
        if a not in X_AXES:
            raise ValueError(f"unknown x axis {a!r}; expected one of {', '.join(X_AXES)}")
    if not any(len(c) for c in curves):
        raise ValueError("nothing to plot: no run has an evaluation with held-out bits per character yet")
    fig = canvas()
    fig.set_size_inches(max(6.4, 4.2 * len(axes) + 0.6), 4.4)
    panels = fig.subplots(1, len(axes), sharey=True, squeeze=False)[0]
    for ax, key in zip(panels, axes):
        label, log = X_AXES[key]
        xs_all = []
        for i, c in enumerate(curves):
            xs = getattr(c, key)
            xs_all += xs
            color = c.color or f"C{i % 10}"
            ax.plot(
                xs, c.bpc, marker="o", markersize=3, linewidth=1.5, color=color, linestyle=c.linestyle, label=c.label
            )
            if c.band_low is not None and c.band_high is not None:
                ax.fill_between(xs, c.band_low, c.band_high, color=color, alpha=0.2, linewidth=0)
        if log and use_log(xs_all, span=3.0):
            ax.set_xscale("log")
            log_ticks(ax.xaxis)
        else:
            linear_ticks(ax.xaxis)
        ax.set_xlabel(label)
        ax.grid(True, alpha=0.3)
    panels[0].set_ylabel(BPC_LABEL)
    panels[-1].legend(fontsize="small")
    if title:
        fig.suptitle(title)
    return fig


@dataclass
class TrainCurve:
    """Training loss of one run at each optimizer step (the ``"step"`` rows of metrics.jsonl).

    Attributes:
        step, elapsed, flops: as in :class:`Curve`.
        loss: training loss, nats per token (the batch mean of the step).
        bpc: the same loss in bits per character of training text: ``loss / ln 2 / (chars / tokens)``
            (the training split's characters per token; NaN where the row has no characters).
    """

    step: list[int] = field(default_factory=list)
    elapsed: list[float] = field(default_factory=list)
    flops: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    bpc: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.step)


def train_curve(rows: Sequence[dict]) -> TrainCurve:
    """The ``"step"`` rows with a finite ``loss``, by step (a step logged twice by a resumed run: the later row)."""
    by_step: dict[int, dict] = {}
    for row in rows:
        loss = row.get("loss")
        if row.get("kind") == "step" and isinstance(loss, (int, float)) and math.isfinite(loss):
            by_step[int(row.get("step", 0))] = row
    c = TrainCurve()
    for step in sorted(by_step):
        row = by_step[step]
        tokens, chars = float(row.get("tokens") or 0), float(row.get("chars") or 0)
        c.step.append(step)
        c.elapsed.append(float(row.get("elapsed", math.nan)))
        c.flops.append(float(row.get("flops", math.nan)))
        c.loss.append(float(row["loss"]))
        c.bpc.append(float(row["loss"]) / math.log(2) / (chars / tokens) if tokens > 0 and chars > 0 else math.nan)
    return c


def smoothed(values: Sequence[float], window: int) -> list[float]:
    """The centred moving average of ``values`` over ``window`` points (fewer at the ends): no lag behind a
    falling loss, as a trailing average would have."""
    half = max(0, window // 2)
    sums = [0.0]
    for v in values:
        sums.append(sums[-1] + v)
    out = []
    for i in range(len(values)):
        lo, hi = max(0, i - half), min(len(values), i + half + 1)
        out.append((sums[hi] - sums[lo]) / (hi - lo))
    return out


def loss_figure(rows: Sequence[dict], title: str | None = None):
    """The loss curve of one run, as a nanoGPT user reads it: training loss and held-out bits per character
    against optimizer steps (top axis: training FLOPs), and the same against wall time.

    The training loss is drawn in bits per character of training text (nats per token / ln 2 / characters
    per token), on the held-out scale; a faint line per step and, past 20 steps, its moving average.  The
    held-out evaluations are points joined by a line.

    Returns:
        A matplotlib ``Figure``; ``axes[0]`` (steps) and ``axes[1]`` (seconds) hold the training line(s)
        first and the held-out line last.

    Raises:
        ValueError: the rows have neither a training step nor an evaluation to draw.
    """
    train, held = train_curve(rows), eval_curve(rows, "held-out")
    if not len(train) and not len(held):
        raise ValueError("nothing to plot: no training step or evaluation in the metrics yet")
    fig = canvas()
    fig.set_size_inches(10.4, 4.4)
    panels = fig.subplots(1, 2, sharey=True, width_ratios=(3, 2))
    window = max(1, len(train) // 20)
    for ax, key in zip(panels, ("step", "elapsed")):
        xs = getattr(train, key)
        if len(train):
            faint = 0.35 if window > 1 else 1.0
            ax.plot(xs, train.bpc, color="C0", linewidth=1, alpha=faint, label="training loss")
            if window > 1:
                ax.plot(
                    xs,
                    smoothed(train.bpc, window),
                    color="C0",
                    linewidth=1.8,
                    label=f"training loss, mean of {window} steps",
                )
        ax.plot(getattr(held, key), held.bpc, color="C3", marker="o", markersize=4, linewidth=1.8, label="held-out")
        if key == "step":
            linear_ticks(ax.xaxis)
        else:  # seconds: plain numbers (SI prefixes would print 300 ms as "300 m")
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
        ax.grid(True, alpha=0.3)
    panels[0].set_xlabel("optimizer steps")
    panels[1].set_xlabel("wall time (s)")
    panels[0].set_ylabel("bits per character")
    panels[0].legend(fontsize="small")
    flops_per_step = _per_step(train.step or held.step, train.flops or held.flops)
    if flops_per_step:
        from matplotlib.ticker import EngFormatter, MaxNLocator

        top = panels[0].secondary_xaxis("top", functions=(lambda s: s * flops_per_step, lambda f: f / flops_per_step))
        top.set_xlabel("training FLOPs")
        top.xaxis.set_major_locator(MaxNLocator(nbins=5))
        top.xaxis.set_major_formatter(EngFormatter(sep=" "))
    if title:
        fig.suptitle(title)
    return fig


def _per_step(steps: Sequence[int], flops: Sequence[float]) -> float | None:
    """Training FLOPs per optimizer step (the last row's ratio; every step costs the same), or None."""
    if steps and flops and steps[-1] > 0 and math.isfinite(flops[-1]) and flops[-1] > 0:
        return flops[-1] / steps[-1]
    return None


def write_loss_png(run_dir: str | os.PathLike) -> Path | None:
    """Refresh ``RUN/loss.png`` from ``RUN/metrics.jsonl``: :func:`loss_figure` (training loss and held-out
    bits per character against steps and wall time).

    Meant to be called by the training loop after each evaluation (cheap: one
    small figure).  Returns the PNG's path, or None (and writes nothing) while
    the run has neither a training step nor an evaluation.

    Raises:
        FileNotFoundError, MetricsError: as :func:`run_curve`.
    """
    run_dir = Path(run_dir)
    rows = read_metrics(metrics_path(run_dir))
    if not len(train_curve(rows)) and not len(eval_curve(rows, "")):
        return None
    return save_png(loss_figure(rows, title=run_dir.name), run_dir / "loss.png")
