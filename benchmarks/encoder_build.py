"""Building the C++ encoder on crafted worst cases: long tokens, ids made by several merges.

Issue 24 goal: construction in at most O(B log B) for a vocabulary of B token
bytes.  Each case is built at growing token lengths n; the CPU time per build
should grow about like B (here about 2n: the tokens a^1, a^2, a^4, ... a^n):

* ``doubling``: a^(2k) = (a^k, a^k), one merge each.
* ``made_twice``: the same tokens, the longest also made by a second merge
  (its pair again): ids made by several merges once sent every token through
  a merge loop on its own bytes, quadratic in the longest token.
* ``two_splits``: a token b a^n made by (b, a^n) and by (ba, a^(n-1)) with
  a^(n-1) built by doubling plus ones, so two different splits meet.
* ``cl100k_ranks``: cl100k_base (GPT-4) from its rank file (``merge_rule
  "ranks"``: every split of every token is a merge), when
  ``../shared/tiktoken_cache`` exists.

Before timing, each encoder is checked against the reference merge loop on a
few long chunks (the backtracking encoder and the merge loop must agree).

    nice -n 10 .venv/bin/python benchmarks/encoder_build.py
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

from storygpt import _bpe
from storygpt.tokenizers import bpe_reference as ref

A, B = ord("a"), ord("b")


def doubling(n: int) -> tuple[list[tuple[int, int, int]], dict[int, int]]:
    """Merges making a^2, a^4, ..., a^n (n a power of two); {length: id}."""
    merges, ids, length, next_id = [], {1: A}, 1, 256
    while length < n:
        merges.append((ids[length], ids[length], next_id))
        length *= 2
        ids[length] = next_id
        next_id += 1
    return merges, ids


def made_twice(n: int):
    merges, _ = doubling(n)
    return merges + [merges[-1]]


def two_splits(n: int):
    merges, ids = doubling(n)
    next_id = max(m[2] for m in merges) + 1
    # a^(n-1) = a^(n/2) + a^(n/4) + ... + a: one merge per halving
    left, length = ids[n // 2], n // 2
    part = n // 4
    while part >= 1:
        merges.append((left, ids[part], next_id))
        left, length = next_id, length + part
        next_id += 1
        part //= 2
    a_n_minus_1 = left
    merges.append((B, A, next_id))  # ba
    ba = next_id
    merges.append((B, ids[n], next_id + 1))  # b a^n ...
    merges.append((ba, a_n_minus_1, next_id + 1))  # ... made again as (ba, a^(n-1))
    return merges


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def build_seconds(merges, ranks=None, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = cpu()
        _bpe.Encoder(merges, ranks=ranks)
        best = min(best, cpu() - t0)
    return best


def check(merges) -> str:
    enc, oracle = _bpe.Encoder(merges), ref.Encoder(merges)
    for chunk in (b"a" * 300, b"b" + b"a" * 299, b"ab" * 150):
        want = oracle.encode(chunk)
        assert enc.encode_chunk(chunk, "backtrack").tolist() == want, chunk[:20]
        assert enc.encode_chunk(chunk, "merge").tolist() == want, chunk[:20]
    return enc.backtrack_refusal or "backtracking"


def cl100k_row() -> str | None:
    cache = Path(__file__).resolve().parents[1].parent / "shared" / "tiktoken_cache"
    if not cache.is_dir():
        return None
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(cache))
    from storygpt.tokenizers import BPETokenizer

    tok = BPETokenizer.from_tiktoken("cl100k_base")
    t0 = cpu()
    tok2 = BPETokenizer.from_tiktoken("cl100k_base")
    total = cpu() - t0
    assert tok2.encode("hello world " * 50) == tok.encode("hello world " * 50)
    return f"cl100k_base from its rank file (Python loader + C++ encoder): {total * 1e3:.0f} ms CPU"


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'case':<12} {'n':>7} {'B (bytes)':>10} {'ms CPU':>8}  ms per KB  backtracker")
    for name, make in (("doubling", lambda n: doubling(n)[0]), ("made_twice", made_twice), ("two_splits", two_splits)):
        for n in (1024, 4096, 16384, 65536):
            merges = make(n)
            state = check(merges)
            enc = _bpe.Encoder(merges)
            total_bytes = sum(len(enc.decode([m[2]])) for m in {m[2]: m for m in merges}.values())
            s = build_seconds(merges)
            print(f"{name:<12} {n:>7} {total_bytes:>10} {s * 1e3:>8.2f}  {s * 1e6 / total_bytes:>9.4f}  {state}")
    row = cl100k_row()
    if row:
        print(row)


if __name__ == "__main__":
    t = time.time()
    main()
    print(f"total wall {time.time() - t:.1f} s")
