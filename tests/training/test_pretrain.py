"""Tests of pretrain.py: training, run folders, resume, budgets, presets, two processes, --help (checkpoints:
test_checkpoint.py; one-line errors on bad input: test_pretrain_bad_input.py; shared helpers: pretrain_runs.py)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REPO, run_tools, tool_parser
from pretrain_runs import (
    TEXT,
    TINY_FLAGS,
    assert_error,
    dry_run,
    make_corpus,
    refused,
    rows,
    run,
    run_refused,
    trained,
    word_tokenizer,
)

import storygpt
from storygpt.checkpoint import load_checkpoint, read_checkpoint
from storygpt.data import write_tokens
from storygpt.model import GPTConfig
from storygpt.tokenizers import BPETokenizer, WordTokenizer, train_bpe

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


# ------------------------------------------------------------- training


def test_pretrain_loss_falls_and_writes_the_run_folder(tmp_path):
    data = make_corpus(tmp_path)
    m = run(data, tmp_path / "ck", "--max-steps", "40", "--eval-interval", "20", "--rope")
    run_dir = tmp_path / "ck" / "tiny" / "rope-word-10000"
    out = m["stdout"]
    assert "bits/char" in out and "tokens/s" in out and "parameters" in out
    assert m["steps"] == 40 and m["tokens"] == 40 * 8 * 16 and m["stop_reason"] == "max_steps"
    assert [h["step"] for h in m["history"]] == [20, 40]
    vocab = word_tokenizer().vocab_size
    # from uniform (ln vocab = ln 11 = 2.4 nats) to under 1 nat on held-out text
    assert m["val_loss"] < math.log(vocab) - 1.4, m["history"]
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in (
        "spec",
        "slug",
        "corpus",
        "params",
        "params_embedding",
        "params_non_embedding",
        "steps",
        "tokens",
        "chars",
        "flops",
        "elapsed",
        "train_time",
        "stop_reason",
        "val_loss",
        "val_bpc",
        "best_val_bpc",
    ):
        assert key in summary, key
    assert summary["spec"] == "word:10000" and summary["slug"] == "word-10000" and summary["corpus"] == "tiny"
    assert summary["params"] == summary["params_embedding"] + summary["params_non_embedding"] == m["params"]
    assert summary["params_embedding"] == vocab * 32  # rotary: the token embedding only
    assert summary["val_bpc"] == pytest.approx(m["val_bpc"]) and summary["stop_reason"] == "max_steps"
    # characters per token of the training split: (characters + documents - 1) / tokens, one document here
    train_tokens = len(word_tokenizer().encode(TEXT[: len(TEXT) * 9 // 10]))
    assert summary["chars"] == pytest.approx(40 * 8 * 16 * (len(TEXT) * 9 // 10) / train_tokens)
    r = rows(run_dir)
    assert [x["step"] for x in r if x["kind"] == "step"] == list(range(1, 41))
    assert [x["step"] for x in r if x["kind"] == "eval"] == [20, 40]
    step_keys = ["kind", "step", "tokens", "chars", "flops", "elapsed", "lr", "loss", "grad_norm"]
    assert list(r[0]) == [*step_keys, "tokens_per_sec", "flops_per_sec"]  # and mfu on a CUDA device of known peak
    ev = [x for x in r if x["kind"] == "eval"][-1]
    head = ["kind", "step", "tokens", "chars", "flops", "elapsed", "val_loss", "val_bpc", "val_bpb"]
    assert list(ev) == [*head, "sets", "sets_macro_bpc", "sets_micro_bpc"]
    assert ev["val_bpc"] == pytest.approx(summary["val_bpc"]) and r[-1]["flops"] == summary["flops"]
    ckpt = torch.load(run_dir / "ckpt.pt", weights_only=True)
    for key in ("model", "config", "tokenizer", "spec", "slug", "corpus", "data", "optimizer", "state", "args"):
        assert key in ckpt, key
    assert ckpt["state"]["step"] == 40 and ckpt["corpus"] == "tiny" and ckpt["data"] == "../../../tiny"
    assert not any(k.startswith(("module.", "_orig_mod.")) for k in ckpt["model"])
    best = torch.load(run_dir / "best.pt", weights_only=True)
    assert "optimizer" not in best and "state" not in best and best["step"] == 40
    assert (run_dir / "best.pt").stat().st_size < (run_dir / "ckpt.pt").stat().st_size / 2
    assert not list(run_dir.glob("*.tmp")) and not (run_dir / "lock").exists()
    model, tok, _ = storygpt.load_checkpoint(run_dir / "best.pt")
    assert not model.training and tok.to_dict() == word_tokenizer().to_dict()


def test_an_under_trained_run_is_warned_about_and_recorded(tmp_path):
    # before: 16 steps of a 20-step warm-up trained silently, and bits.py ranked the run beside long ones
    data = make_corpus(tmp_path)
    m = run(data, tmp_path / "ck", "--max-steps", "3", "--warmup-steps", "4", "--eval-interval", "2")
    out = m["stdout"].splitlines()
    ahead = [x for x in out if x.startswith("warning: --max-steps allows about 3 steps")]
    assert len(ahead) == 1 and "fewer than its 4 warm-up steps; 2 held-out evaluations, fewer than 3" in ahead[0]
    assert "--max-steps 8" in ahead[0]
    end = [x for x in out if x.startswith("warning: under-trained: ")]
    assert len(end) == 1 and out.index(end[0]) > out.index(ahead[0])
    reason = "3 steps, fewer than its 4 warm-up steps; 2 held-out evaluations, fewer than 3"
    assert m["under_trained"] == reason and m["evals"] == 2 and m["warmup_steps"] == 4
    for name in ("ckpt.pt", "best.pt"):
        trained_record = read_checkpoint(m["folder"] / name)["trained"]
        assert trained_record["steps"] == (3 if name == "ckpt.pt" else trained_record["steps"])
        assert trained_record["under_trained"] is not None and trained_record["warmup_steps"] == 4
    ck = read_checkpoint(m["folder"] / "ckpt.pt")["trained"]
    assert ck == {"steps": 3, "tokens": 3 * 8 * 16, "flops": m["flops"], "warmup_steps": 4, "evals": 2} | {
        "under_trained": reason
    }
    # enough steps and evaluations: no warning, nothing recorded
    m = run(data, tmp_path / "ck2", "--max-steps", "6", "--warmup-steps", "2", "--eval-interval", "2")
    assert "warning" not in m["stdout"] and m["under_trained"] is None and m["evals"] == 3
    assert read_checkpoint(m["folder"] / "ckpt.pt")["trained"]["under_trained"] is None


def test_trained_of_reads_checkpoints_from_before_the_record():
    from storygpt.checkpoint import trained_of

    history = [{"step": 2}, {"step": 4}]
    old_ckpt = {"state": {"step": 4, "tokens": 512, "flops": 1e9, "history": history}, "args": {"warmup_steps": 20}}
    assert trained_of(old_ckpt) == {
        "steps": 4,
        "tokens": 512,
        "flops": 1e9,
        "warmup_steps": 20,
        "evals": 2,
        "under_trained": "4 steps, fewer than its 20 warm-up steps; 2 held-out evaluations, fewer than 3",
    }
    assert trained_of({"step": 7, "val_bpc": 2.0}) == {"steps": 7}  # an old best.pt
    assert trained_of({"model": {}}) is None


def test_heldout_bits_agree_with_evaluate_bits(tmp_path):
    """The training-time held-out figure is bits.py's measurement of the same characters."""
    from storygpt.eval.bits import evaluate_bits, read_documents, take_characters
    from storygpt.train.inputs import heldout_slice

    data = make_corpus(tmp_path, kind="bpe")
    m = run(
        data,
        tmp_path / "ck",
        "--tokenizer",
        "bpe:300",
        "--max-steps",
        "6",
        "--eval-interval",
        "6",
        "--eval-chars",
        "200",
        "--dtype",
        "float32",  # auto is bfloat16 on a CPU with native bfloat16; bits.py measures in float32
    )
    model, tok, _ = load_checkpoint(tmp_path / "ck" / "tiny" / "learned-bpe-300" / "ckpt.pt")
    docs = take_characters(read_documents(data / "valid.txt"), 200)
    ref = evaluate_bits(model, tok, docs, block_size=16)
    assert ref.characters == heldout_slice(tok, data / "valid.txt", 200, 16).characters == 200
    assert m["val_bpc"] == pytest.approx(ref.bits_per_character, rel=1e-5)
    assert m["val_loss"] == pytest.approx(ref.nats_per_token, rel=1e-5)


