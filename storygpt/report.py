"""The tokenizer comparison report of ``compare.py``: one row per run, as Markdown, CSV, JSON and PNGs.

A row (:class:`RunResult`) joins two files of a run folder:

* ``summary.json`` (pretrain.py): parameters (embedding and the rest), steps,
  training tokens, characters and FLOPs seen, wall time, why the run stopped;
* ``bits.json`` (``bits.py --json FILE``): the final model measured on the
  held-out characters: bits per character, tokens, characters per token,
  share of ``<unk>`` predictions, share of documents that round-trip.

:func:`write_report` writes ``report.md`` (:mod:`storygpt.report_markdown`, its tables
:mod:`storygpt.report_tables`), ``results.csv``, ``results.json`` and the plots
(:mod:`storygpt.plot`) into the report folder.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from storygpt.atomic import write_text
from storygpt.report_markdown import budgets_of, render_markdown

#: Files :func:`write_report` writes into the report folder.
REPORT_FILES = (
    "report.md",
    "results.csv",
    "results.json",
    "bpc_vs_flops.png",
    "bpc_vs_vocab.png",
    "chars_per_token_vs_vocab.png",
    "curves.png",
)  # and bpc_vs_compute.png with several budgets


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
        params: model parameters (an untied output layer counted, a tied one once).
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
        seed, budget, budget_value: the run's training seed and budget (``flops1e12``, 1e12).
        warmup_steps, evals: its learning-rate warm-up steps and held-out evaluations.
        under_trained: fewer steps than the warm-up or fewer than analysis.MIN_EVALS evaluations.
        lossy: round trip below 1 or a ``<unk>`` share above 0 (measured, whatever the kind).
        renyi_efficiency, vocab_used_share, mean_token_bytes: the tokenizer's own measures on the
            held-out text (storygpt.heldout).
        lr, batch_windows, dtype, threads, processes, device, recipe, cpu_time: how it was trained.
        block_nats, block_characters: cross-entropy per held-out character block (the bootstrap's data;
            in results.json, not in results.csv).
        provenance: versions, commit, fingerprints and every pretrain.py flag (results.json only).
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
    chars: int
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
    seed: int | None = None
    budget: str = ""
    budget_value: float | None = None
    warmup_steps: int | None = None
    evals: int = 0
    under_trained: bool = False
    lossy: bool = False
    renyi_efficiency: float | None = None
    vocab_used_share: float | None = None
    mean_token_bytes: float | None = None
    lr: float | None = None
    batch_windows: int | None = None
    dtype: str | None = None
    threads: int | None = None
    processes: int | None = None
    device: str | None = None
    recipe: str | None = None
    cpu_time: float | None = None
    block_nats: list | None = None
    block_characters: list | None = None
    provenance: dict | None = None

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


def result_from_files(
    spec: str, slug: str, run_dir: str | os.PathLike, evals: int = 0, budget: tuple | None = None
) -> RunResult:
    """Join ``run_dir/summary.json``, ``run_dir/bits.json`` and (when there) ``run_dir/compare.json`` into a
    :class:`RunResult`; ``evals``: the run's held-out evaluations; ``budget``: (label, value).

    Raises:
        ReportError: a missing file or field (named), or a bits.json with no row or several.
    """
    from storygpt.analysis import MIN_EVALS

    run_dir = Path(run_dir)
    sp, bp = run_dir / "summary.json", run_dir / "bits.json"
    s, b = read_json(sp), read_json(bp)
    cmp_path = run_dir / "compare.json"
    c = read_json(cmp_path) if cmp_path.is_file() else {}
    args = s.get("args") or {}
    warmup = args.get("warmup_steps", c.get("warmup_steps"))
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
        chars=round(float(_need(s, "chars", sp))),
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
        seed=args.get("seed", c.get("seed")),
        budget=(budget or ("", None))[0],
        budget_value=(budget or ("", None))[1],
        warmup_steps=warmup,
        evals=evals,
        under_trained=(warmup is not None and int(s["steps"]) < warmup) or evals < MIN_EVALS,
        lossy=float(_need(r, "round_trip_share", bp)) < 1.0 or float(r.get("unknown_share") or 0.0) > 0.0,
        renyi_efficiency=r.get("renyi_efficiency"),
        vocab_used_share=r.get("vocab_used_share"),
        mean_token_bytes=r.get("mean_token_bytes"),
        lr=args.get("lr"),
        batch_windows=s.get("batch_windows"),
        dtype=s.get("dtype"),
        threads=s.get("threads"),
        processes=s.get("processes"),
        device=s.get("device"),
        recipe=args.get("recipe"),
        cpu_time=(c.get("provenance") or {}).get("cpu_time"),
        block_nats=r.get("block_nats"),
        block_characters=r.get("block_characters"),
        provenance={**(c.get("provenance") or {}), "pretrain_args": args, "config": s.get("config")},
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
        seeds: the training seeds of every tokenizer; budgets: the budget values (a sweep when several).
        hardware: threads, processes, device and dtype in words (``1 thread x 1 process, cpu, bfloat16``).
        argv: compare.py's arguments (``compare.py --rerun`` runs them again).
        provenance: what made the report (storygpt version, git commit and whether the tree was dirty,
            torch and Python versions, the held-out text's sha256).
    """

    name: str
    corpus: str
    data_dir: str
    model: str
    budget: str
    heldout: str
    command: str = ""
    notes: list[str] = field(default_factory=list)
    seeds: list = field(default_factory=list)
    budgets: list = field(default_factory=list)
    hardware: str = ""
    argv: list = field(default_factory=list)
    provenance: dict = field(default_factory=dict)


