"""storygpt.plot and plot.py: curves from metrics.jsonl, PNG files, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import call_tool, run_tool

pytest.importorskip("matplotlib")

from storygpt import plot  # noqa: E402

HERE = Path(__file__).resolve().parent
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def step_row(step, flops_per_step=1e9, chars_per_step=500):
    return {
        "kind": "step",
        "step": step,
        "tokens": 128 * step,
        "chars": chars_per_step * step,
        "flops": flops_per_step * step,
        "elapsed": 0.5 * step,
        "lr": 1e-3,
        "loss": 5.0 - 0.01 * step,
        "grad_norm": 1.0,
    }


def eval_row(step, bpc, flops_per_step=1e9, chars_per_step=500):
    return {
        "kind": "eval",
        "step": step,
        "tokens": 128 * step,
        "chars": chars_per_step * step,
        "flops": flops_per_step * step,
        "elapsed": 0.5 * step + 0.1,
        "val_loss": bpc * 2.0,
        "val_bpc": bpc,
    }


def write_run(folder: Path, bpcs, every=10, flops_per_step=1e9, tail="") -> Path:
    """A run folder whose metrics.jsonl has step rows and an eval row every ``every`` steps."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, bpc in enumerate(bpcs, 1):
        for s in range((i - 1) * every + 1, i * every + 1):
            lines.append(json.dumps(step_row(s, flops_per_step)))
        lines.append(json.dumps(eval_row(i * every, bpc, flops_per_step)))
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n" + tail, encoding="utf-8")
    return folder


def assert_png(path: Path) -> tuple[int, int]:
    """The file is a PNG that decodes to a non-empty image; returns (height, width)."""
    import matplotlib.image

    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 1000
    img = matplotlib.image.imread(str(path))
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    return img.shape[:2]


def test_eval_curve_reads_eval_rows_only(tmp_path):
    run = write_run(tmp_path / "rope-bpe-512", [3.0, 2.5, 2.25])
    curve = plot.run_curve(run)
    assert curve.label == "rope-bpe-512"
    assert curve.step == [10, 20, 30]
    assert curve.flops == [1e10, 2e10, 3e10]
    assert curve.chars == [5000.0, 10000.0, 15000.0]
    assert curve.elapsed == [5.1, 10.1, 15.1]
    assert curve.bpc == [3.0, 2.5, 2.25]


def test_torn_last_line_is_dropped_and_a_bad_middle_line_is_an_error(tmp_path):
    run = write_run(tmp_path / "killed", [3.0, 2.5], tail='{"kind": "eval", "step": 30, "val_b')
    assert plot.run_curve(run).bpc == [3.0, 2.5]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "metrics.jsonl").write_text(json.dumps(eval_row(10, 3.0)) + "\nnot json\n" + json.dumps(eval_row(20, 2.0)))
    with pytest.raises(plot.MetricsError, match=r"metrics.jsonl:2: not a JSON object"):
        plot.run_curve(bad)


def test_metrics_that_are_not_utf8_are_one_error(tmp_path):
    bad = tmp_path / "bin"
    bad.mkdir()
    (bad / "metrics.jsonl").write_bytes(b"\xff\xfe{}\n")
    with pytest.raises(plot.MetricsError, match=r"metrics.jsonl: not UTF-8 text \(byte 0\)"):
        plot.run_curve(bad)


def test_repeated_evaluation_keeps_the_later_row(tmp_path):
    rows = [eval_row(10, 3.0), eval_row(20, 2.6), eval_row(20, 2.5), {"kind": "eval", "step": 30, "val_bpc": None}]
    curve = plot.eval_curve(rows, "x")
    assert curve.step == [10, 20] and curve.bpc == [3.0, 2.5]


