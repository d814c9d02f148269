"""Tests of pretrain.py and storygpt.checkpoint: training, checkpoints, resume, errors, two processes."""
from __future__ import annotations

import hashlib
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
import storygpt.tokenizers
from storygpt.checkpoint import CheckpointError, load_checkpoint, read_checkpoint, save_checkpoint
from storygpt.data import write_tokens
from storygpt.model import GPT, GPTConfig

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import pretrain  # noqa: E402


class StandInTokenizer:
    """Character-level tokenizer with the storygpt.tokenizers interface (to_dict/from_dict/fingerprint...)."""

    kind = "standin"

    def __init__(self, chars):
        self.chars = list(chars)
        self.index = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def train(cls, text):
        return cls(["<|endoftext|>", "<pad>"] + sorted(set(text)))

    @property
    def vocab_size(self):
        return len(self.chars)

    eot_id, pad_id = 0, 1

    def encode(self, text):
        return [self.index[c] for c in text]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)

    def to_dict(self):
        return {"kind": self.kind, "chars": self.chars}

    @classmethod
    def from_dict(cls, d):
        if d.get("kind") != cls.kind:
            raise ValueError(f"unknown tokenizer kind {d.get('kind')!r}")
        return cls(d["chars"])

    def fingerprint(self):
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()


def install_standin(monkeypatch=None):
    def load(path):
        return StandInTokenizer.from_dict(json.loads(Path(path).read_text()))

    for name, fn in (("load", load), ("from_dict", StandInTokenizer.from_dict)):
        if monkeypatch is not None:
            monkeypatch.setattr(storygpt.tokenizers, name, fn, raising=False)
        else:
            setattr(storygpt.tokenizers, name, fn)


@pytest.fixture(autouse=True)
def standin(monkeypatch):
    install_standin(monkeypatch)


TEXT = "the cat sat on the mat. the dog sat on the log. " * 60
TINY_FLAGS = ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "16", "--batch-size", "8",
              "--lr", "1e-2", "--min-lr", "1e-3", "--warmup-steps", "2", "--eval-windows", "8", "--minutes", "100",
              "--no-progress", "--threads", "1"]


