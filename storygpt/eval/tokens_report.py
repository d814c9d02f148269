"""The outputs of ``tokens.py``: the printed table, ``report.md``, ``results.csv``, ``results.json`` and two charts
(``tokens.png``: tokens per text for each tokenizer; ``sweep.png``: tokens per 1,000 characters against vocabulary
size, with the embedding parameters), written together into one folder that appears whole or not at all."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from storygpt.eval.intrinsic import RENYI_ALPHA, WORD_RULE

#: (key, header, format) of the table's columns.
COLUMNS = [
    ("tokens", "tokens", "{:,}"),
    ("chars_per_token", "chars/tok", "{:.3f}"),
    ("bytes_per_token", "bytes/tok", "{:.3f}"),
    ("fertility", "tok/word", "{:.3f}"),
    ("split_share", "split", "{:.1%}"),
    ("renyi_efficiency", "renyi", "{:.3f}"),
    ("vocab_used_share", "vocab used", "{:.1%}"),
    ("unk_share", "unk", "{:.2%}"),
    ("premium", "premium", "{:.3f}"),
    ("round_trip", "round trip", "{}"),
    ("encode_seconds", "encode s", "{:.3f}"),
]


def _cell(value, fmt: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return fmt.format(value)


def row_label(row: dict) -> str:
    """``name (V=...)`` with ``[lossy]`` when some document does not round-trip and ``~`` when offsets are spread."""
    mark = " [lossy]" if row["lossy_documents"] else ""
    return f"{row['tokenizer']} (V={row['vocab_size']:,}){mark}"


def header_lines(meta: dict) -> list[str]:
    """What every output says first: how the texts are counted, the word rule, the premium's kind."""
    lines = [
        "Counted over each text's documents: characters, UTF-8 bytes and tokens of the documents' text; "
        "end-of-document tokens are not counted.",
        f"Words: {WORD_RULE}.  tok/word: tokens per word (fertility); split: share of words of 2 or more tokens.",
        f"renyi: Renyi efficiency, alpha={RENYI_ALPHA} (Zouhar et al. 2023).",
    ]
    if meta.get("reference"):
        how = (
            "parallel (Petrov et al. 2023 parity): tokens(text) / tokens(reference)"
            if meta.get("parallel")
            else "per character, texts not parallel: (tokens/char of text) / (tokens/char of reference)"
        )
        lines.append(f"premium vs {meta['reference']}: {how}.")
    return lines


def _table_cells(rows: Sequence[dict], columns) -> tuple[list[str], list[list[str]]]:
    head = ["tokenizer", "text", *[h for _, h, _ in columns]]
    body = []
    for r in rows:
        label = row_label(r) + ("" if r["offsets_exact"] else " ~")
        body.append([label, r["text"], *[_cell(r.get(k), f) for k, _, f in columns]])
    return head, body


def _columns(rows: Sequence[dict]):
    have_premium = any(r.get("premium") is not None for r in rows)
    have_unk = any(r.get("unk_share") is not None for r in rows)
    return [c for c in COLUMNS if (c[0] != "premium" or have_premium) and (c[0] != "unk_share" or have_unk)]


def format_table(rows: Sequence[dict], meta: dict) -> str:
    """The table ``tokens.py`` prints: one row per tokenizer x text."""
    head, body = _table_cells(rows, _columns(rows))
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    fmt = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
    )
    lines = [*header_lines(meta), "", fmt(head), *[fmt(b) for b in body]]
    if any(not r["offsets_exact"] for r in rows):
        lines.append("~: the tokens do not spell the text byte for byte; word counts spread tokens evenly")
    return "\n".join(lines)


def format_sweep(sweeps: Sequence[dict]) -> str:
    """The sweep as text: tokens per 1,000 characters of each text at each size, and the embedding parameters."""
    lines = []
    for s in sweeps:
        texts = list(s["tokens_per_1k_chars"])
        tied = "tied" if s["tied"] else "untied"
        lines.append(
            f"{s['spec']} sweep (trained {'once, smaller sizes are merge prefixes' if s['prefix'] else 'per size'}; "
            f"{s['train_seconds']:.1f} s training, {s['encode_seconds']:.1f} s encoding)"
        )
        head = ["vocab", *[f"{t} tok/1k chars" for t in texts], f"emb+out params (n_embd {s['n_embd']}, {tied})"]
        body = [
            [f"{v:,}", *[f"{s['tokens_per_1k_chars'][t][i]:.1f}" for t in texts], f"{s['embedding_parameters'][i]:,}"]
            for i, v in enumerate(s["vocab_sizes"])
        ]
        widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
        lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *body]]
        lines.append("")
    return "\n".join(lines).rstrip()


