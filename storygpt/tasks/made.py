"""Tasks made offline from any held-out text, seeded, written in lm-eval's task format (YAML + jsonl).

``storygpt_cloze`` (LAMBADA-style last word, Paperno et al. 2016, arXiv:1606.06031),
``storygpt_nextline`` (HellaSwag-style choice of the next line among :data:`DISTRACTORS` + 1,
Zellers et al. 2019, arXiv:1905.07830) and ``storygpt_pairs`` (BLiMP-style minimal pairs by
``swap`` or ``misspell``, Warstadt et al. 2020, arXiv:1912.00582), all from the text's lines.
Items are drawn with ``numpy.random.default_rng(seed)``: the same text and seed give the same
files.  :data:`CONTEXT_CHARS` and :data:`MIN_DISTANCE` set the context and the distractors.

What each item holds, the jsonl fields and how to read the scores: docs/tasks.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from storygpt.atomic import write_text

#: characters of context before an item (at most; the context starts at a line start)
CONTEXT_CHARS = 300
#: wrong lines per next-line item
DISTRACTORS = 3
#: a distractor is drawn from at least this many lines before or after the true line
MIN_DISTANCE = 50
#: items per task by default
DEFAULT_ITEMS = 1000
MADE = ("storygpt_cloze", "storygpt_nextline", "storygpt_pairs")

_LAST_WORD = re.compile(r"^(.*\S) ([A-Za-z]{3,})([.,;:!?'\-]*)$")
_WORD = re.compile(r"[A-Za-z]+")
_ALPHA = re.compile(r"^[A-Za-z']+$")


def text_lines(text: str) -> tuple[list[str], list[int]]:
    """The text's lines (trailing white space removed) and the character offset where each starts in the text
    with its lines re-joined by one new line (:func:`joined`)."""
    lines = [ln.rstrip() for ln in text.split("\n")]
    starts, at = [], 0
    for ln in lines:
        starts.append(at)
        at += len(ln) + 1
    return lines, starts


def context_before(lines: Sequence[str], i: int, head: str, limit: int = CONTEXT_CHARS) -> str:
    """``head`` (the start of line ``i``) after as many whole earlier lines as fit in ``limit`` characters
    (at least ``head``), joined by new lines; a leading run of empty lines is dropped."""
    parts = [head]
    size = len(head)
    j = i - 1
    while j >= 0 and size + len(lines[j]) + 1 <= limit:
        parts.append(lines[j])
        size += len(lines[j]) + 1
        j -= 1
    parts.reverse()
    while len(parts) > 1 and not parts[0]:
        parts.pop(0)
    return "\n".join(parts)


def _draw(rng, candidates: list, n: int, make) -> list:
    """``make(candidate)`` for candidates in a seeded random order until ``n`` items are made (a candidate
    ``make`` returns None for is skipped); the items in the candidates' (text) order."""
    made = []
    for k in rng.permutation(len(candidates)):
        item = make(candidates[int(k)])
        if item is not None:
            made.append((int(k), item))
            if len(made) == n:
                break
    return [item for _, item in sorted(made, key=lambda m: m[0])]


def make_cloze(text: str, items: int = DEFAULT_ITEMS, seed: int = 0) -> list[dict]:
    """LAMBADA-style items (module docstring): ``{"context", "target"}`` dicts."""
    lines, _ = text_lines(text)
    cands = []
    for i, ln in enumerate(lines):
        m = _LAST_WORD.match(ln)
        if m and i > 0:
            cands.append((i, m.group(1), m.group(2)))
    rng = np.random.default_rng([seed, 1])
    return _draw(rng, cands, items, lambda c: {"context": context_before(lines, c[0], c[1]), "target": " " + c[2]})


def _words(line: str) -> list[str]:
    return line.split(" ")


def make_nextline(text: str, items: int = DEFAULT_ITEMS, seed: int = 0) -> list[dict]:
    """HellaSwag-style items (module docstring): ``{"context", "choices", "label"}`` dicts."""
    lines, _ = text_lines(text)
    long = [i for i, ln in enumerate(lines) if len(ln.split()) >= 4]
    cands = [i for i in long if i > 0 and lines[i - 1].strip()]
    rng = np.random.default_rng([seed, 2])

    def make(i: int) -> dict | None:
        true = lines[i].strip()
        chosen: list[str] = []
        seen = {true}
        for _ in range(100 * DISTRACTORS):  # random draws from the long lines far enough away
            j = long[int(rng.integers(len(long)))]
            t = lines[j].strip()
            if abs(j - i) >= MIN_DISTANCE and t not in seen:
                seen.add(t)
                chosen.append(t)
                if len(chosen) == DISTRACTORS:
                    break
        if len(chosen) < DISTRACTORS:
            return None  # too little text far enough away
        label = int(rng.integers(DISTRACTORS + 1))
        choices = chosen[:label] + [true] + chosen[label:]
        return {"context": context_before(lines, i - 1, lines[i - 1]), "choices": choices, "label": label}

    return _draw(rng, cands, items, make)


