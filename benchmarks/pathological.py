"""Random letters, one long chunk: storygpt's cl100k encoder against GitHub's ``bpe`` (issue 47).

Usage::

    TIKTOKEN_CACHE_DIR=../shared/tiktoken_cache python benchmarks/pathological.py [--sizes 100k 1M]
        [--rounds 9] [--encoding cl100k_base] [--tiktoken]

The texts are ``benchmarks/vs_libraries.py``'s ``randletters-100k`` / ``-1M``
(lowercase letters, ``random.Random(0)``): no spaces, so cl100k's
pre-tokenization gives one chunk of the whole text and the long-chunk encoder
does all the work.  Before any time is printed, storygpt's ids must equal
tiktoken's and bpe-openai's.

bpe-openai is called through its Rust binding
(``bpe_openai._bindings.tokenizer_for_encoding(...).encode``): its Python
``Encoding`` refuses texts of 1,000,000 characters or more ("Input too long to
encode safely") and adds a pass over the text.

Timing: in each round and for each size, a *fresh* storygpt tokenizer
(``from_tiktoken``: empty chunk caches) is built, construction not timed, then
storygpt and bpe-openai (one tokenizer for the whole run, as it has no
per-call state) each encode the text once; the order of the two alternates
from round to round.  Times are CPU seconds of the process
(``time.process_time``: user + system, all threads; both encode one text on
one thread).  Printed: each library's min and median, min / min, and the
median and range of the per-round ratios (bpe-openai's time / storygpt's),
with the load before and after, the CPU model and the thread counts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from machine import cpu_model, load  # noqa: E402
from vs_libraries import synthetic  # noqa: E402  (the same texts as the suite)


def _timed(fn) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["100k", "1M"], choices=["100k", "1M"])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--encoding", default="cl100k_base", choices=["cl100k_base"])
    ap.add_argument("--tiktoken", action="store_true", help="time tiktoken too (0.7 s a call at 1M)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        raise SystemExit(f"--rounds must be at least 1, got {args.rounds}")
    try:
        import tiktoken
        from bpe_openai import _bindings as bpe_bindings
    except ImportError as e:
        raise SystemExit(f"needs tiktoken and bpe-openai (pip install -e .[bench]): {e}") from None
    from storygpt.tokenizers.interop import from_tiktoken

    load_before = load()
    texts = {size: synthetic(f"randletters-{size}") for size in args.sizes}
    reference = tiktoken.get_encoding(args.encoding)
    bpe = bpe_bindings.tokenizer_for_encoding(args.encoding)
    for size, text in texts.items():
        want = reference.encode_ordinary(text)
        ours = from_tiktoken(args.encoding).encode_ordinary(text)
        theirs = list(bpe.encode(text))
        if ours != want or theirs != want:
            who = "storygpt" if ours != want else "bpe-openai"
            raise SystemExit(f"MISMATCH: {who}'s ids differ from tiktoken's on randletters-{size}; no times printed")
        print(f"randletters-{size}: {len(text):,} characters, {len(want):,} ids, identical in all three")

    libs = ["storygpt", "bpe-openai"] + (["tiktoken"] if args.tiktoken else [])
    cpu = {(size, lib): [] for size in texts for lib in libs}
    for r in range(args.rounds):
        for size, text in texts.items():
            tok = from_tiktoken(args.encoding)  # fresh: nothing cached; the last one is freed here, untimed
            calls = {
                "storygpt": lambda: tok.encode_ordinary(text),
                "bpe-openai": lambda: bpe.encode(text),
                "tiktoken": lambda: reference.encode_ordinary(text),
            }
            order = libs if r % 2 == 0 else libs[::-1]
            for lib in order:
                cpu[(size, lib)].append(_timed(calls[lib]))
    load_after = load()

    print(
        f"\n{args.encoding}, {args.rounds} rounds interleaved, fresh storygpt tokenizer per call (construction"
        f" not timed); 1 text per call, 1 thread each; os.cpu_count() {os.cpu_count()}; CPU {cpu_model()!r};"
        f" load before {load_before}, after {load_after}"
    )
    print("| input | library | CPU ms min | median | ratio min/min | per-round ratio median (range) |")
    print("|---|---|---|---|---|---|")
    for size in texts:
        ours = cpu[(size, "storygpt")]
        for lib in libs:
            t = cpu[(size, lib)]
            row = f"| randletters-{size} | {lib} | {min(t) * 1e3:.2f} | {statistics.median(t) * 1e3:.2f} |"
            if lib == "storygpt":
                print(row + " | |")
                continue
            per_round = [b / a for a, b in zip(ours, t)]
            print(
                row + f" {min(t) / min(ours):.2f}x | {statistics.median(per_round):.2f}x"
                f" ({min(per_round):.2f}-{max(per_round):.2f}) |"
            )


if __name__ == "__main__":
    main()
