"""Recipes (storygpt/model/recipes.py, optim.py): gpt2 unchanged, the modern model's parts, Muon resume, bad input.

In-process (no subprocess): pretrain.main and pretrain.parse are called directly.
"""

from __future__ import annotations

import json
import math
import os
import signal

import pytest
import torch
from pretrain_runs import make_corpus

import pretrain
from storygpt.checkpoint import load_checkpoint, read_checkpoint, state_dict_digest
from storygpt.eval.bits import _nll_rows
from storygpt.model import GPT, GPTConfig
from storygpt.model.gpt import SoftCap, SoftCappedLinear
from storygpt.model.optim import Muon, MuonAdamW, OptimConfig, build_optimizer, rates, split_parameters
from storygpt.model.recipes import ARCH, RECIPES, Recipe, legacy_args
from storygpt.train import loop

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

SHAPE = dict(vocab_size=50, block_size=16, n_layer=2, n_head=2, n_embd=32)
MODERN = {k: RECIPES["modern"][k] for k in ARCH}
# main before recipes (commit 5ff4619): sha256 of the weights after init (seed 0) and the losses of 3 AdamW
# steps, on SHAPE with a fixed batch, one torch thread
GPT2_REFERENCE = {
    "learned": (
        "448b81d758810f3c565c2f8edc9e5303a83ba150d36a38c7480a0102636defdc",
        [3.8958382606506348, 3.7050938606262207, 3.5788443088531494],
    ),
    "rope": (
        "9a4ec49937093ca30096e9fe976654522c930d31dba1a5c22f1aabd13211ad8b",
        [3.9111273288726807, 3.7098641395568848, 3.5960099697113037],
    ),
}


