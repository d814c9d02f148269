"""Training on one chunk of millions of bytes (random ACGT): time is linear in its length.

Usage::

    python benchmarks/train_long_chunk.py [--sizes 2000000 4000000] [--merges 256] [--repeats 3]

The whole text is one pre-tokenization chunk (letters only), so every merge
happens inside one long word; the trainer indexes where each pair occurs
(``csrc/train/long_word.h``) so a merge costs the number of its occurrences, not the
word's length.  Before any time is printed the merges are checked: on a
prefix of 4,000 bytes against ``bpe_reference.train``, and on every size
against rustbpe's when it is installed (both break ties by the smallest pair
of ids).  Prints CPU and wall time (median of ``--repeats``) and the ratio of
each size's CPU time to the first size's.  Issue 12's goal: 2 M characters
with 256 merges under 1 s, 4 M in at most 2.2x that.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from storygpt import _bpe  # noqa: E402
from storygpt.tokenizers import bpe_reference  # noqa: E402


def acgt(n: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.choice(b"ACGT") for _ in range(n))


def rustbpe_merges(data: bytes, merges: int) -> list[tuple[int, int]] | None:
    if importlib.util.find_spec("rustbpe") is None:
        return None
    import rustbpe

    tok = rustbpe.Tokenizer()
    tok.train_from_iterator(iter([data.decode("ascii")]), 256 + merges, pattern=r"\p{L}+")
    ranks = {bytes(tb): r for tb, r in tok.get_mergeable_ranks()}
    vocab = {r: tb for tb, r in ranks.items()}
    out = []
    for r in range(256, 256 + merges):
        # The merge that made token r: byte-pair encode its bytes with the
        # lower ranks only (as tiktoken does); two parts remain.
        parts = [bytes([b]) for b in vocab[r]]
        while len(parts) > 2:
            pairs = [(ranks.get(parts[i] + parts[i + 1], r), i) for i in range(len(parts) - 1)]
            best, i = min(pairs)
            if best >= r:
                return None
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        out.append((ranks[parts[0]], ranks[parts[1]]))
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[2_000_000, 4_000_000], help="chunk lengths in bytes")
    p.add_argument("--merges", type=int, default=256, help="merges to learn")
    p.add_argument("--repeats", type=int, default=3, help="runs per size; the median is printed")
    args = p.parse_args(argv)
    prefix = acgt(4000)
    if _bpe.train(prefix, vocab_size=256 + 40) != bpe_reference.train(prefix, 256 + 40):
        raise SystemExit("MISMATCH: merges differ from bpe_reference's on a 4,000-byte prefix; no times printed")
    results = []
    for n in args.sizes:
        data = acgt(n)
        walls, cpus, merges = [], [], None
        for _ in range(args.repeats):
            c0, t0 = time.process_time(), time.perf_counter()
            merges = _bpe.train(data, vocab_size=256 + args.merges)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        theirs = rustbpe_merges(data, args.merges)
        check = "not checked (rustbpe missing or ambiguous)"
        if theirs is not None:
            if theirs != merges:
                raise SystemExit(f"MISMATCH: merges differ from rustbpe's at {n:,} bytes; no times printed")
            check = "merges identical to rustbpe's"
        results.append((n, len(merges), statistics.median(walls), statistics.median(cpus), check))
    load = os.getloadavg()
    print(f"one chunk of random ACGT, {args.merges} merges, 1 thread, median of {args.repeats}; load {load[0]:.2f}")
    print("| bytes | merges | wall s | CPU s | CPU / first size | check |")
    print("|---|---|---|---|---|---|")
    for n, m, wall, cpu, check in results:
        print(f"| {n:,} | {m} | {wall:.3f} | {cpu:.3f} | {cpu / results[0][3]:.2f} | {check} |")


if __name__ == "__main__":
    main()
