"""compare.py: the report from run folders, skipping and resuming runs, one-line errors, bits.py --json FILE.

compare.py runs as a subprocess (conftest.run_tool).  Most tests build run folders by hand (tests/fake_runs.py:
summary.json, bits.json, metrics.jsonl as pretrain.py and bits.py write them, docs/design.md) and run compare.py
with a fault of tests/tool_faults.py in place of its subprocess runner (``record_tools`` records each command
and leaves fake files, ``tool_fails``), so no model is trained.  The pure helpers are tested from
storygpt.comparison.  One test runs the real pipeline (data.py -> pretrain.py -> bits.py) on a tiny corpus;
it needs pretrain.py --tokenizer and --budget-flops and data.py --tokenizer.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, one_error_line, run_tool, tool_parser
from fake_runs import FAKE, FLOPS, HELDOUT_CHARS, write_fake_run

from storygpt.comparison import (
    budget_label,
    estimate_flops_per_token,
    eval_interval_for,
    shape_of,
    stale_token_files,
)

pytest.importorskip("matplotlib")

import test_bits as kit  # noqa: E402  (make_run, story_docs, write_docs)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def compare(tmp_path: Path, *argv, fault: str | None = None) -> subprocess.CompletedProcess:
    """``python compare.py ARGV`` in ``tmp_path`` (through ``fault`` when one is named)."""
    return run_tool("compare", *argv, cwd=tmp_path, fault=fault)


def recorded(path: Path) -> list[tuple[str, list[str]]]:
    """The commands the ``record_tools`` fault wrote to ``path``: (tool, arguments after its path), in order."""
    if not path.exists():
        return []
    return [(r["tool"], r["args"]) for r in map(json.loads, path.read_text().splitlines())]


def error_line(done: subprocess.CompletedProcess) -> str:
    """The one ``compare.py: error: ...`` line of a run that failed with exit status 2 (nothing else on stderr)."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    line = one_error_line(done.stderr, "compare.py")
    assert done.stderr == line + "\n", done.stderr
    return line


def assert_png(path: Path) -> None:
    import matplotlib.image

    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 1000, path
    img = matplotlib.image.imread(str(path))
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100, path


# ------------------------------------------------------------------ hand-made run folders
@pytest.fixture
def layout(tmp_path):
    """compare.py's working folder (``cwd``, tmp_path), a tiny corpus file, the argv and folders of a
    3-tokenizer comparison, and ``record``: the file the ``record_tools`` fault writes."""
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("one two three\n<|endoftext|>\nfour five six\n<|endoftext|>\nseven eight\n")
    argv = ["byte", "bpe:512", "word:200", "--train-file", str(corpus), "--budget-flops", str(FLOPS)]
    runs = tmp_path / "checkpoints" / "compare" / "tiny-flops1e11" / "tiny"
    return dict(
        cwd=tmp_path,
        argv=argv,
        runs={s: runs / f"rope-{s.replace(':', '-')}" for s in FAKE},
        report=tmp_path / "reports" / "tiny-flops1e11",
        data=tmp_path / "data" / "tiny",
        record=tmp_path / "tools.jsonl",
    )


def test_a_report_folder_that_cannot_be_written_is_one_error(layout):
    # before: a PermissionError traceback from the atomic writer of report.md
    for spec, folder in layout["runs"].items():
        write_fake_run(folder, spec)
    err = error_line(compare(layout["cwd"], *layout["argv"], fault="read_only_report"))
    assert err.startswith("compare.py: error: cannot write the report in ")
    assert err.endswith(f"{layout['report'].name}: Permission denied; the runs are finished, run again")


def test_report_from_finished_runs_and_nothing_rerun(layout):
    for spec, folder in layout["runs"].items():
        write_fake_run(folder, spec)
    done = compare(layout["cwd"], *layout["argv"], fault=f"record_tools:{layout['record']}")
    assert done.returncode == 0, done.stderr
    assert recorded(layout["record"]) == []  # no tool ran
    assert done.stdout.count("done before") == 3

    rep = layout["report"]
    for name in ("bpc_vs_flops.png", "bpc_vs_vocab.png", "chars_per_token_vs_vocab.png", "curves.png"):
        assert_png(rep / name)
    rows = list(csv.DictReader((rep / "results.csv").open()))
    assert [r["spec"] for r in rows] == ["byte", "bpe:512", "word:200"]
    assert [int(r["vocab_size"]) for r in rows] == [258, 512, 200]
    assert [float(r["bits_per_char"]) for r in rows] == [2.61, 2.43, 1.95]
    assert [int(r["params_embedding"]) for r in rows] == [24_768, 49_152, 19_200]
    assert {r["stop_reason"] for r in rows} == {"flops"}
    assert {int(r["heldout_chars"]) for r in rows} == {HELDOUT_CHARS}
    doc = json.loads((rep / "results.json").read_text())
    assert doc["meta"]["corpus"] == "tiny" and doc["meta"]["budget"] == "1e11 training FLOPs (equal compute)"
    assert [r["kind"] for r in doc["results"]] == ["byte", "bpe", "word"]
    md = (rep / "report.md").read_text()
    table = [ln for ln in md.splitlines() if ln.startswith("| `")]
    assert len(table) == 3
    cells = [c.strip() for c in table[1].strip("|").split("|")]
    assert cells[:3] == ["`bpe:512`", "512", "49.2k + 336k"]
    assert cells[9] == "2.4300" and cells[10] == "0.00%" and cells[11] == "1.00"
    word = [c.strip() for c in table[2].strip("|").split("|")]
    assert word[10] == "7.40%" and word[11] == "0.00"
    assert "What word-level models do not predict" in md and "<unk>" in md
    assert "Lowest held-out bits per character: `word:200`" in md and "word-level model: see the note" in md


