"""A gigabyte end to end: the user's commands on corpora of 100 MB to 1 GB, with their time and memory.

Usage::

    python benchmarks/gigabyte.py --sizes 100M,300M,1G [--workdir /tmp/storygpt-gigabyte] \
        [--steps data,pretrain,bits,compare] [--json FILE]

For each size it writes ``WORKDIR/corpus-SIZE.txt``: the documents of the English corpus
(``../shared/corpora/english_literature_plus_kjv.txt``, or ``--source``) repeated, each copy in its
own shuffled document order (``random.Random(--seed)``), separated by lines ``<|endoftext|>`` (the
format ``data.py --train-file`` reads), cut after the first document that reaches the size.  Then it
runs, each as a subprocess of this script:

* ``data``: ``data.py --bpe --train-file CORPUS`` (BPE trained from the file, the .bin files written);
* ``pretrain``: ``pretrain.py --bpe`` on the memmapped tokens, ``--max-steps`` optimizer steps;
* ``bits``: ``bits.py`` on the first ``--bits-chars`` characters of the held-out split;
* ``compare``: ``compare.py byte bpe:8192`` at ``--compare-tokens`` training tokens per run, on the
  same corpus folder (bpe:8192's files are data.py's from the ``data`` step, so compare prepares only
  ``byte``; in a ``--workdir`` where an earlier invocation made them, byte's files are reused too and
  the row says so: ``byte_prepared_by_compare`` false).  Its run folders are new for each invocation.

Per step it reports wall seconds, CPU seconds (user + system of the step and every process it
waited for, from ``os.wait4``), peak resident set (``ru_maxrss`` from ``os.wait4``: the largest of
the step's process and its waited-for descendants) and ``/proc/loadavg`` before and after, and per
byte of corpus: wall and CPU nanoseconds.  Prints a table and writes it as JSON (``--json``, default
``WORKDIR/gigabyte.json``, written atomically).  Only files under ``--workdir`` are written; a corpus
file of the right size already there is reused (same seed, same bytes), nothing else is deleted.
Results: docs/performance.md ("A gigabyte end to end").
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from machine import cpu_model  # noqa: E402

from storygpt.atomic import atomic_write, write_json  # noqa: E402
from storygpt.data.corpora import SEPARATOR, read_documents  # noqa: E402

SOURCE = ROOT.parent / "shared" / "corpora" / "english_literature_plus_kjv.txt"
STEPS = ("data", "pretrain", "bits", "compare")
UNITS = {"K": 10**3, "M": 10**6, "G": 10**9}


def parse_size(text: str) -> int:
    """'100M' -> 100_000_000 bytes (K, M, G are powers of 1000; a bare number is bytes)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]?)", text.strip().upper())
    if not m or float(m.group(1)) <= 0:
        raise SystemExit(f"gigabyte.py: error: --sizes: {text!r} is not a size like 100M or 1G")
    return int(float(m.group(1)) * UNITS.get(m.group(2), 1))


