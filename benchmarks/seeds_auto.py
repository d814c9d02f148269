#!/usr/bin/env python
"""Does ``compare.py --seeds auto:6`` reach the verdict of ``--seeds 6`` with at most 60% of its training FLOPs?
(issue 45's goal; about 1 hour of training on 2 CPU cores.)

    python benchmarks/seeds_auto.py                     # bpe:512 bpe:2048 bpe:8192 on Shakespeare, 5e12 FLOPs
    python benchmarks/seeds_auto.py --dry-run           # only the two plans, their FLOPs and time estimates

Runs ``compare.py SPECS --seeds auto:6``, then ``compare.py SPECS --seeds 6`` (every tokenizer x 6 seeds) in
the same folder of runs: the auto plan's runs are runs of the fixed grid (same settings, seeds 1337 ..), so
the fixed grid reuses them and trains the rest; the auto report's FLOPs are those of the runs its plan chose.  Prints
the fixed report's verdict (the paired bootstrap over seeds and blocks: a winner or none), the auto verdict
(storygpt/eval/sequential.py), their agreement, the auto plan's runs and FLOPs share, and the machine
(CPU model, threads, /proc/loadavg), as benchmarks/ report them.  Writes reports/bench-seeds-fixed6 and
reports/bench-seeds-auto6.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from machine import cpu_model, load

HERE = Path(__file__).resolve().parents[1]
SPECS = ["bpe:512", "bpe:2048", "bpe:8192"]


def compare(*argv: str) -> None:
    cmd = [sys.executable, str(HERE / "compare.py"), *argv]
    print("$", " ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, check=True, cwd=HERE)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dry-run", action="store_true", help="print the two plans only")
    p.add_argument("--budget-flops", default="5e12")
    p.add_argument("--max-seeds", type=int, default=6)
    p.add_argument("specs", nargs="*", default=SPECS)
    a = p.parse_args()
    common = [*a.specs, "--budget-flops", a.budget_flops, "--out-dir", "checkpoints/bench-seeds-auto"]
    fixed, auto = f"bench-seeds-fixed{a.max_seeds}", f"bench-seeds-auto{a.max_seeds}"
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; load before: {load()}")
    if a.dry_run:
        compare(*common, "--seeds", str(a.max_seeds), "--dry-run")
        compare(*common, "--seeds", f"auto:{a.max_seeds}", "--dry-run")
        return 0
    # auto first: it trains only the runs its plan chooses; the fixed grid then reuses them and trains the rest
    compare(*common, "--seeds", f"auto:{a.max_seeds}", "--report", auto)
    compare(*common, "--seeds", str(a.max_seeds), "--report", fixed)
    f = json.loads((HERE / "reports" / fixed / "results.json").read_text())
    s = json.loads((HERE / "reports" / auto / "results.json").read_text())["seeds_auto"]
    fixed_winner = f["verdicts"][0]["winner"]
    fixed_flops = sum(r["flops"] for r in f["results"])
    print(f"\nload after: {load()}")
    print(
        f"--seeds {a.max_seeds}: winner {fixed_winner} (paired bootstrap), {len(f['results'])} runs, {fixed_flops:.3g} FLOPs"
    )
    print(f"--seeds auto:{a.max_seeds}: {s['verdict']} ({s['method']}), {s['runs']} runs, {s['flops']:.3g} FLOPs")
    print(f"same verdict: {s['winner'] == fixed_winner}; FLOPs share {s['flops'] / fixed_flops:.0%} (goal <= 60%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
