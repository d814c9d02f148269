#!/usr/bin/env python
"""Budgets that branch (issue 45): the training FLOPs of a compare.py sweep whose wsd budgets branch, against the
same runs trained independently, and a check that every run is the same bit for bit.

    python benchmarks/branching.py --budgets 1e9,2e9,5e9 --seeds 2        # 2 tokenizers x 3 budgets x 2 seeds

It runs ``compare.py SPECS --budget-flops BUDGETS --recipe modern`` (a tiny model, one thread a run) in --work,
then every run again as ``pretrain.py`` alone (the command compare.py recorded in its compare.json, without
``--branch``, in a folder of its own), and compares the final weights (torch.equal on every tensor), the held-out
bits/char and the per-step losses.  FLOPs: summary.json's ``flops`` of the independent runs against those of the
branched ones less what each branch took over from its trunk (branch.json; storygpt.train.branch.flops_trained).
Then the same count, from the step arithmetic alone (storygpt.train.branch.shared_flops), for 3 and 5 budgets
of the figures in docs/compare.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from machine import cpu_model  # noqa: E402

from storygpt.train import branch  # noqa: E402

SHAPE = ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "32", "--batch-size", "4"]
MEASURE = ["--bits-chars", "2000", "--block-chars", "500", "--device", "cpu", "--threads", "1"]


def sweep(work: Path, corpus: Path, specs: list[str], budgets: str, seeds: int, extra: list[str]) -> list[Path]:
    """compare.py's branched sweep; its run folders."""
    cmd = [sys.executable, str(REPO / "compare.py"), *specs, "--train-file", str(corpus), "--budget-flops", budgets]
    cmd += ["--seeds", str(seeds), "--recipe", "modern", *SHAPE, *MEASURE, "--report", "branched"]
    cmd += ["--pretrain-args", " ".join(["--dtype float32", "--eval-chars 20000", *extra])]
    subprocess.run(cmd, cwd=work, check=True, stdout=subprocess.DEVNULL)
    return sorted(p.parent for p in (work / "checkpoints").rglob("compare.json"))


def alone(work: Path, folder: Path) -> Path:
    """The run of ``folder`` trained again by pretrain.py alone (its compare.json command without --branch)."""
    cmd = json.loads((folder / "compare.json").read_text())["provenance"]["command"][1:]
    cmd = [a for a in cmd if not a.startswith("--branch") and a not in ("--resume", "--force")]
    name = cmd[cmd.index("--run-name") + 1]
    cmd[cmd.index("--run-name") + 1] = name + "-alone"
    subprocess.run(
        [sys.executable, str(REPO / "pretrain.py"), *cmd, "--force"], cwd=work, check=True, capture_output=True
    )
    return folder.parent / (name + "-alone")


def same(a: Path, b: Path) -> bool:
    """Final weights, held-out bits/char and per-step losses identical."""
    ma, mb = (torch.load(p / "ckpt.pt", weights_only=True)["model"] for p in (a, b))
    weights = ma.keys() == mb.keys() and all(torch.equal(ma[k], mb[k]) for k in ma)
    sa, sb = (json.loads((p / "summary.json").read_text()) for p in (a, b))
    steps_a = [json.loads(x) for x in (a / "metrics.jsonl").read_text().splitlines()]
    steps_b = [json.loads(x) for x in (b / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in steps_a if r["kind"] == "step"] == [r["loss"] for r in steps_b if r["kind"] == "step"]
    return weights and sa["val_bpc"] == sb["val_bpc"] and sa["steps"] == sb["steps"] and losses


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budgets", default="1e9,2e9,5e9")
    p.add_argument("--specs", nargs="+", default=["byte", "bpe:300"])
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--corpus", default=str(REPO.parent.parent / "shared/corpora/english_literature_plus_kjv.txt"))
    p.add_argument("--chars", type=int, default=400_000, help="the corpus's first this many characters")
    p.add_argument("--work", default="/tmp/branching-bench")
    p.add_argument("--pretrain-arg", action="append", default=[], help="more pretrain.py flags (--decay-fraction 0.2)")
    a = p.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus.txt"
    corpus.write_text(Path(a.corpus).read_text(encoding="utf-8")[: a.chars], encoding="utf-8")
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    cpu = cpu_model()
    print(f"corpus: first {a.chars:,} characters of {a.corpus}; CPU {cpu}, {os.cpu_count()} cores, load {load}")
    folders = sweep(work, corpus, a.specs, a.budgets, a.seeds, a.pretrain_arg)
    trained, _ = branch.flops_trained(folders)
    independent, identical = 0.0, []
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # two runs at once, one thread each (as compare.py)
        again = list(pool.map(lambda f: alone(work, f), folders))
    for f, g in zip(folders, again):
        independent += json.loads((g / "summary.json").read_text())["flops"]
        identical.append(same(f, g))
        print(f"  {f.name:<40} identical to pretrain.py alone: {identical[-1]}")
    branched = sum((f / branch.BRANCH_RECORD).is_file() for f in folders)
    print(
        f"measured: {len(folders)} runs ({branched} branched), training FLOPs {trained:.4g} branched vs "
        f"{independent:.4g} independent = {trained / independent:.3f}x; every run identical: {all(identical)}"
    )
    last = json.loads((folders[-1] / "summary.json").read_text())
    per_step = 4 * 32 * last["flops_per_token"]  # tokens a step (batch 4 x block 32) x FLOPs a token
    print(f"step arithmetic at {per_step:,} FLOPs a step ({last['spec']}):")
    for fraction in (0.6, 0.2):
        for budgets in ([1e12, 2e12, 5e12], [1e12, 2e12, 5e12, 1e13, 2e13]):
            b, i = branch.shared_flops(budgets, per_step, fraction)
            print(
                f"  step arithmetic, decay fraction {fraction}: budgets {','.join(f'{x:g}' for x in budgets)}: {b / i:.3f}x ({b:.4g} of {i:.4g})"
            )
    if not all(identical):
        raise SystemExit("some branched runs differ from their independent runs")


if __name__ == "__main__":
    main()
