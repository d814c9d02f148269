#!/usr/bin/env python3
"""Time pre-tokenization: the C++ matchers vs the Python reference (``regex``).

Prints MB/s (10**6 bytes per CPU second, one core; process_time, so other load on the machine matters less) for each pattern on one file:
``C++ split`` times ``split_chunks`` alone (``_bpe._pretokenize_count``),
``C++ list`` the public ``_bpe.pretokenize`` (which also builds a list of
bytes objects), ``reference`` ``bpe_reference.pretokenize``.  Also checks that
C++ and reference chunks are identical.

Usage: python scripts/bench_pretokenize.py [FILE] [--patterns gpt2 gpt4 simple] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # run from a checkout

from storygpt import _bpe
from storygpt.tokenizers.bpe_reference import pretokenize as ref_pretokenize

DEFAULT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "corpora", "english_literature_plus_kjv.txt"
)


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Time C++ vs reference pre-tokenization (MB/s).")
    ap.add_argument("file", nargs="?", default=DEFAULT, help="input file (default: the shared English corpus)")
    ap.add_argument(
        "--patterns",
        nargs="+",
        default=["gpt2", "gpt4", "simple"],
        help="pattern names to time (default: gpt2 gpt4 simple)",
    )
    ap.add_argument("--repeat", type=int, default=5, help="timed runs of the C++ code; the best counts (default 5)")
    args = ap.parse_args(argv)
    with open(args.file, "rb") as f:
        data = f.read()
    mb = len(data) / 1e6
    print(f"{args.file}: {mb:.1f} MB")
    print(f"{'pattern':8} {'chunks':>10} {'C++ split':>12} {'C++ list':>12} {'reference':>12} {'speed-up':>9}")
    for p in args.patterns:  # warm up (page faults, allocator, CPU clock) before timing
        _bpe._pretokenize_count(data, p)
    for p in args.patterns:
        n = _bpe._pretokenize_count(data, p)
        t_split = best_of(lambda: _bpe._pretokenize_count(data, p), args.repeat)
        t_list = best_of(lambda: _bpe.pretokenize(data, p), 2)
        t = time.process_time()
        want = ref_pretokenize(data, p)
        t_ref = time.process_time() - t
        assert _bpe.pretokenize(data, p) == want, f"C++ and reference differ for {p}"
        print(
            f"{p:8} {n:>10} {mb / t_split:>8.0f} MB/s {mb / t_list:>7.0f} MB/s {mb / t_ref:>7.1f} MB/s "
            f"{t_ref / t_split:>8.0f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
