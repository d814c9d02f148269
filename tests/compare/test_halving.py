"""compare.py --halving (issue 45 item 3): budgets trained smallest first, each only by the tokenizers not clearly
worse at the one before, their wsd trunks paused and continued; the drop rule; the bad input.

The sweep runs compare.py in this process with tests/tool_faults.py's ``record_tools`` fault (no model is
trained: tests/fake_runs.py plays each tool, a paused trunk included).  The fake bits/char
(:func:`fake_runs.fake_bpc`) are the oracle: byte is 0.18 and bpe:300 0.37 bits/char worse than bpe:512 at
every budget with the same block pattern (their paired intervals are points), bpe:520 is within noise of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import call_tool, one_error_line
from fake_runs import FLOPS, fake_bpc

from storygpt.compare.run import halving_runs as planned_runs
from storygpt.compare.settings import CompareError, CompareOptions, Run
from storygpt.halving.rounds import check_halving, parse_plan
from storygpt.halving.rule import drops

pytest.importorskip("matplotlib")
BUDGETS = (FLOPS, 2 * FLOPS, 4 * FLOPS)


def compare(cwd: Path, *argv):
    return call_tool("compare", *argv, cwd=cwd, fault=f"record_tools:{cwd / 'tools.jsonl'}")


def pretrain_commands(cwd: Path) -> list[tuple[str, str, bool, list[str]]]:
    """(SPEC, run name, paused?, --branch values) of each pretrain.py command compare.py ran, in order."""
    out = []
    for row in map(json.loads, (cwd / "tools.jsonl").read_text().splitlines()):
        a = row["args"]
        if row["tool"] == "pretrain.py":
            branches = [x.split("=")[1] for x in a if x.startswith("--branch=")]
            out.append(
                (a[a.index("--tokenizer") + 1], a[a.index("--run-name") + 1], "--pause-after-branches" in a, branches)
            )
    return out


@pytest.fixture
def cwd(tmp_path):
    (tmp_path / "tiny.txt").write_text("one two three\n<|endoftext|>\nfour five six\n<|endoftext|>\nseven eight\n")
    return tmp_path


def sweep(*extra: str) -> list[str]:
    budgets = ",".join(f"{b:g}" for b in BUDGETS)
    head = ["byte", "bpe:512", "bpe:300", "bpe:520", "--train-file", "tiny.txt", "--budget-flops", budgets]
    return head + ["--seeds", "2", "--threads", "1", "--block-chars", "1000", "--jobs", "1", "--halving", *extra]


def test_halving_drops_the_clearly_worse_and_continues_the_others(cwd):
    done = compare(cwd, *sweep())
    assert done.returncode == 0, done.stderr
    doc = json.loads(next((cwd / "reports").glob("*-halving/results.json")).read_text())
    h = doc["halving"]
    assert [d["spec"] for d in h["dropped"]] == ["byte", "bpe:300"] and {d["budget"] for d in h["dropped"]} == {FLOPS}
    d = h["dropped"][0]
    assert d["best"] == "bpe:512" and d["diff"] == pytest.approx(fake_bpc("byte") - fake_bpc("bpe:512"), abs=1e-9)
    assert dict(map(tuple, h["plan"])) == {"byte": 1, "bpe:512": 3, "bpe:300": 1, "bpe:520": 3}
    assert h["best_at_largest_budget"] == "bpe:512"
    rows = {(r["spec"], r["budget_value"], r["seed"]): r for r in doc["results"]}
    assert len(rows) == 2 * (1 + 3 + 1 + 3)  # dropped tokenizers have their first budget only
    assert rows[("byte", FLOPS, 1337)]["dropped_at_budget"] == FLOPS
    assert rows[("bpe:512", 4 * FLOPS, 1338)]["dropped_at_budget"] is None
    cmds = pretrain_commands(cwd)
    byte = [c for c in cmds if c[0] == "byte"]  # per seed: the trunk paused at the first budget, then that budget
    assert [(c[2], c[3]) for c in byte] == [
        (True, ["rope-byte-flops1e11-s1337"]),
        (True, ["rope-byte-flops1e11-s1338"]),
        (False, []),
        (False, []),
    ]
    kept = [c for c in cmds if c[0] == "bpe:512" and c[1].endswith("flops4e11-s1337")]
    assert [(c[2], len(c[3])) for c in kept] == [(True, 1), (True, 2), (False, 2)]  # paused twice, then to the end
    report = next((cwd / "reports").glob("*-halving/report.md")).read_text()
    assert "## Tokenizers dropped early (--halving, margin 0 bits/char)" in report
    assert "could have won at a larger one" in report
    again = compare(cwd, *sweep())  # the same command: every run reused, nothing trained
    assert again.returncode == 0 and len(pretrain_commands(cwd)) == len(cmds)
    before = {p: p.read_bytes() for p in (cwd / "reports").rglob("*") if p.is_file()}
    plan = json.dumps(h["plan"])
    dry = compare(cwd, *sweep("--halving-plan", plan, "--dry-run"))  # --rerun REPORT --dry-run passes a plan
    assert dry.returncode == 0, dry.stderr
    assert {p: p.read_bytes() for p in (cwd / "reports").rglob("*") if p.is_file()} == before


def test_a_margin_keeps_a_tokenizer_worse_by_less(cwd):
    gap = fake_bpc("byte") - fake_bpc("bpe:512")
    done = compare(cwd, *sweep("--halving-margin", f"{gap + 0.01:g}"))
    assert done.returncode == 0, done.stderr
    h = json.loads(next((cwd / "reports").glob("*-halving/results.json")).read_text())["halving"]
    assert [d["spec"] for d in h["dropped"]] == ["bpe:300"] and h["margin"] == pytest.approx(gap + 0.01)


def verdict(best="bpe:512", **intervals):
    return {"budget": 1e12, "best": best, "unfair": [], "intervals": intervals}


def iv(low, high):
    return {"diff": (low + high) / 2, "low": low, "high": high, "level": 0.95}


def test_the_rule_drops_only_intervals_above_the_margin():
    v = verdict(byte=iv(0.05, 0.10), wide=iv(-0.01, 0.2), better=iv(-0.3, -0.1), none=None)
    assert [d.spec for d in drops(v, ["bpe:512", "byte", "wide", "better", "none"], 0.0)] == ["byte"]
    assert drops(v, ["byte"], 0.05) == [] and [d.spec for d in drops(v, ["byte"], 0.049)] == ["byte"]
    assert drops({**v, "unfair": ["bpe:300"]}, ["byte"], 0.0) == []  # no fair best: nothing dropped
    assert drops({**v, "best": None}, ["byte"], 0.0) == []
    with pytest.raises(ValueError, match="--halving-margin -1: must be 0 or more"):
        drops(v, ["byte"], -1.0)


def test_planned_runs_pause_the_trunk_of_a_tokenizer_that_stops_below_the_top(tmp_path):
    runs = [
        Run(s, s, tmp_path / f"{s}{b:g}", tmp_path / "log", ("budget_flops", b)) for s in ("a", "b") for b in (1, 5, 2)
    ]
    out = planned_runs(runs, (("a", 1), ("b", 3)), branching=True)
    assert [(r.spec, r.budget[1], r.pause) for r in out] == [
        ("a", 1, False),
        ("a", 5, True),
        ("b", 1, False),
        ("b", 5, False),
        ("b", 2, False),
    ]
    assert [(r.spec, r.budget[1]) for r in planned_runs(runs, (("a", 2), ("b", 1)), branching=False)] == [
        ("a", 1),
        ("a", 2),
        ("b", 1),
    ]
    with pytest.raises(CompareError, match="the halving plan names c at 1 budgets"):
        planned_runs(runs, (("c", 1),), branching=True)
    with pytest.raises(CompareError, match="names a at 4 budgets"):
        planned_runs(runs, (("a", 4),), branching=True)


def test_parse_plan_errors():
    assert parse_plan('[["bpe:512",2],["byte",1]]') == (("bpe:512", 2), ("byte", 1))
    for text, why in [
        ("x", "--halving-plan is not JSON"),
        ("[]", "non-empty list"),
        ('[["a",1],["a",2]]', "names a SPEC twice"),
        ('[["a",0]]', r"is not \[SPEC, budgets >= 1\]"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_plan(text)


@pytest.mark.parametrize(
    "extra,why",
    [
        (
            dict(budget_flops="1e12"),
            "--halving drops tokenizers between the budgets of a sweep: give at least 2 budgets",
        ),
        (
            dict(budget_flops="1e12,2e12", seeds=3, seeds_auto=True),
            "--halving goes with a fixed --seeds N, not --seeds auto",
        ),
        (
            dict(budget_flops="1e12,2e12", sizes="tiny,small"),
            "--halving compares tokenizers at one model shape, not --sizes",
        ),
        (dict(budget_flops="1e12,2e12", specs=("byte",)), "--halving needs at least 2 tokenizers"),
    ],
)
def test_check_halving_refuses(extra, why):
    with pytest.raises(CompareError, match=why):
        check_halving(CompareOptions(halving=True, **extra))


def test_bad_halving_flags_are_one_line_before_any_work(cwd):
    for argv, why in [
        (["--budget-flops", "1e11", "--halving"], "--halving drops tokenizers between the budgets of a sweep"),
        (["--budget-flops", "1e11,2e11", "--halving-margin", "0.1"], "--halving-margin goes with --halving"),
        (["--budget-flops", "1e11,2e11", "--halving-margin", "0"], "--halving-margin goes with --halving"),
        (["--budget-flops", "1e11,2e11", "--halving", "--halving-margin", "-1"], "--halving-margin"),
    ]:
        done = compare(cwd, "byte", "bpe:512", "--train-file", "tiny.txt", *argv)
        assert done.returncode == 2 and why in one_error_line(done.stderr, "compare.py"), done.stderr
    assert not (cwd / "tools.jsonl").exists() and not (cwd / "reports").exists()
