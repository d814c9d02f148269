"""Named evaluation sets: which held-out texts a model is measured on, each with its own figure.

``--eval NAME=PATH`` (bits.py, pretrain.py, compare.py; repeatable) names a file of documents; all
are checked before any model loads (ValueError, one line naming it).  Without it the held-out
split is cut into sets by document (:func:`default_sets`: each held-out work, or
:data:`GROUPS` runs of documents when there are over :data:`MAX_DOCUMENT_SETS`).  Per set: bits
per character and per byte; over sets the macro and the micro mean.  Details: docs/attribution.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: more held-out documents than this are grouped (a set per story of TinyStories would say nothing)
MAX_DOCUMENT_SETS = 16
#: the number of groups of consecutive documents when there are more than MAX_DOCUMENT_SETS
GROUPS = 8
NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass
class EvalSet:
    """A named held-out text: ``documents`` (non-empty strings) read from ``path`` (None: a part of valid.txt)."""

    name: str
    path: Path | None
    documents: list[str]


def parse_eval_args(values: Sequence[str] | None) -> list[tuple[str, Path]]:
    """``["NAME=PATH", ...]`` -> ``[(NAME, Path(PATH)), ...]``, in order.

    Raises:
        ValueError: an argument without ``NAME=``, a NAME of other characters than letters, digits,
            ``_ . -``, or a NAME given twice (one line naming it).
    """
    out: list[tuple[str, Path]] = []
    seen: dict[str, str] = {}
    for v in values or ():
        name, sep, path = v.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--eval {v}: expected NAME=PATH (e.g. --eval russian=../shared/corpora/russian.txt)")
        if not NAME_RE.match(name):
            raise ValueError(f"--eval {v}: the NAME {name!r} may hold only letters, digits, '_', '.' and '-'")
        if name in seen:
            raise ValueError(f"--eval {v}: the NAME {name!r} is given twice (first as --eval {seen[name]})")
        seen[name] = v
        out.append((name, Path(path)))
    return out


def read_eval_sets(values: Sequence[str] | None, cut: Callable[[list[str]], list[str]] | None = None) -> list[EvalSet]:
    """Parse and read every ``--eval NAME=PATH``; ``cut`` (e.g. the first N characters,
    storygpt.eval.bits.take_characters) is applied to each file's documents.

    Raises:
        ValueError: see :func:`parse_eval_args`; a file that is missing, a folder, empty or not UTF-8
            (the message starts ``--eval NAME=PATH:``).
    """
    from storygpt.data.corpora import read_documents

    sets = []
    for name, path in parse_eval_args(values):
        try:
            docs = read_documents(path)
        except (OSError, ValueError) as e:
            reason = str(e)
            reason = reason[len(str(path)) + 2 :] if reason.startswith(f"{path}: ") else reason
            raise ValueError(f"--eval {name}={path}: {reason}") from None
        docs = [d for d in (cut(docs) if cut else docs) if d]
        if not docs:
            raise ValueError(f"--eval {name}={path}: the file is empty (no text in it)")
        sets.append(EvalSet(name, path, docs))
    return sets


def heldout_work_names(data_dir: Path | str | None, n_documents: int) -> list[str] | None:
    """The names data.py recorded for the held-out works ("held-out works: a, b" in a stats-*.json), or
    None when no stats file names at least ``n_documents`` of them (a text cut short keeps the first)."""
    if data_dir is None:
        return None
    for stats in sorted(Path(data_dir).glob("stats-*.json")):
        try:
            notes = json.loads(stats.read_text(encoding="utf-8")).get("notes") or []
        except (OSError, ValueError, AttributeError):
            continue
        for note in notes:
            if isinstance(note, str) and note.startswith("held-out works: "):
                names = [x.strip() for x in note[len("held-out works: ") :].split(",")]
                if len(names) >= n_documents and len(set(names)) == len(names):
                    return names[:n_documents]
    return None


def default_groups(n_documents: int, names: Sequence[str] | None = None) -> list[tuple[str, list[int]]]:
    """Sets of a held-out text of ``n_documents`` documents: ``[(name, [document indices]), ...]``.

    One set per document (named ``names[i]``, else ``doc-<i+1>``) up to :data:`MAX_DOCUMENT_SETS`
    documents; otherwise :data:`GROUPS` runs of consecutive documents named ``docs-<first>-<last>``
    (1-based).  A text that was cut short (bits.py --chars) keeps the names of its first documents.
    """
    if n_documents <= MAX_DOCUMENT_SETS:
        return [(names[i] if names and i < len(names) else f"doc-{i + 1}", [i]) for i in range(n_documents)]
    edges = np.linspace(0, n_documents, GROUPS + 1).round().astype(int)
    return [(f"docs-{a + 1}-{b}", list(range(a, b))) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def document_char_ranges(documents: Sequence[str]) -> list[tuple[int, int]]:
    """``[start, stop)`` of each document in the counted characters, its following boundary included."""
    out, start = [], 0
    for i, d in enumerate(documents):
        stop = start + len(d) + (1 if i < len(documents) - 1 else 0)
        out.append((start, stop))
        start = stop
    return out


def target_documents(tokenizer, documents: Sequence[str]) -> np.ndarray:
    """For each predicted token of :func:`storygpt.eval.bits.token_stream`, the index of the document it
    belongs to (int64; a boundary eot belongs to the document before it)."""
    parts = []
    for i, d in enumerate(documents):
        n = len(tokenizer.encode_ordinary(d)) + (1 if i < len(documents) - 1 else 0)
        parts.append(np.full(n, i, dtype=np.int64))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def bytes_of(text: str) -> int:
    return len(text.encode("utf-8"))


def document_units(documents: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Characters and UTF-8 bytes of each document, its following boundary counted as one of each."""
    n = len(documents)
    extra = np.array([1 if i < n - 1 else 0 for i in range(n)], dtype=np.int64)
    chars = np.array([len(d) for d in documents], dtype=np.int64) + extra
    byts = np.array([bytes_of(d) for d in documents], dtype=np.int64) + extra
    return chars, byts


def summarize(per_set: dict[str, dict]) -> dict:
    """Macro and micro means of per-set ``{"nats", "characters", "bytes"}``: bits per character and per byte.

    macro: the mean over sets of each set's figure; micro: the sets' nats added up over their characters
    (or bytes) added up.
    """
    LN2 = math.log(2)
    sets = list(per_set.values())
    if not sets:
        raise ValueError("no evaluation sets")
    bpc = [s["nats"] / (LN2 * s["characters"]) for s in sets]
    bpb = [s["nats"] / (LN2 * s["bytes"]) for s in sets]
    nats = sum(s["nats"] for s in sets)
    return {
        "macro_bits_per_character": float(np.mean(bpc)),
        "macro_bits_per_byte": float(np.mean(bpb)),
        "micro_bits_per_character": nats / (LN2 * sum(s["characters"] for s in sets)),
        "micro_bits_per_byte": nats / (LN2 * sum(s["bytes"] for s in sets)),
    }
