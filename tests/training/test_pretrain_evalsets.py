"""pretrain.py's evaluation sets and bits per byte in metrics.jsonl: each --eval NAME=PATH set's figure equals
bits.py's measurement of the same characters (storygpt.eval.bits.evaluate_bits), bits per byte counts the
text's UTF-8 bytes, and a bad --eval is one line with nothing written."""

from __future__ import annotations

import math

import pytest
from conftest import call_tool, one_error_line
from pretrain_runs import TINY_FLAGS, make_corpus, rows, run, run_refused

from storygpt.checkpoint import load_checkpoint
from storygpt.eval.bits import count_bytes, evaluate_bits, read_documents, take_characters

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def test_eval_sets_and_bits_per_byte_in_metrics(tmp_path):
    data = make_corpus(tmp_path, kind="bpe")
    extra = tmp_path / "extra.txt"
    extra.write_text("the cat sat on the mat.\n<|endoftext|>\nthe old tree by the river.\n", encoding="utf-8")
    flags = ["--tokenizer", "bpe:300", "--max-steps", "4", "--eval-interval", "4", "--dtype", "float32"]
    run(data, tmp_path / "ck", *flags, "--eval-chars", "300", "--eval", f"cats={extra}")
    ev = [r for r in rows(tmp_path / "ck" / "tiny" / "learned-bpe-300") if r["kind"] == "eval"][-1]
    model, tok, _ = load_checkpoint(tmp_path / "ck" / "tiny" / "learned-bpe-300" / "ckpt.pt")
    valid = take_characters(read_documents(data / "valid.txt"), 300)
    ref = evaluate_bits(model, tok, valid, block_size=16)
    assert ev["val_bpb"] == pytest.approx(ref.nats / (math.log(2) * count_bytes(valid)), rel=1e-5)
    docs = read_documents(extra)
    want = evaluate_bits(model, tok, docs, block_size=16)
    assert list(ev["sets"]) == ["doc-1", "cats"]  # the held-out slice's one document, then --eval's set
    assert ev["sets"]["doc-1"]["val_bpc"] == pytest.approx(ev["val_bpc"], rel=1e-9)
    assert ev["sets"]["cats"]["characters"] == len(docs[0]) + 1 + len(docs[1])
    assert ev["sets"]["cats"]["val_bpc"] == pytest.approx(want.bits_per_character, rel=1e-5)
    assert ev["sets"]["cats"]["val_bpb"] == pytest.approx(want.bits_per_byte, rel=1e-5)


def test_bad_eval_is_one_line_and_nothing_written(tmp_path):
    data = make_corpus(tmp_path)
    (tmp_path / "empty.txt").write_text("")
    for arg, words in ((f"x={tmp_path / 'nope.txt'}", "--eval x="), (f"x={tmp_path / 'empty.txt'}", "empty")):
        err = run_refused(data, tmp_path / "ck", "--max-steps", "2", "--eval", arg)
        assert words in err and len(err.strip().splitlines()) == 1, err
    err = run_refused(
        data,
        tmp_path / "ck",
        "--max-steps",
        "2",
        "--eval",
        f"a={data / 'valid.txt'}",
        "--eval",
        f"a={data / 'valid.txt'}",
    )
    assert "'a' is given twice" in err
    assert not (tmp_path / "ck").exists()
    done = call_tool("pretrain", "--data", data, "--out-dir", tmp_path / "ck", *TINY_FLAGS, "--eval", "x")
    assert done.returncode == 2, done.stderr  # a usage error, as bits.py and compare.py (was 1)
    assert "--eval x: expected NAME=PATH" in one_error_line(done.stderr, "pretrain.py")


def test_eval_name_of_a_held_out_set_is_refused(tmp_path):
    # before: --eval doc-1=FILE replaced the held-out text's own set doc-1 in metrics.jsonl (and its macro mean)
    data = make_corpus(tmp_path)
    (tmp_path / "good.txt").write_text("the cat sat.\n")
    err = run_refused(data, tmp_path / "ck", "--max-steps", "2", "--eval", f"doc-1={tmp_path / 'good.txt'}")
    assert "'doc-1' is already a set of the held-out text" in one_error_line(err, "pretrain.py")
    assert not (tmp_path / "ck").exists()  # no run folder left behind
