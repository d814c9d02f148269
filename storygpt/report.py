"""The tokenizer comparison report of ``compare.py``: one row per run, as Markdown, CSV, JSON and PNGs.

A row (:class:`RunResult`) joins two files of a run folder:

* ``summary.json`` (pretrain.py): parameters (embedding and the rest), steps,
  training tokens, characters and FLOPs seen, wall time, why the run stopped;
* ``bits.json`` (``bits.py --json FILE``): the final model measured on the
  held-out characters: bits per character, tokens, characters per token,
  share of ``<unk>`` predictions, share of documents that round-trip.

:func:`write_report` writes ``report.md``, ``results.csv``, ``results.json`` and
the plots (:mod:`storygpt.plot`) into the report folder.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from storygpt.atomic import write_text

#: What a word-level model's bits per character leaves out (shown in the report).
WORD_NOTE = (
    "A word-level model is not charged for everything in the text: its tokenizer drops the white space "
    "between words (spaces, new lines), so the model never predicts it, and every word outside the "
    "vocabulary becomes a single <unk> prediction however long the word is. Its bits per character is "
    "therefore a lower bound on the cost of writing the held-out text, not a fair win over the byte-level "
    "tokenizers, which predict every character and give the text back exactly (round trip 1.00). Read "
    "the unk and round-trip columns before the bits/char column (docs/bits.md)."
)

#: Files :func:`write_report` writes into the report folder.
REPORT_FILES = (
    "report.md",
    "results.csv",
    "results.json",
    "bpc_vs_flops.png",
    "bpc_vs_vocab.png",
    "chars_per_token_vs_vocab.png",
    "curves.png",
)


class ReportError(ValueError):
    """A run folder whose files cannot make a report row; the message names the file."""


@dataclass
class RunResult:
    """One tokenizer's run: what it cost and how well it predicts the held-out text.

    Attributes:
        spec: the tokenizer SPEC (``bpe:512``).
        slug: its file-name form (``bpe-512``).
        run_dir: the run folder.
        vocab_size: the tokenizer's vocabulary size (ids, special tokens included).
        params: model parameters (the tied embedding counted once).
        params_embedding: token (and learned position) embedding parameters.
        params_non_embedding: all the others.
        steps: optimizer steps.
        tokens: training tokens seen.
        chars: training characters seen (tokens x the training split's characters per token).
        flops: training FLOPs (pretrain.py's count, docs/training.md).
        elapsed: wall-clock seconds of the run (evaluations included).
        train_time: seconds spent in optimizer steps.
        stop_reason: the budget that ended the run (``flops``, ``chars``, ``tokens``, ``minutes``, ``max_steps``).
        val_bpc: held-out bits/char at the run's last evaluation (pretrain.py's fixed slice).
        bits_per_char: the final model's bits/char on the report's held-out characters (bits.py).
        heldout_chars: characters bits.py measured (the same for every row of a report).
        heldout_tokens: tokens the held-out characters became.
        chars_per_token: heldout_chars / heldout_tokens.
        unk_share: share of the held-out tokens that are ``<unk>`` (0 for byte-level tokenizers).
        round_trip_share: share of held-out documents with ``decode(encode(doc)) == doc``.
    """

    spec: str
    slug: str
    run_dir: str
    vocab_size: int
    params: int
    params_embedding: int | None
    params_non_embedding: int | None
    steps: int
    tokens: int
    chars: float
    flops: float
    elapsed: float
    train_time: float | None
    stop_reason: str | None
    val_bpc: float | None
    bits_per_char: float
    heldout_chars: int
    heldout_tokens: int
    chars_per_token: float
    unk_share: float
    round_trip_share: float

    @property
    def kind(self) -> str:
        """The SPEC's kind: ``bpe``, ``word``, ``byte``, ``tiktoken``, ``hf``, ``file``."""
        return self.spec.split(":", 1)[0]


def read_json(path: str | os.PathLike) -> dict:
    """A JSON object from ``path``.

    Raises:
        ReportError: missing file, bad JSON or not an object (the message names the file).
    """
    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ReportError(f"{path}: cannot read it as JSON ({e})") from None
    if not isinstance(obj, dict):
        raise ReportError(f"{path}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _need(d: dict, key: str, path: Path):
    if d.get(key) is None:
        raise ReportError(f"{path}: no {key!r}")
    return d[key]


def result_from_files(spec: str, slug: str, run_dir: str | os.PathLike) -> RunResult:
    """Join ``run_dir/summary.json`` and ``run_dir/bits.json`` into a :class:`RunResult`.

    Raises:
        ReportError: a missing file or field (named), or a bits.json with no row or several.
    """
    run_dir = Path(run_dir)
    sp, bp = run_dir / "summary.json", run_dir / "bits.json"
    s, b = read_json(sp), read_json(bp)
    rows = b.get("results")
    if not isinstance(rows, list) or len(rows) != 1 or not isinstance(rows[0], dict):
        raise ReportError(f"{bp}: expected one result row, got {len(rows) if isinstance(rows, list) else 'none'}")
    r = rows[0]
    return RunResult(
        spec=spec,
        slug=slug,
        run_dir=str(run_dir),
        vocab_size=int(_need(r, "vocab_size", bp)),
        params=int(_need(s, "params", sp)),
        params_embedding=s.get("params_embedding"),
        params_non_embedding=s.get("params_non_embedding"),
        steps=int(_need(s, "steps", sp)),
        tokens=int(_need(s, "tokens", sp)),
        chars=float(_need(s, "chars", sp)),
        flops=float(_need(s, "flops", sp)),
        elapsed=float(_need(s, "elapsed", sp)),
        train_time=s.get("train_time"),
        stop_reason=s.get("stop_reason"),
        val_bpc=s.get("val_bpc"),
        bits_per_char=float(_need(r, "bits_per_character", bp)),
        heldout_chars=int(_need(r, "characters", bp)),
        heldout_tokens=int(_need(r, "tokens", bp)),
        chars_per_token=float(_need(r, "characters_per_token", bp)),
        unk_share=float(r.get("unknown_share") or 0.0),
        round_trip_share=float(_need(r, "round_trip_share", bp)),
    )


@dataclass
class ReportMeta:
    """What is common to every row of a report.

    Attributes:
        name: the report's name (its folder ``reports/NAME``).
        corpus: the corpus name.
        data_dir: the corpus folder (``data/NAME``).
        model: the model shape, in words (``preset small: 3 layers, ...``).
        budget: the budget each run got, in words (``6e12 training FLOPs``).
        heldout: the held-out text, in words (which file, how many characters).
        command: the command line that made the report.
        notes: extra lines for the report (warnings).
    """

    name: str
    corpus: str
    data_dir: str
    model: str
    budget: str
    heldout: str
    command: str = ""
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- formatting
def human(n: float | None, digits: int = 3) -> str:
    """``1234567 -> '1.23M'`` (k, M, G, T); None and nan -> ``'-'``."""
    if n is None or (isinstance(n, float) and not math.isfinite(n)):
        return "-"
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.{digits}g}{unit}"
    return f"{n:.{digits}g}"


def sci(x: float | None) -> str:
    """``6e12 -> '6.00e12'``; None -> ``'-'``."""
    if x is None or not math.isfinite(x):
        return "-"
    mant, exp = f"{x:.2e}".split("e")
    return f"{mant}e{int(exp)}"


def duration(seconds: float | None) -> str:
    """``192.4 -> '3m12s'``, ``42.0 -> '42s'``, ``3725 -> '1h02m'``; None -> ``'-'``."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def _params(r: RunResult) -> str:
    if r.params_embedding is None or r.params_non_embedding is None:
        return human(r.params)
    return f"{human(r.params_embedding)} + {human(r.params_non_embedding)}"


#: The Markdown table: header -> cell of a row.
TABLE = (
    ("tokenizer", lambda r: f"`{r.spec}`"),
    ("vocab", lambda r: f"{r.vocab_size:,}"),
    ("params (embedding + rest)", _params),
    ("held-out chars/token", lambda r: f"{r.chars_per_token:.3f}"),
    ("tokens seen", lambda r: human(r.tokens)),
    ("chars seen", lambda r: human(r.chars)),
    ("FLOPs", lambda r: sci(r.flops)),
    ("wall time", lambda r: duration(r.elapsed)),
    ("stopped by", lambda r: r.stop_reason or "-"),
    ("held-out bits/char", lambda r: f"{r.bits_per_char:.4f}"),
    ("unk", lambda r: f"{r.unk_share:.2%}"),
    ("round trip", lambda r: f"{r.round_trip_share:.2f}"),
)


def markdown_table(results: Sequence[RunResult]) -> str:
    """The results as a GitHub Markdown table, one row per run in the given order."""
    head = "| " + " | ".join(h for h, _ in TABLE) + " |"
    rule = "|" + "|".join("---" if i == 0 else "---:" for i in range(len(TABLE))) + "|"
    body = ["| " + " | ".join(cell(r) for _, cell in TABLE) + " |" for r in results]
    return "\n".join([head, rule, *body])


def csv_text(results: Sequence[RunResult]) -> str:
    """The results as CSV: a header of :class:`RunResult` field names, then one line per run."""
    names = [f.name for f in fields(RunResult)]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
    w.writeheader()
    for r in results:
        w.writerow({k: ("" if v is None else v) for k, v in asdict(r).items()})
    return buf.getvalue()


def render_markdown(results: Sequence[RunResult], meta: ReportMeta) -> str:
    """``report.md``: the settings, the table, the plots, how to read them."""
    best = min(results, key=lambda r: r.bits_per_char) if results else None
    lines = [
        f"# Tokenizer comparison: {meta.name}",
        "",
        f"- corpus: `{meta.corpus}` ({meta.data_dir})",
        f"- model: {meta.model}",
        f"- budget per run: {meta.budget}",
        f"- held-out text: {meta.heldout}",
    ]
    if meta.command:
        lines.append(f"- command: `{meta.command}`")
    if results:
        lines.append(f"- training wall time, all runs: {duration(sum(r.elapsed for r in results))}")
    lines += ["", markdown_table(results), ""]
    if best is not None:
        lines.append(
            f"Lowest held-out bits per character: `{best.spec}` ({best.bits_per_char:.4f})"
            + (" (a word-level model: see the note below)." if best.kind == "word" else ".")
        )
        lines.append("")
    lines += [
        "![held-out bits per character against training FLOPs](bpc_vs_flops.png)",
        "",
        "![final held-out bits per character against vocabulary size](bpc_vs_vocab.png)",
        "![held-out characters per token against vocabulary size](chars_per_token_vs_vocab.png)",
        "",
        "The same curves against characters seen and wall time: [curves.png](curves.png). Every row, with more "
        "columns: [results.csv](results.csv), [results.json](results.json).",
        "",
        "## How to read the table",
        "",
        "- **params**: the token embedding (tied to the output layer, counted once; plus the position "
        "embedding with learned positions) + everything else. The vocabulary changes only the first part.",
        "- **held-out chars/token**: characters of the held-out text per token of this tokenizer; more "
        "characters per token means fewer predictions per character and a longer text in one context window.",
        "- **tokens seen, chars seen, FLOPs, wall time**: what the training run consumed (FLOPs per token = "
        "6 x non-embedding parameters + attention + output layer, docs/training.md). At equal FLOPs a larger "
        "vocabulary pays more per token (its output layer) and sees fewer tokens, each covering more characters.",
        "- **held-out bits/char**: the final model's cross-entropy on the held-out characters, summed over its "
        "own tokens and divided by ln 2 x the characters (bits.py, docs/bits.md); lower is better and the "
        "figure is comparable across tokenizers. The curves use pretrain.py's fixed held-out slice (the start of the same text, `--eval-chars` characters; with the defaults the same 100,000 characters).",
        "- **unk**: share of the held-out tokens that are `<unk>`; **round trip**: share of held-out "
        "documents that decode back to exactly their text.",
        "",
        "## What word-level models do not predict",
        "",
        WORD_NOTE,
    ]
    if meta.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in meta.notes]
    return "\n".join(lines) + "\n"


def write_report(out_dir: str | os.PathLike, results: Sequence[RunResult], meta: ReportMeta, curves) -> list[Path]:
    """Write every file of :data:`REPORT_FILES` into ``out_dir`` (atomically, the folder is created).

    Args:
        out_dir: the report folder (``reports/NAME``).
        results: one :class:`RunResult` per run, in the order to show them.
        meta: the settings common to the runs.
        curves: one :class:`storygpt.plot.Curve` per run (labelled with its SPEC), for the FLOPs plot.

    Returns:
        The paths written.

    Raises:
        ValueError: no results.
    """
    from storygpt import plot

    if not results:
        raise ValueError("write_report: no results")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    write_text(out / "report.md", render_markdown(results, meta))
    write_text(out / "results.csv", csv_text(results))
    doc = {"meta": asdict(meta), "results": [asdict(r) | {"kind": r.kind} for r in results]}
    write_text(out / "results.json", json.dumps(doc, indent=2) + "\n")
    written += [out / "report.md", out / "results.csv", out / "results.json"]
    title = f"{meta.corpus}: {meta.budget}"
    drawable = [c for c in curves if len(c)]
    if drawable:
        written.append(plot.plot_curves(drawable, out / "bpc_vs_flops.png", ("flops",), title=title))
        written.append(plot.plot_curves(drawable, out / "curves.png", title=title))
    labels = [r.spec for r in results]
    vocab = [r.vocab_size for r in results]
    written.append(
        plot.plot_points(
            labels,
            vocab,
            [r.bits_per_char for r in results],
            out / "bpc_vs_vocab.png",
            xlabel="vocabulary size",
            ylabel="final held-out bits per character",
            title=title,
        )
    )
    written.append(
        plot.plot_points(
            labels,
            vocab,
            [r.chars_per_token for r in results],
            out / "chars_per_token_vs_vocab.png",
            xlabel="vocabulary size",
            ylabel="held-out characters per token",
            title=f"{meta.corpus}: characters per token",
        )
    )
    return written