def markdown(rows: Sequence[dict], sweeps: Sequence[dict], meta: dict, pngs: Sequence[str]) -> str:
    """``report.md``: the header lines, the table, the sweep and the charts."""
    head, body = _table_cells(rows, _columns(rows))
    out = [f"# Tokens: {meta['name']}", "", f"Command: `{meta['command']}`", ""]
    out += [f"- {line}" for line in header_lines(meta)]
    out += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in b) + " |" for b in body]
    if sweeps:
        out += ["", "## Vocabulary sweep", "", "```", format_sweep(sweeps), "```"]
    out += [""] + [f"![{p}]({p})" for p in pngs]
    return "\n".join(out) + "\n"


def csv_text(rows: Sequence[dict]) -> str:
    """``results.csv``: every measure of every row."""
    keys = ["tokenizer", "vocab_size", *[k for k in rows[0] if k not in ("tokenizer", "vocab_size")]] if rows else []
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=keys, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


def bar_chart(rows: Sequence[dict], path: Path) -> None:
    """Tokens per text for each tokenizer: groups by tokenizer, one colour per text."""
    from storygpt.plot import canvas, save_png

    tokenizers = list(dict.fromkeys(r["tokenizer"] for r in rows))
    texts = list(dict.fromkeys(r["text"] for r in rows))
    by = {(r["tokenizer"], r["text"]): r for r in rows}
    labels = {r["tokenizer"]: f"{r['tokenizer']} (V={r['vocab_size']:,})" for r in rows}
    fig = canvas()
    fig.set_size_inches(max(6.4, 1.3 * len(tokenizers) + 2), 4.4)
    ax = fig.add_subplot()
    width = 0.8 / max(len(texts), 1)
    for j, t in enumerate(texts):
        xs = [i + (j - (len(texts) - 1) / 2) * width for i in range(len(tokenizers))]
        ys = [by[(k, t)]["tokens"] if (k, t) in by else 0 for k in tokenizers]
        ax.bar(xs, ys, width, label=t, color=f"C{j}")
    ax.set_xticks(range(len(tokenizers)), [labels[k] for k in tokenizers], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("tokens")
    ax.set_title("tokens per text (end-of-document tokens not counted)", fontsize=10)
    ax.legend(title="text", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    save_png(fig, path)


def sweep_chart(sweeps: Sequence[dict], path: Path) -> None:
    """Tokens per 1,000 characters against vocabulary size (log2 axis), one line per text; right: the embedding
    and output-layer parameters."""
    from storygpt.plot import canvas, linear_ticks, save_png

    fig = canvas()
    fig.set_size_inches(10, 4.4)
    left, right = fig.subplots(1, 2)
    for k, s in enumerate(sweeps):
        style = ["-", "--", ":", "-."][k % 4]
        for j, (t, ys) in enumerate(s["tokens_per_1k_chars"].items()):
            left.plot(s["vocab_sizes"], ys, style, marker="o", color=f"C{j}", label=f"{t} ({s['spec']})")
        right.plot(s["vocab_sizes"], s["embedding_parameters"], style, marker="o", color="k", label=s["spec"])
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("vocabulary size")
        ax.grid(alpha=0.3)
        sizes = sorted({v for s in sweeps for v in s["vocab_sizes"]})
        ax.set_xticks(sizes, [f"{v:,}" for v in sizes], rotation=30, fontsize=8)
        ax.minorticks_off()
    linear_ticks(right.yaxis)
    left.set_ylabel("tokens per 1,000 characters")
    left.set_title("text length in tokens", fontsize=10)
    left.legend(fontsize=8)
    s0 = sweeps[0]
    right.set_ylabel("parameters")
    right.set_title(
        f"embedding + output layer (n_embd {s0['n_embd']}, {'tied' if s0['tied'] else 'untied'})", fontsize=10
    )
    right.legend(fontsize=8)
    save_png(fig, path)


def write_outputs(out: str | os.PathLike, rows: Sequence[dict], sweeps: Sequence[dict], meta: dict) -> list[str]:
    """Write report.md, results.csv, results.json, tokens.png (and sweep.png) into ``out``: first into a hidden
    folder beside it, renamed into place at the end (an older ``out`` is replaced whole); returns the file names."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        pngs = ["tokens.png"]
        bar_chart(rows, tmp / "tokens.png")
        if sweeps:
            pngs.append("sweep.png")
            sweep_chart(sweeps, tmp / "sweep.png")
        (tmp / "report.md").write_text(markdown(rows, sweeps, meta, pngs), encoding="utf-8")
        (tmp / "results.csv").write_text(csv_text(rows), encoding="utf-8")
        doc = {"meta": {**meta, "header": header_lines(meta)}, "rows": list(rows), "sweeps": list(sweeps)}
        (tmp / "results.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        if out.exists():
            os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return sorted(p.name for p in out.iterdir())
