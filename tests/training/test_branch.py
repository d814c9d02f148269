"""Budgets that branch (storygpt/train/branch.py): a wsd trunk's --branch folders, resumed, equal runs trained on
their budget alone, bit for bit; cosine refuses; a rerun continues; a damaged trunk checkpoint is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import call_tool, run_tool
from pretrain_runs import TINY_FLAGS, assert_error, make_corpus, refused, trained

from storygpt.train import branch
from storygpt.train.loop import Budgets

WSD = [*TINY_FLAGS, "--schedule", "wsd", "--decay-fraction", "0.5", "--dropout", "0.1", "--eval-interval", "4"]
TIMED = ("elapsed", "tokens_per_sec", "flops_per_sec")
TOKENS_PER_STEP = 8 * 16  # --batch-size 8 x --block-size 16


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("branch"))


def pretrain(corpus: Path, folder: Path, *extra) -> dict:
    return trained("--data", corpus, "--run-dir", folder, *WSD, *extra)


def untimed(rows):
    return [{k: v for k, v in r.items() if k not in TIMED} for r in rows]


def assert_same_run(a: Path, b: Path) -> None:
    """Weights, optimizer state, training state, history and metrics.jsonl rows of two runs, bit for bit."""
    ca, cb = (torch.load(p / "ckpt.pt", weights_only=True) for p in (a, b))
    assert ca["model"].keys() == cb["model"].keys()
    for k in ca["model"]:
        assert torch.equal(ca["model"][k], cb["model"][k]), k
    oa, ob = ca["optimizer"]["state"], cb["optimizer"]["state"]
    assert oa.keys() == ob.keys()
    for i in oa:
        for k in oa[i]:
            assert torch.equal(oa[i][k], ob[i][k]), (i, k)
    for k in ("step", "tokens", "chars", "flops", "best_bpc", "stop_reason"):
        assert ca["state"][k] == cb["state"][k], k
    assert untimed(ca["state"]["history"]) == untimed(cb["state"]["history"])
    ra, rb = ([json.loads(x) for x in (p / "metrics.jsonl").read_text().splitlines()] for p in (a, b))
    assert untimed(ra) == untimed(rb)
    assert [r["loss"] for r in ra if r["kind"] == "step"] == [r["loss"] for r in rb if r["kind"] == "step"]
    ba, bb = (torch.load(p / "best.pt", weights_only=True) for p in (a, b))
    assert ba["step"] == bb["step"] and ba["val_bpc"] == bb["val_bpc"]
    for k in ba["model"]:
        assert torch.equal(ba["model"][k], bb["model"][k]), k
    assert ca["args"]["max_steps"] == cb["args"]["max_steps"]
    assert ca["args"]["budget_tokens"] == cb["args"]["budget_tokens"]


@pytest.mark.parametrize(
    "flag,trunk,branches",
    [
        pytest.param("--max-steps", 12, [8, 5], marks=pytest.mark.slow),  # two branches of one trunk
        ("--budget-tokens", 11 * TOKENS_PER_STEP, [7 * TOKENS_PER_STEP]),
    ],
)
def test_branches_equal_independent_runs(corpus, tmp_path, flag, trunk, branches):
    out = tmp_path / "runs"
    names = [f"b{v:g}" for v in branches]
    wanted = [f"--branch={n}={v:g}" for n, v in zip(names, branches)]
    top = pretrain(corpus, out / "top", flag, f"{trunk:g}", *wanted)
    for n, v in zip(names, branches):
        paused = json.loads((out / n / "summary.json").read_text())
        per = 1 if flag == "--max-steps" else TOKENS_PER_STEP
        assert paused["steps"] == branch.decay_start(v, per, 0.5)  # written at its decay start, not later
        assert paused["stop_reason"] is None
        done = pretrain(corpus, out / n, flag, f"{v:g}", "--resume")
        alone = pretrain(corpus, tmp_path / "alone" / n, flag, f"{v:g}")
        assert done["steps"] == alone["steps"] == branch.steps_for(v, per) and done["val_bpc"] == alone["val_bpc"]
        assert_same_run(out / n, tmp_path / "alone" / n)
    assert_same_run(out / "top", pretrain(corpus, tmp_path / "alone" / "top", flag, f"{trunk:g}")["folder"])
    assert top["steps"] == branch.steps_for(trunk, 1 if flag == "--max-steps" else TOKENS_PER_STEP)


@pytest.mark.slow  # a subprocess, interrupted
def test_interrupted_trunk_reruns_and_keeps_its_branches(corpus, tmp_path):
    """A trunk stopped (SIGTERM at step 4) after its first branch was written (step 3) and before its second
    (step 5) continues with --resume, writes the second branch and leaves the first as it was."""
    out = tmp_path / "runs"
    argv = ["--data", corpus, "--run-dir", out / "top", *WSD, "--max-steps", "12", "--branch=b5=5", "--branch=b8=8"]
    done = run_tool("pretrain", *argv, fault="signal_at:step@4:TERM")
    assert done.returncode == 130, done.stderr
    assert (out / "b5" / "ckpt.pt").is_file() and not (out / "b8").exists()
    first = (out / "b5" / "ckpt.pt").read_bytes()
    trained(*argv, "--resume")
    assert (out / "b5" / "ckpt.pt").read_bytes() == first
    pretrain(corpus, out / "b8", "--max-steps", "8", "--resume")
    assert_same_run(out / "b8", pretrain(corpus, tmp_path / "alone", "--max-steps", "8")["folder"])


def test_paused_trunk_resumes_as_if_it_had_not_stopped(corpus, tmp_path):
    """--pause-after-branches (compare.py --halving): the trunk stops at its last branch's decay start (step 3,
    then step 5 with a second branch), each time with its checkpoint; resumed to its budget, trunk and branch are
    the runs trained without a pause, bit for bit."""
    out = tmp_path / "runs"
    top = ["--max-steps", "12", "--branch=b5=5"]
    first = pretrain(corpus, out / "top", *top, "--pause-after-branches")
    assert first["steps"] == 3 and first["stop_reason"] is None and (out / "b5" / "ckpt.pt").is_file()
    again = pretrain(corpus, out / "top", *top, "--branch=b8=8", "--pause-after-branches", "--resume")
    assert again["steps"] == 5 and (out / "b8" / "ckpt.pt").is_file()
    assert pretrain(corpus, out / "top", *top, "--branch=b8=8", "--resume")["steps"] == 12
    assert_same_run(out / "top", pretrain(corpus, tmp_path / "alone" / "top", "--max-steps", "12")["folder"])
    pretrain(corpus, out / "b8", "--max-steps", "8", "--resume")
    assert_same_run(out / "b8", pretrain(corpus, tmp_path / "alone" / "b8", "--max-steps", "8")["folder"])


def test_pause_without_a_branch_is_refused_in_one_line(corpus, tmp_path):
    for extra in ([], ["--dry-run"]):
        err = refused(
            "--data", corpus, "--run-dir", tmp_path / "top", *WSD, "--max-steps", "6", "--pause-after-branches", *extra
        )
        assert_error(r"^pretrain.py: error: --pause-after-branches goes with --branch NAME=BUDGET", err)
    assert not (tmp_path / "top").exists()


def test_cosine_and_bad_branches_are_refused_before_any_work(corpus, tmp_path):
    cos = [*TINY_FLAGS, "--max-steps", "12"]
    err = refused("--data", corpus, "--run-dir", tmp_path / "top", *cos, "--branch=b8=8")
    assert_error(r"^pretrain.py: error: --branch needs --schedule wsd: cosine decays from step 0", err)
    err = refused("--data", corpus, "--run-dir", tmp_path / "top", *WSD, "--max-steps", "12", "--branch=b20=20")
    assert_error(r"--branch b20=20: not below this run's --max-steps", err)
    err = refused("--data", corpus, "--run-dir", tmp_path / "top", *WSD, "--max-steps", "12", "--branch=a/b=2")
    assert_error(r"--branch 'a/b=2': expected NAME=BUDGET", err)
    err = refused("--data", corpus, "--run-dir", tmp_path / "top", *WSD, "--minutes", "1", "--branch=b=2")
    assert_error(r"--branch cannot go with --minutes", err)
    assert not (tmp_path / "top").exists()


STEPS12 = Budgets(max_steps=12)


@pytest.mark.parametrize(
    "texts, budgets, schedule, message",
    [
        (["a/b=1e9"], STEPS12, "wsd", "--branch 'a/b=1e9': expected NAME=BUDGET, NAME a plain folder name"),
        (["=1e12"], STEPS12, "wsd", "--branch '=1e12': expected NAME=BUDGET"),
        (["a="], STEPS12, "wsd", "--branch 'a=': the budget '' is not a number"),
        (["a=x"], STEPS12, "wsd", "--branch 'a=x': the budget 'x' is not a number"),
        (["a=-1"], STEPS12, "wsd", "--branch 'a=-1': the budget must be a positive finite number"),
        (["a=5", "a=8"], STEPS12, "wsd", "--branch a=8: the same name as --branch a=5"),  # was: a=5 overwritten
        (["a=5", "b=5.0"], STEPS12, "wsd", "--branch b=5.0: the same budget as --branch a=5"),
        (["a=5.5"], STEPS12, "wsd", "--branch a=5.5: --max-steps counts whole steps"),  # was: 5, silently
        (["a=12"], STEPS12, "wsd", "--branch a=12: not below this run's --max-steps (the trunk)"),
        (["a=2e12"], Budgets(flops=1e12), "wsd", "--branch a=2e12: not below this run's --budget-flops"),
        (["top=5"], STEPS12, "wsd", "--branch top=5: that is this run's own folder"),
        (["a=5"], STEPS12, "cosine", "--branch needs --schedule wsd: cosine decays from step 0"),
        (["a=5"], Budgets(minutes=1.0), "wsd", "--branch cannot go with --minutes"),
        (["a=5"], Budgets(), "wsd", "--branch needs exactly one budget of --max-steps, --budget-tokens, "),
        (["a=5"], Budgets(max_steps=9, flops=1e9), "wsd", "got --max-steps, --budget-flops"),
        (["a/b=5"], None, None, "--branch 'a/b=5': expected NAME=BUDGET"),  # a --dry-run --resume: names only
        (["a=5", "a=6"], None, None, "--branch a=6: the same name as --branch a=5"),
    ],
)
def test_check_branches_refuses_each_bad_value_in_one_line(tmp_path, texts, budgets, schedule, message):
    with pytest.raises(ValueError) as e:
        branch.check_branches(texts, budgets, schedule, tmp_path / "top")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_check_branches_gives_names_and_budgets(tmp_path):
    top = tmp_path / "top"
    assert branch.check_branches(["b5=5", "b8=8.0"], STEPS12, "wsd", top) == [("b5", 5), ("b8", 8)]
    assert isinstance(branch.check_branches(["b=5"], STEPS12, "wsd", top)[0][1], int)  # steps: whole
    assert branch.check_branches(["s=1e11"], Budgets(flops=1e12), "wsd", top) == [("s", 1e11)]
    assert branch.check_branches(["b=50"], None, None, top) == [("b", 50.0)]  # budget unknown: not compared


@pytest.mark.parametrize(
    "extra",
    [
        [*WSD, "--max-steps", "12", "--branch=a/b=1e9"],
        [*WSD, "--max-steps", "12", "--branch=b5=5", "--branch=b5=8"],
        [*WSD, "--max-steps", "12", "--branch=b5=5", "--branch=c5=5"],
        [*WSD, "--max-steps", "12", "--branch=b=12"],
        [*WSD, "--minutes", "1", "--branch=b=2"],
        [
            *WSD,
            "--branch=b=2",
        ],  # no budget: --minutes 10 is filled in after the check (was: "cannot go with --minutes")
        [*TINY_FLAGS, "--max-steps", "12", "--branch=b=2"],  # gpt2: cosine
    ],
)
def test_dry_run_refuses_bad_branches_as_the_run_does(corpus, tmp_path, extra):
    """pretrain.py --dry-run gives the run's own line (both call branch.check_branches); nothing is written."""
    argv = ["--data", corpus, "--run-dir", tmp_path / "top", *extra]
    dry, real = call_tool("pretrain", *argv, "--dry-run"), call_tool("pretrain", *argv)
    assert dry.returncode == real.returncode == 1 and dry.stdout == ""
    assert dry.stderr == real.stderr and len(dry.stderr.splitlines()) == 1, dry.stderr
    assert dry.stderr.startswith("pretrain.py: error: --branch")
    assert list(tmp_path.iterdir()) == []


