#!/usr/bin/env python
"""CPU time of training from an iterator of texts against training on the same text at once.

    python benchmarks/train_iterator.py ../shared/corpora/english_literature_plus_kjv.txt \\
        --megabytes 5 --vocab-sizes 8192 32768 --repeats 5 [--rustbpe]

The first ``--megabytes`` MB of TEXTFILE, cut into documents at ``<|endoftext|>`` and
these into lines (line ends kept), are trained on
four ways, in turn within each repeat (interleaved, so load changes hit every way alike):

* ``text``: ``train_bpe(text)``, the lines as one text (the same bytes; blank lines then make
  chunks that no single line has, so the merges may differ slightly from the others');
* ``joined``: ``train_bpe`` of the lines joined by a one-byte separator registered as a
  special token (chunks never cross lines: the merges of the iterator, by construction);
* ``iterator``: ``train_bpe(iter(lines))``, each line a separate text;
* ``rustbpe`` (``--rustbpe``): ``rustbpe.Tokenizer().train_from_iterator(iter(lines))``.

Before any time is printed it checks that ``joined`` and ``iterator`` learned the same merges
(and ``rustbpe`` too; both break ties by the smallest pair of ids).  Times are CPU seconds of
this process (user + system, ``resource.getrusage``), the best and the median of the repeats,
one counting thread; ratios are of the medians.  The 1-minute load average is printed at the
start and the end.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from storygpt.tokenizers import (
    bpe_reference,  # noqa: E402
    train_bpe,  # noqa: E402
)

SEP = "\x00"  # one byte, absent from the corpora; registered as a special token for `joined`


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _merges(tok) -> list[tuple[bytes, bytes]]:
    """The merges as pairs of byte strings (comparable across vocabularies with other special tokens)."""
    vocab = [bytes([b]) for b in range(256)]
    out = []
    for a, b, _ in tok.merges:
        out.append((vocab[a], vocab[b]))
        vocab.append(vocab[a] + vocab[b])
    return out


def _rustbpe_merges(tok) -> list[tuple[bytes, bytes]]:
    from storygpt.tokenizers import merges_from_ranks

    ranks = {bytes(tb): rank for tb, rank in tok.get_mergeable_ranks()}
    return [(a, b) for a, b in merges_from_ranks(ranks)]


def _ways(text: str, lines: list[str], vocab_size: int, pattern: str, with_rustbpe: bool) -> dict:
    """name -> a function that trains one way and returns its merges as byte pairs."""
    specials = ["<pad>", "<|endoftext|>"]
    joined = SEP.join(lines)
    ways = {
        "text": lambda: _merges(train_bpe(text, vocab_size, pattern=pattern, special_tokens=specials, num_threads=1)),
        "joined": lambda: _merges(
            train_bpe(joined, vocab_size + 1, pattern=pattern, special_tokens=specials + [SEP], num_threads=1)
        ),
        "iterator": lambda: _merges(
            train_bpe(iter(lines), vocab_size, pattern=pattern, special_tokens=specials, num_threads=1)
        ),
    }
    if with_rustbpe:
        os.environ["RAYON_NUM_THREADS"] = "1"  # one thread, as storygpt (read when rustbpe first trains)
        import rustbpe

        regex = bpe_reference.PATTERNS[pattern]

        def rust():
            tok = rustbpe.Tokenizer()
            tok.train_from_iterator(iter(lines), vocab_size - len(specials), pattern=regex)
            return _rustbpe_merges(tok)

        ways["rustbpe"] = rust
    return ways


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("textfile", help="UTF-8 text file")
    p.add_argument("--megabytes", type=float, default=5.0, help="prefix of the file to train on (default: 5)")
    p.add_argument("--vocab-sizes", type=int, nargs="+", default=[8192], help="vocabulary sizes (default: 8192)")
    p.add_argument("--pattern", default="gpt4", choices=["simple", "gpt2", "gpt4"], help="default: gpt4")
    p.add_argument("--repeats", type=int, default=5, help="interleaved rounds (default: 5)")
    p.add_argument("--rustbpe", action="store_true", help="also time rustbpe fed the same lines")
    args = p.parse_args(argv)

    raw = Path(args.textfile).read_bytes()[: int(args.megabytes * 1_000_000)]
    text = raw.decode("utf-8", "ignore")
    if SEP in text:
        raise SystemExit(f"{args.textfile}: contains the separator {SEP!r}; pick another corpus")
    # documents cut at <|endoftext|> (a special token here; rustbpe has none), then into lines
    lines = [line for doc in text.split("<|endoftext|>") for line in doc.splitlines(keepends=True)]
    load0 = os.getloadavg()[0]
    print(f"file: {args.textfile}  first {len(raw):,} bytes, {len(lines):,} lines  pattern: {args.pattern}  1 thread")
    for vocab_size in args.vocab_sizes:
        ways = _ways(text, lines, vocab_size, args.pattern, args.rustbpe)
        cpu = {name: [] for name in ways}
        merges = {}
        for _ in range(args.repeats):
            for name, fn in ways.items():
                c0 = _cpu()
                merges[name] = fn()
                cpu[name].append(_cpu() - c0)
        for name in ("iterator", "rustbpe"):
            if name in merges and merges[name] != merges["joined"]:
                first = next((i for i, (x, y) in enumerate(zip(merges[name], merges["joined"])) if x != y), None)
                raise SystemExit(f"MISMATCH (vocab {vocab_size}): {name} merges differ from joined's at {first}")
        same_text = "identical" if merges["text"] == merges["joined"] else "differ (blank lines)"
        print(
            f"vocab {vocab_size:,}: merges of joined, iterator{', rustbpe' if args.rustbpe else ''} identical; text {same_text}"
        )
        med = {name: statistics.median(v) for name, v in cpu.items()}
        for name, v in cpu.items():
            print(f"  {name:<9} CPU s best {min(v):.3f}  median {med[name]:.3f}")
        print(f"  iterator / text   {med['iterator'] / med['text']:.2f}x")
        print(f"  iterator / joined {med['iterator'] / med['joined']:.2f}x")
        if "rustbpe" in med:
            print(f"  rustbpe / iterator {med['rustbpe'] / med['iterator']:.2f}x")
    print(f"load average (1 min): {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
