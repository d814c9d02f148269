"""encode_iterable's CPU time: buffers encoded in pieces (the default) against whole buffers.

``encode_iterable`` encodes each buffer of ``buffer_chars`` characters in pieces of at
most ``Tokenizer._piece_chars`` characters cut at safe positions (docs/bpe_core.md,
"Memory"), so that no list of more than one piece's ids is held; before, each buffer was
one ``encode`` call.  This script streams FILE (opened as a text file, line by line)
through ``encode_iterable`` into ``np.fromiter`` with GPT-2's vocabulary (the project's
``shared/tiktoken_cache`` files), special tokens allowed, passes of the two modes
alternating, each with a fresh tokenizer (empty caches).  The ids of every pass are
checked against ``encode`` of the whole text before anything is printed (exit status 1
on a difference).  Prints the best CPU seconds (``time.process_time``) of each mode and
their ratio.

Example::

    nice -n 10 python benchmarks/encode_iterable.py ../shared/corpora/english_literature_plus_kjv.txt
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from storygpt.tokenizers import BPETokenizer, Tokenizer  # noqa: E402
from storygpt.tokenizers.interop import from_gpt2_files  # noqa: E402

WHOLE = 1 << 62  # a piece size no buffer reaches: one encode call per buffer


def gpt2():
    cache = Path(os.environ.get("TIKTOKEN_CACHE_DIR", ROOT.parent / "shared" / "tiktoken_cache"))
    return from_gpt2_files(
        cache / "6c7ea1a7e38e3a7f062df639a5b80947f075ffe6", cache / "6d1cbeee0f20b3d9449abfede4726ed8212e3aee"
    )


def one_pass(vocab: dict, path: str, buffer_chars: int, piece_chars: int) -> tuple[float, np.ndarray]:
    """CPU seconds of streaming ``path`` with a fresh tokenizer made from ``vocab``, and the ids."""
    tok = BPETokenizer.from_dict(vocab)
    tok._piece_chars = piece_chars
    with open(path, encoding="utf-8") as f:
        t0 = time.process_time()
        ids = np.fromiter(tok.encode_iterable(f, "all", buffer_chars=buffer_chars), dtype=np.uint32)
        return time.process_time() - t0, ids


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "file", nargs="?", default=str(ROOT.parent / "shared" / "corpora" / "english_literature_plus_kjv.txt")
    )
    p.add_argument("--buffer-chars", type=int, nargs="+", default=[1 << 16, 1 << 20])
    p.add_argument("--repeats", type=int, default=3, help="passes of each mode (default 3)")
    args = p.parse_args(argv)
    tok = gpt2()
    vocab = tok.to_dict()
    with open(args.file, encoding="utf-8") as f:
        want = np.asarray(tok.encode(f.read(), "all"), dtype=np.uint32)
    rows = []
    for buffer_chars in args.buffer_chars:
        best = {}
        for _ in range(args.repeats):
            for name, piece_chars in (("pieces", getattr(Tokenizer, "_piece_chars", WHOLE)), ("whole", WHOLE)):
                seconds, ids = one_pass(vocab, args.file, buffer_chars, piece_chars)
                if not np.array_equal(ids, want):
                    print(
                        f"ids differ ({name}, buffer {buffer_chars}): {len(ids)} against {len(want)}", file=sys.stderr
                    )
                    return 1
                best[name] = min(best.get(name, float("inf")), seconds)
        rows.append((buffer_chars, best["pieces"], best["whole"]))
    print(f"{args.file}: {len(want):,} ids, GPT-2, best of {args.repeats}, load {os.getloadavg()[0]:.1f}")
    print("buffer_chars  pieces CPU s  whole CPU s  ratio")
    for buffer_chars, pieces, whole in rows:
        print(f"{buffer_chars:12,}  {pieces:12.3f}  {whole:11.3f}  {pieces / whole:5.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
