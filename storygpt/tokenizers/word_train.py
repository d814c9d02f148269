"""Word-level training: the vocabulary from a stream of documents, in bounded memory.

:meth:`storygpt.tokenizers.word.WordTokenizer.train` keeps one ``Counter`` of
every distinct token, which for a large varied corpus (millions of distinct
words) outgrows memory.  :class:`WordCounter` counts the same tokens
(``WordTokenizer.split(text, "all")`` without ``<|endoftext|>``) but, when its
``Counter`` holds more than ``max_entries`` tokens, writes it to a temporary
file sorted by token and starts again; :meth:`WordCounter.top` merges those
runs, adding the counts of a token across runs, and keeps the best tokens with a
heap.  The vocabulary is exactly ``WordTokenizer.train``'s: tokens by decreasing
count, ties in code-point order.
"""

from __future__ import annotations

import fcntl
import heapq
import os
import shutil
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .word import SPECIALS, WordTokenizer

#: Distinct tokens held in memory before they are written to a sorted run
#: (about 120 bytes each in a Counter).
MAX_ENTRIES = 1_000_000

#: Prefix of a WordCounter's private folder; inside it, the file ``lock`` is
#: locked (``flock``) for the counter's lifetime, so that a folder whose lock
#: can be taken belongs to a run that is gone (killed before it could clean up).
FOLDER_PREFIX = ".wordcount."
#: A folder without a lock file (made by an older version, or killed between
#: making the folder and its lock) is left over once untouched for this long.
UNLOCKED_STALE_SECONDS = 3600


def remove_leftovers(spill_dir: str | os.PathLike) -> list[Path]:
    """Remove the private folders of word counters that are gone from ``spill_dir``.

    A folder counts as left over when its lock file can be locked (its owner
    died: the kernel drops a dead process's locks), or when it has no lock
    file and was last changed over :data:`UNLOCKED_STALE_SECONDS` ago.  Each
    removed folder is named in a :class:`UserWarning`.

    Returns:
        The folders removed.
    """
    parent = Path(spill_dir)
    removed = []
    if not parent.is_dir():
        return removed
    for folder in sorted(parent.glob(FOLDER_PREFIX + "*")):
        if folder.is_dir() and _is_left_over(folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
            warnings.warn(f"removed the folder {folder} left over by a word count that was killed", stacklevel=2)
    return removed


def _is_left_over(folder: Path) -> bool:
    try:
        fd = os.open(folder / "lock", os.O_RDWR)
    except FileNotFoundError:
        try:
            return time.time() - folder.stat().st_mtime > UNLOCKED_STALE_SECONDS
        except FileNotFoundError:  # removed meanwhile
            return False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held: a live counter
        return False
    finally:
        os.close(fd)  # also releases a lock just taken
    return True


class WordCounter:
    """Counts of word-level tokens over many texts, spilled to sorted runs on disk.

    Args:
        spill_dir: folder for the temporary run files (a private sub-folder is
            made there and removed by :meth:`close`).
        max_entries: distinct tokens kept in memory before a spill.

    Use as a context manager (or call :meth:`close`) so the runs are removed.
    Folders left in ``spill_dir`` by counters that were killed are removed on
    construction, each named in a warning (:func:`remove_leftovers`).
    """

    def __init__(self, spill_dir: str | os.PathLike, max_entries: int = MAX_ENTRIES):
        if max_entries < 1:
            raise ValueError(f"max_entries must be positive, got {max_entries}")
        self._spill_parent = Path(spill_dir)
        self._dir: Path | None = None
        self._lock_fd: int | None = None
        self.max_entries = max_entries
        self.counts: Counter = Counter()
        self.runs: list[Path] = []
        self.spilled_entries = 0
        remove_leftovers(self._spill_parent)

    def add(self, text: str) -> None:
        """Count the tokens of one text (a document)."""
        self.counts.update(WordTokenizer.split(text, "all"))
        if len(self.counts) > self.max_entries:
            self._spill()

    def _spill(self) -> None:
        if self._dir is None:
            self._spill_parent.mkdir(parents=True, exist_ok=True)
            self._dir = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=self._spill_parent))
            self._lock_fd = os.open(self._dir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        path = self._dir / f"run{len(self.runs):04d}.tsv"
        with open(path, "w", encoding="utf-8", newline="\n") as f:  # tokens hold no white space
            f.writelines(f"{t}\t{c}\n" for t, c in sorted(self.counts.items()))
        self.spilled_entries += len(self.counts)
        self.runs.append(path)
        self.counts = Counter()

    @staticmethod
    def _read_run(path: Path) -> Iterator[tuple[str, int]]:
        with open(path, encoding="utf-8", newline="\n") as f:
            for line in f:
                token, count = line[:-1].split("\t")
                yield token, int(count)

    def totals(self) -> Iterator[tuple[str, int]]:
        """``(token, count)`` for every distinct token, in code-point order, counts added across runs."""
        sources = [self._read_run(p) for p in self.runs] + [iter(sorted(self.counts.items()))]
        merged = heapq.merge(*sources) if len(sources) > 1 else sources[0]
        token, total = None, 0
        for t, c in merged:
            if t != token:
                if token is not None:
                    yield token, total
                token, total = t, 0
            total += c
        if token is not None:
            yield token, total

    def top(self, n: int, on_entry: Callable[[int], None] | None = None) -> list[str]:
        """The ``n`` most frequent tokens other than the special ones, ties in code-point order.

        Args:
            n: how many (fewer when there are fewer distinct tokens).
            on_entry: progress callback, called with 1 per run entry merged (spilled runs only).
        """
        specials = set(SPECIALS)
        items: Iterable[tuple[str, int]] = self.totals()
        if on_entry is not None and self.runs:
            items = _counting(items, on_entry)
        return [t for _, t in heapq.nsmallest(max(n, 0), ((-c, t) for t, c in items if t not in specials))]

    def close(self) -> None:
        """Remove the run files."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        self.runs = []

    def __enter__(self) -> WordCounter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _counting(items: Iterable, on_entry: Callable[[int], None]) -> Iterator:
    for item in items:
        on_entry(1)
        yield item


def train_word_tokenizer(
    texts: Iterable[str], vocab_size: int, spill_dir: str | os.PathLike, max_entries: int = MAX_ENTRIES
) -> WordTokenizer:
    """``WordTokenizer.train(texts, vocab_size)``'s tokenizer, counted in bounded memory.

    Args:
        texts: the training documents (any iterable of ``str``, read once).
        vocab_size: total vocabulary size including the 3 special tokens.
        spill_dir: folder for temporary run files (removed before returning).
        max_entries: distinct tokens held in memory before a spill.

    Warns:
        UserWarning: the text has fewer distinct tokens than ``vocab_size`` asks for.

    Raises:
        ValueError: ``vocab_size < 3``.
    """
    if vocab_size < len(SPECIALS):
        raise ValueError(f"vocab_size={vocab_size} is too small: it must hold the {len(SPECIALS)} special tokens")
    with WordCounter(spill_dir, max_entries) as counter:
        for text in texts:
            counter.add(text)
        tok = WordTokenizer(list(SPECIALS) + counter.top(vocab_size - len(SPECIALS)))
    if tok.vocab_size < vocab_size:
        warnings.warn(
            f"the word-level vocabulary has {tok.vocab_size:,} entries, short of the {vocab_size:,} asked: "
            "the training text has no more distinct words",
            stacklevel=2,
        )
    return tok
