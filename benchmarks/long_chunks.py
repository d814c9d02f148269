"""The encoder's two long-chunk algorithms side by side: the merge loop and backtracking.

Usage::

    python benchmarks/long_chunks.py [--encodings gpt2 cl100k_base] [--lengths 65 128 256 1000 100000]
                                     [--repeats 5] [--corpora ../shared/corpora]

Each input kind is cut into pieces of one length (at most ~300 kB of pieces per
length), and every piece is encoded as one chunk by ``Encoder.encode_chunk`` with
``method="merge"`` and ``method="backtrack"`` (ids compared); the time is the
best of ``--repeats`` passes over all pieces, per byte.  Kinds: runs of spaces,
of 'a', of '7', random lowercase letters, and the letters of each corpus file
(ASCII letters and every non-ASCII byte: English without spaces, Chinese,
Russian), which the tests never see.  A Python call per piece adds ~1 us to
both methods alike.  GPT-2's files are read through tiktoken's cache: set
``TIKTOKEN_CACHE_DIR``.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from storygpt.tokenizers.interop import from_tiktoken

MAX_BYTES = 300_000


def kinds(corpora: Path) -> dict[str, bytes]:
    """Input kind -> a long byte string to cut pieces from."""
    rng = random.Random(0)
    out = {
        "spaces": b" " * MAX_BYTES,
        "a": b"a" * MAX_BYTES,
        "7": b"7" * MAX_BYTES,
        "randletters": bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(MAX_BYTES)),
    }
    for path in sorted(corpora.glob("*.txt")):
        raw = path.read_bytes()[: 4 * MAX_BYTES]
        out[path.stem] = bytes(c for c in raw if c >= 0x80 or chr(c).isalpha())
    return out


def pieces(data: bytes, length: int) -> list[bytes]:
    """Consecutive pieces of `length` bytes (extended to a UTF-8 character boundary), ~MAX_BYTES in all."""
    out, start, total = [], 0, 0
    while start + length <= len(data) and total < MAX_BYTES:
        end = start + length
        while end < len(data) and data[end] & 0xC0 == 0x80:
            end += 1
        out.append(data[start:end])
        total += end - start
        start = end
    return out


def best_time(enc, chunks: list[bytes], method: str, repeats: int) -> tuple[float, list]:
    best, ids = float("inf"), []
    for _ in range(repeats):
        t = time.perf_counter()
        ids = [enc.encode_chunk(c, method) for c in chunks]
        best = min(best, time.perf_counter() - t)
    return best, ids


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--encodings", nargs="+", default=["gpt2", "cl100k_base"], help="tiktoken encoding names")
    p.add_argument("--lengths", nargs="+", type=int, default=[65, 128, 256, 1000, 100_000], help="piece bytes")
    p.add_argument("--repeats", type=int, default=5, help="passes over the pieces; the best one counts")
    p.add_argument("--corpora", type=Path, default=Path("../shared/corpora"), help="folder of *.txt corpora")
    args = p.parse_args(argv)
    data = kinds(args.corpora)
    print("| vocab | input | bytes per chunk | merge loop ns/B | backtracking ns/B | merge / backtrack |")
    print("|---|---|---|---|---|---|")
    for name in args.encodings:
        enc = from_tiktoken(name)._encoder
        if enc.backtrack_refusal:
            raise SystemExit(f"{name}: backtracking refused: {enc.backtrack_refusal}")
        for kind, text in data.items():
            for length in args.lengths:
                chunks = pieces(text, length)
                if not chunks:
                    continue
                n = sum(map(len, chunks))
                t_merge, ids_merge = best_time(enc, chunks, "merge", args.repeats)
                t_back, ids_back = best_time(enc, chunks, "backtrack", args.repeats)
                if any(a.tolist() != b.tolist() for a, b in zip(ids_merge, ids_back)):
                    raise SystemExit(f"{name} {kind} {length}: the two methods disagree")
                print(
                    f"| {name} | {kind} | {length:,} | {t_merge * 1e9 / n:.1f} | {t_back * 1e9 / n:.1f} "
                    f"| {t_merge / t_back:.2f} |"
                )


if __name__ == "__main__":
    main()