def test_corrupt_trunk_checkpoint_is_one_line(corpus, tmp_path):
    out = tmp_path / "runs"
    pretrain(corpus, out / "top", "--max-steps", "6", "--branch=b5=5")
    (out / "top" / "ckpt.pt").write_bytes(b"not a checkpoint")
    err = refused("--data", corpus, "--run-dir", out / "top", *WSD, "--max-steps", "12", "--branch=b5=5", "--resume")
    assert len(err.strip().splitlines()) == 1 and "top/ckpt.pt" in err, err


def test_shared_flops_counts_the_decays_only():
    """Budgets 4, 8, 12 steps at decay fraction 0.5: the trunk's 12 steps, then 8-5 and 4-3 (decay starts at
    the first step past half the budget)."""
    assert [branch.decay_start(b, 1, 0.5) for b in (4, 8, 12)] == [3, 5, 7]
    assert branch.shared_flops([4, 8, 12], 1, 0.5) == (12 + 3 + 1, 24)
    assert branch.steps_for(10, 3) == 4 and branch.steps_for(9, 3) == 3


class R:  # compare.py's Run, as branch.plan reads it
    def __init__(self, spec, budget, seed, size=None):
        self.spec, self.budget, self.seed, self.size = spec, ("budget_flops", budget), seed, size


