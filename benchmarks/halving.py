#!/usr/bin/env python
"""Does ``compare.py --halving`` name the full grid's best at the largest budget with at most 50% of its training
FLOPs?  (issue 45's goal.)

    python benchmarks/halving.py                       # 5 tokenizers x 3 budgets, a tiny model, 2 seeds
    python benchmarks/halving.py --budgets 1e9,4e9,1.6e10 --seeds 3

Runs ``compare.py SPECS --budget-flops BUDGETS --halving`` in --work, then the full grid ``compare.py SPECS
--budget-flops BUDGETS`` in the same folder of runs: the halving's finished runs are runs of the grid (same
settings and seeds), so the grid reuses them and resumes the paused trunks; every other run it trains.  Training
FLOPs are counted from the run folders (summary.json's ``flops`` less what each branch took over from its trunk:
storygpt.train.branch.flops_trained): the halving's when it ended (its results.json ``halving.flops``), the
grid's over all its run folders.  Prints both reports' best at the largest budget, the tokenizers halving
dropped, the FLOPs of each and their ratio, and the machine (CPU model, cores, /proc/loadavg before and after).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from machine import cpu_model, load  # noqa: E402

from storygpt.train import branch  # noqa: E402

SPECS = ["byte", "bpe:300", "bpe:600", "bpe:1200", "bpe:2400"]
SHAPE = ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "32", "--batch-size", "4"]
MEASURE = ["--bits-chars", "20000", "--block-chars", "500", "--device", "cpu", "--threads", "1"]


def compare(work: Path, args, report: str, *extra: str) -> dict:
    """compare.py's sweep (--halving or the full grid) in ``work``; its results.json."""
    cmd = [sys.executable, str(REPO / "compare.py"), *args.specs, "--train-file", str(args.corpus)]
    cmd += ["--budget-flops", args.budgets, "--seeds", str(args.seeds), "--recipe", "modern", *SHAPE, *MEASURE]
    cmd += ["--jobs", str(args.jobs), "--report", report, "--pretrain-args=--dtype float32 --eval-chars 5000"]
    cmd += list(extra)
    print("$", " ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, cwd=work, check=True, stdout=subprocess.DEVNULL)
    return json.loads((work / "reports" / report / "results.json").read_text())


def best_at_top(doc: dict) -> str | None:
    top = max(v["budget"] for v in doc["verdicts"])
    return next(v["best"] for v in doc["verdicts"] if v["budget"] == top)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("specs", nargs="*", default=SPECS, help=f"tokenizer SPECs (default: {' '.join(SPECS)})")
    p.add_argument("--budgets", default="1e9,4e9,1.6e10", help="the sweep's training FLOPs budgets")
    p.add_argument("--seeds", type=int, default=2, help="seeds per tokenizer and budget")
    p.add_argument("--jobs", type=int, default=2, help="runs at once (one thread each)")
    p.add_argument(
        "--corpus",
        type=Path,
        help="training text (default: the first 400,000 characters of "
        "../shared/corpora/english_literature_plus_kjv.txt, written to --work)",
    )
    p.add_argument("--work", type=Path, default=Path("bench-halving"), help="working folder (runs, reports)")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.corpus is None:
        shared = REPO.parent / "shared" / "corpora" / "english_literature_plus_kjv.txt"
        if not shared.is_file():
            raise SystemExit(f"halving.py: error: no --corpus and no {shared}")
        args.corpus = args.work / "corpus.txt"
        with open(shared, encoding="utf-8") as f:
            args.corpus.write_text(f.read(400_000), encoding="utf-8")
    args.corpus = args.corpus.resolve()
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; load before: {load()}")
    halving = compare(args.work, args, "halving", "--halving")
    grid = compare(args.work, args, "grid")
    folders = sorted(p.parent for p in (args.work / "checkpoints").rglob("compare.json"))
    grid_flops = branch.flops_trained(folders)[0]
    h = halving["halving"]
    print(f"load after: {load()}")
    print(f"--halving: best at the largest budget {best_at_top(halving)}; {h['flops']:.4g} training FLOPs")
    for d in h["dropped"]:
        print(
            f"  dropped {d['spec']} at {d['budget']:g}: {d['diff']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}] vs {d['best']}"
        )
    print(
        f"full grid: best at the largest budget {best_at_top(grid)}; {grid_flops:.4g} training FLOPs ({len(folders)} run folders)"
    )
    same = best_at_top(halving) == best_at_top(grid)
    print(f"same best: {same}; FLOPs {h['flops'] / grid_flops:.1%} of the full grid's (goal <= 50%)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
