"""bits.py's bits per byte, --eval sets, --diff, --perturb and --vocab-health, run in this process on
tiny_run's corpus (a bpe:300 run and a word:60 run on the same held-out text)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import TINY_MODEL, call_tool, one_error_line

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def runs(tiny_run, tmp_path_factory):
    """tiny_run's bpe:300 checkpoint and a word:60 run (2 steps) on the same corpus folder."""
    out = tmp_path_factory.mktemp("word_run")
    argv = ["--data", str(tiny_run["corpus"]), "--tokenizer", "word:60", "--out-dir", str(out), *TINY_MODEL]
    done = call_tool("pretrain", *argv, "--max-steps", "2")
    assert done.returncode == 0, done.stderr
    [word] = out.glob("*/*/ckpt.pt")
    return {"bpe": tiny_run["ckpt"], "word": word, "corpus": tiny_run["corpus"], "root": tiny_run["root"]}


def bits(*argv):
    done = call_tool("bits", *map(str, argv), "--no-progress", "--device", "cpu", "--threads", "1")
    return done.returncode, done.stdout, done.stderr


def test_bits_per_byte_in_table_and_json_from_the_text(runs, tmp_path):
    from storygpt.eval.bits import read_documents

    out = tmp_path / "b.json"
    rc, text, err = bits(runs["bpe"], runs["word"], "--json", out)
    assert rc == 0, err
    rep = json.loads(out.read_text())
    docs = read_documents(runs["corpus"] / "valid.txt")
    n_bytes = sum(len(d.encode("utf-8")) for d in docs) + len(docs) - 1
    for r in rep["results"]:
        assert r["bytes"] == n_bytes  # the same for the lossless BPE and the lossy word model
        assert r["bits_per_byte"] == pytest.approx(r["nats"] / (math.log(2) * n_bytes), rel=1e-12)
        assert f"{r['bits_per_byte']:.4f}" in text


