"""storygpt.checkpoint: round trips with the same logits, and clear one-line errors for bad checkpoints,
run folders and devices (``tiny_run``: tests/conftest.py, a corpus data.py prepared and a 2-step run on it;
each comment says what happened before the fix)."""

from __future__ import annotations

import re

import pytest
import torch
from pretrain_runs import (
    word_tokenizer,
)

from storygpt.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from storygpt.model import GPT, GPTConfig
from storygpt.tokenizers import WordTokenizer

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


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