def test_bpe_rope_run_and_load(tmp_path):
    data = make_corpus(tmp_path, kind="bpe")
    m = run(data, tmp_path / "ck", "--tokenizer", "bpe:300", "--rope", "--max-steps", "3", "--eval-interval", "3")
    assert m["steps"] == 3 and m["spec"] == "bpe:300" and m["config"]["position"] == "rope"
    model, tok, ckpt = load_checkpoint(tmp_path / "ck" / "tiny" / "rope-bpe-300" / "best.pt")
    assert isinstance(tok, BPETokenizer) and tok.kind == "bpe" and tok.vocab_size == model.config.vocab_size
    assert tok.fingerprint() == train_bpe(TEXT, 300, backend="reference").fingerprint()
    out = model.generate(torch.tensor([tok.encode("the cat")]), 5, seed=0)
    assert out.shape[1] == len(tok.encode("the cat")) + 5


def test_run_folders_and_refusal_to_overwrite(tmp_path):
    def folder(*flags):
        return Path(dry_run("--data", "data/mine", *flags)["run_folder"])

    assert folder() == Path("checkpoints/mine/learned-word-10000")
    assert (
        folder("--rope", "--bpe")
        == folder("--rope", "--tokenizer", "bpe:8192")
        == Path("checkpoints/mine/rope-bpe-8192")
    )
    assert folder("--tokenizer", "byte", "--out-dir", "o") == Path("o/mine/learned-byte")
    assert folder("--run-name", "x") == Path("checkpoints/mine/x") and folder("--run-dir", "a/b") == Path("a/b")
    refused("--data", "data/mine", "--bpe", "--tokenizer", "word")
    data = make_corpus(tmp_path)
    run(data, tmp_path / "ck", "--max-steps", "2", "--eval-interval", "2")
    ck = tmp_path / "ck" / "tiny" / "learned-word-10000" / "ckpt.pt"
    before = ck.read_bytes()
    assert_error("--resume", run_refused(data, tmp_path / "ck", "--max-steps", "2"))
    assert ck.read_bytes() == before
    assert run(data, tmp_path / "ck", "--max-steps", "3", "--force")["steps"] == 3
    run(data, tmp_path / "ck", "--max-steps", "1", "--run-name", "other")
    assert (tmp_path / "ck" / "tiny" / "other" / "ckpt.pt").is_file()


