"""compare.py's plots: labelled log ticks, one colour per tokenizer, seed bands, under-trained and lossy runs
drawn apart, the sweep plot with its fit only over the compute fitted; and the report's analysis of groups."""

from __future__ import annotations

import math

import numpy as np
import pytest

from storygpt import plot
from storygpt.compare import analysis, plots
from storygpt.compare.report import RunResult

pytest.importorskip("matplotlib")


def result(spec, seed, bpc, budget=1e11, flops=None, under=False, lossy=False, blocks=None):
    return RunResult(
        spec=spec,
        slug=spec.replace(":", "-"),
        run_dir="x",
        vocab_size=512,
        params=1,
        params_embedding=None,
        params_non_embedding=None,
        steps=30,
        tokens=100,
        chars=200,
        flops=flops or budget,
        elapsed=1.0,
        train_time=1.0,
        stop_reason="flops",
        val_bpc=None,
        bits_per_char=bpc,
        heldout_chars=4000,
        heldout_tokens=2000,
        chars_per_token=2.0,
        unk_share=0.0,
        round_trip_share=1.0,
        seed=seed,
        budget=f"flops{budget:g}",
        budget_value=budget,
        under_trained=under,
        lossy=lossy,
        block_nats=blocks,
        block_characters=None if blocks is None else [1000] * len(blocks),
    )


def curve(label, bpcs, flops0=1e10):
    c = plot.Curve(label)
    for i, b in enumerate(bpcs, 1):
        c.step.append(i * 10)
        c.flops.append(flops0 * i * 4)
        c.chars.append(1000.0 * i)
        c.elapsed.append(float(i))
        c.bpc.append(b)
    return c


def test_short_numbers_and_labelled_log_ticks():
    assert [plot.short_number(v) for v in (2e12, 500, 1.5e6, 1e-2, 0)] == ["2e12", "500", "1.5e6", "0.01", "0"]
    c = curve("a", [3.0, 2.8, 2.6], flops0=1e11)  # 4e11 .. 1.2e12: less than a decade
    fig = plot.curves_figure([c], ("flops",))
    ax = fig.axes[0]
    fig.canvas.draw()
    assert ax.get_xscale() == "log"
    lo, hi = ax.get_xlim()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text() and lo <= t.get_position()[0] <= hi]
    assert len(labels) >= 2 and "5e11" in labels and "1e12" in labels


def test_style_curves_mean_band_colours_and_line_styles():
    results = [
        result("bpe:512", 1, 2.4),
        result("bpe:512", 2, 2.5),
        result("byte", 1, 2.6, under=True),
        result("word:200", 1, 1.9, lossy=True),
    ]
    curves = [curve("bpe:512", [3.0, 2.5]), curve("bpe:512", [3.2, 2.7]), curve("byte", [3.1]), curve("w", [2.0])]
    colours = plots.colours_for([r.spec for r in results])
    assert colours == {"bpe:512": "C0", "byte": "C1", "word:200": "C2"}
    styled = plots.style_curves(curves, results, colours)
    assert [c.label for c in styled] == ["bpe:512", "byte (under-trained)", "word:200 (lossy)"]
    assert styled[0].bpc == [3.1, 2.6] and styled[0].band_low == [3.0, 2.5] and styled[0].band_high == [3.2, 2.7]
    assert [c.linestyle for c in styled] == ["-", "--", ":"] and styled[1].band_low is None
    fig = plot.curves_figure(styled, ("flops",))
    ax = fig.axes[0]
    assert [ln.get_linestyle() for ln in ax.lines] == ["-", "--", ":"]
    assert [ln.get_color() for ln in ax.lines] == ["C0", "C1", "C2"]
    assert len(ax.collections) == 1  # one band: the only tokenizer with two seeds


