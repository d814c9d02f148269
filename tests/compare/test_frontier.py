"""IsoFLOP frontiers (storygpt.compare.frontier): the parabola's optimum against the closed-form vertex, the
edge cases, and the verdict (a winner when the intervals say so, "cannot tell" when they do not)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from storygpt.compare import frontier
from storygpt.compare.frontier import frontiers, isoflop_minimum

SIZES = {"tiny": 1e5, "small": 4e5, "base": 1.6e6}


def parabola(n, n_star, floor, curvature=0.05):
    return curvature * (math.log(n) - math.log(n_star)) ** 2 + floor


def test_three_sizes_give_the_vertex_of_the_parabola_through_them():
    ns = list(SIZES.values())
    opt = isoflop_minimum(ns, [parabola(n, 3e5, 1.9) for n in ns])
    assert opt.params == pytest.approx(3e5, rel=1e-9) and opt.bpc == pytest.approx(1.9, abs=1e-12)
    assert not opt.edge
    # the vertex of a x^2 + b x + c by hand, for three uneven points
    x = np.log([2e5, 5e5, 3e6])
    y = np.array([2.3, 2.1, 2.2])
    a, b, c = np.linalg.solve(np.vander(x, 3), y)
    opt = isoflop_minimum(np.exp(x), y)
    assert math.log(opt.params) == pytest.approx(-b / (2 * a)) and opt.bpc == pytest.approx(c - b * b / (4 * a))


def test_the_minimum_at_an_edge():
    ns = list(SIZES.values())
    falling = isoflop_minimum(ns, [2.5, 2.2, 2.0])  # bigger is better all the way: the largest size
    assert falling.edge and falling.params == pytest.approx(ns[-1]) and falling.bpc == pytest.approx(2.0)
    inside = isoflop_minimum(ns, [2.0, 1.8, 2.1])
    assert not inside.edge and inside.bpc < 1.8 and ns[0] < inside.params < ns[-1]
    hump = isoflop_minimum(ns, [2.0, 2.3, 2.1])  # opens downwards: the better end
    assert hump.edge and hump.params == pytest.approx(ns[0]) and hump.bpc == pytest.approx(2.0)
    two = isoflop_minimum(ns[:2], [2.0, 1.9])
    assert two.edge and two.params == pytest.approx(ns[1])
    one = isoflop_minimum(ns[:1], [2.0])
    assert one.params == ns[0] and one.bpc == 2.0
    with pytest.raises(ValueError, match="2 sizes and 1 values"):
        isoflop_minimum(ns[:2], [1.0])


BLOCKS = np.full(20, 500.0)


def rows(spec, vocab, budget, n_star, floor, seeds=2, noise=0.002, rng=None, under=(), blocks_seed=7):
    """RunResult-like rows of one tokenizer at one budget on the three sizes, with block losses (the same
    held-out text for every model: each block's loss is the same share above or below the mean unless
    ``blocks_seed`` differs)."""
    rng = rng or np.random.default_rng(1)
    block_noise = np.random.default_rng(blocks_seed).normal(0, 0.05, BLOCKS.size)
    out = []
    for size, n in SIZES.items():
        for s in range(seeds):
            target = parabola(n, n_star, floor) + rng.normal(0, noise)
            nats = target * math.log(2) * BLOCKS * (1 + block_noise)
            bpc = float(nats.sum() / (math.log(2) * BLOCKS.sum()))
            out.append(
                SimpleNamespace(
                    spec=spec,
                    size=size,
                    budget_value=budget,
                    params=n,
                    vocab_size=vocab,
                    bits_per_char=bpc,
                    block_nats=list(nats),
                    block_characters=list(BLOCKS),
                    under_trained=size in under,
                    lossy=False,
                    seed=1337 + s,
                )
            )
    return out


def test_a_clear_winner_and_its_optimal_size_with_intervals():
    results = rows("bpe:512", 512, 1e12, 2e5, 2.00) + rows("bpe:2048", 2048, 1e12, 5e5, 2.10)
    results += rows("bpe:512", 512, 1e13, 5e5, 1.80) + rows("bpe:2048", 2048, 1e13, 8e5, 1.70)
    fronts = frontiers(results, replicates=500)
    assert [f.budget for f in fronts] == [1e12, 1e13]
    low, high = fronts
    assert low.winner == "bpe:512" and high.winner == "bpe:2048"
    assert low.best.optimum.params == pytest.approx(2e5, rel=0.15) and low.best.best_size == "small"
    lo, hi = low.best.params_interval
    assert lo <= low.best.optimum.params <= hi
    diff, dlo, dhi = high.differences["bpe:512"]
    assert diff == pytest.approx(0.10, abs=0.01) and 0 < dlo <= diff <= dhi
    text = "\n".join(frontier.markdown(fronts, lambda b: f"{b:g} FLOPs"))
    assert "At 1e+12 FLOPs: **bpe:512** at " in text and "At 1e+13 FLOPs: **bpe:2048**" in text


def test_cannot_tell_when_the_intervals_include_zero():
    # the same frontier, each model better on other blocks of the held-out text
    results = rows("bpe:512", 512, 1e12, 3e5, 2.0, noise=0, blocks_seed=7)
    results += rows("bpe:1024", 1024, 1e12, 3e5, 2.0, noise=0, blocks_seed=8)
    (bf,) = frontiers(results, replicates=500)
    assert bf.winner is None and bf.tied
    assert "cannot tell" in frontier.verdict_line(bf, lambda b: f"{b:g} FLOPs")


def test_under_trained_cells_are_left_out_of_the_fit():
    results = rows("bpe:512", 512, 1e12, 3e5, 2.0, under=("base",)) + rows("byte", 259, 1e12, 3e5, 2.3)
    (bf,) = frontiers(results, replicates=200)
    curve = next(c for c in bf.curves if c.spec == "bpe:512")
    assert [c.size for c in curve.cells] == ["tiny", "small"] and bf.left_out == ["bpe:512 base"]
    assert bf.winner == "bpe:512"


def test_plot_writes_a_png(tmp_path):
    results = rows("bpe:512", 512, 1e12, 2e5, 2.0, seeds=1) + rows("bpe:512", 512, 1e13, 5e5, 1.8, seeds=1)
    fronts = frontiers(results, replicates=100)
    frontier.plot(fronts, tmp_path / "isoflop.png", lambda b: f"{b:g}")
    assert (tmp_path / "isoflop.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_log_axes_are_labelled_at_the_data_only():
    # matplotlib's own minor labels overlapped on a decade of budgets (3e11, 1e12, 3e12)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([3e11, 1e12, 3e12], [1, 2, 3])
    ax.set_xscale("log")
    frontier.label_ticks(ax.xaxis, [3e12, 3e11, 1e12, 1e12])
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["3e11", "1e12", "3e12"]
    assert [t.get_text() for t in ax.get_xticklabels(minor=True)] == []
    plt.close(fig)
    assert [frontier.short_number(v) for v in (257, 2048, 131_200, 3_277_312, 1e13)] == [
        "257",
        "2048",
        "131k",
        "3.3M",
        "1e13",
    ]