def test_named_sets_macro_micro(runs, tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("the cat sat on the mat.\n<|endoftext|>\nthe dog ran.\n", encoding="utf-8")
    b.write_text("a bird sang in the old tree near the river, all day long.\n", encoding="utf-8")
    rc, text, err = bits(runs["bpe"], "--eval", f"first={a}", "--eval", f"second={b}", "--json")
    assert rc == 0, err
    rep = json.loads(text)
    [r] = rep["results"]
    s = r["sets"]
    assert rep["sets"] == ["doc-1", "first", "second"]  # valid.txt's one document stays the main figure
    assert s["first"]["characters"] == len("the cat sat on the mat.") + 1 + len("the dog ran.")
    assert r["nats"] == pytest.approx(s["doc-1"]["nats"], rel=1e-12)
    names = ("doc-1", "first", "second")
    bpc = [s[k]["nats"] / (math.log(2) * s[k]["characters"]) for k in names]
    assert r["macro_bits_per_character"] == pytest.approx(np.mean(bpc), rel=1e-12)
    nats, chars = sum(s[k]["nats"] for k in names), sum(s[k]["characters"] for k in names)
    assert r["micro_bits_per_character"] == pytest.approx(nats / (math.log(2) * chars), rel=1e-12)


@pytest.mark.parametrize(
    "argv,words",
    [
        (["--eval", "x={MISSING}"], "--eval x="),
        (["--eval", "x={EMPTY}"], "empty"),
        (["--eval", "x={LATIN1}"], "not UTF-8"),
        (["--eval", "x={GOOD}", "--eval", "x={GOOD}"], "'x' is given twice"),
        (["--perturb", "typos,shouting"], "unknown perturbation 'shouting'"),
        (["--perturb", ""], "no perturbation named"),
        (["--perturb", "case", "--perturb-seed", "-1"], "--perturb-seed must be"),
        (["--block-chars", "0", "--json"], "--block-chars must be >= 1"),
        (["--diff", "{CKPT}", "{CKPT}"], "the same checkpoint twice"),
        (["--diff", "{CKPT}", "{RUN}"], "the same checkpoint twice"),  # the run folder and its ckpt.pt
        (["--save-losses", "{GOOD}/x.npz"], "good.txt is not a folder"),  # was a traceback after measuring
        (["--json", "{GOOD}/x.json"], "good.txt is not a folder"),  # was refused after measuring
        (["--tasks", "cloze", "--task-dir", "{GOOD}/t"], "good.txt is not a folder"),  # was a traceback
    ],
)
def test_bad_input_is_one_line_before_any_model_loads(runs, tmp_path, monkeypatch, argv, words):
    import storygpt
    from storygpt.checkpoint import resolve_checkpoint

    files = {"MISSING": tmp_path / "missing.txt", "EMPTY": tmp_path / "empty.txt", "LATIN1": tmp_path / "l.txt"}
    files["GOOD"] = tmp_path / "good.txt"
    files["EMPTY"].write_text("")
    files["LATIN1"].write_bytes(b"caf\xe9\n")
    files["GOOD"].write_text("hello\n")
    files["RUN"] = Path(runs["bpe"]).parent  # a run folder, and the checkpoint file it stands for
    files["CKPT"] = resolve_checkpoint(files["RUN"])
    argv = [a.format(**files) for a in argv]

    def no_load(*a, **k):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(storygpt, "load_checkpoint", no_load)
    rc, out, err = bits(runs["bpe"], *argv)
    assert rc == 2
    assert words in one_error_line(err, "bits.py")


def test_eval_name_of_a_held_out_set_is_refused(runs, tmp_path):
    # before: --eval doc-1=FILE silently replaced the held-out text's own set doc-1 (and its macro mean)
    good = tmp_path / "good.txt"
    good.write_text("hello\n")
    rc, out, err = bits(runs["bpe"], "--json")
    assert rc == 0, err
    name = next(iter(json.loads(out)["results"][0]["sets"]))
    rc, out, err = bits(runs["bpe"], "--eval", f"{name}={good}")
    assert rc == 2
    assert f"'{name}' is already a set of the held-out text" in one_error_line(err, "bits.py")


def test_diff_attribution_adds_up_and_html(runs, tmp_path):
    page = tmp_path / "diff.html"
    rc, text, err = bits("--diff", runs["bpe"], runs["word"], "--html", page, "--json")
    assert rc == 0, err
    rep = json.loads(text)
    d = rep["diff"]
    by = {r["name"]: r for r in rep["results"]}
    a, b = by[d["a"]], by[d["b"]]
    assert d["total_bits"] == pytest.approx((a["nats"] - b["nats"]) / math.log(2), rel=1e-9)
    assert "word frequency in training text" in d["splits"]
    for rows in d["splits"].values():
        assert abs(sum(r["bits"] for r in rows) - d["total_bits"]) < 1e-9
    assert set(d["intervals"]) >= {"macro", "micro"}
    assert "<span" in page.read_text()


def test_diff_refuses_different_texts(runs, tmp_path):
    from storygpt.eval.bits import BitsResult
    from storygpt.eval.measure import Measured
    from storygpt.eval.sections import diff_section

    r1, r2 = BitsResult(1.0, 3, 10, 0, 1, 1, 10), BitsResult(1.0, 3, 11, 0, 1, 1, 11)
    ma = [Measured(r1, np.ones(3), {}, np.ones(10), True)]
    mb = [Measured(r2, np.ones(3), {}, np.ones(11), True)]

    class T:
        name = "t"

    with pytest.raises(ValueError, match="different texts"):
        diff_section("A", "B", [T()], ma, mb, None, 10, None, 10)


def test_perturb_and_vocab_health(runs):
    rc, text, err = bits(runs["bpe"], "--perturb", "case,unicode", "--block-chars", 200, "--vocab-health", "--json")
    assert rc == 0, err
    rep = json.loads(text)
    rows = rep["perturbations"]["rows"]
    assert [r["perturbation"] for r in rows] == ["case", "unicode"]
    clean = rep["results"][0]["bits_per_character"]
    for r in rows:
        assert r["clean_bits_per_character"] == pytest.approx(clean, rel=1e-9)
        assert r["low"] <= r["change"] <= r["high"]
    [h] = rep["vocab_health"].values()
    assert h["vocab_size"] == 300 and 0 <= h["never_seen"] <= 300
    assert h["intermediate"] is not None


def test_set_blocks_and_saved_losses(runs, tmp_path):
    from storygpt.eval.bits import read_documents

    out = tmp_path / "losses.npz"
    rc, text, err = bits(runs["bpe"], "--block-chars", 100, "--save-losses", out, "--json")
    assert rc == 0, err
    [r] = json.loads(text)["results"]
    saved = np.load(out)
    docs = read_documents(runs["corpus"] / "valid.txt")
    assert len(saved["char_nats"]) == r["characters"] == sum(len(d) for d in docs) + len(docs) - 1
    assert math.fsum(saved["char_nats"]) == pytest.approx(r["nats"], rel=1e-9)
    for name, (lo, hi) in zip(saved["set_names"], saved["set_ranges"]):
        s = r["sets"][str(name)]
        assert sum(s["block_characters"]) == s["characters"] == hi - lo
        assert sum(s["block_nats"]) == pytest.approx(math.fsum(saved["char_nats"][lo:hi]), rel=1e-9)
    # fertility: tokens.py's figure of the same tokenizer on the same documents (tokens per word)
    from storygpt.checkpoint import load_checkpoint
    from storygpt.eval.intrinsic import encode_text, make_text, measure

    tok = load_checkpoint(str(runs["bpe"]), device="cpu")[1]
    t = make_text("valid", "", docs)
    assert r["fertility"] == pytest.approx(measure(tok, t, encode_text(tok, t))["fertility"], rel=1e-12)
    assert r["fertility"] > 1.0
    rc, _, err = bits(runs["bpe"], runs["word"], "--save-losses", out)
    assert rc == 2 and "exactly one checkpoint" in one_error_line(err, "bits.py")


def test_saved_losses_hold_their_texts(runs, tmp_path):
    from storygpt.eval.bits import read_documents
    from storygpt.eval.measure import load_texts

    out = tmp_path / "losses.npz"
    rc, _, err = bits(runs["bpe"], "--save-losses", out)
    assert rc == 0, err
    [t] = load_texts(np.load(out))
    assert t.documents == read_documents(runs["corpus"] / "valid.txt")
    assert [name for name, _ in t.sets] == t.doc_names[: len(t.sets)]


def test_compare_report_sections_from_bits_outputs(runs, tmp_path):
    """storygpt.eval.where.report_sections on bits.py's own outputs: all four sections, parts add up."""
    from storygpt.eval.where import report_sections

    folders = []
    for spec, ckpt in (("bpe:300", runs["bpe"]), ("word:60", runs["word"])):
        folder = tmp_path / spec.replace(":", "-")
        folder.mkdir()
        argv = [ckpt, "--block-chars", 100, "--perturb", "case", "--vocab-health", "--json", folder / "bits.json"]
        rc, _, err = bits(*argv, "--save-losses", folder / "losses.npz")
        assert rc == 0, err
        folders.append((spec, 0, folder))
    text, doc = report_sections(folders, tmp_path, runs["corpus"])
    assert set(doc) == {"sets", "attribution", "robustness", "vocab_health"}
    for heading in (
        "## Evaluation sets",
        "## Where the difference comes from",
        "## Robustness",
        "## Vocabulary health",
    ):
        assert heading in text
    [(other, att)] = doc["attribution"]["pairs"].items()
    for rows in att["splits"].values():
        assert abs(sum(r["bits"] for r in rows) - att["total_bits"]) < 1e-9
    assert list((tmp_path).glob("attribution-*.html"))


def test_diff_says_its_intervals_cover_held_out_blocks_not_seeds(runs):
    # before: nothing said that with one checkpoint (one seed) a side, the intervals resample text blocks only
    rc, text, err = bits("--diff", runs["bpe"], runs["word"], "--block-chars", 100)
    assert rc == 0, err
    [line] = [x for x in text.splitlines() if "not seeds" in x]
    assert "held-out blocks" in line and "one seed" in line and "100" in line
