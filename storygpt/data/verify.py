"""Check that data.py's token files hold the documents of ``train.txt`` / ``valid.txt``.

    python -m storygpt.data.verify data/NAME bpe-8192 [--every N]

For each split the token file is cut at the ``<|endoftext|>`` id (there must be
one fewer than documents) and each piece is compared with its document,
streamed from the text file: a lossless tokenizer (no ``<unk>``: BPE, byte,
tiktoken) must decode the piece to the document character for character; a
lossy one (word-level) must give the piece when the document is encoded again.
Memory holds the eot positions and one batch of documents; the token file is
memory-mapped (its checksum is checked first).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from .binfile import read_tokens
from .docstream import DocumentFile
from .progress import bar

_WINDOW = 1 << 24  # ids scanned for the eot id at a time


def eot_positions(ids: np.ndarray, eot: int) -> np.ndarray:
    """Positions (int64) of ``eot`` in ``ids``, scanned a window at a time (no full-size temporary)."""
    found = [np.flatnonzero(ids[i : i + _WINDOW] == eot) + i for i in range(0, len(ids), _WINDOW)]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def check_split(folder: str | Path, slug: str, split: str, every: int = 1, progress: bool = False) -> dict:
    """Compare ``{split}-{slug}.bin`` with ``{split}.txt`` document by document.

    Args:
        folder: the corpus folder data.py wrote.
        slug: the tokenizer's slug (``bpe-8192``, ``word-10000``).
        split: ``"train"`` or ``"valid"``.
        every: check every N-th document only (the eot count is always checked).

    Returns:
        ``{"documents", "checked", "tokens", "lossless"}``.

    Raises:
        ValueError: a mismatch (the split, document index and what differs named), or a
            token file that fails its checksum.
    """
    from storygpt.tokenizers import load

    folder = Path(folder)
    tok = load(folder / f"tokenizer-{slug}.json")
    ids = read_tokens(folder / f"{split}-{slug}.bin", tok)
    cuts = eot_positions(ids, tok.eot_id)
    starts = np.concatenate([[0], cuts + 1])
    ends = np.concatenate([cuts, [len(ids)]])
    lossless = tok.unk_id is None
    docs = DocumentFile(folder / f"{split}.txt")
    n = checked = 0
    with bar(f"check {split}-{slug}.bin", docs.size, "B", progress) as b:
        for i, doc in enumerate(docs.iter(b.update)):
            n += 1
            if i >= len(starts):
                raise ValueError(f"{split}-{slug}.bin: {len(starts)} documents in the ids, more in {split}.txt")
            if i % every:
                continue
            piece = np.asarray(ids[starts[i] : ends[i]])
            if lossless:
                ok = tok.decode(piece) == doc
            else:
                ok = piece.tolist() == list(tok.encode_ordinary(doc))
            if not ok:
                raise ValueError(f"{split}-{slug}.bin: document {i} of {split}.txt does not match its ids")
            checked += 1
    if n != len(starts):
        raise ValueError(f"{split}-{slug}.bin: {len(starts)} documents in the ids, {n} in {split}.txt")
    return {"documents": n, "checked": checked, "tokens": int(len(ids)), "lossless": lossless}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m storygpt.data.verify",
        description="Check that OUT/NAME/{train,valid}-SLUG.bin hold the documents of train.txt / valid.txt.",
    )
    p.add_argument("folder", help="the corpus folder data.py wrote (e.g. data/shakespeare)")
    p.add_argument("slug", help="the tokenizer slug of the token files (e.g. bpe-8192, word-10000)")
    p.add_argument("--every", type=int, default=1, help="check every N-th document (default: all)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    if args.every < 1:
        p.error(f"--every must be at least 1, got {args.every}")
    try:
        for split in ("valid", "train"):
            r = check_split(args.folder, args.slug, split, args.every, not args.quiet)
            how = "decode to" if r["lossless"] else "re-encode from"
            print(
                f"{split}: {r['tokens']:,} ids, {r['documents']:,} documents; {r['checked']:,} checked: the ids "
                f"{how} the documents of {split}.txt exactly"
            )
    except (OSError, ValueError) as e:
        print(f"verify: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
