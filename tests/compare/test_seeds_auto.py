"""compare.py --seeds auto[:MAX] (seed rounds only where the order is open), --dry-run, and the seed round of each
run in results.json and through --rerun (issue 45 items 2, 4, 5).

No model is trained: compare.py runs in this process with tests/tool_faults.py's ``record_tools`` fault, which
plays each tool's part with the fake run folders of tests/fake_runs.py.  Their bits/char per seed
(:func:`fake_runs.fake_bpc`) are synthetic: bpe:300 is 0.37 bits/char worse than bpe:512 with seed noise of
1e-4, bpe:530 is within 0.02 of it.  The oracle of the plan is storygpt.eval.sequential.run_adaptive, the
procedure run on the same numbers without compare.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import call_tool, one_error_line
from fake_runs import FLOPS, SEED, fake_bpc

from storygpt.compare.seeds_auto import parse_plan, parse_seeds
from storygpt.eval.sequential import run_adaptive

pytest.importorskip("matplotlib")


def compare(cwd: Path, *argv, record: str = "tools.jsonl"):
    return call_tool("compare", *argv, cwd=cwd, fault=f"record_tools:{cwd / record}")


def recorded(path: Path) -> list[tuple[str, list[str]]]:
    if not path.exists():
        return []
    return [(r["tool"], r["args"]) for r in map(json.loads, path.read_text().splitlines())]


def trained(path: Path) -> list[tuple[str, int]]:
    """(SPEC, seed) of every pretrain.py command recorded, in order."""
    out = []
    for tool, a in recorded(path):
        if tool == "pretrain.py":
            out.append((a[a.index("--tokenizer") + 1], int(a[a.index("--seed") + 1])))
    return out


@pytest.fixture
def cwd(tmp_path):
    (tmp_path / "tiny.txt").write_text("one two three\n<|endoftext|>\nfour five six\n<|endoftext|>\nseven eight\n")
    return tmp_path


def base(*specs: str) -> list[str]:
    return [
        *specs,
        "--train-file",
        "tiny.txt",
        "--budget-flops",
        str(FLOPS),
        "--threads",
        "1",
        "--block-chars",
        "1000",
        "--jobs",
        "1",
    ]


def files_under(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime for p in root.rglob("*")}


def test_parse_seeds_values_and_errors():
    assert parse_seeds("3", 1000) == (3, False)
    assert parse_seeds("auto", 1000) == (6, True) and parse_seeds("auto:8", 1000) == (8, True)
    for text, why in [
        ("auto:1", "--seeds auto:1: auto needs a maximum of at least 2 seeds"),
        ("auto:0", "--seeds auto:0: auto needs a maximum of at least 2 seeds"),
        ("auto:x", "--seeds auto:x: MAX must be a whole number of seeds, e.g. auto:6"),
        ("auto:", "--seeds auto:: give a number of seeds (e.g. 3), auto or auto:MAX (e.g. auto:6)"),
        ("many", "--seeds many: give a number of seeds (e.g. 3), auto or auto:MAX (e.g. auto:6)"),
        ("auto:2000", "--seeds auto:2000: auto may go to at most 1000 seeds"),
    ]:
        with pytest.raises(ValueError) as e:
            parse_seeds(text, 1000)
        assert str(e.value) == why
    assert parse_plan('[["bpe:512",1337,1]]') == (("bpe:512", 1337, 1),)
    with pytest.raises(ValueError, match=r"--seed-plan entry \['bpe:512', 1337, 0\] is not"):
        parse_plan('[["bpe:512",1337,0]]')


@pytest.mark.parametrize(
    "extra, why",
    [
        (["--seeds", "auto:1"], "--seeds auto:1: auto needs a maximum of at least 2 seeds"),
        (["--seeds", "auto:0"], "--seeds auto:0: auto needs a maximum of at least 2 seeds"),
        (
            ["--seeds", "sometimes"],
            "--seeds sometimes: give a number of seeds (e.g. 3), auto or auto:MAX (e.g. auto:6)",
        ),
        (["--seeds", "0"], "--seeds must be in 1 .. 1000, got 0"),
        (["--seeds", "auto", "--budget-flops", "1e11,2e11"], "--seeds auto compares tokenizers at one budget"),
        (["--seed-plan", '[["bpe:512",1337,1]]'], "--seed-plan goes with --seeds auto (--rerun gives it)"),
    ],
)
def test_bad_auto_input_is_one_line_before_any_work(cwd, extra, why):
    done = compare(cwd, *base("bpe:512", "bpe:300"), *extra)
    assert done.returncode == 2, (done.stdout, done.stderr)
    line = one_error_line(done.stderr, "compare.py")
    assert done.stderr == line + "\n" and line.startswith(f"compare.py: error: {why}")
    assert recorded(cwd / "tools.jsonl") == [] and not (cwd / "reports").exists() and not (cwd / "data").exists()


NAMES = ["bpe:512", "bpe:300", "bpe:530"]


@pytest.fixture(scope="module")
def auto3(tmp_path_factory):
    """One ``--seeds auto:3`` comparison of :data:`NAMES` (shared by the tests below): (folder, its output)."""
    cwd = tmp_path_factory.mktemp("auto3")
    (cwd / "tiny.txt").write_text("one two three\n<|endoftext|>\nfour five six\n<|endoftext|>\nseven eight\n")
    done = compare(cwd, *base(*NAMES), "--seeds", "auto:3")
    assert done.returncode == 0, done.stderr
    return cwd, done


def test_auto_adds_seeds_only_to_undecided_tokenizers_and_stops_at_max(auto3):
    names = NAMES
    cwd, done = auto3
    # the oracle: the procedure on the same numbers, without compare.py
    dec, used = run_adaptive(lambda k, i: fake_bpc(k, SEED + i), names, 3)
    assert used == {"bpe:512": 3, "bpe:300": 2, "bpe:530": 3} and dec.verdict == "no winner"
    # round 1: 2 seeds of each; bpe:300 is decided worse after it and gets no third seed; MAX 3 stops the others
    runs = trained(cwd / "tools.jsonl")
    assert runs == [(k, SEED + i) for k in names for i in range(2)] + [("bpe:512", SEED + 2), ("bpe:530", SEED + 2)]
    report = cwd / "reports" / "tiny-flops1e11-auto3seeds"
    doc = json.loads((report / "results.json").read_text())
    rounds = {(r["spec"], r["seed"]): r["seed_round"] for r in doc["results"]}
    assert rounds == {
        **{(k, SEED + i): 1 for k in names for i in range(2)},
        **{(k, SEED + 2): 2 for k in ("bpe:512", "bpe:530")},
    }
    assert all(
        r["branch_of"] is None and r["branched_at_step"] is None and r["dropped_at_budget"] is None
        for r in doc["results"]
    )
    auto = doc["seeds_auto"]
    assert (
        auto["verdict"] == "no winner: bpe:530 undecided against bpe:512 after 3 seeds"
        and auto["max_seeds"] == 3
        and auto["runs"] == 8
    )
    assert (
        auto["tokenizers"]["bpe:300"]["status"] == "decided-worse"
        and auto["tokenizers"]["bpe:300"]["decided_at_seeds"] == 2
    )
    assert auto["tokenizers"]["bpe:530"]["status"] == "undecided"
    assert auto["flops_share"] == pytest.approx(8 / 9)
    assert [r["round"] for r in auto["rounds"]] == [1, 2]
    md = (report / "report.md").read_text()
    assert "## Seeds added until decided (--seeds auto:3)" in md and "O'Brien-Fleming" in md
    assert "| `bpe:300` | 1337 (round 1), 1338 (round 1) | decided worse | 2 seeds |" in md
    assert "Seeds auto verdict (group-sequential paired t-test" in done.stdout and done.stdout.rstrip().endswith(
        "of --seeds 3's"
    )


@pytest.mark.slow  # two more passes of the run order and the report
def test_auto_again_trains_nothing_and_gives_the_same_verdict(auto3):
    cwd, _ = auto3
    report = cwd / "reports" / "tiny-flops1e11-auto3seeds"
    auto = json.loads((report / "results.json").read_text())["seeds_auto"]
    again = compare(cwd, *base(*NAMES), "--seeds", "auto:3", record="again.jsonl")
    assert again.returncode == 0 and trained(cwd / "again.jsonl") == []
    assert json.loads((report / "results.json").read_text())["seeds_auto"] == auto


def test_auto_stops_when_every_pair_is_decided(cwd):
    done = compare(cwd, *base("bpe:512", "bpe:300"), "--seeds", "auto")
    assert done.returncode == 0, done.stderr
    assert trained(cwd / "tools.jsonl") == [(k, SEED + i) for k in ("bpe:512", "bpe:300") for i in range(2)]
    auto = json.loads((cwd / "reports" / "tiny-flops1e11-auto6seeds" / "results.json").read_text())["seeds_auto"]
    assert (
        auto["verdict"] == "best: bpe:512"
        and auto["winner"] == "bpe:512"
        and auto["flops_share"] == pytest.approx(2 / 6)
    )


def test_without_auto_the_runs_are_those_of_today(cwd):
    done = compare(cwd, *base("bpe:512", "bpe:300"), "--seeds", "2")
    assert done.returncode == 0, done.stderr
    assert trained(cwd / "tools.jsonl") == [(k, SEED + i) for k in ("bpe:512", "bpe:300") for i in range(2)]
    doc = json.loads((cwd / "reports" / "tiny-flops1e11-2seeds" / "results.json").read_text())
    assert {r["seed_round"] for r in doc["results"]} == {1} and "seeds_auto" not in doc


def test_rerun_reproduces_the_auto_plan(auto3):
    cwd, _ = auto3
    report = cwd / "reports" / "tiny-flops1e11-auto3seeds"
    first = json.loads((report / "results.json").read_text())
    done = compare(cwd, "--rerun", str(report), record="rerun.jsonl")
    assert done.returncode == 0, done.stderr
    plan = sorted((r["spec"], r["seed"]) for r in first["results"])
    assert sorted(trained(cwd / "rerun.jsonl")) == plan  # the same runs, no new adaptive plan
    again = json.loads((cwd / "reports" / "tiny-flops1e11-auto3seeds-rerun" / "results.json").read_text())
    key = lambda d: sorted((r["spec"], r["seed"], r["seed_round"]) for r in d["results"])  # noqa: E731
    assert key(again) == key(first) and again["seeds_auto"]["plan"].startswith("the report's own plan")
    assert again["seeds_auto"]["verdict"] == first["seeds_auto"]["verdict"]
    dry = compare(cwd, "--rerun", str(report), "--dry-run", record="rerun-dry.jsonl")
    assert dry.returncode == 0 and "total: 8 runs, 0 to train (0 training FLOPs), 8 reused" in dry.stdout


def test_rerun_of_a_report_from_before_seed_rounds_counts_round_1(cwd):
    assert (
        compare(
            cwd,
            *base("bpe:512", "bpe:300"),
            "--seeds",
            "2",
            "--report",
            "old",
            "--out-dir",
            "old-runs",
            record="old.jsonl",
        ).returncode
        == 0
    )
    old = cwd / "reports" / "old" / "results.json"
    doc = json.loads(old.read_text())
    for r in doc["results"]:
        for k in ("seed_round", "branch_of", "branched_at_step", "dropped_at_budget"):
            del r[k]
    old.write_text(json.dumps(doc))
    done = compare(cwd, "--rerun", str(old.parent), record="old-rerun.jsonl")
    assert done.returncode == 0, done.stderr
    assert sorted(trained(cwd / "old-rerun.jsonl")) == [(k, SEED + i) for k in ("bpe:300", "bpe:512") for i in range(2)]
    rerun = json.loads((cwd / "reports" / "old-rerun" / "results.json").read_text())
    assert {r["seed_round"] for r in rerun["results"]} == {1}


def test_dry_run_prints_the_plan_and_writes_nothing(cwd):
    assert compare(cwd, *base("bpe:512", "bpe:300"), "--report", "done").returncode == 0  # finished runs to reuse
    before = files_under(cwd)
    done = compare(cwd, *base("bpe:512", "bpe:300", "bpe:530"), "--seeds", "2", "--dry-run", record="dry.jsonl")
    assert done.returncode == 0, done.stderr
    assert files_under(cwd) == before and recorded(cwd / "dry.jsonl") == []
    lines = done.stdout.splitlines()
    assert (
        lines[0].startswith("compare.py --dry-run: 3 tokenizers on tiny, 1e11 training FLOPs each")
        and "nothing is written" in lines[0]
    )
    rows = {ln.split()[0] + " " + ln.split()[2]: ln.split() for ln in lines[2:8]}
    assert rows["bpe:512 s1337"][4] == "reused" and rows["bpe:300 s1337"][4] == "reused"
    assert rows["bpe:512 s1338"][4] == "train" and rows["bpe:512 s1338"][5:7] == ["1e+11", "1e+11"]
    assert rows["bpe:530 s1337"][4] == "train"
    total = next(ln for ln in lines if ln.startswith("total:"))
    assert total.startswith("total: 6 runs, 4 to train (4e+11 training FLOPs), 2 reused, 0 only measured again; about ")
    assert "bpe:512: its finished runs' tokens/s" in done.stdout  # known speed for the tokenizers trained before
    assert "bpe:530: one training step timed here, 1 thread" in done.stdout
    # --seeds auto: the smallest and the largest plan
    auto = compare(cwd, *base("bpe:512", "bpe:530"), "--seeds", "auto:5", "--dry-run", record="dry2.jsonl")
    assert auto.returncode == 0, auto.stderr
    assert files_under(cwd) == before
    assert "smallest plan (every pair decided after round 1, 2 seeds each): 4 runs, 3 to train (3e+11" in auto.stdout
    assert "largest plan (--seeds auto:5: 5 seeds each): 10 runs, 9 to train (9e+11" in auto.stdout


def test_dry_run_of_token_and_minute_budgets(cwd):
    common = ["bpe:512", "bpe:300", "--train-file", "tiny.txt", "--threads", "1", "--dry-run"]
    tokens = compare(cwd, *common, "--budget-tokens", "1e6")
    assert tokens.returncode == 0, tokens.stderr
    # docs/training.md's count for 3 layers, width 96, context 128: 6*12*3*96^2 + 12*3*128*96 + 6*96*V per token
    per_token = {v: 6 * 12 * 3 * 96**2 + 12 * 3 * 128 * 96 + 6 * 96 * v for v in (512, 300)}
    row = next(ln for ln in tokens.stdout.splitlines() if ln.startswith("bpe:512 @1e6"))
    assert row.split()[4:6] == ["train", f"{1e6 * per_token[512]:.3g}"]
    assert f"total: 2 runs, 2 to train ({1e6 * sum(per_token.values()):.3g} training FLOPs)" in tokens.stdout
    minutes = compare(cwd, *common, "--minutes", "2")
    assert minutes.returncode == 0, minutes.stderr
    assert (
        "total: 2 runs, 2 to train (? training FLOPs), 0 reused, 0 only measured again; about 4m00s" in minutes.stdout
    )
    assert "bpe:512: its --minutes budget" in minutes.stdout
    assert list(cwd.iterdir()) == [cwd / "tiny.txt"]  # nothing written