def build_corpus(path: Path, source_docs: list[str], target: int, seed: int) -> int:
    """Write copies of ``source_docs``, each shuffled, until ``target`` bytes; returns the bytes written.

    The file is ``SEPARATOR.join(docs) + "\\n"`` (storygpt.data.corpora.format_documents), written a
    document at a time, so only the source is held.
    """
    encoded = [d.encode("utf-8") for d in source_docs]
    sep = SEPARATOR.encode("utf-8")
    rng = random.Random(seed)
    written = 0
    with atomic_write(path, "wb") as f:
        while written < target:
            order = list(range(len(encoded)))
            rng.shuffle(order)
            for i in order:
                if written:
                    written += f.write(sep)
                written += f.write(encoded[i])
                if written >= target:
                    break
        written += f.write(b"\n")
    return written


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def run_step(name: str, argv: list[str], log: Path) -> dict:
    """Run ``argv``, its output to ``log``; wall, CPU and peak RSS of it and its waited-for children."""
    load_before = loadavg()
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # so Popen does not wait again
    rc = proc.returncode
    return {
        "step": name,
        "command": " ".join(argv),
        "rc": rc,
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "user_s": round(usage.ru_utime, 2),
        "sys_s": round(usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux: kB
        "load_before": load_before,
        "load_after": loadavg(),
        "log": str(log),
    }


def step_commands(step: str, corpus: Path, tag: str, work: Path, args, stamp: str) -> list[str]:
    """The command line of ``step`` for the corpus file ``corpus`` (folder name ``tag``); ``stamp`` names
    this invocation's compare.py run folders, so that compare never finds finished runs to skip."""
    py = sys.executable
    data_root = work / "data"
    data_dir = data_root / tag
    run_dir = work / "runs" / tag
    if step == "data":
        return [py, "data.py", "--bpe", "--train-file", str(corpus), "--name", tag, "--out", str(data_root), "--quiet"]
    if step == "pretrain":
        return [
            py, "pretrain.py", "--bpe", "--data", str(data_dir), "--run-dir", str(run_dir), "--force",
            "--max-steps", str(args.max_steps), "--eval-interval", str(args.max_steps),
            "--threads", str(args.threads), "--no-progress",
        ]  # fmt: skip
    if step == "bits":
        return [
            py, "bits.py", str(run_dir), "--chars", str(args.bits_chars), "--threads", str(args.threads),
            "--no-progress", f"--json={work / f'bits-{tag}.json'}",
        ]  # fmt: skip
    if step == "compare":
        return [
            py, "compare.py", "byte", "bpe:8192", "--train-file", str(corpus), "--name", tag,
            "--data-root", str(data_root), "--out-dir", str(work / "compare" / f"{tag}-{stamp}"),
            "--reports-dir", str(work / "reports"), "--report", f"{tag}-{stamp}",
            "--budget-tokens", str(args.compare_tokens), "--bits-chars", str(args.bits_chars),
            "--perturb", "none", "--threads", str(args.threads), "--jobs", "1",
            "--eval-interval", str(args.max_steps),
        ]  # fmt: skip
    raise AssertionError(step)


def format_table(rows: list[dict]) -> str:
    head = "| size | step | wall s | CPU s | wall ns/B | CPU ns/B | peak RSS MB | load before/after | rc |"
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        lines.append(
            f"| {r['size_bytes'] / 1e6:,.0f} MB | {r['step']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
            f"{r['wall_ns_per_byte']:.2f} | {r['cpu_ns_per_byte']:.2f} | {r['peak_rss_mb']:,.0f} | "
            f"{r['load_before']} / {r['load_after']} | {r['rc']} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="100M,300M,1G", help="corpus sizes, comma-separated (K, M, G: powers of 1000)")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/storygpt-gigabyte"), help="where everything is written")
    p.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated steps among {','.join(STEPS)}")
    p.add_argument("--source", type=Path, default=SOURCE, help="the corpus whose documents are repeated")
    p.add_argument("--seed", type=int, default=0, help="seed of the document orders (default 0)")
    p.add_argument("--max-steps", type=int, default=20, help="pretrain.py optimizer steps (default 20)")
    p.add_argument("--bits-chars", type=int, default=200_000, help="held-out characters bits.py measures")
    p.add_argument("--compare-tokens", type=int, default=40_000, help="compare.py training tokens per run")
    p.add_argument("--threads", type=int, default=1, help="torch threads of pretrain, bits, compare (default 1)")
    p.add_argument("--json", type=Path, default=None, help="results file (default WORKDIR/gigabyte.json)")
    args = p.parse_args(argv)

    sizes = [(s.strip().upper(), parse_size(s)) for s in args.sizes.split(",") if s.strip()]
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    bad = [s for s in steps if s not in STEPS]
    if bad or not steps:
        raise SystemExit(
            f"gigabyte.py: error: --steps: unknown step {bad[0] if bad else '(none)'!r}; choose from {STEPS}"
        )
    if not args.source.is_file():
        raise SystemExit(f"gigabyte.py: error: --source: {args.source} is not a file")
    for s in ("max_steps", "bits_chars", "compare_tokens"):
        if getattr(args, s) < 1:
            raise SystemExit(f"gigabyte.py: error: --{s.replace('_', '-')} must be at least 1")
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    (work / "logs").mkdir(exist_ok=True)
    out_json = args.json or work / "gigabyte.json"

    source_docs = read_documents(args.source)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results = {
        "machine": {
            "cpu": cpu_model(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "commit": _git("rev-parse", "--short", "HEAD"),
        },
        "settings": {k: str(v) for k, v in vars(args).items()},
        "rows": [],
    }
    for label, target in sizes:
        tag = f"gb{label.lower()}"
        corpus = work / f"corpus-{label}.txt"
        marker = work / f"corpus-{label}.seed"
        if not (corpus.is_file() and marker.is_file() and marker.read_text() == f"{args.seed} {args.source}"):
            t0 = time.perf_counter()
            n = build_corpus(corpus, source_docs, target, args.seed)
            marker.write_text(f"{args.seed} {args.source}")
            print(f"[{label}] wrote {corpus} ({n:,} bytes, {time.perf_counter() - t0:.1f} s)", flush=True)
        size = corpus.stat().st_size
        for step in steps:
            argv_ = step_commands(step, corpus, tag, work, args, stamp)
            cold = not (work / "data" / tag / "train-byte.bin").exists()  # compare prepares byte itself
            row = run_step(step, argv_, work / "logs" / f"{tag}-{step}-{stamp}.log")
            if step == "compare":
                row["byte_prepared_by_compare"] = cold
            row.update(
                size=label,
                size_bytes=size,
                wall_ns_per_byte=round(row["wall_s"] * 1e9 / size, 3),
                cpu_ns_per_byte=round(row["cpu_s"] * 1e9 / size, 3),
            )
            results["rows"].append(row)
            print(
                f"[{label}] {step}: rc {row['rc']}, wall {row['wall_s']} s, CPU {row['cpu_s']} s, "
                f"peak {row['peak_rss_mb']} MB, load {row['load_before']} -> {row['load_after']}",
                flush=True,
            )
            write_json(out_json, results)
            if row["rc"] != 0:
                print(f"[{label}] {step} failed; see {row['log']}", file=sys.stderr)
    print(format_table(results["rows"]))
    print(f"wrote {out_json}")
    return 1 if any(r["rc"] for r in results["rows"]) else 0


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


if __name__ == "__main__":
    sys.exit(main())