def adamw_of_before(model) -> torch.optim.AdamW:
    """The optimizer storygpt built before recipes existed, written out: the oracle of the gpt2 recipe's."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=3e-3, betas=(0.9, 0.95), eps=1e-8)


def three_steps(model, opt) -> list[float]:
    x = torch.randint(0, 50, (4, 17), generator=torch.Generator().manual_seed(1))
    losses = []
    for _ in range(3):
        for group in opt.param_groups:
            group["lr"] = 3e-3
        _, loss = model(x[:, :-1], x[:, 1:])
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("position", ["learned", "rope"])
def test_gpt2_recipe_is_bit_for_bit_the_model_and_optimizer_of_before(position):
    """The initial weights and the first losses are the figures recorded before recipes existed (they
    hold on AVX2 and AVX-512 CPUs); the weights after three steps equal, bit for bit, those of the same
    model trained by the optimizer of before, written out (the last bits of AdamW's update differ
    between CPUs, so they are compared within one run, not with a recorded digest)."""
    arch = {k: RECIPES["gpt2"][k] for k in ARCH}
    init, recorded = GPT2_REFERENCE[position]
    ends = []
    for make_opt in (lambda m: build_optimizer(m, OptimConfig("adamw", 3e-3, 0.1)), adamw_of_before):
        torch.manual_seed(0)
        model = GPT(GPTConfig(**SHAPE, position=position, **arch))
        assert state_dict_digest(model.state_dict()) == init
        assert three_steps(model, make_opt(model)) == recorded
        ends.append(model.state_dict())
    assert state_dict_digest(ends[0]) == state_dict_digest(ends[1])


def test_a_config_from_before_recipes_loads_as_gpt2():
    old = dict(SHAPE, dropout=0.0, position="rope", rope_theta=10000.0)  # the keys a checkpoint held
    config = GPTConfig.from_dict(old)
    assert {k: getattr(config, k) for k in ARCH} == {k: RECIPES["gpt2"][k] for k in ARCH}
    assert legacy_args({"lr": 1e-3})["recipe"] == "gpt2" and legacy_args({})["optimizer"] == "adamw"


def modern(position="rope", seed=0, **kw) -> GPT:
    torch.manual_seed(seed)
    return GPT(GPTConfig(**SHAPE, position=position, **{**MODERN, **kw})).eval()


def test_modern_model_parts():
    model = modern()
    # parameter-free norms, no biases, untied head: only the embedding, the block matrices, the head
    names = {n for n, _ in model.named_parameters()}
    assert names == {"wte.weight", "lm_head.weight"} | {
        f"blocks.{i}.{m}.weight" for i in range(2) for m in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
    }
    # zero-initialised output projections and head: every logit 0, the loss is exactly ln(V)
    x = torch.randint(0, 50, (2, 16), generator=torch.Generator().manual_seed(2))
    logits, loss = model(x, x)
    assert torch.count_nonzero(logits) == 0 and loss.item() == pytest.approx(math.log(50), abs=1e-6)
    # no soft-cap by default (docs/training.md, "Ablations"); with --logit-softcap 15 the logits stay
    # inside (-15, 15) however large the weights
    assert model.config.logit_softcap == 0.0
    capped = modern(logit_softcap=15.0)
    with torch.no_grad():
        for p in capped.parameters():
            p.normal_(0.0, 3.0)
    logits, _ = capped(x)
    assert logits.abs().max() < 15.0 and logits.abs().max() > 10.0
    # ReLU^2 MLP
    h = torch.randn(3, 32)
    mlp = model.blocks[0].mlp
    expected = torch.relu(h @ mlp.c_fc.weight.T).square() @ mlp.c_proj.weight.T
    torch.testing.assert_close(mlp(h), expected)


def test_soft_cap_and_its_gradient_equal_the_plain_formula():
    torch.manual_seed(0)
    head = SoftCappedLinear(16, 30, 15.0).double()
    with torch.no_grad():
        head.weight.normal_(0.0, 5.0)  # logits well into the tanh's bend
    x = torch.randn(7, 16, dtype=torch.float64, requires_grad=True)
    y, plain = head(x), 15.0 * torch.tanh(x @ head.weight.T / 15.0)
    torch.testing.assert_close(y, plain, rtol=1e-12, atol=1e-12)
    g = torch.randn_like(y)
    for a, b in zip(torch.autograd.grad(y, (x, head.weight), g), torch.autograd.grad(plain, (x, head.weight), g)):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    u = (torch.randn(5, 6, dtype=torch.float64) * 20).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: SoftCap.apply(t, 15.0), (u,))


@pytest.mark.parametrize("position", ["learned", "rope"])
def test_kv_cache_with_qk_norm_equals_the_full_forward(position):
    model = modern(position)
    with torch.no_grad():  # random weights (zero-initialised projections would hide the attention)
        for p in model.parameters():
            p.normal_(0.0, 0.5)
    x = torch.randint(0, 50, (2, 12), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        full, _ = model(x)
        h, cache = model._hidden(x[:, :5], 0, [None] * 2)
        steps = [model.lm_head(h)]
        for t in range(5, 12):
            h, cache = model._hidden(x[:, t : t + 1], t, cache)
            steps.append(model.lm_head(h))
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    cached = model.generate(x[:, :4], 10, temperature=0.0, use_cache=True)
    uncached = model.generate(x[:, :4], 10, temperature=0.0, use_cache=False)
    assert torch.equal(cached, uncached)


@pytest.mark.parametrize("cap", [1e-300, 0.001, 1e39, float("nan"), -1.0])
def test_a_soft_cap_float32_cannot_hold_is_refused(cap):
    """Before: 1e-300 crashed in the first step, 1e39 stopped with a nan loss."""
    with pytest.raises(ValueError, match=r"GPTConfig.logit_softcap must be 0 \(off\) or from 0.01 to 10000, got "):
        GPTConfig(**SHAPE, logit_softcap=cap)


def test_evaluate_scores_the_soft_capped_logits():
    model = modern(logit_softcap=15.0)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 2.0)
    x = torch.randint(0, 50, (3, 16), generator=torch.Generator().manual_seed(4))
    y = torch.randint(0, 50, (3, 16), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        _, loss = model(x, y)
        rows = _nll_rows(model, x, y)  # bits.py's path: hidden states, then lm_head in row blocks
    assert rows.mean().item() == pytest.approx(loss.item(), rel=1e-5)


def test_muon_groups_and_width_rule():
    model = modern()
    parts = split_parameters(model)
    assert [p is model.lm_head.weight for p in parts["head"]] == [True] and parts["gain"] == []
    assert len(parts["matrix"]) == 8 and parts["embed"] == [model.wte.weight]
    opt = build_optimizer(model, OptimConfig("muon"))
    assert isinstance(opt, MuonAdamW) and isinstance(opt.muon, torch.optim.Muon)
    scale = (32 / 768) ** -0.5
    assert [g["peak_lr"] for g in opt.param_groups] == [0.02, 0.2 * scale, 0.004 * scale]
    assert [g["end_lr"] for g in opt.param_groups] == [0.02 * 0.1, 0.2 * scale * 0.1, 0.004 * scale * 0.1]
    assert rates(OptimConfig("muon", matrix_lr=0.05), 32)["matrix"] == 0.05


@pytest.mark.parametrize("group", ["matrix", "head"])
def test_weight_decay_shrinks_its_group_by_rate_times_decay(group):
    """One step from the same weights and gradients: with decay, each parameter of ``group`` ends lower by
    exactly peak rate * decay * its old value (decoupled decay, torch.optim.Muon's and AdamW's); the other
    groups are untouched."""
    ends = {}
    for wd in (0.0, 0.5):
        model = modern()
        old = [p.detach().clone() for p in model.parameters()]
        opt = build_optimizer(model, OptimConfig("muon", **{f"{group}_weight_decay": wd}))
        for p in model.parameters():
            p.grad = torch.ones_like(p)
        opt.step()
        ends[wd] = [p.detach().clone() for p in model.parameters()]
    rate = rates(OptimConfig("muon"), model.config.n_embd)[group]
    decayed = {id(p) for p in split_parameters(model)[group]}
    assert len(decayed) == (8 if group == "matrix" else 1)
    for p, o, a, b in zip(model.parameters(), old, ends[0.0], ends[0.5]):
        expected = a - rate * 0.5 * o if id(p) in decayed else a
        torch.testing.assert_close(b, expected, rtol=0, atol=1e-7)


def test_muon_written_out_is_torchs_step_and_float32_on_the_cpu():
    """Muon.step_in(bfloat16) equals torch.optim.Muon's step bit for bit over three steps (momentum and
    weight decay included); float32 (what build_optimizer picks on the CPU) is within bfloat16's error."""

    def run(make, step):
        torch.manual_seed(3)
        ws = [torch.nn.Parameter(torch.randn(r, c)) for r, c in [(24, 8), (8, 8), (8, 32)]]
        opt = make(ws)
        for i in range(3):
            for w in ws:
                w.grad = torch.randn_like(w, generator=None) * (i + 1)
            step(opt)
        return [w.detach() for w in ws], opt

    kw = dict(lr=0.02, weight_decay=0.1, momentum=0.95, nesterov=True, adjust_lr_fn="original")
    torch_ws, torch_opt = run(lambda ws: torch.optim.Muon(ws, **kw), lambda o: o.step())
    ours, ours_opt = run(lambda ws: Muon(ws, **kw), lambda o: o.step_in(torch.bfloat16))
    for a, b in zip(torch_ws, ours):
        assert torch.equal(a, b)
    assert str(torch_opt.state_dict()) == str(ours_opt.state_dict())
    f32, _ = run(lambda ws: Muon(ws, ns_dtype=torch.float32, **kw), lambda o: o.step())
    for a, b in zip(torch_ws, f32):
        assert not torch.equal(a, b)
        torch.testing.assert_close(a, b, rtol=0, atol=0.02 * 3 * 0.05)
    assert build_optimizer(modern(), OptimConfig("muon")).muon.ns_dtype == torch.float32


