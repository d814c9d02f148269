#!/usr/bin/env python
"""The goals of issue 34, measured: the made tasks' cost, and whether they separate a trained model from an untrained one.

    python benchmarks/tasks_bench.py speed                      # 4 small-preset runs, 3 made tasks, timed
    python benchmarks/tasks_bench.py separate checkpoints/shakespeare/rope-bpe-8192/best.pt

``speed``: four checkpoints of compare.py's default shape (the ``small`` preset: 3 layers, width 96, context
128; rotary positions) with the tokenizers ``byte``, ``bpe:8192`` (the corpus's), ``bpe:1024`` and ``word`` --
weights as initialised, which costs the same time as trained ones -- scored by ``bits.py --tasks made`` (1,000
items each, the default corpus's valid.txt) in this process; prints the wall time of the whole call (task making,
lm-eval, bootstrap included) and the process's CPU time (all its threads; on a shared machine the wall time
mostly measures the other processes).  Goal: at most 5 minutes on 2 cores.  State the machine load.

``separate``: the given checkpoint against an untrained twin (the same config and tokenizer, weights as
initialised with ``--seed``), ``bits.py --tasks made``; prints each task's paired difference in bits per
character of the answer (untrained minus trained: > 0 when the trained model is better) and in accuracy, with
95% intervals, and each model's accuracy minus chance.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def untrained_like(ckpt_path: str, out: Path, seed: int) -> Path:
    import torch

    from storygpt import load_checkpoint
    from storygpt.checkpoint import save_checkpoint
    from storygpt.model import GPT

    model, tok, ckpt = load_checkpoint(ckpt_path)
    torch.manual_seed(seed)
    fresh = GPT(model.config)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(out, {"model": fresh.state_dict(), "config": fresh.config.to_dict(), "tokenizer": tok.to_dict()})
    return out


def small_runs(root: Path, corpus: Path) -> list[Path]:
    import torch

    from storygpt.checkpoint import save_checkpoint
    from storygpt.model import GPT, GPTConfig
    from storygpt.model.presets import preset
    from storygpt.tokenizers import load
    from storygpt.tokenizers.spec import build_tokenizer, parse_spec

    train = (corpus / "train.txt").read_text(encoding="utf-8")[:400_000]
    toks = {
        "byte": build_tokenizer(parse_spec("byte")),
        "bpe-8192": load(corpus / "tokenizer-bpe-8192.json"),
        "bpe-1024": build_tokenizer(parse_spec("bpe:1024"), [train]),
        "word": build_tokenizer(parse_spec("word:8192"), [train]),
    }
    shape = {k: v for k, v in preset("small").items() if k in ("n_layer", "n_head", "n_embd", "block_size")}
    paths = []
    for name, tok in toks.items():
        torch.manual_seed(0)
        m = GPT(GPTConfig(vocab_size=tok.vocab_size, position="rope", **shape))
        p = root / name / "best.pt"
        p.parent.mkdir(parents=True)
        save_checkpoint(p, {"model": m.state_dict(), "config": m.config.to_dict(), "tokenizer": tok.to_dict()})
        paths.append(p)
    return paths


def run_bits(argv: list[str]) -> tuple[dict, float]:
    import bits

    out = Path(tempfile.mkdtemp()) / "tasks.json"
    t0, c0 = time.perf_counter(), time.process_time()
    code = bits.main([*argv, "--json", str(out), "--no-progress"])
    wall = time.perf_counter() - t0
    print(f"bits.py: {wall:.1f} s wall, {time.process_time() - c0:.1f} s CPU (all threads of this process)")
    if code != 0:
        raise SystemExit(f"bits.py exited {code}")
    return json.loads(out.read_text()), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--corpus", default=str(REPO / "data/shakespeare"))
    s.add_argument("--threads", type=int, default=0)
    p = sub.add_parser("separate")
    p.add_argument("checkpoint")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--items", type=int, default=1000)
    p.add_argument(
        "--text", default=str(REPO / "data/shakespeare/valid.txt"), help="held-out text the tasks are made from"
    )
    args = ap.parse_args()
    os.chdir(REPO)
    if args.what == "speed":
        corpus = Path(args.corpus)
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            paths = small_runs(Path(tmp), corpus)
            print(f"made 4 checkpoints in {time.perf_counter() - t0:.1f} s (not counted)")
            rep, wall = run_bits(
                [
                    *map(str, paths),
                    "--text",
                    str(corpus / "valid.txt"),
                    "--tasks",
                    "made",
                    "--threads",
                    str(args.threads),
                ]
            )
        for t, s in rep["scores"].items():
            print(
                t,
                [
                    (r["name"], r["items"], r["cut_requests"], round(r["bits_per_character"]["value"], 3))
                    for r in s["models"]
                ],
            )
        print(f"bits.py --tasks made on 4 runs: {wall:.1f} s wall ({os.getloadavg()[0]:.1f} load average, 1 min)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        twin = untrained_like(args.checkpoint, Path(tmp) / "untrained" / "best.pt", args.seed)
        rep, wall = run_bits(
            [str(twin), args.checkpoint, "--text", args.text, "--tasks", "made", "--task-items", str(args.items)]
        )
    for t, s in rep["scores"].items():
        un, tr = s["models"]
        d = tr["vs_first"]
        print(f"{t}: {tr['items']} items")
        for r in (un, tr):
            b, a, c = r["bits_per_character"], r["accuracy"], r["accuracy_minus_chance"]
            extra = "" if c is None else f"; acc - chance {c['value']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"
            print(
                f"  {r['name']:>10}: bits/char {b['value']:.4f} [{b['low']:.4f}, {b['high']:.4f}], "
                f"acc {a['value']:.3f} [{a['low']:.3f}, {a['high']:.3f}]{extra}"
            )
        db, da = d["bits_per_character"], d["accuracy"]
        print(
            f"  trained - untrained: bits/char {db['value']:+.4f} [{db['low']:+.4f}, {db['high']:+.4f}], "
            f"acc {da['value']:+.3f} [{da['low']:+.3f}, {da['high']:+.3f}]"
        )
    print(f"({wall:.1f} s)")


if __name__ == "__main__":
    main()
