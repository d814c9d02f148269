"""storygpt.eval.sequential: the exact t distribution, the spending schedule, the decision, and simulations of
the whole adaptive procedure (2 seeds, then a seed round at a time for the undecided ones, up to MAX = 6).

Simulation: 3 tokenizers, per-seed held-out bits/char ~ N(2.2, 0.005^2) (a seed effect) measured on 8 blocks
of text shared by every tokenizer and seed (text difficulty ~ N(0, 0.3^2) bits/char per block, fixed) with a
per-block, per-run noise of 0.01 bits/char.  A false statement is any "A decided worse than B" when the true
means are equal: under no true difference, any decision at all.

Measured (numpy seed 0; rates with Wilson 95% intervals), per-run sd of bits/char 0.0052:

* default suite, R = 2000, no true difference: 79 / 2000 = 3.95% [3.2%, 4.9%] runs with any decision; the
  naive design (the fixed-sample test, Bonferroni over the 3 pairs, re-read after every seed): 298 / 2000 =
  14.9% [13.4%, 16.5%].
* power, R = 1000, two tokenizers 3 sd (0.0157 bits/char) worse than the best: the best named in 53.4% of
  the runs, never a wrong one, 5.49 seeds per tokenizer on average against 6 for the fixed-MAX design.
* the slow variants (R = 20000, ``-m slow``) were not run before this commit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from storygpt.eval import sequential as sq

LN2 = math.log(2)
NAMES = ["byte", "bpe:512", "bpe:2048"]
MAX = 6


def wilson(hits: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson's 95% score interval of a binomial proportion (Wilson 1927)."""
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


# ------------------------------------------------------------------ Student t
@pytest.mark.parametrize(
    "df, t975", [(1, 12.706205), (2, 4.302653), (3, 3.182446), (5, 2.570582), (10, 2.228139), (30, 2.042272)]
)
def test_t_quantiles_match_the_tables(df, t975):
    assert sq.t_two_sided_p(t975, df) == pytest.approx(0.05, rel=1e-5)
    assert sq.t_critical(0.05, df) == pytest.approx(t975, rel=1e-6)


def test_t_closed_forms_for_one_and_two_degrees_of_freedom():
    for t in [0.0, 0.3, 1.0, 7.5, 300.0]:
        assert sq.t_two_sided_p(t, 1) == pytest.approx(1 - 2 * math.atan(t) / math.pi, abs=1e-14)  # Cauchy
        assert sq.t_two_sided_p(-t, 2) == pytest.approx(1 - t / math.sqrt(2 + t * t), abs=1e-14)
    assert sq.t_critical(0.0005, 1) == pytest.approx(math.tan(math.pi / 2 * (1 - 0.0005)), rel=1e-9)
    assert sq.t_two_sided_p(math.inf, 4) == 0.0


def test_t_refuses_bad_input():
    with pytest.raises(ValueError, match="integer >= 1"):
        sq.t_two_sided_p(1.0, 0)
    with pytest.raises(ValueError, match="integer >= 1"):
        sq.t_two_sided_p(1.0, 2.5)
    with pytest.raises(ValueError, match="not a number"):
        sq.t_two_sided_p(math.nan, 3)
    with pytest.raises(ValueError, match="between 0 and 1"):
        sq.t_critical(0.0, 3)


# ------------------------------------------------------------------ spending
@pytest.mark.parametrize("spending", ["obrien-fleming", "pocock", "uniform"])
def test_the_shares_of_the_looks_sum_to_alpha(spending):
    shares = sq.look_levels(MAX, 0.05, spending)
    assert shares.shape == (MAX - 1,)
    assert np.all(shares > 0) and shares.sum() == pytest.approx(0.05, abs=1e-15)


def test_obrien_fleming_spends_little_at_the_first_look():
    shares = sq.look_levels(MAX, 0.05)
    # 2 - 2 Phi(1.959964 / sqrt(1/3)) = 2 - 2 Phi(3.3948) = 0.000687
    assert shares[0] == pytest.approx(0.000687, rel=1e-3)
    assert np.all(np.diff(shares) > 0)
    assert sq.look_levels(2, 0.05).tolist() == [pytest.approx(0.05)]  # one look: the fixed-sample test
    assert sq.look_levels(MAX, 0.05, "fixed").tolist() == [0.05] * (MAX - 1)


def test_spending_refuses_bad_input():
    with pytest.raises(ValueError, match="max_seeds"):
        sq.look_levels(1)
    with pytest.raises(ValueError, match="alpha"):
        sq.look_levels(6, 1.5)
    with pytest.raises(ValueError, match="unknown spending"):
        sq.look_levels(6, 0.05, "haybittle")


