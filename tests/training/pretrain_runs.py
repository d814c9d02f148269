"""What the pretrain.py tests share: a tiny corpus folder as data.py writes it, the tiny model's flags, and
pretrain.py's ``main`` run in the test's process (conftest.call_tool: its exit status, stdout and stderr as a
subprocess shows them; it must succeed, or fail with one line).  Interrupts, faults and several processes:
conftest.run_tool, a real subprocess."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
from conftest import call_tool

from storygpt.data import write_tokens
from storygpt.tokenizers import WordTokenizer, train_bpe


def word_tokenizer():
    return WordTokenizer.train(TEXT)


TEXT = "the cat sat on the mat. the dog sat on the log. " * 60
TINY_FLAGS = [  # the gpt2 recipe (its --lr and --min-lr; the figures below are its)
    "--recipe",
    "gpt2",
    "--n-layer",
    "1",
    "--n-head",
    "2",
    "--n-embd",
    "32",
    "--block-size",
    "16",
    "--batch-size",
    "8",
    "--lr",
    "1e-2",
    "--min-lr",
    "1e-3",
    "--warmup-steps",
    "2",
    "--eval-windows",
    "8",
    "--no-progress",
    "--threads",
    "1",
]


SLUG = {"word": "word-10000", "bpe": "bpe-300"}


def make_corpus(root: Path, name="tiny", valid_text=None, kind="word") -> Path:
    """A corpus folder as data.py writes it: train.txt, valid.txt and the token files of ``kind``."""
    tok = word_tokenizer() if kind == "word" else train_bpe(TEXT, 300, backend="reference")
    d = root / name
    d.mkdir(parents=True)
    slug = SLUG[kind]
    train = TEXT[: len(TEXT) * 9 // 10]
    valid = TEXT[len(TEXT) * 9 // 10 :] if valid_text is None else valid_text
    tok.save(d / f"tokenizer-{slug}.json")
    write_tokens(d / f"train-{slug}.bin", np.array(tok.encode(train)), tok)
    write_tokens(d / f"valid-{slug}.bin", np.array(tok.encode(valid), dtype=np.int64), tok)
    (d / "train.txt").write_text(train + "\n", encoding="utf-8")
    (d / "valid.txt").write_text(valid + "\n", encoding="utf-8")
    return d


def trained(*argv, cwd=None) -> dict:
    """``python pretrain.py ARGV`` (in this process), which must succeed: the run's summary.json, with
    ``history`` (the ``eval`` rows of its metrics.jsonl), ``folder`` (the run folder) and ``stdout``."""
    done = call_tool("pretrain", *argv, cwd=cwd)
    assert done.returncode == 0, done.stderr
    shown = re.search(r"^run (.+?) \| corpus", done.stdout, re.MULTILINE)
    assert shown, done.stdout
    folder = Path(cwd or ".") / shown.group(1)
    summary = json.loads((folder / "summary.json").read_text())
    history = [r for r in rows(folder) if r["kind"] == "eval"]
    return {**summary, "history": history, "folder": folder, "stdout": done.stdout}


def refused(*argv, cwd=None) -> str:
    """``python pretrain.py ARGV``, which must fail: its stderr."""
    done = call_tool("pretrain", *argv, cwd=cwd)
    assert done.returncode != 0, done.stdout
    return done.stderr


def dry_run(*argv) -> dict:
    """``python pretrain.py ARGV --dry-run``: the settings and run folder it prints."""
    done = call_tool("pretrain", *argv, "--dry-run")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def run(data: Path, out: Path, *extra: str) -> dict:
    """A tiny run on ``data`` under ``out``: :func:`trained`'s dict."""
    return trained("--data", data, "--out-dir", out, *TINY_FLAGS, *extra)


def run_refused(data: Path, out: Path, *extra: str) -> str:
    """A tiny run on ``data`` under ``out`` that must fail: :func:`refused`'s stderr."""
    return refused("--data", data, "--out-dir", out, *TINY_FLAGS, *extra)


def assert_error(pattern: str, err: str) -> None:
    """``pattern`` found in ``err`` (``^`` matches at a line start)."""
    assert re.search(pattern, err, re.MULTILINE), err


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
