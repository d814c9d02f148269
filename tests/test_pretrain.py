"""Tests of pretrain.py and storygpt.checkpoint: training, checkpoints, resume, errors, two processes."""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import storygpt
from storygpt.checkpoint import CheckpointError, load_checkpoint, read_checkpoint, save_checkpoint
from storygpt.data import write_tokens
from storygpt.model import GPT, GPTConfig
from storygpt.tokenizers import BPETokenizer, WordTokenizer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import pretrain  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def word_tokenizer():
    return WordTokenizer.train(TEXT)


TEXT = "the cat sat on the mat. the dog sat on the log. " * 60
TINY_FLAGS = [
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
    "--minutes",
    "100",
    "--no-progress",
    "--threads",
    "1",
]


def make_corpus(root: Path, name="tiny", valid_text=None, kind="word") -> Path:
    tok = word_tokenizer() if kind == "word" else BPETokenizer.train(TEXT, 300, backend="reference")
    d = root / name
    d.mkdir(parents=True)
    tok.save(d / f"tokenizer-{kind}.json")
    write_tokens(d / f"train-{kind}.bin", np.array(tok.encode(TEXT[: len(TEXT) * 9 // 10])), tok)
    valid = TEXT[len(TEXT) * 9 // 10 :] if valid_text is None else valid_text
    write_tokens(d / f"valid-{kind}.bin", np.array(tok.encode(valid), dtype=np.int64), tok)
    return d


def run(data: Path, out: Path, *extra: str) -> dict:
    return pretrain.main(["--data", str(data), "--out-dir", str(out), *TINY_FLAGS, *extra])


# ------------------------------------------------------------- training
def test_pretrain_loss_falls_and_writes_checkpoints(tmp_path, capsys):
    data = make_corpus(tmp_path)
    m = run(data, tmp_path / "ck", "--max-steps", "40", "--eval-interval", "20", "--rope")
    run_dir = tmp_path / "ck" / "pretrain-rope"
    out = capsys.readouterr().out
    assert "held-out loss" in out and "tokens/s" in out and "parameters" in out
    assert m["steps"] == 40 and m["tokens_seen"] == 40 * 8 * 16
    assert [h["step"] for h in m["history"]] == [20, 40]
    vocab = word_tokenizer().vocab_size
    # from uniform (ln vocab = ln 11 = 2.4 nats) to under 1 nat on held-out text
    assert m["final_valid_loss"] < math.log(vocab) - 1.4, m["history"]
    saved = json.loads((run_dir / "metrics.json").read_text())
    assert saved["final_valid_loss"] == pytest.approx(m["final_valid_loss"]) and saved["steps"] == 40
    assert saved["parameters"] == m["parameters"] > 0 and saved["tokens_per_sec"] > 0
    ckpt = torch.load(run_dir / "ckpt.pt", weights_only=True)
    for key in (
        "model",
        "config",
        "tokenizer",
        "data_dir",
        "corpus",
        "optimizer",
        "step",
        "tokens_seen",
        "elapsed",
        "history",
        "rng",
        "args",
    ):
        assert key in ckpt, key
    assert ckpt["step"] == 40 and ckpt["corpus"] == "tiny" and Path(ckpt["data_dir"]).is_absolute()
    assert ckpt["config"]["position"] == "rope" and ckpt["config"]["vocab_size"] == vocab
    assert not any(k.startswith(("module.", "_orig_mod.")) for k in ckpt["model"])
    assert (run_dir / "best.pt").is_file()
    assert not list(run_dir.glob("*.tmp"))
    model, tok, ck = storygpt.load_checkpoint(run_dir / "ckpt.pt")
    assert not model.training and tok.to_dict() == word_tokenizer().to_dict()
    x = torch.tensor([tok.encode(TEXT)[:17]])
    _, loss = model(x[:, :-1], x[:, 1:])
    assert loss.item() == pytest.approx(
        m["history"][-1]["train_loss"], abs=0.5
    )  # the saved weights are the trained ones


def test_bpe_rope_run_and_load(tmp_path):
    data = make_corpus(tmp_path, kind="bpe")
    m = run(data, tmp_path / "ck", "--bpe", "--rope", "--max-steps", "3", "--eval-interval", "3")
    assert m["steps"] == 3 and m["tokenizer"] == "bpe" and m["position"] == "rope"
    model, tok, ckpt = load_checkpoint(tmp_path / "ck" / "pretrain-rope-bpe" / "best.pt")
    assert isinstance(tok, BPETokenizer) and tok.kind == "bpe" and tok.vocab_size == model.config.vocab_size
    assert tok.fingerprint() == BPETokenizer.train(TEXT, 300, backend="reference").fingerprint()
    assert tok.decode(tok.encode("the dog sat.")) == "the dog sat."
    out = model.generate(torch.tensor([tok.encode("the cat")]), 5, seed=0)
    assert out.shape[1] == len(tok.encode("the cat")) + 5


def test_run_names_and_refusal_to_overwrite(tmp_path):
    names = {
        (r, b): pretrain.run_name_for(
            pretrain.build_parser().parse_args((["--rope"] if r else []) + (["--bpe"] if b else []))
        )
        for r in (0, 1)
        for b in (0, 1)
    }
    assert names == {(0, 0): "pretrain", (1, 0): "pretrain-rope", (1, 1): "pretrain-rope-bpe", (0, 1): "pretrain-bpe"}
    data = make_corpus(tmp_path)
    run(data, tmp_path / "ck", "--max-steps", "2", "--eval-interval", "2")
    before = (tmp_path / "ck" / "pretrain" / "ckpt.pt").read_bytes()
    with pytest.raises(SystemExit, match="--resume"):
        run(data, tmp_path / "ck", "--max-steps", "2")
    assert (tmp_path / "ck" / "pretrain" / "ckpt.pt").read_bytes() == before
    m = run(data, tmp_path / "ck", "--max-steps", "3", "--force")
    assert m["steps"] == 3
    m = run(data, tmp_path / "ck", "--max-steps", "1", "--run-name", "other")
    assert (tmp_path / "ck" / "other" / "ckpt.pt").is_file()


def test_resume_equals_uninterrupted_run(tmp_path, monkeypatch):
    data = make_corpus(tmp_path)
    flags = ["--max-steps", "8", "--eval-interval", "4", "--dropout", "0.1"]
    full = run(data, tmp_path / "a", *flags)

    real_save = pretrain.save_checkpoint

    class Crash(Exception):
        pass

    def save_then_crash(path, ckpt):
        real_save(path, ckpt)
        if ckpt["step"] == 4 and Path(path).name == "ckpt.pt":
            raise Crash()

    monkeypatch.setattr(pretrain, "save_checkpoint", save_then_crash)
    with pytest.raises(Crash):
        run(data, tmp_path / "b", *flags)
    monkeypatch.setattr(pretrain, "save_checkpoint", real_save)
    mid = read_checkpoint(tmp_path / "b" / "pretrain" / "ckpt.pt")
    assert mid["step"] == 4 and len(mid["history"]) == 1
    with pytest.raises(SystemExit, match="already exists"):
        run(data, tmp_path / "b", *flags)
    resumed = run(data, tmp_path / "b", *flags, "--resume")
    assert resumed["steps"] == 8 == full["steps"]
    a = torch.load(tmp_path / "a" / "pretrain" / "ckpt.pt", weights_only=True)
    b = torch.load(tmp_path / "b" / "pretrain" / "ckpt.pt", weights_only=True)
    assert b["elapsed"] >= mid["elapsed"]
    for k in a["model"]:
        torch.testing.assert_close(a["model"][k], b["model"][k], rtol=1e-5, atol=1e-6)
    for k, st in a["optimizer"]["state"].items():
        assert int(st["step"]) == int(b["optimizer"]["state"][k]["step"]) == 8
        torch.testing.assert_close(st["exp_avg_sq"], b["optimizer"]["state"][k]["exp_avg_sq"], rtol=1e-4, atol=1e-9)
    assert [h["step"] for h in b["history"]] == [4, 8]
    assert b["history"][-1]["valid_loss"] == pytest.approx(a["history"][-1]["valid_loss"], rel=1e-5)


def test_ctrl_c_writes_a_checkpoint_and_resume_without_one_fails(tmp_path, monkeypatch):
    data = make_corpus(tmp_path)
    with pytest.raises(SystemExit, match="no checkpoint"):
        run(data, tmp_path / "ck", "--resume")
    real = pretrain.windows_to_batch
    calls = []

    def interrupt_on_sixth_batch(*a, **kw):
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(pretrain, "windows_to_batch", interrupt_on_sixth_batch)
    with pytest.raises(SystemExit) as e:
        run(data, tmp_path / "ck", "--max-steps", "20", "--eval-interval", "100")
    assert e.value.code == 130
    assert read_checkpoint(tmp_path / "ck" / "pretrain" / "ckpt.pt")["step"] == 5
    monkeypatch.setattr(pretrain, "windows_to_batch", real)
    assert run(data, tmp_path / "ck", "--resume", "--max-steps", "7")["steps"] == 7


def test_short_validation_file_and_bad_data(tmp_path, capsys):
    data = make_corpus(tmp_path, valid_text="the cat sat.")  # 12 tokens < block_size + 1
    m = run(data, tmp_path / "ck", "--max-steps", "2")
    assert "fewer than one window" in capsys.readouterr().out and math.isfinite(m["final_valid_loss"])
    data = make_corpus(tmp_path, name="one", valid_text="t")
    with pytest.raises(SystemExit, match="valid-word.bin has 1 tokens"):
        run(data, tmp_path / "ck2", "--max-steps", "2")
    with pytest.raises(SystemExit, match="n_head"):
        run(tmp_path / "tiny", tmp_path / "ck2", "--n-embd", "30", "--n-head", "4")
    with pytest.raises(SystemExit):
        run(data, tmp_path / "ck2", "--eval-interval", "0")
    with pytest.raises(SystemExit, match=r"tokenizer-bpe.json not found.*data.py --bpe"):
        run(data, tmp_path / "ck2", "--max-steps", "2", "--bpe")
    # token files written by another tokenizer
    other = WordTokenizer.train(TEXT + " bird")
    write_tokens(data / "train-word.bin", np.arange(100) % 10, other)
    with pytest.raises(SystemExit, match="train-word.bin: written by another tokenizer"):
        run(data, tmp_path / "ck2", "--max-steps", "2")


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
    assert proc.stdout.count("done:") == 1  # only rank 0 logs
    ckpt = torch.load(tmp_path / "ck" / "pretrain" / "ckpt.pt", weights_only=True)
    assert ckpt["step"] == 5 and ckpt["tokens_seen"] == 5 * 8 * 16 * 2
    ranks = ckpt["rng"]["ranks"]
    assert ckpt["rng"]["world_size"] == 2 and ranks[0]["batch"] != ranks[1]["batch"]  # different batches per rank
    metrics = json.loads((tmp_path / "ck" / "pretrain" / "metrics.json").read_text())
    assert metrics["processes"] == 2 and math.isfinite(metrics["final_valid_loss"])


def test_resume_with_the_same_data_folder_named_relatively_gives_no_warning(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    make_corpus(tmp_path, name="tiny")
    make_corpus(tmp_path, name="other")
    flags = ["--data", "tiny", "--out-dir", "ck", *TINY_FLAGS, "--eval-interval", "2"]
    pretrain.main([*flags, "--max-steps", "2"])
    ckpt = read_checkpoint(tmp_path / "ck" / "pretrain" / "ckpt.pt")
    assert ckpt["args"]["data"] == ckpt["data_dir"] == str((tmp_path / "tiny").resolve())
    capsys.readouterr()
    for steps in ("4", "6"):  # the first resume reads a first run's checkpoint, the second a continued run's
        pretrain.main([*flags, "--max-steps", steps, "--resume"])
        assert "keeps the run's own" not in capsys.readouterr().out
    pretrain.main([*flags[:1], str(tmp_path / "tiny"), *flags[2:], "--max-steps", "7", "--resume"])
    assert "keeps the run's own" not in capsys.readouterr().out
    m = pretrain.main(["--data", "other", *flags[2:], "--max-steps", "8", "--resume"])
    assert "warning: --resume keeps the run's own --data" in capsys.readouterr().out
    assert m["steps"] == 8
    assert read_checkpoint(tmp_path / "ck" / "pretrain" / "ckpt.pt")["data_dir"] == str((tmp_path / "tiny").resolve())


def test_resume_with_the_budget_spent_keeps_the_figures(tmp_path, capsys):
    data = make_corpus(tmp_path)
    first = run(data, tmp_path / "ck", "--max-steps", "4", "--eval-interval", "2")
    metrics_path = tmp_path / "ck" / "pretrain" / "metrics.json"
    ckpt = read_checkpoint(tmp_path / "ck" / "pretrain" / "ckpt.pt")
    # tokens/s over the run: tokens seen / seconds in training steps, both recorded in the checkpoint
    assert first["tokens_per_sec"] == pytest.approx(4 * 8 * 16 / ckpt["train_time"])
    saved = json.loads(metrics_path.read_text())
    capsys.readouterr()
    again = run(data, tmp_path / "ck", "--max-steps", "4", "--resume")
    out = capsys.readouterr().out
    assert "budget already spent (4 of 4 steps): nothing to train" in out and "0 tokens/s" not in out
    assert again["tokens_per_sec"] == pytest.approx(first["tokens_per_sec"]) and again["steps"] == 4
    after = json.loads(metrics_path.read_text())
    assert after["tokens_per_sec"] == pytest.approx(saved["tokens_per_sec"]) and saved["tokens_per_sec"] > 0
    assert after["history"] == saved["history"] and after["final_valid_loss"] == saved["final_valid_loss"]
    run(data, tmp_path / "ck", "--minutes", "0", "--resume")
    out = capsys.readouterr().out
    assert f"budget already spent ({ckpt['elapsed']:.0f} s of 0 s): nothing to train" in out
    assert json.loads(metrics_path.read_text())["tokens_per_sec"] == pytest.approx(saved["tokens_per_sec"])
    # an older checkpoint without "train_time": the figure in metrics.json is kept
    del ckpt["train_time"]
    save_checkpoint(tmp_path / "ck" / "pretrain" / "ckpt.pt", ckpt)
    assert run(data, tmp_path / "ck", "--max-steps", "4", "--resume")["tokens_per_sec"] == pytest.approx(
        saved["tokens_per_sec"]
    )


def test_help_states_each_default_once():
    import data as data_cli
    import sample as sample_cli

    for parser in (pretrain.build_parser(), data_cli.build_parser(), sample_cli.build_parser()):
        text = " ".join(parser.format_help().split())
        assert "(default: None)" not in text and "(default: False)" not in text
        for action in parser._actions:
            if not action.option_strings or action.help is None:
                continue
            own = parser.formatter_class("x")._get_help_string(action) % {**vars(action), "prog": "x"}
            assert own.lower().count("default") <= 1, (action.dest, own)
            has_default = action.default not in (None, False, "", argparse.SUPPRESS)
            assert "default" in own.lower() or not has_default, (action.dest, own)  # stated where there is one
    text = " ".join(pretrain.build_parser().format_help().split())
    assert (
        "--minutes MINUTES training time budget in minutes (wall clock, including evaluations) (default: 10.0)" in text
    )
    assert "(default: gpt4; docs/data.md explains the choice)" in " ".join(
        data_cli.build_parser().format_help().split()
    )