def test_unfinished_runs_are_resumed_and_missing_ones_trained(layout):
    write_fake_run(layout["runs"]["byte"], "byte")  # finished and measured
    write_fake_run(layout["runs"]["bpe:512"], "bpe:512", stop_reason=None)  # interrupted
    layout["data"].mkdir(parents=True)
    for name in ("train-bpe-512.bin", "valid-bpe-512.bin", "tokenizer-bpe-512.json", "valid.txt"):
        (layout["data"] / name).write_text("x")
    first = layout["cwd"] / "first.jsonl"
    done = compare(layout["cwd"], *layout["argv"], fault=f"record_tools:{first}")
    assert done.returncode == 0, done.stderr
    calls = recorded(first)
    # byte: nothing; bpe:512: its token files are there, resume + measure; word:200: data, train, measure
    assert [t for t, _ in calls] == ["pretrain.py", "bits.py", "data.py", "pretrain.py", "bits.py"]
    resume_cmd, fresh_cmd = calls[0][1], calls[3][1]
    assert resume_cmd[-1] == "--resume" and fresh_cmd[-1] == "--force"
    for cmd in (resume_cmd, fresh_cmd):
        assert cmd[cmd.index("--budget-flops") + 1] == "1e+11"
        assert cmd[cmd.index("--out-dir") + 1] == str(Path("checkpoints/compare/tiny-flops1e11"))
        assert "--rope" in cmd and cmd[cmd.index("--n-embd") + 1] == "96"
    assert fresh_cmd[fresh_cmd.index("--run-name") + 1] == "rope-word-200"
    data_cmd = calls[2][1]
    assert data_cmd[data_cmd.index("--tokenizer") + 1] == "word:200" and "--train-file" in data_cmd
    bits_cmd = calls[1][1]
    assert bits_cmd[0].endswith("rope-bpe-512/ckpt.pt") and bits_cmd[bits_cmd.index("--chars") + 1] == "100000"
    out = done.stdout
    assert "[1/3] byte" in out and "done before" in out
    assert re.search(r"\[2/3\] bpe:512        resumed \d+s, measured \d+s \|", out)
    assert re.search(r"\[3/3\] word:200       data \d+s, trained \d+s, measured \d+s \|", out)
    assert json.loads((layout["runs"]["word:200"] / "compare.json").read_text())["spec"] == "word:200"

    second = layout["cwd"] / "second.jsonl"  # a second run: everything is done
    done = compare(layout["cwd"], *layout["argv"], fault=f"record_tools:{second}")
    assert done.returncode == 0, done.stderr
    assert recorded(second) == []
    assert done.stdout.count("done before") == 3

    # another --bits-chars measures the runs again (the fake runs already measured by hand are kept as they
    # were: without a record of their measurement they count as measured), it trains nothing
    third = layout["cwd"] / "third.jsonl"
    done = compare(layout["cwd"], *layout["argv"], "--bits-chars", "5000", fault=f"record_tools:{third}")
    assert done.returncode == 0, done.stderr
    calls = recorded(third)
    assert [t for t, _ in calls] == ["bits.py", "bits.py"]
    assert [c[c.index("--chars") + 1] for _, c in calls] == ["5000", "5000"]


def test_settings_change_is_refused(layout):
    done = compare(layout["cwd"], *layout["argv"], fault=f"record_tools:{layout['record']}")
    assert done.returncode == 0, done.stderr
    ran = len(recorded(layout["record"]))
    argv = [*layout["argv"], "--report", "tiny-flops1e11", "--n-layer", "4"]
    err = error_line(compare(layout["cwd"], *argv, fault=f"record_tools:{layout['record']}"))
    assert "was made with other settings (shape:" in err and "give another --report" in err
    assert len(recorded(layout["record"])) == ran  # no tool ran the second time


