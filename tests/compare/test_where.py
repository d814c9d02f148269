"""compare.py's issue-33 report sections (storygpt/eval/where.py) on made-up run records: the figures
against direct computations, the refusal of losses of different texts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from storygpt.eval import where
from storygpt.eval.measure import Text
from storygpt.eval.sets import set_intervals

LN2 = math.log(2)
DOCS = ["The cat sat.", "A dog ran far."]
TEXT = Text("valid.txt", DOCS, [("one", [0]), ("two", [1])], ["one", "two"])
N = len(DOCS[0]) + 1 + len(DOCS[1])


def record(spec, seed, scale, tmp_path, digest="abc"):
    rng = np.random.default_rng(seed)
    char_nats = rng.random(N) * scale
    path = tmp_path / f"{spec}-{seed}.npz"
    np.savez(
        path,
        char_nats=char_nats,
        text_sha256=np.array(digest),
        set_names=np.array(["one", "two"]),
        set_ranges=np.array([[0, 13], [13, N]]),
        exact=np.array(True),
    )
    sets = {}
    for name, (lo, hi) in (("one", (0, 13)), ("two", (13, N))):
        blocks = [char_nats[i : min(i + 4, hi)].sum() for i in range(lo, hi, 4)]
        nats = char_nats[lo:hi].sum()
        sets[name] = {
            "nats": nats,
            "characters": hi - lo,
            "bytes": hi - lo,
            "bits_per_character": nats / (LN2 * (hi - lo)),
            "bits_per_byte": nats / (LN2 * (hi - lo)),
            "block_nats": blocks,
            "block_characters": [min(i + 4, hi) - i for i in range(lo, hi, 4)],
        }
    bpc = char_nats.sum() / (LN2 * N)
    bits = {
        "bits_per_character": bpc,
        "sets": sets,
        "macro_bits_per_character": np.mean([s["bits_per_character"] for s in sets.values()]),
        "micro_bits_per_character": bpc,
        "macro_bits_per_byte": 0.0,
        "micro_bits_per_byte": bpc,
    }
    return {"spec": spec, "seed": seed, "bits": bits, "losses": path, "char_nats": char_nats}


def test_sets_section_equals_a_direct_bootstrap(tmp_path):
    runs = [record("good", s, 1.0, tmp_path) for s in (1, 2)] + [record("bad", s, 2.0, tmp_path) for s in (3, 4)]
    lines, out = where.sets_section(runs)
    assert out["best"] == "good"
    A = {n: np.array([r["bits"]["sets"][n]["block_nats"] for r in runs[2:]]) for n in ("one", "two")}
    B = {n: np.array([r["bits"]["sets"][n]["block_nats"] for r in runs[:2]]) for n in ("one", "two")}
    C = {n: np.array(runs[0]["bits"]["sets"][n]["block_characters"]) for n in ("one", "two")}
    iv = set_intervals(A, B, C)
    assert out["differences"]["bad"]["macro mean"]["diff"] == pytest.approx(iv["macro"].diff)
    assert out["differences"]["bad"]["one"]["low"] == pytest.approx(iv["sets"]["one"].low)
    assert any(line.startswith("| micro mean |") for line in lines)


def test_attribution_section_adds_up_and_refuses_other_texts(tmp_path):
    runs = [record("good", 1, 1.0, tmp_path), record("bad", 2, 2.0, tmp_path), record("bad", 3, 2.0, tmp_path)]
    lines, out = where.attribution_section(runs, [TEXT], {"The": 200, "cat": 3}, tmp_path)
    att = out["pairs"]["bad"]
    want = (np.mean([runs[1]["char_nats"], runs[2]["char_nats"]], axis=0) - runs[0]["char_nats"]) / LN2
    assert att["total_bits"] == pytest.approx(math.fsum(want), abs=1e-9)
    for rows in att["splits"].values():
        assert abs(sum(r["bits"] for r in rows) - att["total_bits"]) < 1e-9
    assert (tmp_path / "attribution-bad.html").is_file()
    other = record("bad", 4, 2.0, tmp_path, digest="other")
    with pytest.raises(ValueError, match="different texts"):
        where.attribution_section([runs[0], runs[1], other], [TEXT], None, None)


def test_robustness_and_health_sections(tmp_path):
    runs = [record("good", 1, 1.0, tmp_path), record("bad", 2, 2.0, tmp_path)]
    for r, extra in zip(runs, (0.0, 0.5)):
        blocks = {
            "clean_nats": [4.0, 6.0],
            "clean_chars": [10, 10],
            "noisy_nats": [5.0 + extra, 7.0],
            "noisy_chars": [10, 10],
        }
        r["bits"]["perturbations"] = [{"perturbation": "case", "blocks": blocks}]
        r["bits"]["vocab_health"] = {"never_seen": 3 if r["spec"] == "good" else 5, "intermediate": None}
    lines, out = where.robustness_section(runs)
    assert out["good"]["case"]["change"] == pytest.approx((12 / 20 - 10 / 20) / LN2)
    assert out["bad"]["case"]["change"] == pytest.approx((12.5 / 20 - 10 / 20) / LN2)
    lines, out = where.health_section(runs)
    assert out["good"]["never_seen"] == 3 and out["bad"]["intermediate"] is None
