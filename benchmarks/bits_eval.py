#!/usr/bin/env python
"""bits.py's measurement, the way it ran before (whole logits, 16 windows, 2 threads) against now.

    python benchmarks/bits_eval.py checkpoints/pretrain-rope/best.pt checkpoints/pretrain-rope-bpe/best.pt
    python benchmarks/bits_eval.py CKPT --chars 100000 --repeat 3

For each checkpoint and the same held-out characters (its corpus's valid.txt, or --text) it runs

* ``before``: ``evaluate_bits`` on ``lambda x: model(x)`` (so the full ``(B, T, V)`` logits are made
  and passed to the cross-entropy whole), 16 windows per pass, torch's default thread count;
* ``now``: ``evaluate_bits`` on the GPT itself (output layer in row blocks), default batch, the
  thread count bits.py picks;

checks that both give the same nats (relative 1e-6) before printing any time, then prints the best
wall time of ``--repeat`` runs of each and the ratio.  State the machine load with the figures.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoints", nargs="+", help="checkpoint files (best.pt or ckpt.pt)")
    ap.add_argument("--text", help="UTF-8 text (documents separated by lines <|endoftext|>); default: valid.txt")
    ap.add_argument("--chars", type=int, default=0, help="measure the first N characters (0 = all)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each variant; the best is reported")
    args = ap.parse_args()

    import torch

    from storygpt import load_checkpoint
    from storygpt.evaluate import evaluate_bits, read_documents, take_characters, token_stream, window_nats
    from storygpt.runtime import fastest_threads, usable_cores

    default_threads = torch.get_num_threads()
    for path in args.checkpoints:
        model, tok, ckpt = load_checkpoint(path, device="cpu")
        text = Path(args.text) if args.text else Path(ckpt["data_dir"]) / "valid.txt"
        docs = take_characters(read_documents(text), args.chars or None)
        block = model.config.block_size

        def before():
            torch.set_num_threads(default_threads)
            return evaluate_bits(lambda x: model(x), tok, docs, block_size=block, batch_size=16)

        def now():
            # bits.py's thread choice: one timed batch on 1 thread and on all cores
            stream = torch.from_numpy(token_stream(tok, docs)[0][: 64 * block + 1].copy())
            n = (len(stream) - 1) // block
            windows = [(i * block, (i + 1) * block, i * block + 1) for i in range(n)]
            with torch.inference_mode():
                fastest_threads(lambda: window_nats(model, stream, windows, batch_size=n), [1, usable_cores()])
            return evaluate_bits(model, tok, docs, block_size=block)

        results, times = {}, {}
        for name, fn in (("before", before), ("now", now)):
            best = float("inf")
            for _ in range(args.repeat):
                t = time.perf_counter()
                results[name] = fn()
                best = min(best, time.perf_counter() - t)
            times[name] = best
        a, b = results["before"].nats, results["now"].nats
        if abs(a - b) > 1e-6 * abs(a):
            raise SystemExit(f"bits_eval.py: error: {path}: nats differ: before {a!r}, now {b!r}")
        print(
            f"{path}: {results['now'].tokens:,} tokens, {results['now'].bits_per_character:.6f} bits/char (both); "
            f"before {times['before']:.2f} s, now {times['now']:.2f} s ({torch.get_num_threads()} thread(s)), "
            f"{times['before'] / times['now']:.2f}x; load average {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