def make_corpus(root: Path, name="tiny", valid_text=None, kind="word") -> Path:
    tok = StandInTokenizer.train(TEXT)
    d = root / name
    d.mkdir(parents=True)
    (d / f"tokenizer-{kind}.json").write_text(json.dumps(tok.to_dict()))
    write_tokens(d / f"train-{kind}.bin", np.array(tok.encode(TEXT[: len(TEXT) * 9 // 10])), tok)
    valid = TEXT[len(TEXT) * 9 // 10:] if valid_text is None else valid_text
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
    vocab = StandInTokenizer.train(TEXT).vocab_size
    # from uniform (ln vocab = ln 16 = 2.8 nats) to well under 1.3 nats on held-out text
    assert m["final_valid_loss"] < math.log(vocab) - 1.4, m["history"]
    saved = json.loads((run_dir / "metrics.json").read_text())
    assert saved["final_valid_loss"] == pytest.approx(m["final_valid_loss"]) and saved["steps"] == 40
    assert saved["parameters"] == m["parameters"] > 0 and saved["tokens_per_sec"] > 0
    ckpt = torch.load(run_dir / "ckpt.pt", weights_only=True)
    for key in ("model", "config", "tokenizer", "data_dir", "corpus", "optimizer", "step", "tokens_seen",
                "elapsed", "history", "rng", "args"):
        assert key in ckpt, key
    assert ckpt["step"] == 40 and ckpt["corpus"] == "tiny" and Path(ckpt["data_dir"]).is_absolute()
    assert ckpt["config"]["position"] == "rope" and ckpt["config"]["vocab_size"] == vocab
    assert not any(k.startswith(("module.", "_orig_mod.")) for k in ckpt["model"])
    assert (run_dir / "best.pt").is_file()
    assert not list(run_dir.glob("*.tmp"))
    model, tok, ck = storygpt.load_checkpoint(run_dir / "ckpt.pt")
    assert not model.training and tok.to_dict() == StandInTokenizer.train(TEXT).to_dict()
    x = torch.tensor([tok.encode(TEXT[:17])])
    _, loss = model(x[:, :-1], x[:, 1:])
    assert loss.item() == pytest.approx(m["history"][-1]["train_loss"], abs=0.5)  # the saved weights are the trained ones


def test_run_names_and_refusal_to_overwrite(tmp_path):
    names = {(r, b): pretrain.run_name_for(pretrain.build_parser().parse_args((["--rope"] if r else []) + (["--bpe"] if b else [])))
             for r in (0, 1) for b in (0, 1)}
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


def test_short_validation_file_and_bad_data(tmp_path, capsys):
    data = make_corpus(tmp_path, valid_text="the cat sat.")  # 12 tokens < block_size + 1
    m = run(data, tmp_path / "ck", "--max-steps", "2")
    assert "fewer than one window" in capsys.readouterr().out and math.isfinite(m["final_valid_loss"])
    data = make_corpus(tmp_path, name="one", valid_text="t")
    with pytest.raises(SystemExit, match="valid-word.bin has 1 tokens"):
        run(data, tmp_path / "ck2", "--max-steps", "2")
    with pytest.raises(SystemExit, match=r"tokenizer-bpe.json not found.*data.py --bpe"):
        run(data, tmp_path / "ck2", "--max-steps", "2", "--bpe")
    # token files written by another tokenizer
    other = StandInTokenizer(StandInTokenizer.train(TEXT).chars + ["#"])
    write_tokens(data / "train-word.bin", np.arange(100) % 10, other)
    with pytest.raises(SystemExit, match="train-word.bin: written by another tokenizer"):
        run(data, tmp_path / "ck2", "--max-steps", "2")


# ------------------------------------------------------------ checkpoints
def tiny_checkpoint(vocab_size=None):
    tok = StandInTokenizer.train(TEXT)
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=vocab_size or tok.vocab_size, block_size=16, n_layer=1, n_head=2, n_embd=32,
                       position="rope")
    model = GPT(config)
    return model, {"model": {"module." + k: v for k, v in model.state_dict().items()},
                   "config": config.to_dict(), "tokenizer": tok.to_dict(), "step": 0}


def test_checkpoint_round_trip_same_logits(tmp_path):
    model, ckpt = tiny_checkpoint()
    save_checkpoint(tmp_path / "c.pt", ckpt)
    loaded, tok, ck = load_checkpoint(tmp_path / "c.pt")
    idx = torch.randint(0, tok.vocab_size, (2, 16))
    model.eval()
    assert torch.equal(model(idx)[0], loaded(idx)[0])
    assert isinstance(tok, StandInTokenizer) and ck["step"] == 0 and not loaded.training


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
    bad[mid: mid + 64] = b"\xff" * 64
    (tmp_path / "flipped.pt").write_bytes(bytes(bad))
    with pytest.raises(CheckpointError, match=r"flipped\.pt"):
        load_checkpoint(tmp_path / "flipped.pt")
    _, wrong = tiny_checkpoint(vocab_size=40)
    save_checkpoint(tmp_path / "vocab.pt", wrong)
    with pytest.raises(CheckpointError, match=r"vocab\.pt.*vocab_size 16 does not match the model's vocab_size 40"):
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
    launcher = tmp_path / "launch.py"
    launcher.write_text(
        "import sys\n"
        f"sys.path[:0] = [{str(REPO)!r}, {str(Path(__file__).parent)!r}]\n"
        "import test_pretrain\n"
        "test_pretrain.install_standin()\n"
        "import pretrain\n"
        "pretrain.main(sys.argv[1:])\n"
    )
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone", str(launcher),
           "--data", str(data), "--out-dir", str(tmp_path / "ck"), *TINY_FLAGS, "--max-steps", "5",
           "--eval-interval", "5", "--device", "cpu"]
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
