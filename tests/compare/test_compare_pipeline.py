"""compare.py's pieces for real: bits.py --json FILE, the real pipeline (data.py -> pretrain.py -> bits.py) on a
tiny corpus, token files made with other BPE options, and --rerun of malformed or older reports.

Split from test_compare.py (issue 47: no file over 650 lines).
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys

import pytest
from conftest import REPO, run_tool

from storygpt.compare.settings import (
    stale_token_files,
)

pytest.importorskip("matplotlib")

sys.path.insert(0, str(REPO / "tests" / "tools"))  # test_bits.py lives with the tools' tests
import test_bits as kit  # noqa: E402  (make_run, story_docs, write_docs)
from test_compare import assert_png, compare, error_line  # noqa: E402


def test_bits_json_file(tmp_path):
    """bits.py --json FILE writes the per-model rows and still prints the table."""
    kit.real_pieces()
    data_dir = tmp_path / "data" / "stories"
    data_dir.mkdir(parents=True)
    train = kit.story_docs(30, 1)
    kit.write_docs(data_dir / "valid.txt", kit.story_docs(3, 2))
    ck = kit.make_run(tmp_path / "bpe-run", "bpe", data_dir, "stories", train, steps=2)
    out_file = tmp_path / "out" / "bits.json"
    done = run_tool("bits", ck, "--json", out_file, "--device", "cpu", "--chars", "300", "--no-progress")
    out = done.stdout
    assert done.returncode == 0 and "bits/char" in out, done.stderr  # the table is printed too
    doc = json.loads(out_file.read_text())
    assert doc["characters"] == 300
    (row,) = doc["results"]
    assert row["name"] == "bpe-run" and row["tokenizer"] == "bpe" and row["vocab_size"] == 300
    for key in ("parameters", "tokens", "characters_per_token", "unknown_share", "round_trip_share"):
        assert key in row
    # the documents the first 300 characters reach (one character per boundary): 67 + 1 + 153 + 1 + 78
    used, documents = 0, 0
    for d in kit.story_docs(3, 2):
        if used + (documents > 0) >= 300:
            break
        used += (documents > 0) + len(d)
        documents += 1
    assert documents == 3
    gaps = documents - 1  # boundaries: one character and one end-of-document token each, not counted
    assert row["characters_per_token"] == pytest.approx((300 - gaps) / (row["tokens"] - gaps), rel=1e-12)
    assert f"{row['bits_per_character']:.4f}" in out
    done = run_tool("bits", "--json", ck, ck)
    err = done.stderr
    assert done.returncode == 2 and "not a JSON file name" in err and err.count("\n") == 1


# ------------------------------------------------------------------ the real pipeline
def _has_flags(tool: str, *flags: str) -> bool:
    try:
        text = subprocess.run(
            [sys.executable, str(REPO / tool), "--help"], capture_output=True, text=True, timeout=120
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return all(f in text for f in flags)


@pytest.mark.slow  # about a minute: nine tool processes (each imports torch) and two compare.py runs
def test_compare_end_to_end(tmp_path):
    corpus = tmp_path / "tiny.txt"
    kit.write_docs(corpus, kit.story_docs(80, 1))
    argv = [
        sys.executable,
        str(REPO / "compare.py"),
        "byte",
        "bpe:300",
        "word:60",
        "--train-file",
        str(corpus),
        "--budget-flops",
        "2e9",
        "--n-layer",
        "1",
        "--n-head",
        "2",
        "--n-embd",
        "32",
        "--block-size",
        "32",
        "--batch-size",
        "4",
        "--bits-chars",
        "2000",
        "--block-chars",
        "500",
        "--seeds",
        "2",
        "--device",
        "cpu",
        "--pretrain-args",
        "--threads 1",
        "--jobs",
        "1",
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    first = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    rep = tmp_path / "reports" / "tiny-flops2e9-2seeds"
    rows = list(csv.DictReader((rep / "results.csv").open()))
    assert [r["spec"] for r in rows] == ["byte", "byte", "bpe:300", "bpe:300", "word:60", "word:60"]
    assert [int(r["seed"]) for r in rows] == [1337, 1338] * 3
    assert {r["stop_reason"] for r in rows} == {"flops"}
    assert len({int(r["heldout_chars"]) for r in rows}) == 1
    for r in rows:
        assert abs(float(r["flops"]) - 2e9) <= float(r["flops"]) / int(r["steps"])  # stopped at the budget
        assert float(r["bits_per_char"]) > 0
    assert rows[4]["lossy"] == "True" and float(rows[0]["round_trip_share"]) == 1.0
    for name in ("bpc_vs_flops.png", "bpc_vs_vocab.png", "chars_per_token_vs_vocab.png"):
        assert_png(rep / name)
    doc = json.loads((rep / "results.json").read_text())
    for r in doc["results"]:
        assert len(r["block_nats"]) == math.ceil(r["heldout_chars"] / 500) and r["block_characters"][0] == 500
    for r in doc["results"]:  # the blocks add up to the whole measurement
        total = sum(r["block_nats"]) / (math.log(2) * sum(r["block_characters"]))
        assert total == pytest.approx(r["bits_per_char"], rel=1e-6)
    (v,) = doc["verdicts"]
    assert "word:60" in v["ineligible"] and v["best"] != "word:60"
    ckpts = sorted((tmp_path / "checkpoints").rglob("ckpt.pt"))
    assert len(ckpts) == 6
    before = {p: p.stat().st_mtime_ns for p in ckpts}

    second = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert second.returncode == 0, second.stderr[-2000:]
    assert second.stdout.count("done before") == 6
    assert {p: p.stat().st_mtime_ns for p in ckpts} == before  # no training, no new checkpoint


def test_token_files_made_with_other_bpe_options_are_made_again(tmp_path):
    # before: data.py --tokenizer bpe:300 --min-frequency 99999999 left 0-merge files that compare reused as bpe:300
    stats = {"kind": "bpe", "pattern": "gpt4", "tie_break": "smallest_ids", "min_frequency": 99999999}
    (tmp_path / "stats-bpe-300.json").write_text(json.dumps(stats))
    why = stale_token_files(tmp_path, "bpe-300", [])
    assert why == "min_frequency 99999999 (this comparison: 1)"
    assert stale_token_files(tmp_path, "bpe-300", ["--min-frequency", "99999999"]) is None
    why = stale_token_files(tmp_path, "bpe-300", ["--pattern", "gpt2", "--min-frequency=99999999"])
    assert why == "pattern 'gpt4' (this comparison: 'gpt2')"
    (tmp_path / "stats-word-10.json").write_text(json.dumps({"kind": "word", "min_frequency": None}))
    assert stale_token_files(tmp_path, "word-10", []) is None


@pytest.mark.parametrize(
    "measurement, words",
    [
        ([1, 2], "meta.measurement is not an object"),
        ({"bits_chars": "abc", "perturb": None}, "bits_chars 'abc' is not a non-negative integer"),
        ({"bits_chars": -5, "perturb": None}, "bits_chars -5 is not a non-negative integer"),
        ({"bits_chars": 0, "perturb": 5}, "perturb 5 is not a string of kinds"),
        ({"bits_chars": 0, "perturb": "bogus"}, "unknown perturbation 'bogus'"),
    ],
)
def test_rerun_of_a_malformed_measurement_is_one_line(tmp_path, measurement, words):
    doc = {"meta": {"name": "x", "argv": ["byte", "--budget-flops", "1e9"], "measurement": measurement}, "results": []}
    (tmp_path / "results.json").write_text(json.dumps(doc))
    err = error_line(compare(tmp_path, "--rerun", str(tmp_path)))
    assert err.startswith(f"compare.py: error: --rerun {tmp_path}: results.json's ") and words in err


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "no results.json there"),
        ("{bad", "REPORT/results.json is not valid JSON (corrupt?)"),
        (b"\xff\xfe{}", "REPORT/results.json is not valid JSON (corrupt?)"),  # not UTF-8
        ("[1]", "REPORT/results.json has no command (meta.argv)"),
        ('{"meta": {}}', "REPORT/results.json has no command (meta.argv)"),
        ('{"meta": {"argv": "byte"}}', "REPORT/results.json has no command (meta.argv)"),
        ('{"meta": {"argv": ["byte", 3]}}', "REPORT/results.json has no command (meta.argv)"),
    ],
)
def test_rerun_names_what_is_wrong_with_results_json(tmp_path, content, words):
    """Before: "no results.json with the command (meta.argv) there" for each of these."""
    report = tmp_path / "rep"
    report.mkdir()
    if content is not None:
        path = report / "results.json"
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    err = error_line(compare(tmp_path, "--rerun", str(report)))
    assert err == f"compare.py: error: --rerun {report}: {words.replace('REPORT', str(report))}" + (
        ": made by an older compare.py or edited" if "no command" in words else ""
    )
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["rep"] + ["results.json"] * (content is not None)


@pytest.mark.parametrize(
    "stored, reason",
    [
        (["--seeds", "abc"], "--seeds abc: give a number of seeds (e.g. 3), auto or auto:MAX (e.g. auto:6)"),
        (["--seeds", "0"], "--seeds must be in 1 .. 1000, got 0"),
        (["--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["--recipe", "llama"], "argument --recipe: invalid choice: 'llama' (choose from 'gpt2', 'modern')"),
        (["--budget-flops", "1e9,x"], "--budget-flops 1e9,x: 'x' is not a number"),
        (["--sizes", "huge"], "--sizes: unknown preset 'huge'"),
    ],
)
def test_rerun_of_a_command_not_valid_today_says_it_is_the_reports(tmp_path, stored, reason):
    """A bad flag in meta.argv was reported as if typed (with argparse's usage lines): now one line naming it."""
    doc = {"meta": {"name": "x", "argv": ["byte", *stored]}, "results": []}
    (tmp_path / "results.json").write_text(json.dumps(doc))
    err = error_line(compare(tmp_path, "--rerun", str(tmp_path)))
    why = "the report's command (results.json meta.argv) is not valid today"
    assert err.startswith(f"compare.py: error: --rerun {tmp_path}: {why}: {reason}")
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_rerun_with_another_flag_written_with_equals_is_refused(tmp_path):
    doc = {"meta": {"name": "x", "argv": ["byte"]}, "results": []}
    (tmp_path / "results.json").write_text(json.dumps(doc))
    err = error_line(compare(tmp_path, f"--rerun={tmp_path}", "--seeds=3"))
    assert err == "compare.py: error: --rerun takes no other arguments (got --seeds=3)"


def test_rerun_of_an_old_report_keeps_its_own_measurement_flags():
    from storygpt.compare.settings import measurement_flags

    assert measurement_flags(None, ["byte"]) == ["--bits-chars", "100000", "--perturb", "none"]
    assert measurement_flags(None, ["byte", "--bits-c=5000"]) == ["--perturb", "none"]
    done = {"bits_chars": 0, "block_chars": 1000, "perturb": "case", "eval": []}
    assert measurement_flags(done, ["byte"]) == ["--bits-chars", "0", "--block-chars", "1000", "--perturb", "case"]