def test_one_schedule_takes_every_group_from_its_peak_to_its_end():
    """Every rate is a learning rate: adamw's groups go from --lr to --min-lr, muon's from each group's peak to
    min_lr_fraction of it, on the same curve (lr_at); the keys survive a state stored before they existed."""
    adamw = build_optimizer(modern(), OptimConfig("adamw", lr=2e-3, min_lr=1e-4))
    muon = build_optimizer(modern(), OptimConfig("muon", min_lr_fraction=0.25))
    peaks = rates(OptimConfig("muon"), 32)
    for opt, expected in ((adamw, [(2e-3, 1e-4)] * 2), (muon, [(peaks[k], peaks[k] * 0.25) for k in peaks][:3])):
        assert loop.set_rates(opt, 100, 0.0, 10) == expected[0][0]
        assert [g["lr"] for g in opt.param_groups] == [peak for peak, _ in expected]
        loop.set_rates(opt, 100, 1.0, 10)
        assert [g["lr"] for g in opt.param_groups] == pytest.approx([end for _, end in expected], rel=1e-15)
        loop.set_rates(opt, 0, 0.5, 10)  # warm-up: a tenth of the half-way rate
        assert [g["lr"] for g in opt.param_groups] == [loop.lr_at(0, 0.5, p, e, 10) for p, e in expected]
    old = adamw.state_dict()
    for g in old["param_groups"]:
        del g["peak_lr"], g["end_lr"]  # as a ckpt.pt written before them stores it
    adamw.load_state_dict(old)
    assert [(g["peak_lr"], g["end_lr"]) for g in adamw.param_groups] == [(2e-3, 1e-4)] * 2


