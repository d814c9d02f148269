"""Tasks made from held-out text (storygpt/tasks/made.py): seeded, in lm-eval's format, each item checked against
the text it came from; at least 1,000 items each on the default corpus when it is here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from storygpt.tasks import made

REPO = Path(__file__).resolve().parents[2]
DEFAULT_VALID = next(
    (
        p
        for p in (REPO / "data/shakespeare/valid.txt", REPO.parent.parent / "main/data/shakespeare/valid.txt")
        if p.is_file()
    ),
    None,
)

VERSE = "\n".join(
    f"Line {i} of the play, where {w} speaks of the {x} and the {y} again" + ("" if i % 7 else "\n\nKing.")
    for i, (w, x, y) in enumerate(
        (("Hamlet", "ghost", "night"), ("Horatio", "king", "sword"), ("Ophelia", "flowers", "river")) * 40
    )
)


def test_same_seed_same_items_other_seed_other_items():
    for name, make in made.MAKERS.items():
        a, b, c = make(VERSE, items=20, seed=1), make(VERSE, items=20, seed=1), make(VERSE, items=20, seed=2)
        assert a == b, name
        assert a != c, name
        assert len(a) == 20, name


def test_cloze_items_come_from_the_text():
    lines = VERSE.split("\n")
    for it in made.make_cloze(VERSE, items=30):
        assert it["target"].startswith(" ") and it["target"][1:].isalpha()
        assert (it["context"] + it["target"]) in VERSE
        last = (it["context"] + it["target"]).split("\n")[-1]
        assert any(ln.startswith(last) and re.fullmatch(r"[.,;:!?'\-]*", ln[len(last) :]) for ln in lines)
        assert len(it["context"]) <= made.CONTEXT_CHARS


def test_nextline_choices_hold_the_true_next_line_once():
    lines = VERSE.split("\n")
    for it in made.make_nextline(VERSE, items=30):
        ch, lab = it["choices"], it["label"]
        assert len(ch) == made.DISTRACTORS + 1 and len(set(ch)) == len(ch)
        assert (it["context"] + "\n" + ch[lab]) in VERSE  # the true line follows the context
        i = lines.index(ch[lab])
        for j, c in enumerate(ch):
            if j != lab:
                assert abs(lines.index(c) - i) >= made.MIN_DISTANCE


def test_pairs_differ_by_one_rule_and_keep_the_length():
    words = {w.lower() for w in re.findall(r"[A-Za-z]+", VERSE)}
    rules = set()
    for it in made.make_pairs(VERSE, items=60):
        good, bad = it["choices"]
        assert it["label"] == 0 and it["context"] == "" and good != bad and len(good) == len(bad)
        assert good in VERSE.split("\n")
        g, b = good.split(" "), bad.split(" ")
        diff = [k for k in range(len(g)) if g[k] != b[k]]
        rules.add(it["rule"])
        if it["rule"] == "swap":
            assert len(diff) == 2 and diff[1] == diff[0] + 1 and g[diff[0]] == b[diff[1]]
        else:
            assert len(diff) == 1 and sorted(g[diff[0]]) == sorted(b[diff[0]]) and b[diff[0]].lower() not in words
    assert rules == {"swap", "misspell"}


def test_written_in_lm_evals_format(tmp_path):
    counts = made.make_tasks(VERSE, tmp_path, items=10, seed=0, source="verse")
    assert counts == dict.fromkeys(made.MADE, 10)
    for name in made.MADE:
        y = (tmp_path / f"{name}.yaml").read_text()
        assert f"task: {name}" in y and "dataset_path: json" in y
        assert json.dumps(str((tmp_path / f"{name}.jsonl").resolve())) in y
        rows = [json.loads(ln) for ln in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        assert len(rows) == 10
    with pytest.raises(ValueError, match="too little text"):
        made.make_tasks("short", tmp_path / "x", ["storygpt_cloze"], source="short")


@pytest.mark.skipif(DEFAULT_VALID is None, reason="the default corpus (data/shakespeare/valid.txt) is not here")
def test_at_least_1000_items_each_on_the_default_corpus():
    text = DEFAULT_VALID.read_text(encoding="utf-8")
    for name, make in made.MAKERS.items():
        assert len(make(text)) == made.DEFAULT_ITEMS == 1000, name
        assert len(make(text, items=5000)) >= 5000, name  # far more candidates than the default takes