# ------------------------------------------------------------------ the confidence sequence
def test_the_interval_of_a_look_by_hand():
    d = np.array([0.010, 0.014, 0.006, 0.012])
    ivs = sq.confidence_sequence(d, MAX, pairs=3)
    assert [iv.seeds for iv in ivs] == [2, 3, 4]
    shares = sq.look_levels(MAX, 0.05) / 3
    for iv in ivs:
        x = d[: iv.seeds]
        half = sq.t_critical(shares[iv.seeds - 2], iv.seeds - 1) * x.std(ddof=1) / math.sqrt(iv.seeds)
        assert iv.level == pytest.approx(shares[iv.seeds - 2])
        assert (iv.diff, iv.low, iv.high) == pytest.approx((x.mean(), x.mean() - half, x.mean() + half))
    # 2 seeds: level 0.000229, t_1 = 2780: the interval is +-39 bits/char, nothing is decided
    assert ivs[0].high - ivs[0].low > 10


def test_zero_spread_decides_nothing():
    iv = sq.confidence_sequence([0.01, 0.01, 0.01], MAX)[-1]
    assert iv.low == -math.inf and iv.high == math.inf and not iv.excludes_zero


def test_confidence_sequence_refuses_bad_input():
    with pytest.raises(ValueError, match="between 2 and max_seeds"):
        sq.confidence_sequence([0.1], MAX)
    with pytest.raises(ValueError, match="between 2 and max_seeds"):
        sq.confidence_sequence(np.zeros(7), MAX)
    with pytest.raises(ValueError, match="not finite"):
        sq.confidence_sequence([0.1, math.nan], MAX)
    with pytest.raises(ValueError, match="pairs"):
        sq.confidence_sequence([0.1, 0.2], MAX, pairs=0)


# ------------------------------------------------------------------ decide
def big_gaps(seeds: int) -> dict[str, np.ndarray]:
    noise = np.array([0.001, -0.002, 0.0015, -0.0005, 0.0, 0.001])[:seeds]
    return {"byte": 2.6 + noise[::-1], "bpe:512": 2.4 - noise, "bpe:2048": 2.2 + noise}


def test_two_seeds_decide_nothing_and_everyone_gets_a_third():
    dec = sq.decide(big_gaps(2), MAX)
    assert dec.seeds == 2 and dec.look == 1 and dec.best == "bpe:2048" and dec.verdict == "open"
    assert set(dec.status.values()) == {sq.UNDECIDED} and sorted(dec.need_seed) == sorted(NAMES)
    assert set(dec.intervals) == {"byte", "bpe:512"} and dec.intervals["byte"].diff > 0.39


def test_large_gaps_are_decided_and_the_best_is_named():
    dec = sq.decide(big_gaps(4), MAX)
    assert dec.winner == "bpe:2048" and dec.verdict == "best: bpe:2048" and dec.done and dec.need_seed == []
    assert dec.status == {"byte": sq.WORSE, "bpe:512": sq.WORSE, "bpe:2048": sq.BETTER}
    assert all(dec.intervals[k].low > 0 for k in ("byte", "bpe:512"))
    assert dec.decided_at == {"byte": 3, "bpe:512": 3} and dec.seeds == 3  # decided at the third seed


def test_decided_tokenizers_stop_and_the_rest_continue():
    rng = np.random.default_rng(3)
    bpc = {
        "byte": 2.6 + rng.normal(0, 0.001, 3),
        "a": 2.2 + rng.normal(0, 0.005, 3),
        "b": 2.2 + rng.normal(0, 0.005, 3),
    }
    dec = sq.decide(bpc, MAX)
    assert dec.status["byte"] == sq.WORSE and dec.decided_at == {"byte": 3}
    assert sorted(dec.need_seed) == ["a", "b"] and dec.verdict == "open"
    bpc = {k: np.append(v, 2.2) if k != "byte" else v for k, v in bpc.items()}  # byte stops at 3 seeds
    again = sq.decide(bpc, MAX)
    assert again.seeds == 4 and again.status["byte"] == sq.WORSE and sorted(again.need_seed) == ["a", "b"]
    assert sq.decide(bpc, MAX, look=2).seeds == 3  # an earlier look replays the same way


def test_max_reached_undecided_is_no_winner():
    rng = np.random.default_rng(1)
    bpc = {k: 2.2 + rng.normal(0, 0.005, MAX) for k in NAMES}
    dec = sq.decide(bpc, MAX)
    assert dec.seeds == MAX and dec.done and dec.winner is None and dec.verdict == "no winner" and dec.need_seed == []
    assert sq.UNDECIDED in dec.status.values()


