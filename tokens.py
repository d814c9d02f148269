#!/usr/bin/env python
"""Measure tokenizers on text alone, with no model: tokens, chars/token, fertility, Rényi efficiency, premium.

    python tokens.py tiktoken:gpt2 bpe:8192                          # on data/shakespeare/valid.txt
    python tokens.py tiktoken:cl100k_base --eval en=en.txt --eval ru=ru.txt --reference en
    python tokens.py bpe --vocab-sweep 1024,2048,4096,8192           # tokens per 1k chars vs vocabulary size

Writes OUT (default reports/tokens-NAME/): report.md, results.csv, results.json, tokens.png and, with
--vocab-sweep, sweep.png.  The measures and the word rule: docs/tokens.md.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
import warnings

from storygpt.cli import ToolParser, check_output, check_ranges, show
from storygpt.helpformat import DefaultsOnceHelpFormatter
from storygpt.model.presets import PRESETS
from storygpt.tokenizers.registry import kind_help

DEFAULT_PRESET = "small"  # pretrain.py's default model shape


def build_parser() -> argparse.ArgumentParser:
    p = ToolParser(
        prog="tokens.py",
        description=(
            "Measure tokenizers on texts with no model: one row per tokenizer x text (tokens, chars/token, "
            "bytes/token, tokens per word, share of split words, Renyi efficiency, vocabulary used, unk share, "
            "round trip, encode seconds), the premium against a reference text, and a vocabulary-size sweep. "
            "End-of-document tokens are not counted.  docs/tokens.md."
        ),
        formatter_class=DefaultsOnceHelpFormatter,
    )
    p.add_argument(
        "specs",
        nargs="+",
        metavar="SPEC",
        help=f"tokenizers, any SPEC data.py takes: {kind_help()}; trained kinds train on the training text "
        "(data.py's tokenizer file in the corpus folder is reused when present)",
    )
    p.add_argument(
        "--eval",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a text to measure (UTF-8, documents separated by '<|endoftext|>' lines); repeatable; "
        "default: the corpus's held-out text DATA/CORPUS/valid.txt as data.py writes it",
    )
    p.add_argument(
        "--reference",
        metavar="NAME",
        help="the --eval text every row is compared with: premium = (tokens/char of the text) / (tokens/char of "
        "the reference) for the same tokenizer; with --parallel, tokens / tokens of the reference",
    )
    p.add_argument(
        "--parallel",
        action="store_true",
        help="the texts are translations of each other, document for document (benchmarks/parallel_mo.py "
        "writes such files): premium is the raw token ratio (Petrov et al. 2023 parity)",
    )
    p.add_argument(
        "--vocab-sweep",
        metavar="SIZES",
        help="vocabulary sizes, increasing, separated by commas (e.g. 1024,2048,4096): each trained SPEC "
        "(bpe, superbpe, unigram, wordpiece, spm-*) is trained at each size on the training text and measured "
        "in tokens per 1,000 characters of each text (bpe: trained once at the largest, smaller sizes are "
        "prefixes of its merges)",
    )
    p.add_argument(
        "--n-embd",
        type=int,
        default=PRESETS[DEFAULT_PRESET]["n_embd"],
        help="model width for the sweep's embedding + output-layer parameters (default: pretrain.py's default "
        f"preset {DEFAULT_PRESET}, {PRESETS[DEFAULT_PRESET]['n_embd']}; tied or untied as the default recipe)",
    )
    p.add_argument("--data", default="data", help="data.py's output root (its --out)")
    p.add_argument("--corpus", default="shakespeare", help="the corpus folder under --data (data.py's --name)")
    p.add_argument(
        "--train-file",
        metavar="PATH",
        help="train the trained SPECs on this UTF-8 text (documents separated by '<|endoftext|>' lines) instead "
        "of DATA/CORPUS/train.txt",
    )
    p.add_argument("--out", metavar="DIR", help="output folder (default: reports/tokens-CORPUS/); replaced whole")
    p.add_argument("--threads", type=int, default=0, help="encoder and trainer threads (0 = all cores)")
    return p


RANGES = {"n_embd": (1, None), "threads": (0, None)}


def main(argv: list[str] | None = None) -> int:
    from storygpt.eval.tokens_run import PlanError, check_plan, parse_eval
    from storygpt.eval.vocab_sweep import parse_sizes

    parser = build_parser()
    args = parser.parse_args(argv)
    check_ranges(parser, args, RANGES)
    out = args.out or f"reports/tokens-{args.corpus}"
    check_output(parser, "--out", out, folder=True)
    try:
        sizes = parse_sizes(args.vocab_sweep) if args.vocab_sweep is not None else []
        evals = [parse_eval(e) for e in args.eval]
        plan = check_plan(
            args.specs, evals, f"{args.data}/{args.corpus}", args.train_file, sizes, args.reference, args.parallel
        )
    except (PlanError, ValueError) as e:
        parser.error(str(e))
    command = "python tokens.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    return run_plan(plan, out, args.n_embd, args.threads, command, args.corpus)


def run_plan(plan, out: str, n_embd: int, threads: int, command: str, name: str) -> int:
    from storygpt.eval.intrinsic import add_premium
    from storygpt.eval.tokens_report import format_sweep, format_table, write_outputs
    from storygpt.eval.tokens_run import make_tokenizer, measure_all
    from storygpt.eval.vocab_sweep import sweep
    from storygpt.model.recipes import DEFAULT, RECIPES

    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            rows, made = measure_all(plan, threads)
            if plan.reference is not None:
                add_premium(rows, plan.reference, plan.parallel)
            tied = bool(RECIPES[DEFAULT]["tie_embeddings"])
            sweeps = [
                sweep(s, plan.sweep_sizes, lambda t: make_tokenizer(t, plan, threads)[0], plan.texts, n_embd, tied)
                for s in plan.specs
                if plan.sweep_sizes and _trained(s)
            ]
        meta = {
            "name": name,
            "command": command,
            "reference": plan.reference,
            "parallel": plan.parallel,
            "texts": [{"name": t.name, "path": t.path, "documents": len(t.documents)} for t in plan.texts],
            "tokenizers": made,
            "seconds": time.perf_counter() - t0,
        }
        files = write_outputs(out, rows, sweeps, meta)
    except (OSError, ValueError, ImportError) as e:
        print(f"tokens.py: error: {e}", file=sys.stderr)
        return 1
    print(format_table(rows, meta))
    if sweeps:
        print()
        print(format_sweep(sweeps))
    for m in made:
        print(f"{m['tokenizer']}: {m['how']} ({m['seconds']:.1f} s)")
    print(f"{show(out)}/ now holds: {', '.join(files)} ({meta['seconds']:.1f} s in all)")
    return 0


def _trained(spec_text: str) -> bool:
    from storygpt.tokenizers.spec import parse_spec

    return parse_spec(spec_text).is_trained


if __name__ == "__main__":
    from storygpt.cli import run

    run(main)
