"""The report of ``compare.py``: one row per run (:class:`RunResult`, joined from the run folder's
``summary.json``, ``bits.json`` and ``compare.json``) and the files made of the rows: ``report.md``
(:func:`render_markdown`, its sections; tables in :mod:`storygpt.compare.report_tables`), ``results.csv``,
``results.json`` and the plots (:mod:`storygpt.compare.plots`), written by :func:`write_report`.
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
from storygpt.compare.report_tables import (
    WORD_NOTE,
    duration,
    human,
    intrinsic_section,
    markdown_table,
    number,
    sweep_section,
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
        renyi_efficiency, vocab_used_share, mean_token_bytes, fertility: the tokenizer's own measures on the
            held-out text (storygpt.eval.heldout; fertility: tokens per word).
        lr, batch_windows, dtype, threads, processes, device, recipe, cpu_time: how it was trained.
        block_nats, block_characters: cross-entropy per held-out character block (the bootstrap's data;
            in results.json, not in results.csv).
        sets: bits.json's figures per evaluation set (its blocks too; results.json only).
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
    fertility: float | None = None
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
    sets: dict | None = None
    provenance: dict | None = None
    size: str | None = None  # the model preset of a --sizes comparison (its spec then reads SPEC@SIZE)
    seed_round: int = 1  # the seed round that added the run (compare.py --seeds auto; 1: the first or only one)
    branch_of: str | None = None  # placeholders for branched runs: the run this one continues, from which step,
    branched_at_step: int | None = None
    dropped_at_budget: float | None = None  # and the budget at which it was dropped (None: not branched/dropped)

    @property
    def kind(self) -> str:
        """The SPEC's kind: ``bpe``, ``word``, ``byte``, ``tiktoken``, ``hf``, ``file``."""
        return self.spec.split("@", 1)[0].split(":", 1)[0]


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
    from storygpt.compare.analysis import MIN_EVALS

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
        fertility=r.get("fertility"),
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
        sets=r.get("sets"),
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
        recipe: the training recipe of every run (pretrain.py --recipe).
        hardware: threads, processes, device and dtype in words (``1 thread x 1 process, cpu, bfloat16``).
        argv: compare.py's arguments (``compare.py --rerun`` runs them again).
        measurement: how bits.py measured every run (``bits_chars``, ``block_chars``, ``perturb``, ``eval``), so
            that ``--rerun`` measures the same way after a default changed.
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
    recipe: str = ""
    argv: list = field(default_factory=list)
    provenance: dict = field(default_factory=dict)
    measurement: dict = field(default_factory=dict)


