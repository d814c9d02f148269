"""Where the difference between two models comes from: their per-character losses split into parts.

Both models are measured on the same characters (storygpt/eval/charloss.py spreads each token's
loss over its bytes).  The difference of character ``i`` is ``d_i = (a_i - b_i) / ln 2`` bits; a
split assigns every character to exactly one part, so the parts' sums add up to the total
``sum(d_i)`` (each sum is taken with ``math.fsum``, exactly rounded, so they agree within 1e-9 bits).

Splits (:func:`attribute`): character class, position in a word, the word's frequency in the
training text, document, evaluation set.  A positive part means A spends more bits there than B.
:func:`passage_html` colours a passage by ``d_i``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from storygpt.eval import charloss

LN2 = math.log(2)


@dataclass
class Split:
    """One way to cut the characters into parts: ``labels[i]`` indexes ``names`` for character ``i``."""

    labels: np.ndarray
    names: Sequence[str]


def splits_of(texts: Sequence, train_counts: dict[str, int] | None) -> dict[str, Split]:
    """The standard splits of the texts whose per-character losses are concatenated in this order.

    ``texts``: objects with ``documents``, ``sets`` (``[(name, [document indices])]``, consecutive runs)
    and ``doc_names`` (storygpt.eval.measure.Text).  A boundary belongs to the document (and set)
    before it.  Without ``train_counts`` (no training text) the frequency split is left out.
    """
    classes, positions, freqs, doc_lab, set_lab = [], [], [], [], []
    doc_names: list[str] = []
    set_names: list[str] = []
    for t in texts:
        docs = t.documents
        classes.append(charloss.char_classes(docs))
        positions.append(charloss.word_positions(docs))
        if train_counts is not None:
            freqs.append(charloss.frequency_classes(docs, train_counts))
        set_of = {}
        for name, idx in t.sets:
            for i in idx:
                set_of[i] = len(set_names)
            set_names.append(name)
        for j, d in enumerate(docs):
            n = len(d) + (1 if j < len(docs) - 1 else 0)
            doc_lab.append(np.full(n, len(doc_names), dtype=np.int64))
            set_lab.append(np.full(n, set_of[j], dtype=np.int64))
            name = t.doc_names[j]
            doc_names.append(name if name == set_names[set_of[j]] else f"{set_names[set_of[j]]}/{name}")
    out = {
        "character class": Split(np.concatenate(classes), charloss.CLASSES),
        "position": Split(np.concatenate(positions), charloss.POSITIONS),
    }
    if train_counts is not None:
        out["word frequency in training text"] = Split(np.concatenate(freqs), charloss.FREQUENCIES)
    out["document"] = Split(np.concatenate(doc_lab), doc_names)
    out["set"] = Split(np.concatenate(set_lab), set_names)
    return out


def attribute(a: np.ndarray, b: np.ndarray, splits: dict[str, Split]) -> dict:
    """Split the difference A - B (per-character nats ``a``, ``b`` of the same text) into parts.

    Returns:
        ``{"characters", "total_bits", "bits_per_character", "splits": {split: [{"part", "characters",
        "bits", "share", "a_bits_per_character", "b_bits_per_character"}, ...]}}``; ``bits`` of the parts
        of a split add up to ``total_bits``; ``share`` is ``|bits|`` over the sum of ``|bits|`` of the
        split's parts (0 to 1, adding up to 1; the sign is in ``bits``: a share of the signed total would
        pass 100% or go below 0 when parts pull opposite ways); parts with no characters are left out.

    Raises:
        ValueError: ``a``, ``b`` and a split's labels of different lengths (not the same text).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"the two models were measured on different texts ({len(a):,} and {len(b):,} characters)")
    d = (a - b) / LN2
    total = math.fsum(d)
    out = {"characters": len(d), "total_bits": total, "bits_per_character": total / len(d), "splits": {}}
    for key, split in splits.items():
        if split.labels.shape != d.shape:
            raise ValueError(f"split {key!r} labels {len(split.labels):,} characters, the text has {len(d):,}")
        order = np.argsort(split.labels, kind="stable")
        labels = split.labels[order]
        cuts = np.flatnonzero(np.diff(labels)) + 1
        rows = []
        for chunk in np.split(np.arange(len(order)), cuts):
            if not len(chunk):
                continue
            at = order[chunk]
            bits = math.fsum(d[at])
            rows.append(
                {
                    "part": str(split.names[int(labels[chunk[0]])]),
                    "characters": len(at),
                    "bits": bits,
                    "share": abs(bits),  # divided by the split's sum of |bits| below
                    "a_bits_per_character": math.fsum(a[at]) / (LN2 * len(at)),
                    "b_bits_per_character": math.fsum(b[at]) / (LN2 * len(at)),
                }
            )
        gross = math.fsum(r["share"] for r in rows)
        for r in rows:
            r["share"] = r["share"] / gross if gross else 0.0
        out["splits"][key] = rows
    return out