def test_decide_refuses_a_tokenizer_that_stopped_undecided():
    bpc = {k: 2.2 + np.array([0.001, -0.002, 0.003]) * (i + 1) for i, k in enumerate(NAMES)}
    bpc["byte"] = bpc["byte"][:2]
    with pytest.raises(ValueError, match="byte: undecided after 2 seeds; seed 3 is needed"):
        sq.decide(bpc, MAX, look=2)
    with pytest.raises(ValueError, match="at least 2 tokenizers"):
        sq.decide({"byte": [2.2, 2.3]}, MAX)
    with pytest.raises(ValueError, match="starts with 2"):
        sq.decide({"byte": [2.2], "bpe": [2.1, 2.0]}, MAX)
    with pytest.raises(ValueError, match="not finite"):
        sq.decide({"byte": [2.2, math.inf], "bpe": [2.1, 2.0]}, MAX)
    with pytest.raises(ValueError, match="look must be"):
        sq.decide({"byte": [2.2, 2.3], "bpe": [2.1, 2.0]}, MAX, look=6)


# ------------------------------------------------------------------ simulations of the whole procedure
BLOCKS, SEED_SD, BLOCK_NOISE = 8, 0.005, 0.004
CHARS = np.random.default_rng(0).integers(2000, 6000, BLOCKS).astype(np.float64)
# the sd of one run's bits/char: the seed effect and the block noise averaged over the characters (0.0052)
RUN_SD = math.sqrt(SEED_SD**2 + BLOCK_NOISE**2 * float((CHARS**2).sum()) / float(CHARS.sum()) ** 2)


def simulate(replicates: int, gap: float = 0.0, spending: str = "obrien-fleming", seed: int = 0):
    """Runs :func:`sq.run_adaptive` ``replicates`` times on synthetic block losses; tokenizers after the first
    are ``gap`` bits/char worse.  Returns (runs with any decision, runs naming the first tokenizer, runs
    naming another, mean seeds per tokenizer)."""
    rng = np.random.default_rng(seed)
    blocks, chars = BLOCKS, CHARS
    text = rng.normal(0, 0.3, blocks)  # bits/char of each block's own difficulty, shared by every run
    k = len(NAMES)
    mean = 2.2 + gap * (np.arange(k) > 0)
    per_run = mean[None, :, None] + rng.normal(0, SEED_SD, (replicates, k, MAX))  # the seed effect
    per_block = per_run[..., None] + text + rng.normal(0, BLOCK_NOISE, (replicates, k, MAX, blocks))
    nats = LN2 * chars * per_block
    bpc = nats.sum(axis=-1) / (LN2 * chars.sum())  # (replicates, tokenizers, seeds)
    index = {name: i for i, name in enumerate(NAMES)}
    decided = right = wrong = 0
    seeds = 0
    for r in range(replicates):
        dec, used = sq.run_adaptive(lambda name, i: bpc[r, index[name], i], NAMES, MAX, spending=spending)
        decided += bool(dec.decided_at)
        right += dec.winner == NAMES[0]
        wrong += dec.winner is not None and dec.winner != NAMES[0]
        seeds += sum(used.values())
    return decided, right, wrong, seeds / (replicates * k)


def check_error_rate(replicates: int):
    decided, _, _, seeds = simulate(replicates)
    low, high = wilson(decided, replicates)
    rate = decided / replicates
    assert low < 0.05, (rate, low, high)
    assert rate <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / replicates), (rate, low, high)
    assert seeds > MAX - 0.2  # no difference: nearly everyone runs to MAX
    return rate, low, high


def check_naive_inflation(replicates: int):
    decided, _, _, _ = simulate(replicates, spending="fixed")
    low, high = wilson(decided, replicates)
    assert low > 0.05, (decided / replicates, low, high)  # the naive design breaks its stated 5%
    return decided / replicates, low, high


def test_no_true_difference_keeps_the_error_rate():
    print("sequential, R=2000", check_error_rate(2000))


def test_the_naive_design_inflates_the_error_rate():
    print("naive, R=2000", check_naive_inflation(2000))


def test_a_three_sd_difference_is_decided_with_fewer_seeds():
    replicates = 1000
    _, right, wrong, seeds = simulate(replicates, gap=3 * RUN_SD, seed=1)
    assert wrong == 0
    assert right / replicates > 0.5, right  # decided within MAX most of the time
    assert seeds < MAX - 0.3, seeds  # fewer seeds than the fixed design
    print("power", RUN_SD, right / replicates, seeds)


@pytest.mark.slow
def test_no_true_difference_keeps_the_error_rate_20000():
    print("sequential, R=20000", check_error_rate(20_000))


@pytest.mark.slow
def test_the_naive_design_inflates_the_error_rate_20000():
    print("naive, R=20000", check_naive_inflation(20_000))