def test_a_run_from_before_muon_weight_decay_resumes_without_it():
    old = legacy_args({"recipe": "modern", "optimizer": "muon"})
    assert old["matrix_weight_decay"] == 0.0 and old["head_weight_decay"] == 0.0 and old["min_lr_fraction"] == 0.1
    assert legacy_args({"matrix_weight_decay": 0.1})["matrix_weight_decay"] == 0.1


# ------------------------------------------------------------ pretrain.py
FLAGS = ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "16", "--batch-size", "4"]
FLAGS += ["--eval-windows", "2", "--eval-chars", "2000", "--no-progress", "--threads", "1", "--dropout", "0.1"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("recipe"))


def train(corpus, run_dir, *extra):
    return pretrain.main(["--data", str(corpus), "--run-dir", str(run_dir), *FLAGS, *extra])


def test_modern_resume_with_muon_momentum_is_bit_for_bit(corpus, tmp_path, monkeypatch):
    args = ["--recipe", "modern", "--rope", "--max-steps", "8", "--eval-interval", "4"]
    train(corpus, tmp_path / "ref", *args)
    real_step = loop.train_step

    def term_during_step_6(r, live, lr):  # as tests/tool_faults.py's signal_at:step@6:TERM, in this process
        if live.state.step + 1 == 6:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_step(r, live, lr)

    monkeypatch.setattr(loop, "train_step", term_during_step_6)
    with pytest.raises(SystemExit) as stopped:
        train(corpus, tmp_path / "run", *args)
    assert stopped.value.code == 130
    monkeypatch.undo()
    assert read_checkpoint(tmp_path / "run" / "ckpt.pt")["state"]["step"] == 6  # the step under way finishes
    train(corpus, tmp_path / "run", "--resume")
    a, b = (read_checkpoint(tmp_path / d / "ckpt.pt") for d in ("ref", "run"))
    assert a["optim"]["kind"] == "muon" and a["args"]["recipe"] == "modern" and a["config"]["qk_norm"] is True
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    for part in ("muon", "adamw"):
        sa, sb = a["optimizer"][part]["state"], b["optimizer"][part]["state"]
        assert sa.keys() == sb.keys() and sa
        for i in sa:
            for k in sa[i]:
                assert torch.equal(torch.as_tensor(sa[i][k]), torch.as_tensor(sb[i][k])), (part, i, k)
    assert "momentum_buffer" in a["optimizer"]["muon"]["state"][0]
    strip = [{k: v for k, v in h.items() if k != "elapsed"} for h in a["state"]["history"]]
    assert strip == [{k: v for k, v in h.items() if k != "elapsed"} for h in b["state"]["history"]]
    # the model scores as it trained: load_checkpoint rebuilds the modern model from the stored config
    model, _, _ = load_checkpoint(tmp_path / "run" / "ckpt.pt")
    assert model.config.norm == "rmsnorm" and model.config.qk_norm and model.config.logit_softcap == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("recipe", ["gpt2", "modern"])