def format_attribution(att: dict, name_a: str, name_b: str) -> str:
    """The splits as plain-text tables."""
    lines = [
        f"difference {name_a} - {name_b}: {att['total_bits']:+,.1f} bits over {att['characters']:,} characters "
        f"({att['bits_per_character']:+.4f} bits/char); parts add up to the total",
        "share: a part's |bits| / the sum of |bits| over its split's parts (0-100%, adding up to 100%; "
        "the sign is in bits)",
    ]
    for key, rows in att["splits"].items():
        lines.append(f"\nby {key}:")
        w = max(len(r["part"]) for r in rows)
        lines.append(f"  {'part'.ljust(w)}  {'chars':>9}  {'bits':>11}  {'share':>7}  {'A b/c':>7}  {'B b/c':>7}")
        for r in rows:
            lines.append(
                f"  {r['part'].ljust(w)}  {r['characters']:>9,}  {r['bits']:>+11.1f}  {r['share']:>7.1%}  "
                f"{r['a_bits_per_character']:>7.3f}  {r['b_bits_per_character']:>7.3f}"
            )
    return "\n".join(lines)


def passage_html(text: str, diff_bits: np.ndarray, name_a: str, name_b: str, scale: float | None = None) -> str:
    """A standalone HTML page showing ``text`` with each character's background coloured by
    ``diff_bits`` (A - B, bits): red where A spends more, blue where B does, white where they agree;
    full colour at ``scale`` bits (default: the 99th percentile of ``|diff_bits|``)."""
    d = np.asarray(diff_bits, dtype=np.float64)
    if len(d) != len(text):
        raise ValueError(f"{len(d)} differences for {len(text)} characters")
    if scale is None:
        scale = float(np.percentile(np.abs(d), 99)) if len(d) else 1.0
    scale = scale or 1.0
    level = np.clip(np.rint(d / scale * 8), -8, 8).astype(int)  # 17 shades
    spans, i = [], 0
    while i < len(text):
        j = i
        while j < len(text) and level[j] == level[i]:
            j += 1
        v = level[i] / 8
        shade = int(255 * (1 - abs(v)))
        colour = f"255,{shade},{shade}" if v > 0 else f"{shade},{shade},255"
        title = f"{math.fsum(d[i:j]):+.2f} bits over {j - i} char(s)"
        spans.append(f'<span style="background:rgb({colour})" title="{title}">{html.escape(text[i:j])}</span>')
        i = j
    return (
        "<!doctype html><meta charset=utf-8><title>per-character difference</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
        "pre{white-space:pre-wrap;font-family:monospace;line-height:1.4}</style>"
        f"<h1>{html.escape(name_a)} against {html.escape(name_b)}</h1>"
        f"<p>Each character's background: the bits {html.escape(name_a)} spends on it minus the bits "
        f"{html.escape(name_b)} spends (a token's loss spread evenly over its bytes). "
        f"<span style='background:rgb(255,0,0)'>red</span>: {html.escape(name_a)} spends more, "
        f"<span style='background:rgb(0,0,255);color:white'>blue</span>: {html.escape(name_b)} spends more; "
        f"full colour at {scale:.2f} bits. Hover for the figure.</p>"
        f"<pre>{''.join(spans)}</pre>\n"
    )
