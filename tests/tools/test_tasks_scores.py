"""Task scores (storygpt/tasks/scores.py): per-item figures from lm-eval's logged samples, the bootstrap
intervals, and the paired differences, against sums written out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from storygpt.tasks.scores import Items, items_from_samples, paired, resample_weights, score


def sample(doc_id, conts, lls, target, greedy=None):
    greedy = greedy or [False] * len(lls)
    return {
        "doc_id": str(doc_id),
        "arguments": [("ctx", c) for c in conts],
        "filtered_resps": [(ll, g) for ll, g in zip(lls, greedy)],
        "target": target,
    }


def test_per_item_figures_from_samples():
    s = [
        sample(1, [" ab", " abcd"], [-1.0, -4.0], "1"),  # per char -0.333 vs -0.8: choice 0 wins, gold 1: wrong
        sample(0, [" ab", " abcd"], [-3.0, -3.0], 1),  # per char -1.0 vs -0.6: gold 1 right (raw lls tie)
        sample(2, ["x", "y"], [-1.0, -1.0], 0),  # a tie: half the credit
        sample(3, [" abcd", "b"], [-4.0, -9.0], "abcd"),  # a target given as the choice's text
    ]
    it = items_from_samples(s)
    assert list(it.nats) == [3.0, 4.0, 1.0, 4.0]  # doc_id order
    assert list(it.chars) == [5, 5, 1, 5]
    assert list(it.correct) == [1.0, 0.0, 0.5, 1.0]
    assert list(it.chance) == [0.5] * 4
    cloze = items_from_samples(
        [sample(0, [" word"], [-7.0], " word", [True]), sample(1, [" w"], [-1.0], " w", [False])]
    )
    assert list(cloze.correct) == [1.0, 0.0] and all(math.isnan(x) for x in cloze.chance)
    with pytest.raises(ValueError, match="loglikelihood and multiple_choice"):
        items_from_samples([{"doc_id": "0", "arguments": [("only",)], "filtered_resps": [(-1.0, False)], "target": 0}])


def test_scores_intervals_and_pairs():
    rng = np.random.default_rng(0)
    n = 400
    a = Items(rng.uniform(1, 3, n), rng.integers(3, 9, n), (rng.random(n) < 0.3).astype(float), np.full(n, 0.25))
    b = Items(a.nats + 0.5, a.chars, a.correct, a.chance)  # worse by 0.5 nats on every item
    w = resample_weights(n, 500, seed=1)
    sa = score(a, w)
    assert sa.bits.value == pytest.approx(a.nats.sum() / (math.log(2) * a.chars.sum()))
    assert sa.bits.low < sa.bits.value < sa.bits.high
    assert sa.accuracy.value == pytest.approx(a.correct.mean())
    assert sa.above_chance.value == pytest.approx(a.correct.mean() - 0.25)
    d = paired(a, b, w)
    want = 0.5 * n / (math.log(2) * a.chars.sum())
    assert d["bits_per_character"].value == pytest.approx(want)
    assert d["bits_per_character"].excludes_zero and d["bits_per_character"].low > 0
    assert d["accuracy"].value == 0 and d["accuracy"].low == d["accuracy"].high == 0  # the same items: paired
    with pytest.raises(ValueError, match="different items"):
        paired(a, Items(a.nats[:5], a.chars[:5], a.correct[:5], a.chance[:5]), w)
    assert Items.from_dict(a.to_dict()).to_dict() == a.to_dict()
