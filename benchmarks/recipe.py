#!/usr/bin/env python
"""gpt2 vs modern recipe (and ablations) at equal training FLOPs: held-out bits/char and CPU seconds.

    nice -n 10 python benchmarks/recipe.py --data data/shakespeare            # small, default budget, 2 seeds
    nice -n 10 python benchmarks/recipe.py --presets small base --multiples 1 4 --ablations

Every run is ``pretrain.py --recipe R --preset P --budget-flops M x DEFAULT --seed S --rope
--dtype float32 --threads 1`` (compare.py's default budget, storygpt/compare/settings.py), then
``bits.py --chars 0`` on its final ckpt.pt: bits/char on all of valid.txt.  CPU seconds are the
user + system time of the pretrain.py process (resource.getrusage of the children), evaluations
included.  Runs already in ``--out`` (a ``result.json`` per run) are reused, so the script can be
stopped and run again.

The table gives, per preset and budget, each variant's mean bits/char over the seeds (with the
spread: max - min), mean CPU seconds, and ``gpt2 FLOPs to match``: the FLOPs at which the gpt2
run's own held-out curve (metrics.jsonl, the --eval-chars slice, the longest gpt2 run of that
preset and seed) reaches the variant's final held-out bits/char on that same slice, interpolated
linearly in log FLOPs, as a multiple of the variant's FLOPs (">" when the curve never gets there);
and the reverse, ``reaches gpt2's end at``: the FLOPs and CPU seconds at which the variant's own curve
gets down to the gpt2 run's final held-out bits/char (same budget and seed), as shares of gpt2's.

Variants (one part switched at a time): gpt2, modern, muon-only (gpt2 model + Muon), arch-only
(modern model + one-rate AdamW), softcap (modern + nanochat's logit soft-cap 15, which modern
left out after this ablation), tied (modern, tied embeddings); issue 37's embedding parts:
modern-before37 (the recipe before issue 37: both off, 20 warm-up steps), embnorm (the RMSNorm after the
token embedding alone), embstd0.8 (the embedding initialised with std 0.8 alone), embnorm-std0.8 (both),
embnorm-std0.8-warm5 (both and 5 warm-up steps: ``modern`` with its cosine schedule and momentum 0.95, as
it was until the schedule below), wsd0.6 (warm-up/stable/decay, the last 0.6 of the budget decaying, momentum
0.95), momentum0.85 (cosine, Muon's momentum 0.85); ``modern`` is today's (both).  The ablations and the
weight-decay and rate variants switch one part of today's ``modern`` (its wsd schedule and momentum 0.85
included); docs/training.md's "Ablations" table was measured with the ``modern`` of before issue 37.

Issue 37's table in one command (``--issue37``: 2e12 and 1e13 FLOPs, gpt2, modern before and today,
the parts apart at 2e12, 1.8e12 and 9e12 for today's modern: the budgets of the issue's goals)::

    nice -n 5 python benchmarks/recipe.py --data data/shakespeare --issue37

prints, besides the table below, one row per budget with every variant's bits/char per seed, as the issue.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from storygpt.atomic import write_text  # noqa: E402
from storygpt.cli import ToolParser, check_output  # noqa: E402
from storygpt.compare.settings import DEFAULT_BUDGET_FLOPS, EVALS_PER_RUN  # noqa: E402
from storygpt.model.presets import PRESETS  # noqa: E402

#: The schedule and momentum of ``modern`` before its warm-up/stable/decay schedule (issue 37, 2026-12-05).
COSINE = ["--schedule", "cosine", "--momentum", "0.95"]
VARIANTS = {
    "gpt2": ["--recipe", "gpt2"],
    "modern": ["--recipe", "modern"],
    "muon-only": ["--recipe", "gpt2", "--optimizer", "muon"],
    "arch-only": ["--recipe", "modern", "--optimizer", "adamw"],
    "softcap": ["--recipe", "modern", "--logit-softcap", "15"],
    "tied": ["--recipe", "modern", "--tie-embeddings", "on"],
    "muon-wd0.05": ["--recipe", "modern", "--matrix-weight-decay", "0.05"],
    "muon-wd0.2": ["--recipe", "modern", "--matrix-weight-decay", "0.2"],
    "head-wd0.1": ["--recipe", "modern", "--head-weight-decay", "0.1"],
    "head-wd0.5": ["--recipe", "modern", "--head-weight-decay", "0.5"],
    "to-zero": ["--recipe", "modern", "--min-lr-fraction", "0"],
    "embed-lr0.2": ["--recipe", "modern", "--embed-lr", "0.2"],
    "modern-before37": [
        "--recipe",
        "modern",
        "--embed-norm",
        "off",
        "--embed-std",
        "0.02",
        "--warmup-steps",
        "20",
        *COSINE,
    ],
    "embnorm": ["--recipe", "modern", "--embed-norm", "on", "--embed-std", "0.02", "--warmup-steps", "20", *COSINE],
    "embstd0.8": ["--recipe", "modern", "--embed-norm", "off", "--embed-std", "0.8", "--warmup-steps", "20", *COSINE],
    "embnorm-std0.8": [
        "--recipe",
        "modern",
        "--embed-norm",
        "on",
        "--embed-std",
        "0.8",
        "--warmup-steps",
        "20",
        *COSINE,
    ],
    "embnorm-std0.8-warm5": ["--recipe", "modern", *COSINE],
    "wsd0.6": ["--recipe", "modern", "--schedule", "wsd", "--decay-fraction", "0.6", "--momentum", "0.95"],
    "momentum0.85": ["--recipe", "modern", "--schedule", "cosine", "--momentum", "0.85"],
}
ABLATIONS = ("muon-only", "arch-only", "softcap", "tied")
#: ``--issue37``: (multiple of the default budget, variants), run for every seed.
ISSUE37 = [
    (0.4, ("gpt2", "modern-before37", "embnorm", "embstd0.8", "embnorm-std0.8", "embnorm-std0.8-warm5", "modern")),
    (0.36, ("embnorm-std0.8-warm5", "wsd0.6", "momentum0.85", "modern")),
    (2.0, ("gpt2", "modern-before37", "embnorm-std0.8-warm5", "modern")),
    (1.8, ("modern",)),
]


def run_measured(cmd: list[str], env: dict, log: Path) -> tuple[int, float, float]:
    """Run ``cmd`` (stdout and stderr to ``log``); ``(exit status, its CPU seconds, wall seconds)``.

    CPU is user + system of that child alone (``os.wait4``), so runs in parallel do not mix.
    """
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime, time.perf_counter() - t0


def steps_for(preset: str, flops: float, vocab: int, batch: int = 16) -> int:
    from storygpt.model import GPTConfig
    from storygpt.model.flops import flops_per_token
    from storygpt.model.presets import preset as shape

    p = shape(preset)
    cfg = GPTConfig(vocab, p["block_size"], p["n_layer"], p["n_head"], p["n_embd"])
    return int(flops // (flops_per_token(cfg) * batch * p["block_size"]))


def one_run(args, preset: str, multiple: float, seed: int, variant: str, vocab: int) -> dict:
    """Train and score one run (or read its result.json); returns the result."""
    folder = Path(args.out) / f"{preset}-x{multiple:g}" / f"{variant}-seed{seed}"
    result_path = folder / "result.json"
    if result_path.is_file():
        return json.loads(result_path.read_text())
    flops = multiple * DEFAULT_BUDGET_FLOPS
    interval = max(10, steps_for(preset, flops, vocab) // EVALS_PER_RUN)
    cmd = [sys.executable, str(ROOT / "pretrain.py"), "--data", args.data, "--tokenizer", args.tokenizer]
    cmd += ["--run-dir", str(folder), "--preset", preset, "--budget-flops", f"{flops:g}", "--seed", str(seed)]
    cmd += ["--rope", "--dtype", "float32", "--threads", "1", "--no-progress", "--force"]
    cmd += ["--eval-interval", str(interval), *VARIANTS[variant]]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    folder.mkdir(parents=True, exist_ok=True)
    log = folder.parent / f"{folder.name}.log"
    status, cpu, wall = run_measured(cmd, env, log)
    if status != 0:
        raise SystemExit(f"recipe.py: error: {' '.join(cmd)} failed:\n{log.read_text()[-2000:]}")
    bits = subprocess.run(
        [sys.executable, str(ROOT / "bits.py"), str(folder / "ckpt.pt"), "--chars", "0", "--dtype", "float32"]
        + ["--threads", "1", "--no-progress", "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    if bits.returncode != 0:
        raise SystemExit(f"recipe.py: error: bits.py on {folder} failed:\n{bits.stderr[-2000:]}")
    measured = json.loads(bits.stdout)
    summary = json.loads((folder / "summary.json").read_text())
    curve = [
        (r["flops"], r["val_bpc"])
        for r in map(json.loads, (folder / "metrics.jsonl").read_text().splitlines())
        if r["kind"] == "eval"
    ]
    result = {
        "preset": preset,
        "multiple": multiple,
        "seed": seed,
        "variant": variant,
        "flops": summary["flops"],
        "params": summary["params"],
        "steps": summary["steps"],
        "val_bpc": summary["val_bpc"],
        "bits_per_char": measured["results"][0]["bits_per_character"],
        "cpu_seconds": cpu,
        "wall_seconds": wall,
        "train_time": summary["train_time"],
        "curve": curve,
        "load": os.getloadavg()[0],
    }
    write_text(result_path, json.dumps(result, indent=1) + "\n")
    print(
        f"{preset} x{multiple:g} seed {seed} {variant}: {result['bits_per_char']:.4f} bits/char, "
        f"{cpu:.0f} CPU s ({wall:.0f} s wall, load {result['load']:.1f})",
        flush=True,
    )
    return result


def flops_to_reach(curve: list, target: float) -> float | None:
    """FLOPs at which ``curve`` [(flops, bpc), ...] first gets down to ``target`` (log-linear), None if never."""
    prev = None
    for f, b in curve:
        if b <= target:
            if prev is None:
                return f
            (f0, b0) = prev
            t = (b0 - target) / (b0 - b) if b0 != b else 1.0
            return math.exp(math.log(f0) + t * (math.log(f) - math.log(f0)))
        prev = (f, b)
    return None


def reached(run: dict, gpt2: dict) -> tuple[float | None, float | None]:
    """When ``run``'s own curve gets down to ``gpt2``'s final held-out bits/char (same slice, same budget and
    seed): its FLOPs there and its CPU seconds there (CPU taken as even per FLOP over the run), each as a
    share of the gpt2 run's; ``(None, None)`` when it never does."""
    f = flops_to_reach(run["curve"], gpt2["val_bpc"])
    if f is None:
        return None, None
    return f / gpt2["flops"], (f * run["cpu_seconds"] / run["flops"]) / gpt2["cpu_seconds"]


