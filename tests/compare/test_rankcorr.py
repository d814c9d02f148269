"""The report's rank correlations of intrinsic measures with bits/char (storygpt/eval/rankcorr.py): rho against
scipy, the exact p-value against enumerating every ordering, the Monte-Carlo one against the exact figure, the
bootstrap interval against a loop over the same draws; the report's too-few line and its per-set table."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from storygpt.compare import analysis
from storygpt.compare.report import ReportMeta, RunResult, render_markdown
from storygpt.eval import rankcorr, stats


def hand_rho(x, y) -> float:
    """Spearman's rho as Pearson's correlation of mean ranks (ties: the mean of the positions they share)."""

    def rank(v):
        return [sum(u < a for u in v) + (sum(u == a for u in v) + 1) / 2 for a in v]

    rx, ry = rank(list(x)), rank(list(y))
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return num / den if den else math.nan


def reference_rho(x, y) -> float:
    try:
        from scipy.stats import spearmanr
    except ImportError:
        return hand_rho(x, y)
    return float(spearmanr(x, y).statistic)


def brute_p(x, y) -> float:
    rho = hand_rho(x, y)
    perms = list(itertools.permutations(y))
    return sum(abs(hand_rho(x, p)) >= abs(rho) - 1e-12 for p in perms) / len(perms)


@pytest.mark.parametrize(
    "x, y",
    [
        ([1.0, 3.0, 2.0, 5.0, 4.0], [2.6, 2.4, 2.5, 2.1, 2.3]),
        ([1.0, 1.0, 2.0, 3.0, 5.0, 4.0], [0.3, 0.1, 0.2, 0.6, 0.4, 0.5]),  # a tie in x
        ([4.0, 1.0, 3.0, 2.0], [1.0, 2.0, 2.0, 3.0]),  # a tie in y
    ],
)
def test_rho_and_exact_p_against_scipy_and_every_ordering(x, y):
    assert stats.spearman(x, y) == pytest.approx(reference_rho(x, y), abs=1e-12)
    p = rankcorr.spearman_p(x, y)
    assert p.method == "exact" and p.orderings == math.factorial(len(x))
    assert p.p == pytest.approx(brute_p(x, y), abs=1e-12)


def test_average_ranks_row_by_row_are_the_stats_ranks():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, size=(50, 7)).astype(float)  # many ties
    r = rankcorr.average_ranks(a)
    for row, got in zip(a, r):
        np.testing.assert_array_equal(got, stats.ranks(row))


def test_permutation_p_beyond_eight_is_close_to_the_exact_one_and_reproducible():
    x = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    y = [3.1, 1.2, 2.2, 5.4, 4.0, 3.9, 7.7, 6.1, 5.0]
    rho = stats.spearman(x, y)
    ry = stats.ranks(y)
    orders = np.array(list(itertools.permutations(range(9))), dtype=np.int8)  # 362,880 orderings
    yc = ry[orders] - 5.0
    xc = np.arange(1, 10) - 5.0
    exact = float(np.mean(np.abs(yc @ xc / np.sqrt((xc @ xc) * (yc * yc).sum(axis=1))) >= abs(rho) - 1e-12))
    p = rankcorr.spearman_p(x, y, permutations=20_000, seed=7)
    assert p.method == "permutation" and p.orderings == 20_000 and p.seed == 7
    se = math.sqrt(exact * (1 - exact) / 20_000)
    assert abs(p.p - exact) < 4 * se + 1 / 20_001
    assert rankcorr.spearman_p(x, y, permutations=20_000, seed=7) == p
    # a perfect order: the estimate is never 0
    perfect = rankcorr.spearman_p(x, x, permutations=1000, seed=0)
    assert 0 < perfect.p <= 3 / 1001


def test_rho_interval_is_the_loop_over_the_same_draws_and_holds_the_estimate():
    rng = np.random.default_rng(0)
    blocks, seeds = 40, [1, 2, 1, 3]
    chars = rng.integers(900, 1100, size=blocks).astype(float)
    level = np.array([2.9, 2.7, 2.8, 2.5])  # bits/char per tokenizer
    nats = [lv * math.log(2) * chars * rng.uniform(0.8, 1.2, size=(s, blocks)) for lv, s in zip(level, seeds)]
    x = [1.0, 2.5, 2.0, 4.0]  # chars/token: a perfect inverse order with the levels
    low, high = rankcorr.rho_interval(x, nats, chars, replicates=300, seed=5)
    # the oracle: the same random draws, one replicate at a time, with stats.spearman
    g = np.random.default_rng(5)
    w = g.multinomial(blocks, np.full(blocks, 1 / blocks), size=300).astype(float)
    picks = [g.integers(0, m.shape[0], size=(300, m.shape[0])) for m in nats]
    rhos = []
    for i in range(300):
        bpc = [np.mean([(w[i] @ m[s]) / (math.log(2) * (w[i] @ chars)) for s in pk[i]]) for m, pk in zip(nats, picks)]
        rhos.append(stats.spearman(x, bpc))
    assert (low, high) == pytest.approx(tuple(np.quantile(rhos, [0.025, 0.975])), abs=1e-12)
    point = stats.spearman(x, [stats.bits_per_char(m, chars) for m in nats])
    assert low <= point <= high
    assert rankcorr.rho_interval(x, nats, chars, replicates=300, seed=5) == (low, high)
    with pytest.raises(ValueError, match="same for every tokenizer"):
        rankcorr.rho_interval([1.0] * 4, nats, chars)
    with pytest.raises(ValueError, match="block counts differ"):
        rankcorr.rho_interval(x, nats, chars[:-1])


def run(spec, bpc, cpt, fertility, sets=None, lossy=False):
    chars = [1000, 1000, 1000]
    return RunResult(
        spec=spec,
        slug=spec.replace(":", "-"),
        run_dir="x",
        vocab_size=512,
        params=1,
        params_embedding=None,
        params_non_embedding=None,
        steps=300,
        tokens=100,
        chars=200,
        flops=1e11,
        elapsed=1.0,
        train_time=1.0,
        stop_reason="flops",
        val_bpc=None,
        bits_per_char=bpc,
        heldout_chars=3000,
        heldout_tokens=1500,
        chars_per_token=cpt,
        unk_share=0.0,
        round_trip_share=1.0,
        seed=1,
        budget="flops1e11",
        budget_value=1e11,
        evals=10,
        lossy=lossy,
        renyi_efficiency=0.4,
        vocab_used_share=0.5,
        mean_token_bytes=cpt,
        fertility=fertility,
        block_nats=[bpc * math.log(2) * c * f for c, f in zip(chars, (0.9, 1.0, 1.1))],
        block_characters=chars,
        sets=sets,
    )


META = ReportMeta(name="t", corpus="c", data_dir="data/c", model="m", budget="1e11 training FLOPs", heldout="h")


def test_two_tokenizers_say_too_few():
    rs = [run("byte", 2.6, 1.0, 4.0), run("bpe:512", 2.4, 2.5, 1.6), run("word:100", 1.5, 4.0, 1.0, lossy=True)]
    md = render_markdown(rs, META)
    assert (
        "Too few tokenizers for a rank correlation: this report has 2 lossless tokenizers (1 lossy left out) with "
        "these measures, and a correlation needs at least 3." in md
    )
    assert "Spearman's rank correlation" not in md


def sets_of(a: float, b: float) -> dict:
    def fig(v, scale):
        chars = [500, 500]
        return {
            "bits_per_character": v,
            "block_nats": [v * math.log(2) * c * scale for c in chars],
            "block_characters": chars,
        }

    return {"hamlet": fig(a, 1.0), "lear": fig(b, 1.05)}


def test_per_set_correlations_with_two_sets():
    rs = [
        run("byte", 2.6, 1.0, 4.0, sets_of(2.5, 2.7)),
        run("bpe:512", 2.4, 2.5, 1.6, sets_of(2.45, 2.3)),
        run("bpe:1024", 2.3, 3.0, 1.3, sets_of(2.4, 2.35)),
        run("bpe:2048", 2.2, 3.5, 1.2, sets_of(2.2, 2.4)),
    ]
    cs = analysis.intrinsic_correlations(analysis.groups(rs), replicates=200)
    by = {(c.text, c.measure): c for c in cs}
    assert [t for t in dict.fromkeys(c.text for c in cs)] == ["held-out text", "hamlet", "lear"]
    held = by["held-out text", "fertility"]
    assert held.n == 4 and held.rho == pytest.approx(1.0) and held.p.p == pytest.approx(2 / 24)
    assert held.low <= held.rho <= held.high
    lear = by["lear", "chars_per_token"]
    assert lear.rho == pytest.approx(hand_rho([1.0, 2.5, 3.0, 3.5], [2.7, 2.3, 2.35, 2.4]))
    assert lear.p.p == pytest.approx(brute_p([1.0, 2.5, 3.0, 3.5], [2.7, 2.3, 2.35, 2.4]))
    assert lear.low is not None
    assert math.isnan(by["hamlet", "renyi_efficiency"].rho)  # the same for every tokenizer
    md = render_markdown(rs, META)
    assert "Per evaluation set" in md and "| hamlet | " in md and "| lear | " in md
    assert "| tokens per word (fertility) | 4 | +1.000 |" in md
    assert f"{lear.rho:+.2f} [{lear.low:+.2f}, {lear.high:+.2f}], p {lear.p.p:.3g}" in md
