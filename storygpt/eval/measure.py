"""One model on one text, once: the figures of bits.py and compare.py from a single forward pass.

:func:`measure_text` runs :func:`storygpt.eval.bits.evaluate_bits` once and keeps each predicted token's
loss; everything else (per-set figures, per-character losses for attribution, blocks for the bootstrap)
is a sum over those losses, not another pass.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from storygpt.eval.bits import BitsResult
from storygpt.eval.stats import LN2


@dataclass
class Text:
    """A text measured in one pass: its documents and its sets ``[(name, [document indices]), ...]``
    (consecutive runs of documents), ``doc_names`` one per document."""

    name: str
    documents: list[str]
    sets: list[tuple[str, list[int]]]
    doc_names: list[str] = field(default_factory=list)


@dataclass
class Measured:
    """What one model gave on one :class:`Text`."""

    result: BitsResult
    token_nats: np.ndarray
    set_figures: dict[str, dict]
    char_nats: np.ndarray | None = None
    exact: bool | None = None


def texts_of(documents=None, source: Path | None = None, named: bool = True, eval_sets=()) -> list[Text]:
    """bits.py's texts: one per ``--eval`` set (storygpt.data.evalsets.EvalSet, one set each), else one text of
    ``documents`` from ``source`` cut into sets by document (the held-out works' names when ``named`` and
    data.py recorded them beside ``source``)."""
    from storygpt.data.evalsets import default_groups, heldout_work_names

    if documents is None:
        return [
            Text(s.name, s.documents, [(s.name, list(range(len(s.documents))))], [s.name] * len(s.documents))
            for s in eval_sets
        ]
    names = heldout_work_names(source.parent, len(documents)) if named else None
    doc_names = [names[i] if names else f"doc-{i + 1}" for i in range(len(documents))]
    return [Text(source.name, list(documents), default_groups(len(documents), names), doc_names)]


def set_figures(tokenizer: Any, text: Text, token_nats: np.ndarray) -> dict[str, dict]:
    """Per set: ``nats``, ``characters``, ``bytes``, ``tokens``, ``bits_per_character``, ``bits_per_byte``
    (a boundary belongs to the document before it)."""
    from storygpt.data.evalsets import document_units, target_documents

    doc_of = target_documents(tokenizer, text.documents)
    if len(doc_of) != len(token_nats):
        raise ValueError(f"{len(token_nats)} token losses for {len(doc_of)} predicted tokens")
    n = len(text.documents)
    doc_nats = np.bincount(doc_of, weights=token_nats, minlength=n)
    doc_tokens = np.bincount(doc_of, minlength=n)
    chars, byts = document_units(text.documents)
    out = {}
    for name, idx in text.sets:
        nats = float(doc_nats[idx].sum())
        c, b = int(chars[idx].sum()), int(byts[idx].sum())
        out[name] = {
            "nats": nats,
            "characters": c,
            "bytes": b,
            "tokens": int(doc_tokens[idx].sum()),
            "bits_per_character": nats / (LN2 * c),
            "bits_per_byte": nats / (LN2 * b),
        }
    return out


def measure_text(model, tokenizer, text: Text, *, per_character: bool = False, **evaluate_kw) -> Measured:
    """One pass of ``model`` over ``text`` (``evaluate_kw`` go to evaluate_bits); per-character losses
    (storygpt/eval/charloss.py) when ``per_character``."""
    from storygpt.eval.bits import evaluate_bits, token_stream

    n_targets = len(token_stream(tokenizer, text.documents)[0]) - 1
    token_nats = np.zeros(max(n_targets, 0))
    res = evaluate_bits(model, tokenizer, text.documents, token_nats=token_nats, **evaluate_kw)
    m = Measured(res, token_nats, set_figures(tokenizer, text, token_nats))
    if per_character:
        from storygpt.eval.charloss import char_nats

        m.char_nats, m.exact = char_nats(tokenizer, text.documents, token_nats)
    return m


def combine(results: Sequence[BitsResult]) -> BitsResult:
    """Several texts' results as one: every count added up."""
    keys = ("nats", "tokens", "characters", "unknown_tokens", "documents", "round_trip_documents", "bytes")
    return BitsResult(**{k: sum(getattr(r, k) for r in results) for k in keys})


def set_char_ranges(text: Text) -> dict[str, tuple[int, int]]:
    """``[start, stop)`` of each set in the counted characters of ``text``."""
    from storygpt.data.evalsets import document_char_ranges

    ranges = document_char_ranges(text.documents)
    return {name: (ranges[idx[0]][0], ranges[idx[-1]][1]) for name, idx in text.sets}


def format_sets(rows: Sequence[dict], set_names: Sequence[str]) -> str:
    """A table of bits per character (and per byte) per set and model, with the macro and micro means."""
    head = ["set", *(r["name"] for r in rows)]
    body = []
    for s in set_names:
        body.append(
            [s] + [f"{r['sets'][s]['bits_per_character']:.4f} / {r['sets'][s]['bits_per_byte']:.4f}" for r in rows]
        )
    for kind in ("macro", "micro"):
        body.append(
            [f"{kind} mean"]
            + [f"{r[f'{kind}_bits_per_character']:.4f} / {r[f'{kind}_bits_per_byte']:.4f}" for r in rows]
        )
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join(
        ["bits/char / bits/byte per evaluation set:", fmt(head), fmt(["-" * w for w in widths])]
        + [fmt(b) for b in body]
    )


def add_set_blocks(sets: dict, texts, measured, block_chars: int) -> None:
    """Each set's ``block_nats`` and ``block_characters`` (blocks of its per-character losses; compare.py's
    per-set paired bootstrap)."""
    from storygpt.eval.sets import block_sums

    for t, m in zip(texts, measured):
        for name, (lo, hi) in set_char_ranges(t).items():
            nats, chars = block_sums(m.char_nats[lo:hi], block_chars)
            sets[name].update(block_nats=nats.tolist(), block_characters=chars.tolist())


def save_losses(path: str, texts, measured) -> None:
    """Write ``path`` (.npz, atomically): the per-character losses of every text (nats, concatenated), the
    sha256 of the texts (``--diff`` and compare.py refuse losses of different texts), the set names and
    their character ranges, whether the spreading was exact, and the texts themselves (:func:`load_texts`)."""
    import hashlib
    import io

    from storygpt.atomic import write_bytes

    digest = hashlib.sha256("\x00".join("\n".join(t.documents) for t in texts).encode("utf-8")).hexdigest()
    names, ranges, at = [], [], 0
    for t in texts:
        for name, (lo, hi) in set_char_ranges(t).items():
            names.append(name)
            ranges.append((at + lo, at + hi))
        at += sum(len(d) for d in t.documents) + len(t.documents) - 1
    buf = io.BytesIO()  # the whole file in memory, then one atomic write (a 500,000-character text: 4 MB)
    np.savez(
        buf,
        char_nats=np.concatenate([m.char_nats for m in measured]),
        text_sha256=np.array(digest),
        set_names=np.array(names),
        set_ranges=np.array(ranges, dtype=np.int64),
        exact=np.array(all(m.exact for m in measured)),
        texts_json=np.array(json.dumps([vars(t) for t in texts])),
    )
    write_bytes(path, buf.getvalue())


def load_texts(saved) -> list[Text]:
    """The texts a :func:`save_losses` file was measured on (``saved``: its ``np.load``)."""
    return [
        Text(t["name"], t["documents"], [(n, list(i)) for n, i in t["sets"]], t["doc_names"])
        for t in json.loads(str(saved["texts_json"]))
    ]