def table(results: list[dict]) -> str:
    """The markdown table of the results (see the module docstring)."""
    lines = [
        "| preset | budget | variant | seeds | bits/char (all valid.txt) | spread | CPU s | "
        "gpt2 FLOPs to match | reaches gpt2's end at: FLOPs, CPU |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["preset"], r["multiple"]) for r in results}, key=lambda k: (k[0] != "small", k))
    for preset, multiple in keys:
        here = [r for r in results if r["preset"] == preset and r["multiple"] == multiple]
        for variant in VARIANTS:
            runs = [r for r in here if r["variant"] == variant]
            if not runs:
                continue
            bpc = [r["bits_per_char"] for r in runs]
            cpu = statistics.mean(r["cpu_seconds"] for r in runs)
            ratios, reach = [], []
            for r in runs:
                gpt2 = [
                    g for g in results if g["preset"] == preset and g["seed"] == r["seed"] and g["variant"] == "gpt2"
                ]
                if not gpt2 or variant == "gpt2":
                    continue
                longest = max(gpt2, key=lambda g: g["flops"])
                need = flops_to_reach(longest["curve"], r["val_bpc"])
                ratios.append(need / r["flops"] if need is not None else None)
                same = [g for g in gpt2 if g["multiple"] == multiple]
                if same:
                    reach.append(reached(r, same[0]))
            match = (
                " / ".join(f"{x:.2f}x" if x is not None else f">{longest['flops'] / r['flops']:.0f}x" for x in ratios)
                if ratios
                else "-"
            )
            got = " / ".join(f"{f:.2f}x, {c:.2f}x" if f is not None else "never" for f, c in reach) if reach else "-"
            lines.append(
                f"| {preset} | {multiple:g}x ({multiple * DEFAULT_BUDGET_FLOPS:.0e}) | {variant} | {len(runs)} | "
                f"{statistics.mean(bpc):.4f} | {max(bpc) - min(bpc):.4f} | {cpu:.0f} | {match} | {got} |"
            )
    return "\n".join(lines)


def budget_table(results: list[dict]) -> str:
    """Issue 37's layout: one row per preset and budget, one column per variant, bits/char per seed (a / b)."""
    variants = [v for v in VARIANTS if any(r["variant"] == v for r in results)]
    lines = ["| preset | FLOPs | " + " | ".join(f"`{v}`" for v in variants) + " |", "|---" * (len(variants) + 2) + "|"]
    for preset, multiple in sorted({(r["preset"], r["multiple"]) for r in results}):
        cells = []
        for v in variants:
            runs = sorted(
                (r for r in results if (r["preset"], r["multiple"], r["variant"]) == (preset, multiple, v)),
                key=lambda r: r["seed"],
            )
            cells.append(" / ".join(f"{r['bits_per_char']:.4f}" for r in runs) or "-")
        steps = max(r["steps"] for r in results if (r["preset"], r["multiple"]) == (preset, multiple))
        lines.append(
            f"| {preset} | {multiple * DEFAULT_BUDGET_FLOPS:.2g} ({steps} steps) | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def positive_number(text: str) -> float:
    """argparse type: a finite number above 0 (a multiple of the default budget)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    variants = "\n".join(f"  {name:<21} {' '.join(flags)}" for name, flags in VARIANTS.items())
    p = ToolParser(
        prog="recipe.py",
        description=__doc__.split("\n")[0],
        epilog="variants (pretrain.py flags of each; the module docstring says why):\n" + variants,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--data", default="data/shakespeare", help="corpus folder of data.py (default: %(default)s)")
    p.add_argument(
        "--tokenizer", default="bpe:8192", help="tokenizer SPEC whose token files --data holds (default: %(default)s)"
    )
    p.add_argument(
        "--presets",
        nargs="+",
        default=["small"],
        choices=list(PRESETS),
        help="model presets to train (pretrain.py --preset; default: small)",
    )
    p.add_argument(
        "--multiples",
        nargs="+",
        type=positive_number,
        default=[1.0],
        help=f"budgets, as multiples of compare.py's default {DEFAULT_BUDGET_FLOPS:g} FLOPs (default: 1)",
    )
    p.add_argument("--seeds", nargs="+", type=int, default=[1337, 1338], help="training seeds (default: 1337 1338)")
    p.add_argument(
        "--variants",
        nargs="+",
        default=["gpt2", "modern"],
        choices=list(VARIANTS),
        metavar="VARIANT",
        help="recipes to run (default: gpt2 modern; the list and their flags: below)",
    )
    p.add_argument("--ablations", action="store_true", help="add " + ", ".join(ABLATIONS) + " (default budget)")
    p.add_argument(
        "--out",
        default="reports/recipe",
        help="folder of the runs and table.md; runs there are reused (default: %(default)s)",
    )
    p.add_argument("--jobs", type=int, default=1, help="runs at a time (each on one thread)")
    p.add_argument("--issue37", action="store_true", help="issue 37's runs (module docstring); replaces the lists")
    return p


def parse(argv: list[str] | None = None) -> tuple[argparse.Namespace, int]:
    """The flags, checked (one line ``recipe.py: error: ...``, exit 2, before any run), and the vocabulary size."""
    from storygpt.checkpoint import load_tokenizer
    from storygpt.tokenizers.spec import SpecError, parse_spec

    p = build_parser()
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error(f"--jobs must be at least 1, got {args.jobs}")
    if any(not 0 <= seed < 2**63 for seed in args.seeds):
        p.error(f"--seeds must be in 0 .. {2**63 - 1}, got {' '.join(map(str, args.seeds))}")
    check_output(p, "--out", args.out, folder=True)
    try:
        slug = parse_spec(args.tokenizer).slug
    except (SpecError, ValueError, FileNotFoundError) as e:
        p.error(f"--tokenizer {args.tokenizer}: {e}")
    tok_file = Path(args.data) / f"tokenizer-{slug}.json"
    if not tok_file.is_file():
        p.error(f"{tok_file}: no such tokenizer file (python data.py --tokenizer {args.tokenizer} first)")
    try:
        return args, load_tokenizer(tok_file).vocab_size
    except (OSError, ValueError) as e:  # TokenizerFileError is a ValueError
        p.error(f"{tok_file}: {e}")


def main() -> None:
    args, vocab = parse()
    print(f"load {os.getloadavg()}, cores {os.cpu_count()}, float32, 1 thread per run", flush=True)
    todo = []
    for preset in args.presets:
        for multiple in args.multiples:
            variants = list(args.variants)
            if args.ablations and multiple == 1.0:
                variants += [v for v in ABLATIONS if v not in variants]
            todo += [(preset, multiple, seed, variant) for seed in args.seeds for variant in variants]
    if args.issue37:
        todo = [(p_, m, seed, v) for p_ in args.presets for m, vs in ISSUE37 for seed in args.seeds for v in vs]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda job: one_run(args, *job, vocab), todo))
    text = table(results) + "\n\n" + budget_table(results)
    write_text(Path(args.out) / "table.md", text + "\n")
    print(text)


if __name__ == "__main__":
    main()
