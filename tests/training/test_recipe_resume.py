"""Recipes on resume: the run's stored recipe decides; bad stored parts and flags are refused, naming them.

In-process (no subprocess): pretrain.main and pretrain.parse are called directly.  Split from test_recipe.py
(issue 47: no file over 650 lines).
"""

from __future__ import annotations

import pytest
import test_recipe as base

import pretrain
from storygpt.model import recipes
from storygpt.model.recipes import Recipe, legacy_args

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

SHAPE, corpus, parse_error, train = base.SHAPE, base.corpus, base.parse_error, base.train  # corpus: a fixture


# ------------------------------------------------------------ resuming a run: its stored recipe decides
def resume_error(ckpt: dict, path, recipe: str, explicit: set[str]) -> str:
    from storygpt.train.resume import check_recipe
    from storygpt.train.runfolder import RunError

    with pytest.raises(RunError) as e:
        check_recipe(ckpt, path, recipe, explicit)
    return str(e.value)


@pytest.mark.parametrize(
    "stored, why",
    [
        ({"decay_fraction": 0}, "--decay-fraction must be above 0 and at most 1, got 0"),
        ({"decay_fraction": "0.6"}, "--decay-fraction must be a number, got '0.6'"),
        ({"momentum": float("nan")}, "--momentum must be a finite number, got nan"),
        ({"momentum": 1.5}, "--momentum must be in 0 .. 0.999, got 1.5"),
        ({"schedule": "linear"}, "--schedule must be one of cosine, wsd, got 'linear'"),
        ({"embed_norm": 1}, "--embed-norm must be on or off (a bool), got 1"),
        ({"warmup_steps": 2.5}, "--warmup-steps must be a whole number, got 2.5"),
        ({"matrix_lr": -1.0}, "--matrix-lr must be >= 0, got -1.0"),
        ({"recipe": "llama"}, "--recipe 'llama' is not a recipe (known: gpt2, modern)"),
    ],
)
def test_a_checkpoint_with_a_bad_stored_part_is_refused_naming_it(stored, why, tmp_path):
    """An edited or damaged ckpt.pt: one line naming the file and the setting, before any work (it was a
    ZeroDivisionError, a TypeError, a torch traceback, or for an unknown schedule a silent cosine)."""
    ckpt = {"args": {**Recipe.named("modern").flags(), **stored}}
    path = tmp_path / "ckpt.pt"
    line = resume_error(ckpt, path, "modern", {"resume"})
    assert line == f"--resume: {path} holds a bad setting: {why}; the checkpoint is kept unchanged"


def test_a_part_stored_as_none_is_refused_a_missing_one_is_the_part_of_before(tmp_path):
    """No version stored None for a part (an edited checkpoint: refused); a part not stored is a run from before
    it (its field's default); a rate stored as None is the width rule."""
    path = tmp_path / "ckpt.pt"
    for part, why in [
        ("schedule", "--schedule must be one of cosine, wsd, got None"),
        ("optimizer", "--optimizer must be one of adamw, muon, got None"),
        ("embed_norm", "--embed-norm must be on or off (a bool), got None"),
        ("momentum", "--momentum must be a number, got None"),
    ]:
        ckpt = {"args": {**Recipe.named("modern").flags(), part: None}}
        assert resume_error(ckpt, path, "modern", {"resume"}).endswith(
            f"bad setting: {why}; the checkpoint is kept unchanged"
        )
    missing = legacy_args({"recipe": "modern", "optimizer": "muon"})
    assert (missing["schedule"], missing["momentum"], missing["embed_norm"]) == ("cosine", 0.95, False)
    assert Recipe.from_flags({**Recipe.named("modern").flags(), "matrix_lr": None}).optim.matrix_lr is None


def test_stored_flags_that_disagree_with_the_stored_model_or_optimizer_are_refused(tmp_path):
    """An edited ckpt.pt whose flags say another model or optimizer than its config and optim (they were a
    state_dict or param_groups traceback after the data was loaded)."""
    path = tmp_path / "ckpt.pt"
    flags = Recipe.named("modern").flags()
    config = Recipe.named("modern").config(**SHAPE, position="rope")
    base = {"config": config.to_dict(), "optim": Recipe.named("modern").optim.to_dict()}
    shape = {k: config.to_dict()[k] for k in ("n_layer", "n_head", "n_embd", "block_size", "dropout", "rope_theta")}
    good = {**base, "args": {**flags, **shape, "rope": True}}
    from storygpt.train.resume import check_recipe

    check_recipe(good, path, "modern", {"resume"})
    for change, why in [
        ({"norm": "layernorm"}, "--norm 'layernorm' in its flags, 'rmsnorm' in its model config"),
        ({"n_layer": 3}, "--n-layer 3 in its flags, 2 in its model config"),
        ({"rope": False}, "--rope False in its flags, position 'rope' in its model config"),
        ({"optimizer": "adamw"}, "--optimizer 'adamw' in its flags, 'muon' in its optimizer settings"),
        ({"momentum": 0.9}, "--momentum 0.9 in its flags, 0.85 in its optimizer settings"),
    ]:
        ckpt = {**base, "args": {**good["args"], **change}}
        assert resume_error(ckpt, path, "modern", {"resume"}).endswith(
            f"bad setting: {why}; the checkpoint is kept unchanged"
        )
    assert "holds no flags (its args are list)" in resume_error({**base, "args": []}, path, "modern", {"resume"})