def test_resume_of_another_corpus_or_tokenizer_is_an_error(tmp_path):
    make_corpus(tmp_path, name="tiny")
    make_corpus(tmp_path, name="other")
    make_corpus(tmp_path / "b", name="tiny", kind="bpe")
    rd = str(tmp_path / "run")
    run(tmp_path / "tiny", tmp_path, "--run-dir", rd, "--max-steps", "2")
    assert_error(
        r"trained on corpus 'tiny', not on 'other'",
        run_refused(tmp_path / "other", tmp_path, "--run-dir", rd, "--max-steps", "4", "--resume"),
    )
    assert_error(
        r"trained with --tokenizer word:10000, not bpe:300",
        run_refused(
            tmp_path / "tiny", tmp_path, "--run-dir", rd, "--tokenizer", "bpe:300", "--max-steps", "4", "--resume"
        ),
    )
    assert read_checkpoint(Path(rd) / "ckpt.pt")["state"]["step"] == 2


def test_resume_continues_and_the_stored_data_path_is_relative(tmp_path):
    make_corpus(tmp_path / "data", name="tiny")
    flags = ["--data", "data/tiny", *TINY_FLAGS, "--eval-interval", "2"]
    out = trained(*flags, "--max-steps", "2", cwd=tmp_path)["stdout"]
    run_dir = tmp_path / "checkpoints" / "tiny" / "learned-word-10000"
    assert read_checkpoint(run_dir / "ckpt.pt")["data"] == "../../../data/tiny"
    assert "run checkpoints/tiny/learned-word-10000 |" in out  # paths relative to the cwd
    for steps in ("4", "6"):  # the first resume reads a first run's checkpoint, the second a continued run's
        out = trained(*flags, "--max-steps", steps, "--resume", cwd=tmp_path)["stdout"]
        assert "keeps the run's own" not in out
    # the whole tree moves: the run still finds its data (stored relative to the run folder)
    (tmp_path / "moved").mkdir()
    for name in ("data", "checkpoints"):
        (tmp_path / name).rename(tmp_path / "moved" / name)
    m = trained(
        *TINY_FLAGS, "--data", "data/tiny", "--max-steps", "7", "--resume", "--n-layer", "2", cwd=tmp_path / "moved"
    )
    assert "warning: --resume keeps the run's own --n-layer" in m["stdout"]
    assert m["steps"] == 7 and m["config"]["n_layer"] == 1
    r = rows(tmp_path / "moved" / "checkpoints" / "tiny" / "learned-word-10000")
    assert [x["step"] for x in r if x["kind"] == "step"] == list(range(1, 8))