def test_compile_trains_what_eager_trains(corpus, tmp_path, recipe):
    """--compile (torch.compile, inductor on CPU): the same losses as eager within float tolerance."""
    args = ["--recipe", recipe, "--rope", "--max-steps", "4", "--eval-interval", "4", "--dropout", "0"]
    train(corpus, tmp_path / "eager", *args)
    train(corpus, tmp_path / "compiled", *args, "--compile")
    eager, compiled = (read_checkpoint(tmp_path / d / "ckpt.pt")["state"] for d in ("eager", "compiled"))
    assert compiled["compile_time"] > 0 and eager["compile_time"] == 0
    assert compiled["history"][-1]["val_loss"] == pytest.approx(eager["history"][-1]["val_loss"], rel=1e-4)


def test_resume_with_another_recipe_is_refused_naming_the_stored_one(corpus, tmp_path, capsys):
    train(corpus, tmp_path / "run", "--max-steps", "2", "--eval-interval", "2", "--head-lr", "0.01")  # modern
    # printed and recorded as one value: its name and what differs; summary.json holds every part
    assert "recipe modern + head_lr=0.01\n" in capsys.readouterr().out
    recorded = json.loads((tmp_path / "run" / "summary.json").read_text())["recipe"]
    assert recorded == Recipe.from_flags({"recipe": "modern", "head_lr": 0.01}).to_dict()
    assert recorded["model"]["embed_norm"] is True and recorded["optim"]["head_lr"] == 0.01
    with pytest.raises(SystemExit) as e:
        train(corpus, tmp_path / "run", "--resume", "--recipe", "gpt2")
    assert "is a --recipe modern run, not --recipe gpt2; resume it with --recipe modern" in str(e.value.code)


def test_a_nan_loss_names_the_rates_of_the_runs_own_optimizer(corpus, tmp_path):
    flags = ["--max-steps", "3", "--eval-interval", "3", "--matrix-weight-decay", "1e30", "--head-weight-decay", "1e30"]
    with pytest.raises(SystemExit) as e:
        train(corpus, tmp_path / "run", *flags)
    assert "the training loss became nan at step 2; try a lower --matrix-lr/--embed-lr/--head-lr" in str(e.value.code)


def parse_error(capsys, *argv) -> str:
    with pytest.raises(SystemExit):
        pretrain.parse(list(argv))
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("pretrain.py: error:")]
    assert len(lines) == 1
    return lines[0]


def test_bad_recipe_flags_are_one_line_errors_naming_both(capsys):
    line = parse_error(capsys, "--recipe", "llama")
    assert "'llama'" in line and "gpt2" in line and "modern" in line
    line = parse_error(capsys, "--recipe", "modern", "--lr", "1e-3")
    assert "--lr" in line and "--recipe gpt2" in line and "--recipe modern" in line and "--matrix-lr" in line
    line = parse_error(capsys, "--recipe", "modern", "--optimizer", "adamw", "--momentum", "0.9")
    assert "this run (--recipe modern --optimizer adamw) uses the adamw optimizer" in line
    line = parse_error(capsys, "--lr", "1e-3")  # the default recipe is modern
    assert "--lr" in line and "--recipe gpt2" in line and "--recipe modern" in line
    line = parse_error(capsys, "--recipe", "gpt2", "--matrix-lr", "0.01")
    assert "--matrix-lr" in line and "--recipe modern" in line and "--recipe gpt2" in line
    line = parse_error(capsys, "--recipe", "gpt2", "--matrix-weight-decay", "0.1")
    assert "--matrix-weight-decay" in line and "--recipe modern" in line and "--weight-decay" in line
    assert "on or off" in parse_error(capsys, "--qk-norm", "yes")


