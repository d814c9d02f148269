"""Benchmark the C++ BPE core against the plain-Python reference.

For each prefix size of TEXTFILE (default: the first 0.1 MB and the first 1 MB)
this trains ``--merges`` merges with ``bpe_reference.train`` and with
``storygpt._bpe.train``, then encodes the same prefix with
``bpe_reference.Encoder`` and ``storygpt._bpe.Encoder``.  Results are checked
for equality (identical merges, identical ids) *before* anything is printed;
a mismatch exits with status 1 and prints the first difference.

Times are wall-clock seconds (``time.perf_counter``); the C++ figures are the
best of ``--repeats`` runs (a fresh Encoder each time, so its chunk cache
starts empty), the reference's a single run.

Example::

    python benchmarks/bpe_bench.py ../shared/corpora/english_literature_plus_kjv.txt
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storygpt import _bpe  # noqa: E402
from storygpt.tokenizers import bpe_reference as ref  # noqa: E402


def _best(fn, repeats):
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"index {i}: reference {x!r}, C++ {y!r}"
    return f"lengths differ: reference {len(a)}, C++ {len(b)}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("textfile", help="UTF-8 text file to read the prefixes from")
    p.add_argument("--sizes", default="0.1,1", help="comma-separated prefix sizes in MB (10**6 bytes) (default: 0.1,1)")
    p.add_argument("--merges", type=int, default=500, help="number of merges to learn (default: 500)")
    p.add_argument(
        "--pattern",
        default="simple",
        choices=["simple", "gpt2", "gpt4"],
        help="pre-tokenization pattern (default: simple)",
    )
    p.add_argument(
        "--tie-break",
        default="smallest_ids",
        choices=["smallest_ids", "largest_bytes"],
        help="training tie-break rule (default: smallest_ids)",
    )
    p.add_argument("--threads", type=int, default=1, help="num_threads for C++ training (0 = all cores; default: 1)")
    p.add_argument("--repeats", type=int, default=3, help="C++ runs per measurement, best kept (default: 3)")
    args = p.parse_args(argv)

    raw = Path(args.textfile).read_bytes()
    rows = []
    for mb in (float(s) for s in args.sizes.split(",")):
        data = raw[: int(mb * 1_000_000)]
        vocab_size = 256 + args.merges
        kw = dict(pattern=args.pattern, tie_break=args.tie_break)

        t0 = time.perf_counter()
        ref_merges = ref.train(data, vocab_size, **kw)
        t_ref_train = time.perf_counter() - t0
        t_cpp_train, cpp_merges = _best(
            lambda: _bpe.train(data, vocab_size=vocab_size, num_threads=args.threads, **kw), args.repeats
        )
        if cpp_merges != ref_merges:
            print(f"MISMATCH in merges on {mb} MB: {_first_diff(ref_merges, cpp_merges)}")
            return 1

        triples = [(a, b, 256 + i) for i, (a, b) in enumerate(ref_merges)]
        ref_enc = ref.Encoder(triples, pattern=args.pattern)
        t0 = time.perf_counter()
        ref_ids = ref_enc.encode(data)
        t_ref_enc = time.perf_counter() - t0
        t_cpp_enc, cpp_ids = _best(lambda: _bpe.Encoder(triples, pattern=args.pattern).encode(data), args.repeats)
        cpp_ids = cpp_ids.tolist()
        if cpp_ids != ref_ids:
            print(f"MISMATCH in ids on {mb} MB: {_first_diff(ref_ids, cpp_ids)}")
            return 1
        rows.append((len(data), len(ref_merges), t_ref_train, t_cpp_train, len(ref_ids), t_ref_enc, t_cpp_enc))

    print(
        f"file: {args.textfile}  pattern: {args.pattern}  tie_break: {args.tie_break}  "
        f"C++ train threads: {args.threads}"
    )
    print("merges and ids checked identical to the reference")
    print(
        f"{'bytes':>10} {'merges':>6} | {'train ref s':>11} {'train C++ s':>11} {'speed-up':>9} | "
        f"{'tokens':>8} {'enc ref s':>9} {'enc C++ s':>9} {'speed-up':>9}"
    )
    for n, m, trr, trc, nt, er, ec in rows:
        print(
            f"{n:>10,} {m:>6} | {trr:>11.3f} {trc:>11.4f} {trr / trc:>8.0f}x | "
            f"{nt:>8,} {er:>9.3f} {ec:>9.4f} {er / ec:>8.0f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