def test_resume_with_the_budget_spent_keeps_the_figures(tmp_path):
    data = make_corpus(tmp_path)
    first = run(data, tmp_path / "ck", "--max-steps", "4", "--eval-interval", "2")
    summary_path = tmp_path / "ck" / "tiny" / "learned-word-10000" / "summary.json"
    saved = json.loads(summary_path.read_text())
    assert first["tokens_per_sec"] == pytest.approx(4 * 8 * 16 / saved["train_time"])
    again = run(data, tmp_path / "ck", "--max-steps", "4", "--resume")
    assert "budget already spent (max_steps): nothing to train" in again["stdout"]
    assert again["tokens_per_sec"] == pytest.approx(first["tokens_per_sec"]) and again["steps"] == 4
    after = json.loads(summary_path.read_text())
    assert after == saved


def test_budgets_stop_at_the_first_reached(tmp_path):
    from storygpt.model.flops import flops_per_token

    data = make_corpus(tmp_path)
    per_step = 8 * 16
    m = run(data, tmp_path / "a", "--budget-tokens", str(5 * per_step - 1), "--eval-interval", "100")
    assert m["steps"] == 5 and m["stop_reason"] == "tokens" and m["tokens"] == 5 * per_step
    config = GPTConfig(vocab_size=word_tokenizer().vocab_size, block_size=16, n_layer=1, n_head=2, n_embd=32)
    fpt = flops_per_token(config)
    m = run(data, tmp_path / "b", "--budget-flops", str(3 * per_step * fpt), "--max-steps", "10")
    assert m["steps"] == 3 and m["stop_reason"] == "flops" and m["flops"] == 3 * per_step * fpt
    m = run(data, tmp_path / "c", "--budget-chars", "1e9", "--max-steps", "2")
    assert m["steps"] == 2 and m["stop_reason"] == "max_steps"
    cpt = m["chars_per_token"]
    m = run(data, tmp_path / "d", "--budget-chars", str(2.5 * per_step * cpt))
    assert m["steps"] == 3 and m["stop_reason"] == "chars"
    # budgets given with --resume replace the run's own (here its --max-steps 2)
    m = run(data, tmp_path / "c", "--budget-tokens", str(4 * per_step), "--resume")
    assert m["steps"] == 4 and m["stop_reason"] == "tokens"
    bad = (["--budget-flops", "0"], ["--max-steps", "0"], ["--minutes", "-1"], ["--budget-tokens", "nan"])
    for done in run_tools("pretrain", [["--data", data, "--out-dir", tmp_path / "e", *TINY_FLAGS, *b] for b in bad]):
        assert done.returncode != 0, done.stdout


def test_lr_follows_the_binding_budget():
    from storygpt.train.loop import Budgets, TrainState, lr_at

    b = Budgets(max_steps=100, flops=1000.0)
    s = TrainState(step=10, flops=500)
    assert b.progress(s) == 0.5 and b.reached(s) is None
    assert b.reached(TrainState(step=100)) == "max_steps" and b.reached(TrainState(flops=1000)) == "flops"
    assert lr_at(0, 0.0, 1.0, 0.1, 10) == pytest.approx(0.1)  # warm-up: (step + 1) / warmup_steps
    assert lr_at(50, 0.5, 1.0, 0.1, 10) == pytest.approx(0.55)  # half-way down the cosine
    assert lr_at(99, 1.0, 1.0, 0.1, 10) == pytest.approx(0.1)


