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

``--sets-attribution`` measures instead what issue 33's figures cost on top of today's bits.py:

    python benchmarks/bits_eval.py A.pt B.pt C.pt D.pt --chars 500000 --sets-attribution

* ``today``: ``evaluate_bits`` once per checkpoint (bits.py's one forward pass per model);
* ``sets+attribution``: ``storygpt.eval.measure.measure_text`` per checkpoint (the same single pass,
  keeping every token's loss, per-set figures, per-character losses), then the attribution of every
  model against the best one (character class, position, word frequency in train.txt, document, set)
  and the paired per-set intervals;

checks that both give the same nats, and prints both times and their ratio (issue 33's goal: <= 1.5x).
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
    ap.add_argument("--sets-attribution", action="store_true", help="time issue 33's sets and attribution")
    args = ap.parse_args()
    if args.sets_attribution:
        return sets_attribution(args)

    import torch

    from storygpt import load_checkpoint
    from storygpt.checkpoint import data_dir_of
    from storygpt.eval.bits import evaluate_bits, read_documents, take_characters, token_stream, window_nats
    from storygpt.runtime import fastest_threads, usable_cores

    default_threads = torch.get_num_threads()
    for path in args.checkpoints:
        model, tok, ckpt = load_checkpoint(path, device="cpu")
        text = Path(args.text) if args.text else data_dir_of(ckpt, path) / "valid.txt"
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


def sets_attribution(args) -> None:
    import math

    import torch

    from storygpt import load_checkpoint
    from storygpt.data.evalsets import default_groups, heldout_work_names
    from storygpt.eval.attribution import attribute, splits_of
    from storygpt.eval.bits import evaluate_bits, read_documents, take_characters
    from storygpt.eval.charloss import count_words
    from storygpt.eval.measure import Text, measure_text
    from storygpt.eval.sets import block_sums, set_intervals

    models = [load_checkpoint(p, device="cpu") for p in args.checkpoints]
    from storygpt.checkpoint import data_dir_of

    data_dir = Path(args.text).parent if args.text else data_dir_of(models[0][2], args.checkpoints[0])
    text_path = Path(args.text) if args.text else data_dir / "valid.txt"
    docs = take_characters(read_documents(text_path), args.chars or None)
    names = heldout_work_names(data_dir, len(docs))
    text = Text(
        text_path.name, docs, default_groups(len(docs), names), names or [f"doc-{i + 1}" for i in range(len(docs))]
    )
    threads = torch.get_num_threads()

    def today():
        return [evaluate_bits(m, t, docs, block_size=m.config.block_size).nats for m, t, _ in models]

    def new():
        measured = [measure_text(m, t, text, per_character=True, block_size=m.config.block_size) for m, t, _ in models]
        counts = count_words(read_documents(data_dir / "train.txt")) if (data_dir / "train.txt").is_file() else None
        splits = splits_of([text], counts)
        best = min(range(len(measured)), key=lambda i: measured[i].result.nats)
        for i, m in enumerate(measured):
            if i == best:
                continue
            attribute(m.char_nats, measured[best].char_nats, splits)
            blocks = {}
            from storygpt.eval.measure import set_char_ranges

            for name, (lo, hi) in set_char_ranges(text).items():
                blocks[name] = (block_sums(m.char_nats[lo:hi], 2000), block_sums(measured[best].char_nats[lo:hi], 2000))
            set_intervals(
                {k: v[0][0] for k, v in blocks.items()},
                {k: v[1][0] for k, v in blocks.items()},
                {k: v[0][1] for k, v in blocks.items()},
            )
        return [m.result.nats for m in measured]

    times, results = {}, {}
    for name, fn in (("today", today), ("sets+attribution", new)):
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            results[name] = fn()
            best = min(best, time.perf_counter() - t)
        times[name] = best
    for a, b in zip(results["today"], results["sets+attribution"]):
        if not math.isclose(a, b, rel_tol=1e-6):
            raise SystemExit(f"bits_eval.py: error: nats differ: today {a!r}, sets+attribution {b!r}")
    print(
        f"{len(models)} models, {sum(len(d) for d in docs):,} characters, {len(text.sets)} sets, {threads} thread(s): "
        f"today {times['today']:.2f} s, sets+attribution {times['sets+attribution']:.2f} s, "
        f"{times['sets+attribution'] / times['today']:.2f}x; load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
