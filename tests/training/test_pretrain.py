"""Tests of pretrain.py and storygpt.checkpoint: training, checkpoints, resume, errors, two processes.

The bad-input tests at the end use ``tiny_run`` (tests/conftest.py): a corpus data.py prepared and a
2-step run on it; each comment says what happened before the fix."""

from __future__ import annotations

import json
import math
import os
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import BPE300, REPO, TINY_MODEL, one_error_line, run_tool, run_tools, tiny_argv, tool_parser

import storygpt
from storygpt import runtime
from storygpt.checkpoint import CheckpointError, load_checkpoint, read_checkpoint, save_checkpoint
from storygpt.data import write_tokens
from storygpt.model import GPT, GPTConfig
from storygpt.tokenizers import BPETokenizer, WordTokenizer
from storygpt.tokenizers.bpe_train import train_bpe

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def word_tokenizer():
    return WordTokenizer.train(TEXT)


TEXT = "the cat sat on the mat. the dog sat on the log. " * 60
TINY_FLAGS = [  # the gpt2 recipe (its --lr and --min-lr; the figures below are its)
    "--recipe",
    "gpt2",
    "--n-layer",
    "1",
    "--n-head",
    "2",
    "--n-embd",
    "32",
    "--block-size",
    "16",
    "--batch-size",
    "8",
    "--lr",
    "1e-2",
    "--min-lr",
    "1e-3",
    "--warmup-steps",
    "2",
    "--eval-windows",
    "8",
    "--no-progress",
    "--threads",
    "1",
]


SLUG = {"word": "word-10000", "bpe": "bpe-300"}