def test_the_default_recipe_is_modern_in_pretrain_and_compare():
    import compare

    assert RECIPES["modern"]["optimizer"] == "muon" and pretrain.parse([])[0].recipe == "modern"
    assert compare.build_parser().get_default("recipe") == pretrain.build_parser().get_default("recipe") == "modern"
    from storygpt.compare.run import forwarded_flags

    assert forwarded_flags(compare.build_parser().parse_args([])) == ["--recipe", "modern"]


def test_part_flags_switch_one_part():
    args, _ = pretrain.parse(["--recipe", "modern", "--logit-softcap", "15", "--optimizer", "adamw", "--lr", "1e-3"])
    assert (args.logit_softcap, args.optimizer, args.norm, args.lr) == (15.0, "adamw", "rmsnorm", 1e-3)
    assert pretrain.parse(["--recipe", "modern"])[0].logit_softcap == 0.0
    args, _ = pretrain.parse(["--recipe", "gpt2", "--optimizer", "muon", "--tie-embeddings", "off"])
    assert (args.recipe, args.optimizer, args.tie_embeddings, args.norm) == ("gpt2", "muon", False, "layernorm")


# ------------------------------------------------------------ the recipe as a value
def test_a_recipe_is_one_value_built_from_flags_or_a_checkpoint():
    modern_ = Recipe.named("modern")
    # issue 37: a 5-step warm-up, warm-up/stable/decay, Muon's momentum 0.85
    assert modern_.model == MODERN and modern_.optim == OptimConfig(
        "muon", warmup_steps=5, schedule="wsd", momentum=0.85
    )
    assert Recipe.named("gpt2").optim == OptimConfig("adamw", warmup_steps=20)  # gpt2's warm-up as before
    assert str(modern_) == "modern" and modern_ == Recipe.from_flags({"recipe": "modern", "norm": None})
    mixed = Recipe.from_flags({"recipe": "gpt2", "optimizer": "muon", "embed_norm": True, "lr": 1e-3})
    assert str(mixed) == "gpt2 + embed_norm=on optimizer=muon"
    assert mixed.optim.kind == "muon" and mixed.optim.lr == 1e-3 and mixed.model["norm"] == "layernorm"
    assert mixed.differences(Recipe.named("gpt2")) == ["embed_norm: on -> off", "optimizer: muon -> adamw"]
    assert Recipe.from_flags(mixed.flags()) == mixed  # recorded as flags (ckpt.pt args), read back the same
    assert Recipe.from_checkpoint({"args": mixed.flags()}) == mixed
    gpt2_arch = {k: RECIPES["gpt2"][k] for k in ARCH}
    assert mixed.config(**SHAPE) == GPTConfig(**SHAPE, **{**gpt2_arch, "embed_norm": True})
    with pytest.raises(ValueError, match="unknown recipe 'llama'; known: gpt2, modern"):
        Recipe.named("llama")
    with pytest.raises(ValueError, match="--lr is a flag of the adamw optimizer"):
        Recipe.from_flags({"recipe": "modern", "lr": 1e-3}, explicit={"lr"})


def test_every_part_is_a_pretrain_flag_with_its_checks():
    """The flags, their choices and ranges come from the fields (storygpt/model/config.py ``part``)."""
    parser = pretrain.build_parser()
    flags = {a.dest: a for a in parser._actions}
    for name in (*ARCH, "optimizer", "matrix_lr", "min_lr_fraction"):
        assert name in flags and name in RECIPES["modern"], name
    assert flags["norm"].choices == ["layernorm", "rmsnorm"] and flags["optimizer"].choices == ["adamw", "muon"]
    assert pretrain.RANGES["embed_std"] == (0.0, 10.0, "strict") and pretrain.RANGES["min_lr_fraction"] == (0, 1)
    assert flags["warmup_steps"].type is int and pretrain.RANGES["warmup_steps"] == (0, None)
    assert (pretrain.parse([])[0].warmup_steps, pretrain.parse(["--recipe", "gpt2"])[0].warmup_steps) == (5, 20)


