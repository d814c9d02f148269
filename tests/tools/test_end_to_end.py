"""The main job end to end: scripts/main_job.sh with a tiny corpus and tiny models, as subprocesses.

data.py (both tokenizers) on a small --train-file, pretrain.py (two rotary
runs, a few steps), bits.py and sample.py, all through the README's main-job
script, in a temporary folder.  The install step is skipped
(STORYGPT_SKIP_SETUP=1): the test runs in the environment that runs the tests.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TINY_MODEL = (
    "--n-layer 1 --n-head 2 --n-embd 32 --block-size 32 --batch-size 8 --max-steps 12 "
    "--eval-interval 6 --eval-windows 4 --no-progress --threads 1 --warmup-steps 20"  # modern's own warm-up is 5
)


def _ready():
    missing = [
        f for f in ("data.py", "pretrain.py", "bits.py", "sample.py", "scripts/main_job.sh") if not (ROOT / f).is_file()
    ]
    if missing:
        pytest.skip(f"the pipeline is not complete in this checkout (missing {missing})")
    try:
        import storygpt._bpe  # noqa: F401

        from storygpt.model import GPT  # noqa: F401
    except ImportError as e:
        pytest.skip(f"storygpt is not built or incomplete: {e}")


def stories(n, seed):
    rng = random.Random(seed)
    names, verbs = ["Tom", "Lily", "Sam", "Mia"], ["saw", "found", "liked", "lost"]
    things = ["a red ball", "the big dog", "a small cat", "the old tree"]
    return [
        "\n".join(
            f"{rng.choice(names)} {rng.choice(verbs)} {rng.choice(things)}. It was fun!"
            for _ in range(rng.randint(2, 5))
        )
        for _ in range(n)
    ]


def main_job(tmp_path, **env):
    e = dict(os.environ)
    e.update(
        STORYGPT_SKIP_SETUP="1",
        DATA_ROOT=str(tmp_path / "data"),
        CKPT_ROOT=str(tmp_path / "ck"),
        CORPUS="tiny",
        DATA_ARGS=f"--train-file {tmp_path / 'tiny.txt'} --quiet",
        WORD="word:300",
        BPE="bpe:300",
        PRETRAIN_ARGS=TINY_MODEL,
        SAMPLE_TOKENS="12",
        MINUTES="1",
        DEVICE="cpu",
        PROMPT="Tom saw",
        PATH=str(Path(sys.executable).parent) + os.pathsep + e.get("PATH", ""),
        PYTHONPATH=str(ROOT) + os.pathsep + e.get("PYTHONPATH", ""),
        OMP_NUM_THREADS="1",  # tiny models: one thread is faster, above all on a busy machine
    )
    e.update(env)
    t0 = time.perf_counter()
    p = subprocess.run(
        ["bash", str(ROOT / "scripts" / "main_job.sh")], env=e, capture_output=True, text=True, timeout=300
    )
    return p, time.perf_counter() - t0


def check_output(p, tmp_path):
    out = p.stdout
    assert p.returncode == 0, out[-3000:] + p.stderr[-3000:]
    # word:300 on 26 distinct words and specials: data.py names its files by that size (issue 47)
    for f in ("train-word-26.bin", "valid-bpe-300.bin", "tokenizer-bpe-300.json", "valid.txt"):
        assert (tmp_path / "data" / "tiny" / f).is_file()
    for run in ("rope-word-300", "rope-bpe-300"):
        assert (tmp_path / "ck" / "tiny" / run / "best.pt").is_file()
    # bits.py's table: name, SPEC, vocab, params, steps, FLOPs, tokens, chars/tok, unk, rtrip, bits/char, bits/byte,
    # status
    rows = {
        line.split()[0]: line.split()
        for line in out.splitlines()
        if re.match(r"^rope-(word|bpe)-300\s+(word|bpe):300\s", line)
    }
    assert set(rows) == {"rope-word-300", "rope-bpe-300"}, out
    bpe, word = rows["rope-bpe-300"], rows["rope-word-300"]
    assert bpe[1] == "bpe:300" and word[1] == "word:300"
    assert bpe[4] == word[4] == "12"  # steps: --max-steps 12
    assert float(bpe[9]) == 1.0  # BPE round-trips every held-out document
    assert float(word[9]) < 1.0  # the word tokenizer loses the new lines
    for r in (bpe, word):
        assert math.isfinite(float(r[10])) and 0 < float(r[10]) < 20
        assert 0 < float(r[11]) <= float(r[10])  # bits per byte: a text has at least as many bytes as characters
    assert " ".join(bpe[12:]) == "under-trained" and " ".join(word[12:]) == "under-trained, lossy"
    # the run summary table at the end, from each run's summary.json
    summary = out[out.index("Run summary") :]
    for run in ("rope-word-300", "rope-bpe-300"):
        s = json.loads((tmp_path / "ck" / "tiny" / run / "summary.json").read_text())
        row = f"| `{tmp_path / 'ck' / 'tiny' / run}` | {s['params']:,} | 12 | {s['tokens']:,} |"
        assert row in summary and f"| {s['best_val_bpc']:.4f} |" in summary, summary
        assert f"under-trained: {tmp_path / 'ck' / 'tiny' / run}: 12 steps, fewer than its 20 warm-up steps" in summary
    samples = re.findall(r"^-----\n(.*?)\n-----$", out, re.M | re.S)
    assert len(samples) == 2 and all(s.startswith("Tom saw") for s in samples), out
    assert "What to run next" in out and str(tmp_path / "ck" / "tiny" / "rope-bpe-300") in out


@pytest.fixture
def tiny(tmp_path):
    _ready()
    (tmp_path / "tiny.txt").write_text("\n<|endoftext|>\n".join(stories(40, 3)) + "\n", encoding="utf-8")
    return tmp_path


def test_main_job_end_to_end(tiny):
    p, _ = main_job(tiny)
    check_output(p, tiny)


@pytest.mark.perf
def test_main_job_end_to_end_is_quick(tiny):
    p, seconds = main_job(tiny)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert seconds < 120, f"the tiny main job took {seconds:.0f}s"


@pytest.mark.slow
def test_main_job_runs_again_without_deleting_anything(tiny):
    p, _ = main_job(tiny)
    check_output(p, tiny)
    before = {f: f.stat().st_mtime_ns for f in (tiny / "data" / "tiny").iterdir()}
    p, _ = main_job(tiny)
    check_output(p, tiny)
    assert "reusing" in p.stdout and "--resume" in p.stdout
    after = {f: f.stat().st_mtime_ns for f in (tiny / "data" / "tiny").iterdir()}
    assert before == after  # the data files were reused, not rewritten
    # bad settings are refused before anything runs
    p, _ = main_job(tiny, MINUTES="0")
    assert p.returncode == 2 and "MINUTES" in p.stderr


def _run_summary():
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_summary", ROOT / "scripts" / "run_summary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_run_summary_table_of_a_real_run(tiny_run, tmp_path, capsys):
    # before: the main job ended without the table the README shows; now scripts/run_summary.py prints it
    rs = _run_summary()
    run = tiny_run["ckpt"].parent
    s = json.loads((run / "summary.json").read_text())
    assert rs.main([str(run)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| run | parameters | steps | tokens seen |") and lines[1].startswith("|---|")
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    want = [f"`{run}`", f"{s['params']:,}", f"{s['steps']:,}", f"{s['tokens']:,}", f"{s['tokens_per_sec']:,.0f}"]
    assert cells == [*want, f"{s['val_loss']:.4f}", f"{s['best_val_bpc']:.4f}"]
    assert lines[3] == f"under-trained: {run}: {s['under_trained']}"  # a 2-step run
    assert rs.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"run_summary.py: error: {tmp_path / 'summary.json'}: no such file")