def test_verdict_and_sweep_from_groups(tmp_path):
    ln2k = math.log(2) * 1000
    a = [ln2k * x for x in (2.0, 2.1, 2.2, 2.3)]
    b = [ln2k * x for x in (2.5, 2.6, 2.7, 2.8)]  # 0.5 bits/char worse on every block
    rs = [result("a", 1, 2.15, blocks=a), result("b", 1, 2.65, blocks=b), result("c", 1, 1.0, lossy=True)]
    v = analysis.verdict(analysis.groups(rs), replicates=500)
    assert v.winner == "a" and v.ineligible == ["c"]
    assert v.intervals["b"].low == pytest.approx(0.5) and v.intervals["b"].high == pytest.approx(0.5)
    assert v.intervals["c"] is None  # no block losses: no interval

    # three budgets, two tokenizers crossing between 2e11 and 4e11
    sweep = []
    for budget, ya, yb in ((1e11, 3.0, 2.8), (2e11, 2.6, 2.5), (4e11, 2.4, 2.5)):
        sweep += [result("a", 1, ya, budget), result("b", 1, yb, budget)]
    sw = analysis.sweep(analysis.groups(sweep))
    assert sw.budgets == [1e11, 2e11, 4e11]
    ((x, y, lo, hi, c),) = sw.crossovers
    # difference 0.1 at 2e11 and -0.1 at 4e11: halfway in log compute, sqrt(2e11 * 4e11)
    assert (x, y, lo, hi) == ("a", "b", 2e11, 4e11) and c == pytest.approx(math.sqrt(8e22))
    assert sw.fits["a"].n == 3 and sw.fits["a"].E_se is None
    fig_path = plots.plot_sweep(sw, tmp_path / "sweep.png", plots.colours_for(["a", "b"]))
    assert fig_path.read_bytes()[:4] == b"\x89PNG"
    # a: 2.2 + 0.8 (C / 1e11)^-1 exactly
    fit = sw.fits["a"]
    assert fit.alpha == pytest.approx(1.0, rel=1e-5) and fit.E == pytest.approx(2.2, rel=1e-5)
    np.testing.assert_allclose(fit(np.array([1e11, 2e11, 4e11])), [3.0, 2.6, 2.4], atol=1e-6)


def test_intrinsic_correlations_leave_lossy_runs_out():
    rs = [result("a", 1, 2.6), result("b", 1, 2.4), result("c", 1, 2.5), result("w", 1, 1.5, lossy=True)]
    for r, cpt, eff in zip(rs, (1.0, 3.0, 2.0, 9.0), (0.3, 0.3, 0.3, 0.1)):
        r.chars_per_token, r.renyi_efficiency = cpt, eff
    by = {c.measure: c for c in analysis.intrinsic_correlations(analysis.groups(rs))}
    # a, b, c: chars/token 1, 3, 2 against bits/char 2.6, 2.4, 2.5: a perfect inverse order; 2 of 3! orders as extreme
    assert by["chars_per_token"].n == 3 and by["chars_per_token"].rho == pytest.approx(-1.0)
    assert by["chars_per_token"].p.p == pytest.approx(2 / 6)
    assert math.isnan(by["renyi_efficiency"].rho)  # the same for the three lossless tokenizers


def test_points_figure_leaves_out_missing_values():
    fig = plots.points_figure(
        ["byte", "bpe:8192", "tiktoken:gpt2"], [258, 8192, 50257], [2.6, 2.3, float("nan")], xlabel="v", ylabel="b"
    )
    ax = fig.axes[0]
    offsets = [tuple(c.get_offsets()[0]) for c in ax.collections]
    assert offsets == [(258.0, 2.6), (8192.0, 2.3)]
    assert [t.get_text() for t in ax.texts] == ["byte", "bpe:8192"]
    assert ax.get_xscale() == "log"
    narrow = plots.points_figure(["a", "b"], [512, 1024], [2.0, 1.9], xlabel="v", ylabel="b")
    assert narrow.axes[0].get_xscale() == "linear"  # less than a factor of 4: no labelled log tick