#: RunResult fields left out of results.csv (lists and dicts: they are in results.json).
CSV_LEFT_OUT = ("block_nats", "block_characters", "provenance")


def csv_text(results: Sequence[RunResult]) -> str:
    """The results as CSV: a header of :class:`RunResult` field names (less :data:`CSV_LEFT_OUT`), then one
    line per run; counts are integers."""
    names = [f.name for f in fields(RunResult) if f.name not in CSV_LEFT_OUT]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=names, lineterminator="\n")
    w.writeheader()
    for r in results:
        w.writerow({k: ("" if v is None else v) for k, v in asdict(r).items() if k in names})
    return buf.getvalue()


def verdict_dict(v) -> dict:
    """A :class:`storygpt.analysis.Verdict` as JSON."""
    return {
        "budget": v.budget,
        "best": v.best.spec if v.best else None,
        "best_mean": v.best.mean if v.best else None,
        "winner": v.winner,
        "tied": v.tied,
        "ineligible": v.ineligible,
        "intervals": {k: (asdict(iv) if iv is not None else None) for k, iv in v.intervals.items()},
    }


def write_report(out_dir: str | os.PathLike, results: Sequence[RunResult], meta: ReportMeta, curves) -> list[Path]:
    """Write every file of :data:`REPORT_FILES` into ``out_dir`` (atomically, the folder is created), and
    ``bpc_vs_compute.png`` when the report has several budgets.

    Args:
        out_dir: the report folder (``reports/NAME``).
        results: one :class:`RunResult` per run, in the order to show them.
        meta: the settings common to the runs.
        curves: one :class:`storygpt.plot.Curve` per run (labelled with its SPEC), in the order of ``results``.

    Returns:
        The paths written.

    Raises:
        ValueError: no results.
    """
    from storygpt import analysis, plot

    if not results:
        raise ValueError("write_report: no results")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    write_text(out / "report.md", render_markdown(results, meta))
    write_text(out / "results.csv", csv_text(results))
    gs = analysis.groups(results)
    sw = analysis.sweep(gs)
    doc = {
        "meta": asdict(meta),
        "results": [asdict(r) | {"kind": r.kind} for r in results],
        "verdicts": [verdict_dict(analysis.verdict([g for g in gs if g.budget == b])) for b in budgets_of(gs)],
        "fits": {k: (asdict(v) if not isinstance(v, str) else v) for k, v in (sw.fits if sw else {}).items()},
        "crossovers": [list(c) for c in (sw.crossovers if sw else [])],
    }
    write_text(out / "results.json", json.dumps(doc, indent=2) + "\n")
    written += [out / "report.md", out / "results.csv", out / "results.json"]
    title = f"{meta.corpus}: {meta.budget}"
    specs = list(dict.fromkeys(r.spec for r in results))
    colours = plot.colours_for(specs)
    styled = plot.style_curves(curves, results, colours)
    if styled:
        written.append(plot.plot_curves(styled, out / "bpc_vs_flops.png", ("flops",), title=title))
        written.append(plot.plot_curves(styled, out / "curves.png", title=title))
    if sw is not None:
        written.append(plot.plot_sweep(sw, out / "bpc_vs_compute.png", colours, title=meta.corpus))
    last = [g for g in gs if g.budget == max(g.budget for g in gs)]
    labels = [g.spec for g in last]
    vocab = [g.runs[0].vocab_size for g in last]
    cols = [colours[g.spec] for g in last]
    written.append(
        plot.plot_points(
            labels,
            vocab,
            [g.mean for g in last],
            out / "bpc_vs_vocab.png",
            xlabel="vocabulary size",
            ylabel="final held-out bits per character (mean over seeds)",
            title=title,
            colours=cols,
        )
    )
    written.append(
        plot.plot_points(
            labels,
            vocab,
            [g.runs[0].chars_per_token for g in last],
            out / "chars_per_token_vs_vocab.png",
            xlabel="vocabulary size",
            ylabel="held-out characters per token",
            title=f"{meta.corpus}: characters per token",
            colours=cols,
        )
    )
    return written