def make_corpus(root: Path, name="tiny", valid_text=None, kind="word") -> Path:
    """A corpus folder as data.py writes it: train.txt, valid.txt and the token files of ``kind``."""
    tok = word_tokenizer() if kind == "word" else train_bpe(TEXT, 300, backend="reference")
    d = root / name
    d.mkdir(parents=True)
    slug = SLUG[kind]
    train = TEXT[: len(TEXT) * 9 // 10]
    valid = TEXT[len(TEXT) * 9 // 10 :] if valid_text is None else valid_text
    tok.save(d / f"tokenizer-{slug}.json")
    write_tokens(d / f"train-{slug}.bin", np.array(tok.encode(train)), tok)
    write_tokens(d / f"valid-{slug}.bin", np.array(tok.encode(valid), dtype=np.int64), tok)
    (d / "train.txt").write_text(train + "\n", encoding="utf-8")
    (d / "valid.txt").write_text(valid + "\n", encoding="utf-8")
    return d


def trained(*argv, cwd=None) -> dict:
    """``python pretrain.py ARGV``, which must succeed: the run's summary.json, with ``history`` (the ``eval``
    rows of its metrics.jsonl), ``folder`` (the run folder) and ``stdout``."""
    done = run_tool("pretrain", *argv, cwd=cwd)
    assert done.returncode == 0, done.stderr
    shown = re.search(r"^run (.+?) \| corpus", done.stdout, re.MULTILINE)
    assert shown, done.stdout
    folder = Path(cwd or ".") / shown.group(1)
    summary = json.loads((folder / "summary.json").read_text())
    history = [r for r in rows(folder) if r["kind"] == "eval"]
    return {**summary, "history": history, "folder": folder, "stdout": done.stdout}


def refused(*argv, cwd=None) -> str:
    """``python pretrain.py ARGV``, which must fail: its stderr."""
    done = run_tool("pretrain", *argv, cwd=cwd)
    assert done.returncode != 0, done.stdout
    return done.stderr


def dry_run(*argv) -> dict:
    """``python pretrain.py ARGV --dry-run``: the settings and run folder it prints."""
    done = run_tool("pretrain", *argv, "--dry-run")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def run(data: Path, out: Path, *extra: str) -> dict:
    """A tiny run on ``data`` under ``out``: :func:`trained`'s dict."""
    return trained("--data", data, "--out-dir", out, *TINY_FLAGS, *extra)


def run_refused(data: Path, out: Path, *extra: str) -> str:
    """A tiny run on ``data`` under ``out`` that must fail: :func:`refused`'s stderr."""
    return refused("--data", data, "--out-dir", out, *TINY_FLAGS, *extra)


def assert_error(pattern: str, err: str) -> None:
    """``pattern`` found in ``err`` (``^`` matches at a line start)."""
    assert re.search(pattern, err, re.MULTILINE), err


# ------------------------------------------------------------- training
def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


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
    assert list(r[0]) == ["kind", "step", "tokens", "chars", "flops", "elapsed", "lr", "loss", "grad_norm"]
    ev = [x for x in r if x["kind"] == "eval"][-1]
    assert list(ev) == ["kind", "step", "tokens", "chars", "flops", "elapsed", "val_loss", "val_bpc"]
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


def test_heldout_bits_agree_with_evaluate_bits(tmp_path):
    """The training-time held-out figure is bits.py's measurement of the same characters."""
    from storygpt.evaluate import evaluate_bits, read_documents, take_characters
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
    from storygpt.model import GPTConfig
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


# ------------------------------------------------------------ checkpoints
def tiny_checkpoint(vocab_size=None):
    tok = word_tokenizer()
    torch.manual_seed(0)
    config = GPTConfig(
        vocab_size=vocab_size or tok.vocab_size, block_size=16, n_layer=1, n_head=2, n_embd=32, position="rope"
    )
    model = GPT(config)
    return model, {
        "model": {"module." + k: v for k, v in model.state_dict().items()},
        "config": config.to_dict(),
        "tokenizer": tok.to_dict(),
        "step": 0,
    }


def test_checkpoint_round_trip_same_logits(tmp_path):
    model, ckpt = tiny_checkpoint()
    save_checkpoint(tmp_path / "c.pt", ckpt)
    loaded, tok, ck = load_checkpoint(tmp_path / "c.pt")
    idx = torch.randint(0, tok.vocab_size, (2, 16))
    model.eval()
    assert torch.equal(model(idx)[0], loaded(idx)[0])
    assert isinstance(tok, WordTokenizer) and ck["step"] == 0 and not loaded.training


def test_bad_checkpoints_raise_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        load_checkpoint(tmp_path / "nope.pt")
    _, ckpt = tiny_checkpoint()
    save_checkpoint(tmp_path / "good.pt", ckpt)
    raw = (tmp_path / "good.pt").read_bytes()
    (tmp_path / "trunc.pt").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(CheckpointError, match=r"trunc\.pt.*corrupt or truncated"):
        load_checkpoint(tmp_path / "trunc.pt")
    (tmp_path / "junk.pt").write_bytes(b"this is not a checkpoint at all" * 10)
    with pytest.raises(CheckpointError, match=r"junk\.pt"):
        load_checkpoint(tmp_path / "junk.pt")
    bad = bytearray(raw)
    mid = len(bad) // 2
    bad[mid : mid + 64] = b"\xff" * 64
    (tmp_path / "flipped.pt").write_bytes(bytes(bad))
    with pytest.raises(CheckpointError, match=r"flipped\.pt"):
        load_checkpoint(tmp_path / "flipped.pt")
    _, wrong = tiny_checkpoint(vocab_size=40)
    save_checkpoint(tmp_path / "vocab.pt", wrong)
    v = word_tokenizer().vocab_size
    with pytest.raises(CheckpointError, match=rf"vocab\.pt.*vocab_size {v} does not match the model's vocab_size 40"):
        load_checkpoint(tmp_path / "vocab.pt")
    del ckpt["tokenizer"]
    save_checkpoint(tmp_path / "nokey.pt", ckpt)
    with pytest.raises(CheckpointError, match=r"nokey\.pt.*missing key.*tokenizer"):
        load_checkpoint(tmp_path / "nokey.pt")
    torch.save([1, 2, 3], tmp_path / "list.pt")
    with pytest.raises(CheckpointError, match=r"list\.pt: not a storygpt checkpoint"):
        load_checkpoint(tmp_path / "list.pt")


def test_checkpoint_errors_are_one_line_without_torch_advice(tmp_path):
    # before: torch's state_dict report (one line per tensor) and its "Re-running torch.load with
    # weights_only set to False" advice (which would run code from a damaged or foreign file)
    _, ckpt = tiny_checkpoint()
    ckpt["config"] = {**ckpt["config"], "n_embd": ckpt["config"]["n_embd"] * 2}
    ckpt.pop("model_sha256", None)
    save_checkpoint(tmp_path / "shape.pt", ckpt)
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(tmp_path / "shape.pt")
    msg = str(e.value)
    assert "\n" not in msg and "model weights do not fit the config: size mismatch for " in msg
    assert re.search(r"\(and \d+ more\)$", msg)
    torch.save({"a": torch.zeros(2)}, tmp_path / "pickle.pt")
    raw = bytearray((tmp_path / "pickle.pt").read_bytes())
    i = raw.find(b"\x80\x02")
    raw[i + 2 : i + 6] = b"\xff\xfe\xfd\xfc"  # an opcode the unpickler does not know
    (tmp_path / "pickle.pt").write_bytes(bytes(raw))
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(tmp_path / "pickle.pt")
    assert str(e.value).endswith(
        "pickle.pt: cannot read checkpoint (corrupt or truncated file?): UnpicklingError: Unsupported operand 255"
    )


# ---------------------------------------------------------- two processes
def test_two_process_run(tmp_path):
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
        *TINY_FLAGS,
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


# ------------------------------------------------------------ bad input (one-line errors)
def run_pretrain(tiny_run, *extra):
    """``python pretrain.py`` on ``tiny_run``'s corpus into ROOT/ck2 with ``extra``: the finished process."""
    return run_tool(
        "pretrain", "--data", tiny_run["corpus"], "--out-dir", tiny_run["root"] / "ck2", *TINY_MODEL, *extra
    )


def pretrain_runs(tiny_run, argvs):
    """:func:`run_pretrain` for each argument list, several at a time: the finished processes."""
    common = ["--data", tiny_run["corpus"], "--out-dir", tiny_run["root"] / "ck2", *TINY_MODEL]
    return run_tools("pretrain", [[*common, *argv] for argv in argvs])


def test_pretrain_non_finite_floats(tiny_run):
    # before: tracebacks from torch.optim (lr nan) or tqdm (minutes nan/inf)
    cases = [("--lr", "nan"), ("--minutes", "nan"), ("--minutes", "inf"), ("--min-lr", "inf"), ("--grad-clip", "nan")]
    argvs = [[*BPE300, flag, value, "--max-steps", "1"] for flag, value in cases]
    for (flag, _), done in zip(cases, pretrain_runs(tiny_run, argvs)):
        assert done.returncode == 2
        msg = one_error_line(done.stderr, "pretrain.py")
        assert flag in msg and "finite" in msg


@pytest.mark.parametrize(
    "device,words", [("banana", "not a device name"), ("cuda:99", r"(CUDA is not available|only \d+ CUDA)")]
)
def test_pretrain_bad_device(tiny_run, device, words):
    # before: RuntimeError / AttributeError tracebacks from torch
    if device.startswith("cuda") and torch.cuda.is_available() and torch.cuda.device_count() > 99:
        pytest.skip("a machine with 100 GPUs")
    done = run_pretrain(tiny_run, *BPE300, "--device", device, "--max-steps", "1")
    assert done.returncode != 0
    assert_error(rf"^pretrain.py: error: --device '{device}'.*{words}", done.stderr)


def test_pretrain_run_name_must_be_a_plain_name(tiny_run):
    # before: --run-name ../../etc wrote checkpoints outside --out-dir
    names = ["../escape", "a/b", "..", ""]
    for done in pretrain_runs(tiny_run, [[*BPE300, "--run-name", name, "--max-steps", "1"] for name in names]):
        assert done.returncode != 0
        assert_error(r"^pretrain.py: error: --run-name .*plain folder name", done.stderr)
    assert not (tiny_run["root"] / "escape").exists()


def test_pretrain_data_folder_missing_or_a_file(tiny_run):
    # before: "<file>/tokenizer-bpe.json not found" for a --data that is not a folder at all
    for bad, what in ((tiny_run["root"] / "nope", "no such folder"), (tiny_run["corpus"] / "train.txt", "is a file")):
        assert_error(rf"^pretrain.py: error: --data {bad}: {what}", refused(*tiny_argv(bad, tiny_run["root"] / "ck2")))


def test_pretrain_folder_with_only_word_files_suggests_dropping_bpe(tiny_run, tmp_path):
    # before: only "run data.py --bpe", not that the folder holds the word-level files
    d = tmp_path / "wordonly"
    d.mkdir()
    for name in ("tokenizer-word-60.json", "train-word-60.bin", "valid-word-60.bin"):
        (d / name).write_bytes((tiny_run["corpus"] / name).read_bytes())
    err = refused(*tiny_argv(d, tmp_path / "ck"))
    assert_error(r"tokenizer-bpe-300.json not found; .* holds the token files of: word-60 \(pass --tokenizer", err)


@pytest.mark.parametrize("sub", ["", "a/b"])
def test_pretrain_out_dir_under_a_file(tiny_run, sub):
    # before: NotADirectoryError traceback from mkdir, after the data was loaded and the model built
    bad = tiny_run["src"] / sub if sub else tiny_run["src"]
    err = refused(*tiny_argv(tiny_run["corpus"], bad, "--max-steps", "1"))
    assert_error(rf"^pretrain.py: error: cannot create the run folder {bad}/.*: {tiny_run['src']} is a file", err)


def test_pretrain_negative_weight_decay(tiny_run):
    # before: accepted (AdamW with weight decay -1 pushes the weights away from zero)
    done = run_pretrain(tiny_run, *BPE300, "--weight-decay", "-1", "--max-steps", "1")
    assert done.returncode != 0
    assert "--weight-decay must be >= 0" in one_error_line(done.stderr, "pretrain.py")


def test_pretrain_too_many_threads_are_capped(tiny_run, tmp_path):
    # before: --threads 100000 killed the process with a segfault (OpenMP could not start the threads)
    m = trained(*tiny_argv(tiny_run["corpus"], tmp_path, "--max-steps", "1", "--threads", "100000"))
    assert m["steps"] == 1
    cores = runtime.usable_cores()  # the process ran on this many threads
    assert f"--threads 100000 is more than the {cores} cores this process may use; using {cores}" in m["stdout"]


def test_pretrain_token_file_with_ids_outside_the_vocabulary(tiny_run, tmp_path):
    # before: "IndexError: index out of range in self" from the embedding, mid-training
    d = tmp_path / "corrupt"
    d.mkdir()
    for name in ("tokenizer-bpe-300.json", "train-bpe-300.bin", "valid-bpe-300.bin", "train.txt", "valid.txt"):
        (d / name).write_bytes((tiny_run["corpus"] / name).read_bytes())
    raw = bytearray((d / "train-bpe-300.bin").read_bytes())
    raw[-20:] = b"\xff" * 20  # uint16 ids 65535 at the last 10 positions
    (d / "train-bpe-300.bin").write_bytes(bytes(raw))
    n = (len(raw) - 64) // 2
    argv = tiny_argv(d, tmp_path / "ck", "--max-steps", "1")
    # the payload checksum (binfile format 2) catches the corruption first
    assert_error(rf"^pretrain.py: error: {d}/train-bpe-300.bin: checksum mismatch", refused(*argv))
    # ids written out of range with a matching checksum (a writer bug, not a flipped bit): the range check
    raw[56:60] = struct.pack("<I", zlib.crc32(bytes(raw[64:])))
    (d / "train-bpe-300.bin").write_bytes(bytes(raw))
    assert_error(
        rf"^pretrain.py: error: {d}/train-bpe-300.bin: token id 65535 at position "
        rf"{n - 10:,} is outside the vocabulary \(vocab_size 300\)",
        refused(*argv),
    )


def test_pretrain_refuses_bad_seed_and_learning_rates():
    # before: numpy's and torch's tracebacks for the seeds; a schedule that rose at the end for --min-lr
    cases = [
        (["--seed", "-1"], "--seed must be in 0 .. 9223372036854775807, got -1"),
        (["--seed", str(10**23)], f"--seed must be in 0 .. 9223372036854775807, got {10**23}"),
        (["--recipe", "gpt2", "--min-lr", "1"], "--min-lr 1.0 is above --lr 0.003 (the peak learning rate)"),
    ]
    for (argv, message), done in zip(cases, run_tools("pretrain", [c[0] for c in cases])):
        assert done.returncode != 0
        assert done.stderr.strip().splitlines()[-1] == f"pretrain.py: error: {message}", argv


def test_a_low_lr_lowers_the_default_min_lr():
    assert dry_run("--recipe", "gpt2", "--lr", "1e-4")["min_lr"] == 1e-4
    args = dry_run()
    assert (args["lr"], args["min_lr"], args["minutes"]) == (3e-3, 3e-4, 10.0)
    assert (args["recipe"], args["optimizer"], args["norm"]) == ("modern", "muon", "rmsnorm")  # the default
    assert dry_run("--max-steps", "5")["minutes"] is None


def test_pretrain_errors_carry_the_tool_name(tiny_run):
    # before: "error: ..." without the tool's name
    assert_error(
        r"^pretrain.py: error: .*already exists", refused(*tiny_argv(tiny_run["corpus"], tiny_run["root"] / "ck"))
    )


def test_load_checkpoint_takes_a_run_folder_as_the_tools_do(tiny_run, tmp_path):
    # before: "checkpoint not found" for a run folder, which bits.py and sample.py accept
    folder = tiny_run["ckpt"].parent
    model, tok, ckpt = load_checkpoint(folder)
    assert ckpt["step"] == torch.load(folder / "best.pt", weights_only=True)["step"]
    with pytest.raises(FileNotFoundError, match=rf"^no best.pt or ckpt.pt in run folder {tmp_path}$"):
        load_checkpoint(tmp_path)


def test_load_checkpoint_on_a_text_file(tiny_run):
    with pytest.raises(CheckpointError, match=r"not a checkpoint file"):
        load_checkpoint(tiny_run["src"])


def test_load_checkpoint_bad_device_is_not_blamed_on_the_file(tiny_run):
    # before: CheckpointError "cannot read checkpoint (corrupt or truncated file?)" for device="banana"
    with pytest.raises(ValueError, match=r"^device 'banana': not a device name") as e:
        load_checkpoint(tiny_run["ckpt"], device="banana")
    assert not isinstance(e.value, CheckpointError)
    model, tok, _ = load_checkpoint(tiny_run["ckpt"], device="cpu")
    assert next(model.parameters()).device.type == "cpu" and tok.kind == "bpe"
