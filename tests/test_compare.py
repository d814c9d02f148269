"""compare.py: the report from run folders, skipping and resuming runs, one-line errors, bits.py --json FILE.

Most tests build run folders by hand (summary.json, bits.json, metrics.jsonl as pretrain.py and bits.py
write them, docs/design.md) and replace the subprocess runner, so no model is trained.  One test runs the
real pipeline (data.py -> pretrain.py -> bits.py) on a tiny corpus; it needs pretrain.py --tokenizer and
--budget-flops and data.py --tokenizer.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, load_tool, run_tool

pytest.importorskip("matplotlib")

import test_bits as kit  # noqa: E402  (make_run, story_docs, write_docs)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

compare = load_tool("compare")


def assert_png(path: Path) -> None:
    import matplotlib.image

    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 1000, path
    img = matplotlib.image.imread(str(path))
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100, path


# ------------------------------------------------------------------ hand-made run folders
# spec -> (vocab, embedding params, other params, chars/token held out, final bits/char, unk share, round trip)
FAKE = {
    "byte": (258, 24_768, 335_712, 1.0, 2.61, 0.0, 1.0),
    "bpe:512": (512, 49_152, 335_712, 2.05, 2.43, 0.0, 1.0),
    "word:200": (200, 19_200, 335_712, 4.4, 1.95, 0.074, 0.0),
}
FLOPS = 1e11
HELDOUT_CHARS = 5_000


def write_fake_run(folder: Path, spec: str, corpus: str = "tiny", stop_reason: str | None = "flops") -> None:
    """A run folder as pretrain.py (summary.json, metrics.jsonl, ckpt.pt) and bits.py --json FILE leave it."""
    vocab, emb, rest, cpt, bpc, unk, rt = FAKE[spec]
    folder.mkdir(parents=True, exist_ok=True)
    fpt = 6 * rest + 6 * 96 * vocab
    tokens_per_step = 16 * 128
    steps = int(FLOPS // (fpt * tokens_per_step)) if stop_reason else 3
    rows = []
    for s in range(1, steps + 1):
        t = s * tokens_per_step
        rows.append({"kind": "step", "step": s, "tokens": t, "chars": t * cpt, "flops": t * fpt, "elapsed": 0.1 * s})
        rows[-1].update(lr=1e-3, loss=4.0, grad_norm=1.0)
        if s % 2 == 0 or s == steps:
            rows.append(
                {
                    "kind": "eval",
                    "step": s,
                    "tokens": t,
                    "chars": t * cpt,
                    "flops": t * fpt,
                    "elapsed": 0.1 * s,
                    "val_loss": 3.0,
                    "val_bpc": bpc + 1.0 / s,
                }
            )
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    t = steps * tokens_per_step
    summary = {
        "spec": spec,
        "slug": spec.replace(":", "-"),
        "corpus": corpus,
        "params": emb + rest,
        "params_embedding": emb,
        "params_non_embedding": rest,
        "steps": steps,
        "tokens": t,
        "chars": t * cpt,
        "flops": t * fpt,
        "elapsed": 0.1 * steps,
        "train_time": 0.08 * steps,
        "stop_reason": stop_reason,
        "val_loss": 3.0,
        "val_bpc": bpc + 1.0 / steps,
        "best_val_bpc": bpc + 1.0 / steps,
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "ckpt.pt").write_bytes(b"not a real checkpoint")
    os.utime(folder / "ckpt.pt", (1e9, 1e9))
    if stop_reason is None:
        return
    row = {
        "name": folder.name,
        "checkpoint": str(folder / "ckpt.pt"),
        "corpus": corpus,
        "tokenizer": spec.split(":")[0],
        "vocab_size": vocab,
        "parameters": emb + rest,
        "tokens": round(HELDOUT_CHARS / cpt),
        "characters": HELDOUT_CHARS,
        "characters_per_token": HELDOUT_CHARS / round(HELDOUT_CHARS / cpt),
        "unknown_share": unk,
        "round_trip_share": rt,
        "bits_per_character": bpc,
    }
    bits = {"text": "data/tiny/valid.txt", "characters": HELDOUT_CHARS, "documents": 3, "results": [row]}
    (folder / "bits.json").write_text(json.dumps(bits))


@pytest.fixture
def layout(tmp_path, monkeypatch):
    """cwd = tmp_path; a tiny corpus file; the argv and folders of a 3-tokenizer comparison."""
    monkeypatch.chdir(tmp_path)
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("one two three\n<|endoftext|>\nfour five six\n<|endoftext|>\nseven eight\n")
    argv = ["byte", "bpe:512", "word:200", "--train-file", str(corpus), "--budget-flops", str(FLOPS)]
    runs = tmp_path / "checkpoints" / "compare" / "tiny-flops1e11" / "tiny"
    return dict(
        argv=argv,
        runs={s: runs / f"rope-{s.replace(':', '-')}" for s in FAKE},
        report=tmp_path / "reports" / "tiny-flops1e11",
        data=tmp_path / "data" / "tiny",
    )


class Recorder:
    """Stands in for compare.run_tool: records each command and plays the tool's part."""

    def __init__(self, layout):
        self.layout, self.calls = layout, []

    def __call__(self, cmd, log, verbose, follow=None, bar=None):
        tool = Path(cmd[1]).name
        self.calls.append((tool, cmd[2:]))
        spec = cmd[cmd.index("--tokenizer") + 1] if "--tokenizer" in cmd else None
        if tool == "data.py":
            slug = spec.replace(":", "-")
            self.layout["data"].mkdir(parents=True, exist_ok=True)
            for name in (f"train-{slug}.bin", f"valid-{slug}.bin", f"tokenizer-{slug}.json", "valid.txt"):
                (self.layout["data"] / name).write_text("x")
        elif tool == "pretrain.py":
            write_fake_run(self.layout["runs"][spec], spec)
            (self.layout["runs"][spec] / "bits.json").unlink()
        elif tool == "bits.py":
            folder = Path(cmd[2]).parent
            spec = json.loads((folder / "summary.json").read_text())["spec"]
            write_fake_run(folder, spec)
        return 0

    def tools(self):
        return [t for t, _ in self.calls]