def _swap_words(words: list[str], rng) -> list[str] | None:
    spots = [
        k
        for k in range(len(words) - 1)
        if _ALPHA.match(words[k]) and _ALPHA.match(words[k + 1]) and words[k].lower() != words[k + 1].lower()
    ]
    if not spots:
        return None
    k = spots[int(rng.integers(len(spots)))]
    out = list(words)
    out[k], out[k + 1] = out[k + 1], out[k]
    return out


def _misspell(words: list[str], rng, vocabulary: set[str]) -> list[str] | None:
    spots = []
    for k, w in enumerate(words):
        if re.fullmatch(r"[A-Za-z]{4,}", w):
            for p in range(1, len(w) - 2):  # inner letters p, p + 1 (never the first or the last)
                if w[p] != w[p + 1]:
                    bad = w[:p] + w[p + 1] + w[p] + w[p + 2 :]
                    if bad.lower() not in vocabulary:
                        spots.append((k, bad))
    if not spots:
        return None
    k, bad = spots[int(rng.integers(len(spots)))]
    out = list(words)
    out[k] = bad
    return out


def make_pairs(text: str, items: int = DEFAULT_ITEMS, seed: int = 0) -> list[dict]:
    """BLiMP-style minimal pairs (module docstring): ``{"context": "", "choices": [good, bad], "label": 0,
    "rule"}`` dicts."""
    lines, _ = text_lines(text)
    vocabulary = {w.lower() for w in _WORD.findall(text)}
    cands = [i for i, ln in enumerate(lines) if 4 <= len(_words(ln.strip())) <= 20]
    rng = np.random.default_rng([seed, 3])

    def make(i: int) -> dict | None:
        good = lines[i].strip()
        rule = "swap" if rng.integers(2) == 0 else "misspell"
        words = _words(good)
        bad_words = _swap_words(words, rng) if rule == "swap" else _misspell(words, rng, vocabulary)
        if bad_words is None:  # the other rule, when this one finds no place
            rule = "misspell" if rule == "swap" else "swap"
            bad_words = _swap_words(words, rng) if rule == "swap" else _misspell(words, rng, vocabulary)
        if bad_words is None:
            return None
        bad = " ".join(bad_words)
        return {"context": "", "choices": [good, bad], "label": 0, "rule": rule} if bad != good else None

    return _draw(rng, cands, items, make)


MAKERS = {"storygpt_cloze": make_cloze, "storygpt_nextline": make_nextline, "storygpt_pairs": make_pairs}


def task_yaml(name: str, data_file: Path, source: str, seed: int) -> str:
    """The lm-eval task config of made task ``name`` whose items are in ``data_file``."""
    common = [
        f"task: {name}",
        "dataset_path: json",
        "dataset_kwargs:",
        "  data_files:",
        f"    test: {json.dumps(str(data_file.resolve()))}",
        "test_split: test",
        "doc_to_text: context",
    ]
    if name == "storygpt_cloze":
        body = [
            "output_type: loglikelihood",
            "doc_to_target: target",
            "metric_list:",
            "  - metric: perplexity",
            "    aggregation: perplexity",
            "    higher_is_better: false",
            "  - metric: acc",
            "    aggregation: mean",
            "    higher_is_better: true",
        ]
    else:
        delim = json.dumps("\n" if name == "storygpt_nextline" else "")
        body = [
            "output_type: multiple_choice",
            "doc_to_choice: choices",
            "doc_to_target: label",
            f"target_delimiter: {delim}",
            "metric_list:",
            "  - metric: acc",
            "    aggregation: mean",
            "    higher_is_better: true",
            "  - metric: acc_norm",
            "    aggregation: mean",
            "    higher_is_better: true",
        ]
    meta = ["metadata:", "  version: 1.0", f"  source: {json.dumps(source)}", f"  seed: {seed}"]
    head = f"# made by storygpt (storygpt/tasks/made.py) from {source}, seed {seed}\n"
    return head + "\n".join(common + body + meta) + "\n"


def write_task(folder: str | Path, name: str, items: list[dict], source: str, seed: int) -> Path:
    """Write ``folder/NAME.jsonl`` and ``folder/NAME.yaml`` (atomically); returns the YAML's path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{name}.jsonl"
    write_text(data, "".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items))
    path = folder / f"{name}.yaml"
    write_text(path, task_yaml(name, data, source, seed))
    return path


def make_tasks(
    text: str,
    folder: str | Path,
    names: Sequence[str] = MADE,
    *,
    items: int = DEFAULT_ITEMS,
    seed: int = 0,
    source: str = "?",
) -> dict[str, int]:
    """Make the made tasks ``names`` from ``text`` into ``folder``; returns the items of each.

    Raises:
        ValueError: a name that is not a made task, or a task that got no items from the text.
    """
    counts = {}
    for name in names:
        if name not in MAKERS:
            raise ValueError(f"{name!r} is not a made task ({', '.join(MADE)})")
        made = MAKERS[name](text, items=items, seed=seed)
        if not made:
            raise ValueError(f"{source}: too little text to make any {name} item")
        write_task(folder, name, made, source, seed)
        counts[name] = len(made)
    return counts
