"""Quoted error text is never cut mid-sentence, mid-URL or mid-path (issue 47; storygpt.cli.shorten)."""

from pathlib import Path

import pytest
import torch

from storygpt.cli import LIMIT, first_line, shorten

URL = "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe"


def test_shorten_keeps_lines_up_to_the_limit_whole():
    line = "x " * (LIMIT // 2)
    assert shorten(line) == line.strip()
    assert first_line(ValueError(f"first line {URL}\nsecond")) == f"first line {URL}"
    assert first_line(ValueError("")) == "ValueError"


def test_shorten_cuts_a_huge_line_at_a_sentence_then_a_word_never_in_a_url():
    sentence = "The download failed for " + URL + "."
    huge = " ".join([sentence] * 12)  # about 1,200 characters
    out = shorten(huge)
    assert out.endswith(". ...") and len(out) <= LIMIT + 4
    assert out[: -len(" ...")].split(". ")[-1] == sentence[:-1] + "."
    words = ("word " * 80 + URL + " tail " * 40).strip()  # no sentence end: cut before a word
    out = shorten(words)
    assert out.endswith(" ...") and len(out) <= LIMIT + 4
    assert all(w in {"word", "tail", "...", URL} for w in out.split())
    assert shorten("/p/" + "a" * 900) == "/p/" + "a" * 900  # one huge path: kept whole


def test_torch_reason_keeps_a_long_line_whole():
    from storygpt.checkpoint import torch_reason

    key = "/data/runs/" + "a" * 200 + "/extra.weight"  # before: cut at 200 characters, inside the path
    m = torch.nn.Linear(2, 2)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict({**m.state_dict(), key: torch.zeros(1)})
    assert torch_reason(e.value) == f'Unexpected key(s) in state_dict: "{key}".'


def test_a_truncated_checkpoint_is_one_short_line(tmp_path):
    """Before: torch's four sentences of advice after the cause (a 500-character line from compare.py)."""
    from storygpt.checkpoint import CheckpointError, read_checkpoint

    path = tmp_path / "ckpt.pt"
    torch.save({"model": torch.nn.Linear(64, 64).state_dict()}, path)
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(CheckpointError) as e:
        read_checkpoint(path)
    assert str(e.value) == (
        f"{path}: cannot read checkpoint (corrupt or truncated file?): RuntimeError: PytorchStreamReader failed "
        "reading zip archive: failed finding central directory."
    )


def test_tiktoken_offline_message_keeps_the_url(monkeypatch, tmp_path):
    tiktoken = pytest.importorskip("tiktoken")
    from storygpt.tokenizers.interop import InteropError, from_tiktoken

    why = f"Max retries exceeded with url: {URL} (Caused by NameResolutionError: cannot resolve the host)"

    def offline(name):  # before: the line was cut at 120 characters, inside the URL
        raise ConnectionError(f"{why}\nmore")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(InteropError) as e:
        from_tiktoken("gpt2")
    assert f"(ConnectionError: {why}); TIKTOKEN_CACHE_DIR={tmp_path} does not hold them" in str(e.value)


def test_bad_stored_tokenizer_on_resume_names_it_whole(tmp_path):
    from storygpt.train.resume import check_stored_tokenizer
    from storygpt.train.runfolder import RunError

    kind = "k" * 250 + "-end"  # before: the message was cut at 200 characters, before the list of kinds
    ckpt = {"tokenizer": {"format": "storygpt-tokenizer", "version": 1, "kind": kind}}
    with pytest.raises(RunError) as e:
        check_stored_tokenizer(ckpt, Path(tmp_path / "ckpt.pt"), None, tmp_path)
    msg = str(e.value)
    assert f"{kind}' (expected one of ['bpe', 'hf', 'sp', 'superbpe', 'word'])" in msg
    assert msg.endswith("; the checkpoint is kept unchanged") and "\n" not in msg