def test_curves_figure_draws_every_run_on_every_panel():
    a = plot.eval_curve([eval_row(10, 3.0), eval_row(20, 2.5)], "bpe:512")
    b = plot.eval_curve([eval_row(10, 2.9, 2e9), eval_row(200, 2.4, 2e9)], "bpe:8192")
    fig = plot.curves_figure([a, b], ("flops", "chars", "elapsed"))
    assert len(fig.axes) == 3
    flops_ax, chars_ax, time_ax = fig.axes
    assert [line.get_label() for line in flops_ax.lines] == ["bpe:512", "bpe:8192"]
    assert list(flops_ax.lines[1].get_xdata()) == [2e10, 4e11]
    assert list(flops_ax.lines[1].get_ydata()) == [2.9, 2.4]
    assert list(chars_ax.lines[0].get_xdata()) == [5000.0, 10000.0]
    assert list(time_ax.lines[0].get_xdata()) == [5.1, 10.1]
    assert flops_ax.get_xscale() == "log" and time_ax.get_xscale() == "linear"
    assert flops_ax.get_ylabel() == plot.BPC_LABEL
    with pytest.raises(ValueError, match="unknown x axis 'steps'"):
        plot.curves_figure([a], ("steps",))
    with pytest.raises(ValueError, match="nothing to plot"):
        plot.curves_figure([plot.Curve("empty")])


def test_a_narrow_span_of_characters_gets_short_linear_labels():
    # a 1-minute run evaluates twice: 775,000 and 850,000 characters seen, less than a decade apart
    run = plot.eval_curve([eval_row(100, 2.5), eval_row(200, 2.4)], "bpe:8192")
    run.chars = [775_000.0, 850_000.0]
    fig = plot.curves_figure([run], ("chars",))
    (ax,) = fig.axes
    fig.canvas.draw()
    assert ax.get_xscale() == "linear"
    lo, hi = ax.get_xlim()
    shown = [t.get_text() for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi]
    assert shown == ["780 k", "800 k", "820 k", "840 k"]  # not "775000800000825000..."


def test_write_loss_png(tmp_path):
    run = write_run(tmp_path / "rope-byte", [3.1, 2.9, 2.8])
    out = plot.write_loss_png(run)
    assert out == run / "loss.png"
    assert_png(out)
    assert not list(run.glob(".loss.png.*"))  # written atomically: no temporary file left
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "metrics.jsonl").write_text(json.dumps(step_row(1)) + "\n")
    assert plot.write_loss_png(fresh) is None and not (fresh / "loss.png").exists()


def test_plot_cli(tmp_path):
    a = write_run(tmp_path / "shakespeare" / "rope-bpe-512", [3.0, 2.5])
    b = write_run(tmp_path / "tiny" / "rope-bpe-512", [3.2, 2.7], flops_per_step=3e9)
    out = tmp_path / "both.png"
    done = call_tool("plot", a, b / "metrics.jsonl", "--out", out)
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}" in done.stdout
    assert_png(out)
    assert plot.labels_for([a, b]) == ["shakespeare/rope-bpe-512", "tiny/rope-bpe-512"]
    assert call_tool("plot", a).returncode == 0  # one run: its loss.png
    assert_png(a / "loss.png")
    assert call_tool("plot", a, b, "--x", "chars", cwd=tmp_path).returncode == 0
    assert_png(tmp_path / "runs.png")


@pytest.mark.parametrize(
    "make, argv, message",
    [
        (lambda t: None, ["{t}/nope"], "nope: no such run folder"),
        (lambda t: (t / "old").mkdir() or (t / "old" / "metrics.json").write_text("{}"), ["{t}/old"], "older"),
        (lambda t: write_run(t / "r", [3.0]), ["{t}/r", "--x", "steps"], "--x 'steps'"),
        (lambda t: write_run(t / "r", [3.0]), ["{t}/r", "--out", "{t}"], "is a folder"),
        (lambda t: write_run(t / "r", [3.0]), ["{t}/r", "--out", "{t}/r.pdf"], "give a name ending in .png"),
        (
            lambda t: (t / "e").mkdir() or (t / "e" / "metrics.jsonl").write_text(json.dumps(step_row(1)) + "\n"),
            ["{t}/e"],
            "no evaluation",
        ),
    ],
)
def test_plot_cli_errors_are_one_line(tmp_path, make, argv, message):
    make(tmp_path)
    done = run_tool("plot", *[a.format(t=tmp_path) for a in argv])
    err = done.stderr
    assert done.returncode == 2
    assert err.startswith("plot.py: error: ") and err.count("\n") == 1 and message in err