def test_a_modern_run_from_before_the_embedding_parts_resumes_without_them():
    old = {"recipe": "modern", "optimizer": "muon", "norm": "rmsnorm", "qk_norm": True, "mlp": "relu2"}
    recipe = Recipe.from_checkpoint({"args": old})
    assert recipe.model["embed_norm"] is False and recipe.model["embed_std"] == 0.02
    assert (
        GPTConfig.from_dict({k: v for k, v in GPTConfig(**SHAPE).to_dict().items() if "embed" not in k}).embed_norm
        is False
    )


# ------------------------------------------------------------ the embedding parts (issue 37)
def test_embedding_norm_and_init():
    """embed_norm: the first block gets rms_norm of the token embedding (x / sqrt(mean(x^2) + eps)), written
    out here; embed_std: wte's initial std, the same random draws scaled (so the rest of the init is unchanged)."""
    plain, normed = modern(embed_norm=False, embed_std=0.02), modern(embed_norm=True, embed_std=0.02)
    assert torch.equal(plain.wte.weight, normed.wte.weight)
    x = torch.randint(0, 50, (2, 16), generator=torch.Generator().manual_seed(6))
    seen = []
    normed.blocks[0].register_forward_pre_hook(lambda m, args: seen.append(args[0]))
    normed(x)
    e = normed.wte(x)
    expected = e / torch.sqrt(e.square().mean(-1, keepdim=True) + torch.finfo(torch.float32).eps)
    torch.testing.assert_close(seen[0], expected, rtol=1e-6, atol=1e-7)
    wide = modern(embed_norm=False, embed_std=0.8)
    assert (MODERN["embed_norm"], MODERN["embed_std"]) == (True, 0.8)  # issue 37: both in today's modern
    torch.testing.assert_close(wide.wte.weight, plain.wte.weight * 40.0, rtol=1e-6, atol=0)
    for (name, a), (_, b) in zip(plain.named_parameters(), wide.named_parameters()):
        assert name == "wte.weight" or torch.equal(a, b), name
    assert wide.wte.weight.std().item() == pytest.approx(0.8, rel=0.05)


@pytest.mark.parametrize("std", [0.0, -1.0, 10.5, float("nan")])
def test_an_embedding_std_out_of_range_is_refused(std):
    with pytest.raises(ValueError, match="GPTConfig.embed_std must be above 0 and at most 10, got "):
        GPTConfig(**SHAPE, embed_std=std)


def test_bad_embedding_flags_are_one_line_errors(capsys):
    assert "--embed-std must be above 0 and at most 10, got 0.0" in parse_error(capsys, "--embed-std", "0")
    assert "--embed-std must be above 0 and at most 10, got 11.0" in parse_error(capsys, "--embed-std", "11")
    assert "--embed-std must be a finite number, got nan" in parse_error(capsys, "--embed-std", "nan")
    assert "on or off" in parse_error(capsys, "--embed-norm", "yes")


def test_a_run_stored_without_the_embedding_parts_resumes_without_them(corpus, tmp_path):
    """A ckpt.pt written before embed_norm/embed_std existed (its args and config lack them) goes on as the
    model it was, whatever today's recipe says; the flags and config stored after the resume say so."""
    from storygpt.checkpoint import save_checkpoint

    run = tmp_path / "run"
    train(corpus, run, "--recipe", "modern", "--embed-norm", "off", "--embed-std", "0.02", "--max-steps", "2")
    ckpt = read_checkpoint(run / "ckpt.pt")
    for part in ("embed_norm", "embed_std"):
        del ckpt["args"][part], ckpt["config"][part]
    save_checkpoint(run / "ckpt.pt", {k: v for k, v in ckpt.items() if k != "model_sha256"})
    train(corpus, run, "--resume", "--max-steps", "4")
    after = read_checkpoint(run / "ckpt.pt")
    assert after["state"]["step"] == 4 and after["args"]["recipe"] == "modern"
    assert (after["args"]["embed_norm"], after["args"]["embed_std"]) == (False, 0.02)
    assert (after["config"]["embed_norm"], after["config"]["embed_std"]) == (False, 0.02)