#: RunResult fields left out of results.csv (lists and dicts: they are in results.json).
CSV_LEFT_OUT = ("block_nats", "block_characters", "sets", "provenance")


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
    """A :class:`storygpt.compare.analysis.Verdict` as JSON."""
    return {
        "budget": v.budget,
        "best": v.best.spec if v.best else None,
        "best_mean": v.best.mean if v.best else None,
        "winner": v.winner,
        "tied": v.tied,
        "ineligible": v.ineligible,
        "unfair": v.unfair,
        "budget_needed": v.budget_needed,
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
    from storygpt.compare import analysis, plots
    from storygpt.plot import plot_curves

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
    colours = plots.colours_for(specs)
    styled = plots.style_curves(curves, results, colours)
    if styled:
        written.append(plot_curves(styled, out / "bpc_vs_flops.png", ("flops",), title=title))
        written.append(plot_curves(styled, out / "curves.png", title=title))
    if sw is not None:
        written.append(plots.plot_sweep(sw, out / "bpc_vs_compute.png", colours, title=meta.corpus))
    last = [g for g in gs if g.budget == max(g.budget for g in gs)]
    labels = [g.spec for g in last]
    vocab = [g.runs[0].vocab_size for g in last]
    cols = [colours[g.spec] for g in last]
    written.append(
        plots.plot_points(
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
        plots.plot_points(
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


# ------------------------------------------------------------------ report.md
def _interval(iv) -> str:
    if iv is None:
        return "no interval (no block losses)"
    return f"{iv.diff:+.4f} [{iv.low:+.4f}, {iv.high:+.4f}]"


def scope(gs) -> str:
    """Where a verdict holds, in words: ``at 1e12 training FLOPs, 3 layers, width 96 (336k non-embedding
    parameters), recipe modern`` (from the runs of one budget)."""
    from storygpt.compare.analysis import BUDGETS, budget_kind

    r = gs[0].runs[0]
    size = f"{human(r.params_non_embedding or r.params)} {'non-embedding ' if r.params_non_embedding else ''}parameters"
    cfg = (r.provenance or {}).get("config") or {}
    if cfg.get("n_layer") and cfg.get("n_embd"):
        size = f"{cfg['n_layer']} layer{'s' if cfg['n_layer'] != 1 else ''}, width {cfg['n_embd']} ({size})"
    recipes = sorted({str(x.recipe) for g in gs for x in g.runs if x.recipe}) or ["not recorded"]
    budget = f"{number(gs[0].budget)} {BUDGETS[budget_kind(r.budget)][2]}" if gs[0].budget else "its budget"
    return f"at {budget}, {size}, recipe {', '.join(recipes)}"


def unfair_lines(gs, v) -> list[str]:
    """No fair verdict: the under-trained runs that decide it and the budget that would train them."""
    from storygpt.compare.analysis import BUDGETS, budget_kind

    names = ", ".join(f"`{g.spec}` ({g.mean:.4f})" for g in gs if g.spec in v.unfair)
    left = [g.spec for g in gs if g.eligible]
    low = min(g.mean for g in gs if g.eligible)
    if any(g.mean < low for g in gs if g.spec in v.unfair):
        why = f"{names} {'is' if len(v.unfair) == 1 else 'are'} lower but under-trained, so no run is named best"
    else:
        why = f"{names} {'is' if len(v.unfair) == 1 else 'are'} under-trained, which leaves `{left[0]}` alone"
    line = f"**No fair verdict {scope(gs)}**: {why}."
    if v.budget_needed:
        flag = BUDGETS[budget_kind(gs[0].runs[0].budget)][0]
        line += f" About {flag} {number(v.budget_needed)} would train {'it' if len(v.unfair) == 1 else 'them'}."
    return [line]


def summary_section(gs, v, several_seeds: bool, holds: str = "") -> list[str]:
    """One budget: mean (and spread) per tokenizer, the difference from the best with its interval, and the
    sentence that names a winner or says which tokenizers cannot be told apart (with where it holds: the
    budget, model and recipe, and ``holds``, the budgets of a sweep with the same order)."""
    lines = [
        "| tokenizer | runs | mean bits/char | spread (sd over seeds) | minus the best, 95% interval | status |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for g in sorted(gs, key=lambda g: g.mean):
        if v.best is None:
            diff = "no interval (no run can be named best)"
        else:
            diff = "(best)" if v.best is g else _interval(v.intervals.get(g.spec))
        spread = "-" if g.spread is None else f"{g.spread:.4f}"
        flags = [f for f, on in (("under-trained", g.under_trained), ("lossy", g.lossy)) if on]
        lines.append(f"| `{g.spec}` | {len(g.runs)} | {g.mean:.4f} | {spread} | {diff} | {', '.join(flags) or 'ok'} |")
    lines.append("")
    where = scope(gs)
    if v.unfair:
        lines += unfair_lines(gs, v)
    elif v.best is None:
        lines.append(f"No tokenizer can be named best {where}: every run is under-trained or lossy.")
        if v.budget_needed:
            from storygpt.compare.analysis import BUDGETS, budget_kind

            flag = BUDGETS[budget_kind(gs[0].runs[0].budget)][0]
            lines[-1] += f" About {flag} {number(v.budget_needed)} would train the under-trained ones."
    elif v.winner is not None and not [g for g in gs if g is not v.best and g.eligible]:
        lines.append(
            f"Only one tokenizer can be named {where}: `{v.winner}` ({v.best.mean:.4f}); nothing to compare it with."
        )
    elif v.winner is not None:
        others = [g.spec for g in gs if g is not v.best and g.eligible]
        lines.append(
            f"**Lowest held-out bits per character {where}: `{v.winner}`** ({v.best.mean:.4f}); its difference from "
            + ", ".join(f"`{s}`" for s in others)
            + " has a 95% interval that excludes zero."
        )
    else:
        lines.append(
            f"No winner {where}: the lowest mean is `{v.best.spec}` ({v.best.mean:.4f}), but the 95% interval of its "
            "difference from " + ", ".join(f"`{s}`" for s in v.tied) + " includes zero (or could not be computed): "
            "this comparison cannot tell them apart."
        )
    if holds:
        lines.append(holds)
    if v.ineligible:
        lines.append(
            "Never named best here: "
            + ", ".join(f"`{s}`" for s in v.ineligible)
            + " (under-trained or lossy; see the status column)."
        )
    if not several_seeds:
        lines.append(
            "With one seed per tokenizer the interval resamples the held-out text only; it says nothing about "
            "how another training seed would do (`--seeds 3` adds that)."
        )
    return lines


def provenance_section(meta) -> list[str]:
    p = meta.provenance
    lines = ["## Provenance", ""]
    for k in ("storygpt", "commit", "dirty", "torch", "python", "platform", "heldout_sha256"):
        if k in p:
            lines.append(f"- {k.replace('_', ' ')}: `{p[k]}`")
    lines += [
        "",
        "Per run (results.json, `provenance` and the columns of results.csv): the commit, torch version, device, "
        "dtype, threads and processes it was trained with, every pretrain.py flag (learning rate, batch, warm-up, "
        "seed, recipe), the fingerprints of its token files, FLOPs per token, steps, tokens, characters, wall and "
        f"CPU time. `python compare.py --rerun {'reports/' + meta.name}` trains every run again in new run folders "
        "and compares the figures.",
        "",
    ]
    return lines


def budgets_of(gs) -> list:
    return sorted({g.budget for g in gs}, key=lambda b: (b is None, b or 0))


def verdict_sections(results: Sequence, several_seeds: bool) -> list[str]:
    """Markdown lines of the verdict per budget (a "## Budget B" heading each when there are several, else
    "## Result"): what report.md puts first and compare.py prints when it ends.  With several budgets each
    ranking says at which budgets the same order of the eligible tokenizers (by mean) holds."""
    from storygpt.compare import analysis

    gs = analysis.groups(results)
    budgets = budgets_of(gs)
    verdicts = {b: analysis.verdict([g for g in gs if g.budget == b]) for b in budgets}
    orders = {}
    for b, v in verdicts.items():
        fair = v.best is not None and not v.unfair
        ranked = sorted((g for g in gs if g.budget == b and g.eligible), key=lambda g: g.mean)
        orders[b] = tuple(g.spec for g in ranked) if fair and len(ranked) > 1 else None
    lines = []
    for b in budgets:
        bg = [g for g in gs if g.budget == b]
        holds = ""
        if len(budgets) > 1 and orders[b]:
            at = [x for x in budgets if orders[x] == orders[b]]
            where = (
                "every budget of the sweep"
                if at == budgets
                else f"budget{'s' * (len(at) > 1)} " + ", ".join(map(number, at))
            )
            holds = (
                f"This order ({' < '.join(f'`{s}`' for s in orders[b])}, by mean) holds at {where} "
                f"(of {', '.join(number(x) for x in budgets)})."
            )
        lines += [f"## Budget {number(b)}" if len(budgets) > 1 else "## Result", ""]
        lines += summary_section(bg, verdicts[b], several_seeds, holds) + [""]
    return lines


def render_markdown(results: Sequence, meta) -> str:
    """``report.md`` of ``results`` (:class:`~storygpt.compare.report.RunResult`) and ``meta``
    (:class:`~storygpt.compare.report.ReportMeta`): the settings, the verdict per budget, the sweep, the tokenizers'
    measures, every run."""
    from storygpt.compare import analysis

    gs = analysis.groups(results)
    lines = [
        f"# Tokenizer comparison: {meta.name}",
        "",
        f"- corpus: `{meta.corpus}` ({meta.data_dir})",
        f"- model: {meta.model}",
        f"- budget per run: {meta.budget}",
        f"- recipe: {meta.recipe or ', '.join(sorted({str(r.recipe) for r in results if r.recipe})) or 'not recorded'}"
        " (pretrain.py --recipe, docs/training.md)",
        f"- seeds per tokenizer: {len(meta.seeds) or 1}"
        + (f" ({', '.join(map(str, meta.seeds))})" if meta.seeds else ""),
        f"- held-out text: {meta.heldout}",
    ]
    if meta.hardware:
        lines.append(f"- hardware: {meta.hardware}")
    if meta.command:
        lines.append(f"- command: `{meta.command}`")
    if results:
        lines.append(f"- training wall time, all runs: {duration(sum(r.elapsed for r in results))}")
    lines.append("")
    budgets = budgets_of(gs)
    lines += verdict_sections(results, several_seeds=len(meta.seeds) > 1)
    sw = analysis.sweep(gs)
    if sw is not None:
        lines += sweep_section(sw)
    last = [g for g in gs if g.budget == budgets[-1]]
    lines += intrinsic_section(last, analysis.intrinsic_correlations(last), sum(not g.lossy for g in last))
    lines += ["## Every run", "", markdown_table(results), ""]
    lines += [
        "![held-out bits per character against training FLOPs](bpc_vs_flops.png)",
        "",
        "![final held-out bits per character against vocabulary size](bpc_vs_vocab.png)",
        "![held-out characters per token against vocabulary size](chars_per_token_vs_vocab.png)",
        "",
        "The same curves against characters seen and wall time: [curves.png](curves.png). Every row, with more "
        "columns: [results.csv](results.csv), [results.json](results.json).",
        "",
        "## How to read it",
        "",
        "- **minus the best, 95% interval**: this tokenizer's mean bits/char minus the best one's, with a paired "
        "bootstrap interval: the held-out characters are cut into fixed-size blocks (the same blocks for every "
        "model), and 10,000 times the blocks are drawn with replacement, once for both models, and the seeds of "
        "each tokenizer with replacement (Koehn 2004; Efron and Tibshirani 1993). A winner is named only when "
        "every eligible tokenizer's interval excludes zero (docs/compare.md).",
        "- **status**: `under-trained` (fewer optimizer steps than the learning-rate warm-up, or fewer than "
        f"{analysis.MIN_EVALS} evaluations) and `lossy` (a held-out document that does not round-trip, or `<unk>` "
        "tokens: measured, whatever the tokenizer's kind) runs are shown but never named best.",
        "- **params**: the token embedding and the output layer (a layer of its own in the default `modern` "
        "recipe; tied to the embedding and counted once with `--recipe gpt2`; plus the position embedding with "
        "learned positions) + everything else. The vocabulary changes only the first part.",
        "- **held-out chars/token**: characters of the held-out documents per token of their text (end-of-document "
        "tokens not counted, as in data.py).",
        "- **tokens seen, chars seen, FLOPs, wall time**: what the training run consumed (FLOPs per token = "
        "6 x non-embedding parameters + attention + output layer, docs/training.md).",
        "- **held-out bits/char**: the final model's cross-entropy on the held-out characters, summed over its "
        "own tokens and divided by ln 2 x the characters (bits.py, docs/bits.md); lower is better and the "
        "figure is comparable across tokenizers. The curves use pretrain.py's held-out slice (the start of the "
        "same text, `--eval-chars` characters).",
        "- **unk**: share of the held-out tokens that are `<unk>`; **round trip**: share of held-out "
        "documents that decode back to exactly their text.",
        "",
    ]
    if any(r.lossy for r in results):
        lines += ["## What lossy models do not predict", "", WORD_NOTE, ""]
    lines += provenance_section(meta)
    if meta.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in meta.notes]
    return "\n".join(lines).rstrip("\n") + "\n"