def test_a_report_folder_that_cannot_be_written_is_one_error(layout, monkeypatch, capsys):
    # before: a PermissionError traceback from the atomic writer of report.md
    import storygpt.report

    for spec, folder in layout["runs"].items():
        write_fake_run(folder, spec)

    def read_only(report_dir, *a, **k):
        raise PermissionError(13, "Permission denied", str(report_dir / ".report.md.x.tmp"))

    monkeypatch.setattr(storygpt.report, "write_report", read_only)
    assert compare.main(layout["argv"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("compare.py: error: cannot write the report in ") and "\n" not in err
    assert err.endswith(f"{layout['report'].name}: Permission denied; the runs are finished, run again")


def test_report_from_finished_runs_and_nothing_rerun(layout, monkeypatch, capsys):
    for spec, folder in layout["runs"].items():
        write_fake_run(folder, spec)

    def no_tool(*a, **k):
        raise AssertionError(f"no tool should run: {a[0]}")

    monkeypatch.setattr(compare, "run_tool", no_tool)
    assert compare.main(layout["argv"]) == 0
    out = capsys.readouterr().out
    assert out.count("done before") == 3

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


def test_unfinished_runs_are_resumed_and_missing_ones_trained(layout, monkeypatch, capsys):
    write_fake_run(layout["runs"]["byte"], "byte")  # finished and measured
    write_fake_run(layout["runs"]["bpe:512"], "bpe:512", stop_reason=None)  # interrupted
    layout["data"].mkdir(parents=True)
    for name in ("train-bpe-512.bin", "valid-bpe-512.bin", "tokenizer-bpe-512.json", "valid.txt"):
        (layout["data"] / name).write_text("x")
    rec = Recorder(layout)
    monkeypatch.setattr(compare, "run_tool", rec)
    assert compare.main(layout["argv"]) == 0
    # byte: nothing; bpe:512: its token files are there, resume + measure; word:200: data, train, measure
    assert rec.tools() == ["pretrain.py", "bits.py", "data.py", "pretrain.py", "bits.py"]
    resume_cmd, fresh_cmd = rec.calls[0][1], rec.calls[3][1]
    assert resume_cmd[-1] == "--resume" and fresh_cmd[-1] == "--force"
    for cmd in (resume_cmd, fresh_cmd):
        assert cmd[cmd.index("--budget-flops") + 1] == "1e+11"
        assert cmd[cmd.index("--out-dir") + 1] == str(Path("checkpoints/compare/tiny-flops1e11"))
        assert "--rope" in cmd and cmd[cmd.index("--n-embd") + 1] == "96"
    assert fresh_cmd[fresh_cmd.index("--run-name") + 1] == "rope-word-200"
    data_cmd = rec.calls[2][1]
    assert data_cmd[data_cmd.index("--tokenizer") + 1] == "word:200" and "--train-file" in data_cmd
    bits_cmd = rec.calls[1][1]
    assert bits_cmd[0].endswith("rope-bpe-512/ckpt.pt") and bits_cmd[bits_cmd.index("--chars") + 1] == "100000"
    out = capsys.readouterr().out
    assert "[1/3] byte" in out and "done before" in out
    assert re.search(r"\[2/3\] bpe:512        resumed \d+s, measured \d+s \|", out)
    assert re.search(r"\[3/3\] word:200       data \d+s, trained \d+s, measured \d+s \|", out)
    assert json.loads((layout["runs"]["word:200"] / "compare.json").read_text())["spec"] == "word:200"

    rec.calls.clear()  # a second run: everything is done
    assert compare.main(layout["argv"]) == 0
    assert rec.calls == []
    assert capsys.readouterr().out.count("done before") == 3

    # another --bits-chars measures the runs again (the fake runs already measured by hand are kept as they
    # were: without a record of their measurement they count as measured), it trains nothing
    assert compare.main(layout["argv"] + ["--bits-chars", "5000"]) == 0
    assert rec.tools() == ["bits.py", "bits.py"]
    assert [c[1][c[1].index("--chars") + 1] for c in rec.calls] == ["5000", "5000"]


def test_settings_change_is_refused(layout, monkeypatch, capsys):
    rec = Recorder(layout)
    monkeypatch.setattr(compare, "run_tool", rec)
    assert compare.main(layout["argv"]) == 0
    capsys.readouterr()
    rc = compare.main(layout["argv"] + ["--report", "tiny-flops1e11", "--n-layer", "4"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "was made with other settings (shape:" in err and "give another --report" in err


def test_eval_interval_estimate():
    args = compare.build_parser().parse_args([])
    shape = compare.shape_of(args)
    assert shape == {"n_layer": 3, "n_head": 4, "n_embd": 96, "block_size": 128}
    # 6 * 12 * 3 * 96^2 + 12 * 3 * 128 * 96 + 6 * 96 * 8192 = 1,990,656 + 442,368 + 4,718,592
    assert compare.estimate_flops_per_token(shape, 8192) == 7_151_616
    steps = 6e12 / (7_151_616 * 16 * 128)  # 409.6
    assert compare.eval_interval_for(args, ("budget_flops", 6e12), shape, 8192) == int(steps // 10) == 40
    assert compare.eval_interval_for(args, ("budget_chars", 1e7), shape, 8192) is None
    assert compare.budget_label("budget_flops", 6e12) == "flops6e12"
    assert compare.budget_label("minutes", 2.5) == "minutes2.5"


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
        (["byte", "--n-layer", "0"], "--n-layer must be a positive whole number"),
        (["byte", "--report", "a/b"], "--report 'a/b'"),
        (["hf:missing.json"], "no such file: missing.json"),
        (["byte", "--train-file", "nope.txt"], "--train-file nope.txt: no such file"),
    ],
)
def test_bad_input_is_one_line(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(compare, "run_tool", lambda *a, **k: pytest.fail("no tool should run"))
    rc = compare.main(argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("compare.py: error: ") and err.count("\n") == 1 and message in err, err


def test_run_folder_from_another_corpus_is_refused(layout, monkeypatch, capsys):
    write_fake_run(layout["runs"]["bpe:512"], "bpe:512", corpus="shakespeare")
    monkeypatch.setattr(compare, "run_tool", lambda *a, **k: pytest.fail("no tool should run"))
    rc = compare.main(layout["argv"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "holds a run on corpus 'shakespeare', not 'tiny'" in err and "rope-bpe-512" in err


def test_a_failing_tool_is_one_line(layout, monkeypatch, capsys):
    def failing(cmd, log, verbose, follow=None, bar=None):
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("lots of output\ndata.py: error: corpus.txt: not UTF-8\n")
        return 1

    monkeypatch.setattr(compare, "run_tool", failing)
    rc = compare.main(layout["argv"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
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
    why = compare.stale_token_files(tmp_path, "bpe-300", [])
    assert why == "min_frequency 99999999 (this comparison: 1)"
    assert compare.stale_token_files(tmp_path, "bpe-300", ["--min-frequency", "99999999"]) is None
    why = compare.stale_token_files(tmp_path, "bpe-300", ["--pattern", "gpt2", "--min-frequency=99999999"])
    assert why == "pattern 'gpt4' (this comparison: 'gpt2')"
    (tmp_path / "stats-word-10.json").write_text(json.dumps({"kind": "word", "min_frequency": None}))
    assert compare.stale_token_files(tmp_path, "word-10", []) is None