# ------------------------------------------------------------ schedule and momentum (issue 37)
def test_wsd_holds_the_peak_then_decays_linearly_over_its_last_fraction():
    """lr_at's ``"wsd"`` by hand: peak 1, end 0.1, decay over the last 0.4 of the budget, 5 warm-up steps."""
    wsd = [loop.lr_at(10, p, 1.0, 0.1, 5, "wsd", 0.4) for p in (0.0, 0.3, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2)]
    assert wsd == pytest.approx([1.0, 1.0, 1.0, 0.775, 0.55, 0.325, 0.1, 0.1], rel=1e-12)
    assert loop.lr_at(1, 0.0, 1.0, 0.1, 5, "wsd", 0.4) == pytest.approx(0.4)  # warm-up: (step + 1) / 5
    assert loop.lr_at(1, 0.9, 1.0, 0.1, 5, "wsd", 0.4) == pytest.approx(0.4 * 0.325)
    cosine = [loop.lr_at(10, p, 1.0, 0.1, 5) for p in (0.0, 0.5, 1.0)]
    assert cosine == [loop.lr_at(10, p, 1.0, 0.1, 5, "cosine", 0.4) for p in (0.0, 0.5, 1.0)]


def test_a_wsd_run_logs_the_rates_of_its_schedule(corpus, tmp_path):
    """metrics.jsonl's ``lr`` (Muon's matrix rate, peak 0.02) over 8 steps with --schedule wsd
    --decay-fraction 0.5 --warmup-steps 0: the peak for 4 steps, then down to 0.1 of it."""
    run = tmp_path / "run"
    train(
        corpus,
        run,
        "--recipe",
        "modern",
        "--schedule",
        "wsd",
        "--decay-fraction",
        "0.5",
        "--warmup-steps",
        "0",
        "--max-steps",
        "8",
        "--eval-interval",
        "8",
    )
    lrs = [r["lr"] for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if r["kind"] == "step"]
    progress = [s / 8 for s in range(8)]  # the budget's fraction done before each step
    assert lrs == pytest.approx([0.002 + 0.018 * min(1.0, (1 - p) / 0.5) for p in progress], rel=1e-12)
    assert read_checkpoint(run / "ckpt.pt")["optim"]["schedule"] == "wsd"


def test_muon_momentum_is_a_part():
    opt = build_optimizer(modern(), OptimConfig("muon", momentum=0.9))
    assert [g["momentum"] for g in opt.muon.param_groups] == [0.9]
    assert Recipe.from_flags({"recipe": "modern", "momentum": 0.85}).optim.momentum == 0.85


def test_bad_schedule_flags_are_one_line_errors(capsys):
    assert "--momentum must be in 0 .. 0.999, got 1.0" in parse_error(capsys, "--momentum", "1")
    assert "--decay-fraction must be above 0 and at most 1, got 0.0" in parse_error(
        capsys, "--schedule", "wsd", "--decay-fraction", "0"
    )
    assert "--decay-fraction must be above 0 and at most 1, got 1.5" in parse_error(capsys, "--decay-fraction", "1.5")
    assert "invalid choice: 'linear'" in parse_error(capsys, "--schedule", "linear")
    line = parse_error(capsys, "--schedule", "cosine", "--decay-fraction", "0.3")
    assert "--decay-fraction is wsd's" in line and "--schedule cosine" in line
    assert "--momentum is a flag of the muon optimizer" in parse_error(capsys, "--recipe", "gpt2", "--momentum", "0.9")


def test_a_run_from_before_the_schedule_parts_resumes_with_cosine_and_momentum_095():
    old = {"recipe": "modern", "optimizer": "muon", "norm": "rmsnorm", "qk_norm": True, "mlp": "relu2"}
    optim = Recipe.from_checkpoint({"args": old}).optim
    assert (optim.schedule, optim.momentum) == ("cosine", 0.95)
    assert OptimConfig.from_dict({"kind": "muon", "momentum": 0.95}).schedule == "cosine"