def test_eval_interval_estimate():
    # compare.py's arguments with no flags: the shape flags, --preset, --batch-size and --eval-interval unset
    unset = ("preset", "n_layer", "n_head", "n_embd", "block_size", "batch_size", "eval_interval")
    flags = {f"--{k.replace('_', '-')}" for k in unset}
    parsed = {a["flags"][0]: a["has_default"] for a in tool_parser("compare")["actions"] if a["flags"]}
    assert {f: parsed[f] for f in flags} == dict.fromkeys(flags, False)
    args = argparse.Namespace(**dict.fromkeys(unset))
    shape = shape_of(args)
    assert shape == {"n_layer": 3, "n_head": 4, "n_embd": 96, "block_size": 128}
    # 6 * 12 * 3 * 96^2 + 12 * 3 * 128 * 96 + 6 * 96 * 8192 = 1,990,656 + 442,368 + 4,718,592
    assert estimate_flops_per_token(shape, 8192) == 7_151_616
    steps = 6e12 / (7_151_616 * 16 * 128)  # 409.6
    assert eval_interval_for(args, ("budget_flops", 6e12), shape, 8192) == int(steps // 10) == 40
    assert eval_interval_for(args, ("budget_chars", 1e7), shape, 8192) is None
    assert budget_label("budget_flops", 6e12) == "flops6e12"
    assert budget_label("minutes", 2.5) == "minutes2.5"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bpe:512", "wordpiece:300"], "unknown tokenizer SPEC 'wordpiece:300'"),
        (["bpe:abc"], "VOCAB must be a positive whole number"),
        (["byte", "--budget-flops", "0"], "--budget-flops must be a positive number, got 0"),
        (["byte", "--budget-chars", "-5"], "--budget-chars must be a positive number"),
        (["byte", "--budget-flops", "nan"], "--budget-flops must be a positive number"),
        (["byte", "--budget-flops", "1e9", "--minutes", "1"], "give one budget, not several"),
        (["byte", "--bits-chars", "-1"], "--bits-chars must be >= 0"),
        (["byte", "--n-layer", "0"], "--n-layer must be >= 1, got 0"),
        (["byte", "--report", "a/b"], "--report 'a/b'"),
        (["hf:missing.json"], "no such file: missing.json"),
        (["byte", "--train-file", "nope.txt"], "--train-file nope.txt: no such file"),
    ],
)
def test_bad_input_is_one_line(argv, message, tmp_path):
    record = tmp_path / "tools.jsonl"
    err = error_line(compare(tmp_path, *argv, fault=f"record_tools:{record}"))
    assert message in err, err
    assert recorded(record) == []  # no tool ran


def test_run_folder_from_another_corpus_is_refused(layout):
    write_fake_run(layout["runs"]["bpe:512"], "bpe:512", corpus="shakespeare")
    err = error_line(compare(layout["cwd"], *layout["argv"], fault=f"record_tools:{layout['record']}"))
    assert "holds a run on corpus 'shakespeare', not 'tiny'" in err and "rope-bpe-512" in err
    assert recorded(layout["record"]) == []  # no tool ran


def test_a_failing_tool_is_one_line(layout):
    done = compare(layout["cwd"], *layout["argv"], fault="tool_fails:data.py: error: corpus.txt: not UTF-8")
    err = error_line(done)
    assert "data.py failed for byte (exit 1): data.py: error: corpus.txt: not UTF-8 (log: " in err


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
    assert row["characters_per_token"] == pytest.approx(300 / row["tokens"])
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
        "--device",
        "cpu",
        "--pretrain-args",
        "--threads 1",
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    first = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    rep = tmp_path / "reports" / "tiny-flops2e9"
    rows = list(csv.DictReader((rep / "results.csv").open()))
    assert [r["spec"] for r in rows] == ["byte", "bpe:300", "word:60"]
    assert {r["stop_reason"] for r in rows} == {"flops"}
    assert len({int(r["heldout_chars"]) for r in rows}) == 1
    for r in rows:
        assert abs(float(r["flops"]) - 2e9) <= float(r["flops"]) / int(r["steps"])  # stopped at the budget
        assert float(r["bits_per_char"]) > 0
    assert float(rows[2]["unk_share"]) >= 0 and float(rows[0]["round_trip_share"]) == 1.0
    for name in ("bpc_vs_flops.png", "bpc_vs_vocab.png", "chars_per_token_vs_vocab.png"):
        assert_png(rep / name)
    assert len([ln for ln in (rep / "report.md").read_text().splitlines() if ln.startswith("| `")]) == 3
    ckpts = sorted((tmp_path / "checkpoints").rglob("ckpt.pt"))
    assert len(ckpts) == 3
    before = {p: p.stat().st_mtime_ns for p in ckpts}

    second = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert second.returncode == 0, second.stderr[-2000:]
    assert second.stdout.count("done before") == 3
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
