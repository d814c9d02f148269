"""Training threads: 1 thread, 2 threads and the default choice, at several corpus sizes.

Usage::

    python benchmarks/train_threads.py FILE [--megabytes 1 4 16 50] [--vocab-size 8192] [--rounds 3]

For each size (the first N MB of FILE, cut at a line end, written to a
temporary file) the trainer runs from the file in a fresh subprocess per
measurement: with 1 thread, 2 threads, and ``num_threads=0`` through
``train_bpe`` (``default_train_threads``: one thread below 512 MB or
on a busy machine).  The rounds are interleaved so that the rows of one size
share the machine's load; the merges of every run must be identical before
any time is printed.  Prints the median wall and CPU time and the peak
memory of each, with the ratios to 1 thread.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))


def worker(path: str, vocab_size: int, threads: int) -> None:
    from storygpt.tokenizers import train_bpe
    from storygpt.tokenizers.bpe_train import default_train_threads

    chosen = threads or default_train_threads(os.path.getsize(path))
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    tok = train_bpe([path], vocab_size, pattern="gpt2", special_tokens=["<|endoftext|>"], num_threads=threads)
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
    print(
        json.dumps({"wall": wall, "cpu": cpu, "peak_mb": c1.ru_maxrss / 1024, "threads": chosen, "merges": tok.merges})
    )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", nargs="?", help="UTF-8 corpus, documents separated by <|endoftext|> lines")
    p.add_argument("--megabytes", type=float, nargs="+", default=[1, 4, 16, 50], help="sizes to train on")
    p.add_argument("--vocab-size", type=int, default=8192, help="vocabulary size")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are printed")
    p.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), int(args.worker[2]))
        return
    if not args.file:
        p.error("FILE is required")
    data = Path(args.file).read_bytes()
    load = os.getloadavg()
    print(f"{args.file}, vocab {args.vocab_size}, gpt2 pattern, {os.cpu_count()} CPUs, load {load[0]:.2f} at start")
    print("| MB | threads | wall s | CPU s | peak MB | wall / 1 thread | peak / 1 thread |")
    print("|---|---|---|---|---|---|---|")
    for mb in args.megabytes:
        cut = data.rfind(b"\n", 0, int(mb * 1e6)) + 1 or int(mb * 1e6)
        with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as f:
            f.write(data[:cut])
        try:
            runs: dict[str, list[dict]] = {"1": [], "2": [], "0": []}
            for _ in range(args.rounds):
                for t in runs:
                    out = subprocess.run(
                        [sys.executable, __file__, "--worker", f.name, str(args.vocab_size), t],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    runs[t].append(json.loads(out.stdout.strip().splitlines()[-1]))
        finally:
            os.unlink(f.name)
        merges = {json.dumps(r["merges"]) for rs in runs.values() for r in rs}
        if len(merges) != 1:
            raise SystemExit(f"MISMATCH: merges depend on the thread count at {mb} MB; no times printed")
        base = {k: statistics.median(r[k] for r in runs["1"]) for k in ("wall", "peak_mb")}
        for t, rs in runs.items():
            wall = statistics.median(r["wall"] for r in rs)
            cpu = statistics.median(r["cpu"] for r in rs)
            peak = statistics.median(r["peak_mb"] for r in rs)
            label = t if t != "0" else "default (" + "/".join(str(r["threads"]) for r in rs) + ")"
            print(
                f"| {cut / 1e6:.1f} | {label} | {wall:.3f} | {cpu:.3f} | {peak:.0f} | "
                f"{wall / base['wall']:.2f} | {peak / base['peak_mb']:.2f} |",
                flush=True,
            )
    load = os.getloadavg()
    print(f"load {load[0]:.2f} at the end")


if __name__ == "__main__":
    main()
