"""Build a large, varied training corpus from the shared corpora, for the scale benchmarks.

Usage::

    python benchmarks/make_big_corpus.py OUT.txt --megabytes 200 [--sources FILE ...] [--seed 0]
    python benchmarks/make_big_corpus.py OUT.txt --shakespeare

``--shakespeare`` writes only the Shakespeare works of
``english_literature_plus_kjv.txt`` (the documents whose title line names
him; about 5 MB), unchanged, for benchmarks on one author's text.

The output holds documents separated by ``<|endoftext|>`` lines, like every
corpus in this project.  It is made of copies of the lines of the source
corpora (default: the English, Russian and Chinese files in
``../shared/corpora``): copy 0 is the text as is, copy k > 0 has every Latin
and Cyrillic letter rotated by k places in its alphabet (a Caesar shift that
keeps case, so words are new words with the same shape and frequencies), and
the lines of each copy are shuffled.  So the corpus is not one text repeated
(which would flatter any cache of chunks) but keeps the statistics of real
text.  Documents are runs of 20-400 consecutive shuffled lines.  The file is
written atomically; the same arguments give the same bytes.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from storygpt.atomic import atomic_write  # noqa: E402
from storygpt.tokenizers import EOT  # noqa: E402

SHARED = ROOT.parent / "shared" / "corpora"
DEFAULT_SOURCES = [
    SHARED / "english_literature_plus_kjv.txt",
    SHARED / "russian_fortunes.txt",
    SHARED / "chinese_fortunes.txt",
]


def rotation(k: int) -> dict[int, str]:
    """str.translate table shifting Latin letters by k (mod 26) and Cyrillic а-я by k (mod 32), case kept."""
    table: dict[int, str] = {}
    for first, size in ((ord("a"), 26), (ord("A"), 26), (ord("а"), 32), (ord("А"), 32)):
        for i in range(size):
            table[first + i] = chr(first + (i + k) % size)
    return table


def source_lines(paths: list[Path]) -> list[str]:
    """All non-empty lines of the sources except the document separators (each ends with a newline)."""
    lines: list[str] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise SystemExit(f"make_big_corpus.py: error: cannot read {path}: {e.strerror}") from None
        lines += [line + "\n" for line in text.split("\n") if line.strip() and line.strip() != EOT]
    return lines


def write_corpus(out: Path, lines: list[str], target_bytes: int, seed: int) -> int:
    """Write shuffled, rotated copies of ``lines`` as documents until ``target_bytes``; returns bytes written."""
    rng = random.Random(seed)
    written = 0
    copy = 0
    with atomic_write(out, "wb") as f:
        while written < target_bytes:
            table = rotation(copy) if copy else None
            order = list(range(len(lines)))
            rng.shuffle(order)
            i = 0
            while i < len(order) and written < target_bytes:
                n = rng.randint(20, 400)
                doc = "".join(lines[j] for j in order[i : i + n])
                if table:
                    doc = doc.translate(table)
                data = (doc + EOT + "\n").encode("utf-8")
                f.write(data)
                written += len(data)
                i += n
            copy += 1
    return written


def write_shakespeare(out: Path) -> int:
    """Write the Shakespeare documents of the English corpus; returns bytes written."""
    text = DEFAULT_SOURCES[0].read_text(encoding="utf-8")
    docs = [d for d in text.split(EOT + "\n") if "by William Shakespeare" in d[:200]]
    data = (EOT + "\n").join(d.strip("\n") + "\n" for d in docs).encode("utf-8")
    with atomic_write(out, "wb") as f:
        f.write(data)
    return len(data)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="the corpus file to write")
    p.add_argument("--megabytes", type=float, default=200, help="size to reach, in MB of 10**6 bytes")
    p.add_argument(
        "--sources", type=Path, nargs="+", default=DEFAULT_SOURCES, help="UTF-8 corpora whose lines are used"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the line shuffles and document lengths")
    p.add_argument("--shakespeare", action="store_true", help="write the Shakespeare works only (about 5 MB)")
    args = p.parse_args(argv)
    if args.shakespeare:
        print(f"wrote {args.out} ({write_shakespeare(args.out) / 1e6:.1f} MB)")
        return
    if args.megabytes <= 0:
        p.error(f"--megabytes must be positive, got {args.megabytes}")
    lines = source_lines(args.sources)
    if not lines:
        p.error("the sources hold no text")
    n = write_corpus(args.out, lines, int(args.megabytes * 1e6), args.seed)
    print(f"wrote {args.out} ({n / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
