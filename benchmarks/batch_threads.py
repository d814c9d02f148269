"""Batch encoding with 1 and 2 threads: wall, CPU, and the calling thread's share (issue 14).

    python benchmarks/batch_threads.py FILE [--root CHECKOUT] [--encodings gpt2 cl100k_base] [--repeats 5]

FILE is split at ``<|endoftext|>`` into documents; each run encodes them with a
fresh tokenizer (empty chunk cache) through ``BPETokenizer.encode_batch``
(lists) and ``encode_batch_numpy``, runs interleaved.  Per case it prints the
medians of wall and CPU time, and for 2 threads the calling thread's CPU
(``time.thread_time()``) and the rest (the worker): "1-thread CPU / max(main,
worker)" estimates the speed-up on an idle machine (it ignores idle waits, so
it is an upper bound).  ``--root`` measures another checkout's build (its
storygpt is put first on ``sys.path``).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="UTF-8 text file, documents separated by <|endoftext|>")
    p.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="checkout whose storygpt to time")
    p.add_argument("--encodings", nargs="+", default=["gpt2"], help="tiktoken encoding names")
    p.add_argument("--repeats", type=int, default=5, help="runs per case (medians are printed)")
    args = p.parse_args()
    sys.path.insert(0, args.root)
    from storygpt.tokenizers.interop import from_tiktoken

    docs = Path(args.file).read_text(encoding="utf-8").split("<|endoftext|>")
    runs: dict[tuple, list[tuple[float, float, float]]] = {}
    for _ in range(args.repeats):
        for enc in args.encodings:
            for kind in ("lists", "numpy"):
                for threads in (1, 2):
                    tok = from_tiktoken(enc)
                    call = tok.encode_batch if kind == "lists" else tok.encode_batch_numpy
                    c0, m0, t0 = _cpu(), time.thread_time(), time.perf_counter()
                    call(docs, num_threads=threads)
                    wall, cpu, main_cpu = time.perf_counter() - t0, _cpu() - c0, time.thread_time() - m0
                    runs.setdefault((enc, kind, threads), []).append((wall, cpu, main_cpu))
    print(
        "| vocab | output | 1 thread wall | 1 thread CPU | 2 threads wall | 2 threads CPU | main CPU | worker CPU | estimate |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for enc in args.encodings:
        for kind in ("lists", "numpy"):
            one, two = runs[(enc, kind, 1)], runs[(enc, kind, 2)]
            med = lambda rows, i: statistics.median(r[i] for r in rows)  # noqa: E731
            path = statistics.median(max(m, c - m) for _, c, m in two)
            worker = statistics.median(c - m for _, c, m in two)
            print(
                f"| {enc} | {kind} | {med(one, 0):.3f} | {med(one, 1):.3f} | {med(two, 0):.3f} | {med(two, 1):.3f} | "
                f"{med(two, 2):.3f} | {worker:.3f} | {med(one, 1) / path:.2f}x |"
            )


if __name__ == "__main__":
    main()