def test_plan_makes_the_largest_budget_of_each_tokenizer_and_seed_the_trunk():
    runs = [R(s, b, seed) for s in ("byte", "bpe:512") for b in (1e12, 5e12, 2e12) for seed in (0, 1)]
    trunks, why = branch.plan(runs, "budget_flops", "wsd")
    assert why is None
    assert trunks == {2: [0, 4], 3: [1, 5], 8: [6, 10], 9: [7, 11]}  # 5e12 trunks; 1e12, then 2e12
    assert branch.shared_args(runs, trunks, 4) == {"eval_budget": ("budget_flops", 1e12)}
    assert branch.shared_args(runs, trunks, 2) == {
        "eval_budget": ("budget_flops", 1e12),
        "branches": (runs[0], runs[4]),
    }
    shared, why = branch.plan(runs, "budget_flops", "cosine")
    assert shared == {} and why.startswith("nothing was shared: cosine schedule decays from step 0")
    assert branch.plan(runs, "minutes", "wsd")[0] == {}
    assert branch.plan(runs[:1], "budget_flops", "wsd") == ({}, None)  # one budget: nothing to say


def test_flops_trained_counts_a_branch_from_its_decay_start(tmp_path):
    for name, flops, taken in (("top", 100.0, None), ("small", 40.0, 16.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps({"flops": flops}))
        if taken is not None:
            (tmp_path / name / branch.BRANCH_RECORD).write_text(json.dumps({"flops": taken}))
    assert branch.flops_trained([tmp_path / "top", tmp_path / "small"]) == (124.0, 140.0)
    assert "0.89x the 140 of independent runs" in branch.shared_note([tmp_path / "top", tmp_path / "small"], 1)