def test_other_stored_flags_of_the_wrong_type_or_range_are_refused(tmp_path):
    from storygpt.train.resume import check_stored_flags
    from storygpt.train.runfolder import RunError

    path = tmp_path / "ckpt.pt"
    args, _ = pretrain.parse(["--tokenizer", "byte"])
    check_stored_flags({"args": vars(args)}, path, pretrain.build_parser(), pretrain.RANGES)
    for change, why in [
        ({"lr": "abc"}, "--lr must be a number, got 'abc'"),
        ({"lr": True}, "--lr must be a number, got True"),
        ({"lr": float("nan")}, "--lr must be a finite number, got nan"),
        ({"weight_decay": -5.0}, "--weight-decay must be >= 0, got -5.0"),
        ({"batch_size": 0}, "--batch-size must be >= 1, got 0"),
        ({"block_size": None}, "--block-size must be a number, got None"),
        ({"compile": "no"}, "--compile must be a yes/no (a bool), got 'no'"),
        ({"tokenizer": None}, "--tokenizer must be a SPEC, got None"),
    ]:
        with pytest.raises(RunError) as e:
            check_stored_flags({"args": {**vars(args), **change}}, path, pretrain.build_parser(), pretrain.RANGES)
        assert str(e.value) == f"--resume: {path} holds a bad setting: {why}; the checkpoint is kept unchanged"


def test_the_soft_cap_flag_is_refused_between_0_and_its_least_value(capsys):
    line = parse_error(capsys, "--logit-softcap", "0.001")
    assert line == "pretrain.py: error: --logit-softcap must be 0 (off) or from 0.01 to 10000, got 0.001"


def test_resume_checks_the_flags_given_against_the_runs_own_recipe(tmp_path, capsys):
    """--resume without --recipe: the run's stored recipe decides which flags are allowed (they were checked
    against the default recipe: --lr was refused on a gpt2 run with a false "uses the muon optimizer", and
    --momentum on it was let through)."""
    path = tmp_path / "ckpt.pt"
    gpt2 = {"args": Recipe.named("gpt2").flags()}
    for momentum in ("0.9", "0.95"):
        args, explicit = pretrain.parse(["--resume", "--momentum", momentum])  # not refused yet: recipe unknown
        line = resume_error(dict(gpt2), path, args.recipe, explicit)
        assert line.startswith(f"--resume: {path} is a --recipe gpt2 run: --momentum is a flag of the muon optimizer")
        assert "this run (--recipe gpt2) uses the adamw optimizer, which takes --lr" in line
    args, explicit = pretrain.parse(["--resume", "--lr", "0.001"])
    from storygpt.train.resume import check_recipe

    check_recipe(dict(gpt2), path, args.recipe, explicit)  # gpt2's own flag: allowed (resumed_args keeps the run's)
    modern = {"args": Recipe.named("modern").flags()}
    assert "--lr is a flag of the adamw optimizer" in resume_error(modern, path, "modern", {"resume", "lr"})
    cosine = {"args": Recipe.from_flags({"recipe": "modern", "schedule": "cosine"}).flags()}
    line = resume_error(cosine, path, "modern", {"resume", "decay_fraction"})
    assert "--decay-fraction is wsd's" in line and "--schedule cosine" in line
    assert "--lr is a flag of the adamw optimizer" in parse_error(capsys, "--resume", "--recipe", "modern", "--lr", "1")


def test_a_gpt2_run_resumed_with_a_muon_flag_is_refused_and_kept(corpus, tmp_path, capsys):
    run = tmp_path / "run"
    train(corpus, run, "--recipe", "gpt2", "--max-steps", "2")
    before = (run / "ckpt.pt").read_bytes()
    with pytest.raises(SystemExit) as e:
        train(corpus, run, "--resume", "--momentum", "0.95", "--max-steps", "4")
    assert "is a --recipe gpt2 run: --momentum is a flag of the muon optimizer" in str(e.value)
    assert (run / "ckpt.pt").read_bytes() == before


def test_part_flags_help_gives_ranges_and_values():
    rows = {flag: help for flag, _, _, help in recipes.flag_rows(pretrain.on_off)}
    assert (
        rows["--momentum"] == "muon: Muon's momentum (Nesterov), 0 .. 0.999; modern: 0.85, gpt2 --optimizer muon: 0.95"
    )
    assert rows["--decay-fraction"].endswith("above 0, at most 1; every recipe: 0.6")
    assert rows["--embed-std"].endswith("above 0, at most 10; gpt2: 0.02, modern: 0.8")
    flags = {a.option_strings[-1]: a.help for a in pretrain.build_parser()._actions if a.option_strings}
    assert flags["--seed"].endswith("(0 .. 9223372036854775807)") and flags["--lr"].endswith("(>= 0)")
    assert flags["--minutes"].endswith("(> 0)") and flags["--batch-size"].endswith("(>= 1)")
