"""compare.py --tasks: the tasks section of a report (storygpt/tasks/report_section.py), on fake run folders
(tests/fake_runs.py, no training) whose ckpt.pt is replaced by a tiny real checkpoint."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest
import torch
from conftest import call_tool, one_error_line
from fake_runs import FLOPS

pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install -e .[tasks])")

from storygpt.checkpoint import save_checkpoint  # noqa: E402
from storygpt.eval.stats import spearman, spearman_p_exact  # noqa: E402
from storygpt.model import GPT, GPTConfig  # noqa: E402
from storygpt.tokenizers import train_bpe  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VERSE = "\n".join(
    f"Then {w} came to the {x} at night {i}, and spoke of the {y}" + ("" if i % 5 else "\n\nKing.")
    for i, (w, x, y) in enumerate(
        (("Hamlet", "castle", "ghost"), ("Horatio", "river", "king"), ("Laertes", "grave", "sword")) * 40
    )
)


def compare(cwd: Path, *argv, record: Path) -> subprocess.CompletedProcess:
    return call_tool("compare", *argv, cwd=cwd, fault=f"record_tools:{record}")


def argv_for(tmp_path: Path) -> list[str]:
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("one two three\n<|endoftext|>\nfour five six\n<|endoftext|>\nseven eight\n")
    return [
        "byte",
        "bpe:512",
        "bpe:520",
        "--train-file",
        str(corpus),
        "--budget-flops",
        str(FLOPS),
        "--threads",
        "1",
        "--block-chars",
        "1000",
    ]


def test_tasks_section_scores_each_run_and_correlates_with_heldout_bits(tmp_path):
    argv = argv_for(tmp_path)
    assert compare(tmp_path, *argv, record=tmp_path / "a.jsonl").returncode == 0  # the fake runs
    (tmp_path / "data" / "tiny" / "valid.txt").write_text(VERSE + "\n", encoding="utf-8")
    tok = train_bpe(VERSE, 300, pattern="gpt4")
    folders = sorted((tmp_path / "checkpoints" / "compare").glob("cfg-*/tiny/*"))
    assert len(folders) == 3
    for seed, f in enumerate(folders):  # real (random) models in place of the fake checkpoints
        torch.manual_seed(seed)
        m = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=1, n_head=2, n_embd=32, position="rope"))
        with torch.no_grad():
            for p in m.parameters():
                p.add_(torch.randn_like(p) * 0.3)
        save_checkpoint(
            f / "ckpt.pt", {"model": m.state_dict(), "config": m.config.to_dict(), "tokenizer": tok.to_dict()}
        )
        os.utime(f / "ckpt.pt", (1e9, 1e9))  # as the fake run's: not measured again
    done = compare(tmp_path, *argv, "--tasks", "cloze,pairs", "--task-items", "8", record=tmp_path / "b.jsonl")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("tasks ...") == 3
    rep = tmp_path / "reports" / "tiny-flops1e11"
    md = (rep / "report.md").read_text()
    assert (
        "## Tasks (lm-evaluation-harness)" in md and "### storygpt_cloze (8 items" in md and "### storygpt_pairs" in md
    )
    assert "Spearman's rho across the 3 runs" in md and "arises by chance with probability 0.333" in md
    doc = json.loads((rep / "tasks.json").read_text())
    assert sorted(p.name for p in (rep / "tasks").iterdir()) == sorted(
        f"storygpt_{n}.{e}" for n in ("cloze", "pairs") for e in ("jsonl", "yaml")
    )
    for task in ("storygpt_cloze", "storygpt_pairs"):
        rows = doc["scores"][task]["models"]
        assert [r["name"] for r in rows] == doc["runs"] and len(rows) == 3
        for r, f in zip(rows, folders_in(doc, folders)):
            items = json.loads((f / "tasks.json").read_text())["items"][task]
            want = sum(items["nats"]) / (math.log(2) * sum(items["chars"]))
            assert r["bits_per_character"]["value"] == pytest.approx(want)
        ys = [r["bits_per_character"]["value"] for r in rows]
        (c,) = [c for c in doc["rank_correlations"] if c["task"] == task and c["score"] == "bits/char of the answer"]
        assert c["rho"] == pytest.approx(spearman(doc["heldout_bits_per_char"], ys))
        assert c["p_exact"] == pytest.approx(spearman_p_exact(doc["heldout_bits_per_char"], ys))
    again = compare(tmp_path, *argv, "--tasks", "cloze,pairs", "--task-items", "8", record=tmp_path / "c.jsonl")
    assert again.returncode == 0 and again.stdout.count("tasks done before") == 3  # reused, not scored again
    assert json.loads((rep / "tasks.json").read_text())["scores"] == doc["scores"]


def folders_in(doc, folders):
    """The run folders in the order of the report's runs (byte, bpe:512, bpe:520 as given)."""
    by_spec = {json.loads((f / "summary.json").read_text())["spec"]: f for f in folders}
    return [by_spec[label.split(" @")[0]] for label in doc["runs"]]


def test_unknown_task_is_refused_before_any_work(tmp_path):
    done = compare(tmp_path, *argv_for(tmp_path), "--tasks", "squad", record=tmp_path / "r.jsonl")
    assert done.returncode == 2
    line = one_error_line(done.stderr, "compare.py")
    assert "unknown task 'squad'" in line and "cloze" in line and "hellaswag" in line
    assert not (tmp_path / "r.jsonl").exists() and not (tmp_path / "data").exists()