def test_presets_and_grad_accum(tmp_path):
    from storygpt.model.presets import PRESETS

    args = dry_run("--preset", "medium", "--n-layer", "2")
    assert (args["n_layer"], args["n_head"], args["n_embd"], args["block_size"]) == (2, 6, 384, 256)
    assert args["lr"] == PRESETS["medium"]["lr"] and args["min_lr"] == pytest.approx(args["lr"] / 10)
    refused("--preset", "huge")
    data = make_corpus(tmp_path)
    # 2 micro-batches of 4 windows = 1 step of 8 windows: same tokens per step as --batch-size 8
    m = run(data, tmp_path / "a", "--batch-size", "4", "--grad-accum", "2", "--max-steps", "3")
    assert m["tokens"] == 3 * 8 * 16 and m["batch_windows"] == 8
    m = run(data, tmp_path / "b", "--batch-size", "2", "--total-batch", "8", "--max-steps", "1")
    assert m["tokens"] == 8 * 16 and m["batch_windows"] == 8
    assert_error(
        "--total-batch 7 is not a multiple of --batch-size 2",
        run_refused(data, tmp_path / "c", "--batch-size", "2", "--total-batch", "7", "--max-steps", "1"),
    )


def test_short_validation_file_and_bad_data(tmp_path):
    data = make_corpus(tmp_path, valid_text="the cat sat.")  # fewer tokens than one window: one short window
    m = run(data, tmp_path / "ck", "--max-steps", "2")
    assert math.isfinite(m["val_bpc"])
    assert_error("n_head", run_refused(data, tmp_path / "ck2", "--n-embd", "30", "--n-head", "4"))
    run_refused(data, tmp_path / "ck2", "--eval-interval", "0")
    assert_error(
        r"tokenizer-bpe-8192.json not found.*holds the token files of: word-10000",
        run_refused(data, tmp_path / "ck2", "--max-steps", "2", "--bpe"),
    )
    (data / "valid.txt").unlink()
    assert_error(r"valid.txt", run_refused(data, tmp_path / "ck2", "--max-steps", "2"))
    other = WordTokenizer.train(TEXT + " bird")  # token files written by another tokenizer
    write_tokens(data / "train-word-10000.bin", np.arange(100) % 10, other)
    assert_error(
        "train-word-10000.bin: written by another tokenizer", run_refused(data, tmp_path / "ck2", "--max-steps", "2")
    )


# ---------------------------------------------------------- two processes
#: TINY_FLAGS with the modern recipe (Muon + AdamW at its own rates: no --lr/--min-lr)
GPT2_ONLY = ("--lr", "--min-lr")
MODERN_TINY = ["--recipe", "modern"] + [
    f for i, f in enumerate(TINY_FLAGS) if i >= 2 and f not in GPT2_ONLY and TINY_FLAGS[i - 1] not in GPT2_ONLY
]


@pytest.mark.parametrize("recipe", ["gpt2", "modern"])
def test_two_process_run(tmp_path, recipe):
    data = make_corpus(tmp_path)
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--standalone",
        str(REPO / "pretrain.py"),
        "--data",
        str(data),
        "--out-dir",
        str(tmp_path / "ck"),
        *(TINY_FLAGS if recipe == "gpt2" else MODERN_TINY),
        "--max-steps",
        "5",
        "--eval-interval",
        "5",
        "--device",
        "cpu",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("done (max_steps):") == 1  # only rank 0 logs
    run_dir = tmp_path / "ck" / "tiny" / "learned-word-10000"
    ckpt = torch.load(run_dir / "ckpt.pt", weights_only=True)
    assert ckpt["state"]["step"] == 5 and ckpt["state"]["tokens"] == 5 * 8 * 16 * 2
    ranks = ckpt["state"]["rng"]["ranks"]
    assert ckpt["state"]["rng"]["world_size"] == 2 and ranks[0]["batch"] != ranks[1]["batch"]  # per-rank batches
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["processes"] == 2 and math.isfinite(summary["val_bpc"]) and summary["batch_windows"] == 16
    assert ckpt["optim"]["kind"] == ("adamw" if recipe == "gpt2" else "muon")  # Muon steps on all-reduced grads


def test_help_states_each_default_once():
    parsers = {name: tool_parser(name) for name in ("pretrain", "data", "sample")}
    for parser in parsers.values():
        text = " ".join(parser["help"].split())
        assert "(default: None)" not in text and "(default: False)" not in text
        for action in parser["actions"]:
            own = action["own_help"]
            if own is None:  # positionals and flags without help
                continue
            assert own.lower().count("default") <= 1, (action["flags"], own)
            assert "default" in own.lower() or not action["has_default"], (action["flags"], own)  # where there is one
    text = " ".join(parsers["pretrain"]["help"].split())
    assert "--minutes MINUTES wall-clock minutes, evaluations included, compilation excluded" in text
    assert "(default: gpt4; docs/data.md explains the choice)" in " ".join(parsers["data"]["help"].split())
