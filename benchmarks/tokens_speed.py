#!/usr/bin/env python
"""How long tokens.py's measurement takes next to tiktoken alone encoding the same texts (docs/tokens.md).

    TIKTOKEN_CACHE_DIR=../shared/tiktoken_cache python benchmarks/tokens_speed.py

Five tokenizers (tiktoken:gpt2, tiktoken:cl100k_base, tiktoken:o200k_base, and bpe:8192, bpe:32768 trained here
on the English shared corpus) x the three shared corpora.  First the token counts are checked identical: each
tiktoken row's count equals ``sum(len(x) for x in enc.encode_ordinary_batch(documents))``.  Then, from one run,
CPU time (``time.process_time``, all threads) and wall time of:

* the tool's measurement: reading the texts and finding their words (once), then per tokenizer and text
  encoding and every measure of the table (:func:`storygpt.eval.intrinsic.measure`);
* tiktoken alone: ``encode_ordinary_batch`` of the same documents with the same three encodings.

Loading the encodings and training the two BPEs are excluded and reported apart.  The figure: CPU time of the
tool's three tiktoken rows (and of the whole five-row table) / CPU time of tiktoken alone; goal <= 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storygpt.eval.intrinsic import encode_text, load_text, measure  # noqa: E402
from storygpt.eval.tokens_run import Plan, make_tokenizer  # noqa: E402

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
FILES = {
    "en": "english_literature_plus_kjv.txt",
    "ru": "russian_fortunes.txt",
    "zh": "chinese_fortunes.txt",
}
TIKTOKEN = ["tiktoken:gpt2", "tiktoken:cl100k_base", "tiktoken:o200k_base"]
TRAINED = ["bpe:8192", "bpe:32768"]


def clock() -> tuple[float, float]:
    return time.process_time(), time.perf_counter()


def since(t) -> tuple[float, float]:
    c, w = clock()
    return c - t[0], w - t[1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="tokens_speed.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default=str(CORPORA), help="folder of the shared corpora")
    p.add_argument("--threads", type=int, default=0, help="encoder threads (0 = all cores)")
    a = p.parse_args(argv)
    folder = Path(a.corpora)
    missing = [f for f in FILES.values() if not (folder / f).is_file()]
    if missing:
        print(f"tokens_speed.py: error: {folder} lacks {', '.join(missing)}", file=sys.stderr)
        return 1
    import tiktoken

    t = clock()
    texts = [load_text(n, str(folder / f)) for n, f in FILES.items()]
    text_cpu, text_wall = since(t)
    plan = Plan(TIKTOKEN + TRAINED, texts, folder / FILES["en"], None, [], None, False)
    made, setup = {}, {}
    for s in plan.specs:
        t = clock()
        made[s] = make_tokenizer(s, plan, a.threads)[:2]
        setup[s] = since(t)
    encodings = {s: tiktoken.get_encoding(s.split(":")[1]) for s in TIKTOKEN}

    # tiktoken alone
    t = clock()
    alone = {
        (s, x.name): sum(map(len, enc.encode_ordinary_batch(x.documents)))
        for s, enc in encodings.items()
        for x in texts
    }
    alone_cpu, alone_wall = since(t)

    # the tool's measurement
    rows, per_spec = [], {}
    for s in plan.specs:
        tok, enc = made[s]
        t = clock()
        for x in texts:
            rows.append({"tokenizer": s, **measure(tok, x, encode_text(tok, x, enc, a.threads))})
        per_spec[s] = since(t)
    bad = [
        (r["tokenizer"], r["text"])
        for r in rows
        if r["tokenizer"] in encodings and r["tokens"] != alone[(r["tokenizer"], r["text"])]
    ]
    if bad:
        print(f"tokens_speed.py: error: token counts differ from tiktoken's for {bad}", file=sys.stderr)
        return 1
    tik_cpu = sum(per_spec[s][0] for s in TIKTOKEN)
    tik_wall = sum(per_spec[s][1] for s in TIKTOKEN)
    all_cpu = sum(v[0] for v in per_spec.values())
    all_wall = sum(v[1] for v in per_spec.values())
    chars = sum(x.chars for x in texts)
    print(f"texts: {', '.join(f'{x.name} {x.chars:,} chars' for x in texts)}; {os.cpu_count()} cores")
    print(f"counts identical to tiktoken's encode_ordinary_batch for the {len(TIKTOKEN) * len(texts)} tiktoken rows")
    print(f"read texts + find words (once): cpu {text_cpu:.2f} s, wall {text_wall:.2f} s")
    for s in plan.specs:
        print(f"  {s:<22} load/train cpu {setup[s][0]:6.2f} s wall {setup[s][1]:6.2f} s | "
              f"measure cpu {per_spec[s][0]:6.2f} s wall {per_spec[s][1]:6.2f} s")  # fmt: skip
    print(
        f"tiktoken alone, 3 encodings x 3 texts: cpu {alone_cpu:.2f} s, wall {alone_wall:.2f} s ({chars * 3 / alone_wall / 1e6:.1f} M chars/s)"
    )
    print(
        f"tool, 3 tiktoken rows x 3 texts (+ texts once): cpu {tik_cpu + text_cpu:.2f} s, wall {tik_wall + text_wall:.2f} s"
    )
    print(
        f"tool, all 5 rows x 3 texts (+ texts once): cpu {all_cpu + text_cpu:.2f} s, wall {all_wall + text_wall:.2f} s"
    )
    print(f"CPU-time ratio, tiktoken rows / tiktoken alone: {(tik_cpu + text_cpu) / alone_cpu:.2f}")
    print(f"CPU-time ratio, whole table / tiktoken alone: {(all_cpu + text_cpu) / alone_cpu:.2f}")
    print(f"wall-time ratio, tiktoken rows / tiktoken alone: {(tik_wall + text_wall) / alone_wall:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
