"""compare.py's run order: the tools as subprocesses, for every tokenizer SPEC, budget and seed.

Every check first (arguments, SPECs, run folders), then ``data.py`` for every tokenizer (skipped when its
token files are there and were made with these options), the budget warnings and one thread probe, then
``pretrain.py`` (continued with ``--resume`` when a checkpoint is there, skipped when the run has finished)
and ``bits.py --json --block-chars`` per run, then the report (storygpt.compare.report).  Tools run through
:func:`storygpt.compare.toolrun.run_tool`, which tests replace.  :func:`compare` and :func:`rerun` are
compare.py's two commands.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from storygpt.atomic import write_text
from storygpt.compare import executors, probe, provenance, toolrun
from storygpt.compare.analysis import MIN_EVALS
from storygpt.compare.settings import (
    BUDGETS,
    DEFAULT_SHAPE,
    DEFAULT_SPECS,
    PRETRAIN_BATCH,
    CompareError,
    Run,
    Settings,
    budget_label,
    budget_of,
    budget_warning,
    check_compared,
    check_run_folder,
    collect,
    corpus_name,
    estimate_steps,
    eval_interval_for,
    finished,
    measured,
    number,
    parse_specs,
    read_json_or_none,
    report_meta,
    shape_flags,
    shape_of,
    stale_token_files,
    status_line,
    token_files,
    train_chars_per_token,
    vocab_size_of,
)
from storygpt.eval.perturb import parse_kinds
from storygpt.model.presets import PRESETS, preset
from storygpt.model.recipes import RECIPES

#: The checkout: data.py, pretrain.py and bits.py lie beside storygpt/.
HERE = Path(__file__).resolve().parents[2]
PROG = "compare.py"
#: compare.py flags passed on to every pretrain.py run as they are: attribute -> pretrain.py flag.  A new
#: pretrain.py setting that a comparison must vary goes here (and in compare.py's build_parser); it is part of the
#: settings that name the folder of runs, and it is recorded in each run's compare.json.
FORWARDED = {"recipe": "--recipe"}
#: pretrain.py's defaults that the pre-training guard needs (when --pretrain-args does not set them).
PRETRAIN_WARMUP = 20  # the warm-up of a recipe that names none (warmup_of reads the recipe's own)


def warmup_of(recipe_parts: dict) -> int:
    """The warm-up steps pretrain.py gives a run of this recipe (its ``warmup_steps`` part; gpt2 20, modern 5)."""
    return int(recipe_parts.get("warmup_steps", PRETRAIN_WARMUP))


def python_tool(name: str) -> list[str]:
    return [sys.executable, str(HERE / name)]


class ToolKilled(CompareError):
    """A tool stopped from outside (a signal, a kill): the run is kept and may be continued with --resume."""


def tool_failed(tool: str, run: Run, rc: int) -> CompareError:
    why = toolrun.last_line(run.log)
    kind = ToolKilled if executors.killed(rc) else CompareError
    return kind(f"{tool} failed for {run.spec} (exit {rc}): {why} (log: {run.log})")


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


def forwarded_flags(args) -> list[str]:
    """The :data:`FORWARDED` flags compare.py was given, as pretrain.py flags."""
    out = []
    for attr, flag in FORWARDED.items():
        value = getattr(args, attr, None)
        if value is not None:
            out += [flag, str(value)]
    return out


#: pretrain.py flags (dest names) that compare.py sets for every run itself -> what to use instead; refused
#: inside --pretrain-args, where they would silently change the runs the report describes.
OWN_FLAGS = {
    "recipe": "compare.py's --recipe",
    "data": "--corpus, --train-file or --data-root",
    "tokenizer": "the SPECs",
    "bpe": "the SPECs",
    "out_dir": "--out-dir",
    "run_name": None,
    "run_dir": None,
    "seed": "--seed and --seeds",
    **{b: "the budget flags" for b in ("minutes", "max_steps", "budget_tokens", "budget_chars", "budget_flops")},
    "preset": "--preset or --sizes",
    **{k: f"--{k.replace('_', '-')}" for k in ("n_layer", "n_head", "n_embd", "block_size")},
    "rope": "--learned (rotary positions are the default)",
    "log": "compare.py's --log",
    "resume": None,
    "force": None,
    "no_progress": None,
    "dry_run": None,
}


def check_pretrain_args(pretrain_args: list[str], forwarded: list[str]) -> None:
    """Refuse --pretrain-args that pretrain.py would refuse beside the ``forwarded`` flags (the recipe's optimizer
    decides which rate flags are allowed), or that set a flag compare.py sets itself (:data:`OWN_FLAGS`, an
    abbreviation included), before any folder is written: ``pretrain.py --dry-run`` reads them (no torch).

    Raises:
        CompareError: one line naming --pretrain-args and pretrain.py's objection.
    """
    if not pretrain_args:
        return
    import subprocess

    shown = f"--pretrain-args {shlex.join(pretrain_args)!r}"

    def dry_run(argv: list[str]) -> dict:
        cmd = python_tool("pretrain.py") + argv + ["--dry-run"]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE, timeout=120)
        if done.returncode != 0:
            raise CompareError(f"{shown}: {(done.stderr.strip().splitlines() or [f'exit {done.returncode}'])[-1]}")
        try:
            return json.loads(done.stdout)
        except ValueError:  # --help: pretrain.py printed its help and stopped
            raise CompareError(
                f"{shown}: pretrain.py printed no settings (a --help?); give flags for training"
            ) from None

    dests = set(dry_run([])) - {"run_folder"} | {"dry_run"}  # every pretrain.py flag, by dest name
    for word in pretrain_args:
        if not word.startswith("--"):
            continue
        name = word[2:].split("=", 1)[0].replace("-", "_")
        matches = [name] if name in dests else [d for d in dests if d.startswith(name)]  # argparse's abbreviations
        if len(matches) == 1 and matches[0] in OWN_FLAGS:
            flag, instead = "--" + matches[0].replace("_", "-"), OWN_FLAGS[matches[0]]
            why = (
                f"is set by compare.py for every run; use {instead}"
                if instead
                else "is compare.py's to decide for every run"
            )
            raise CompareError(f"{shown}: {flag} {why}")
    dry_run(forwarded + pretrain_args)


def pretrain_setting(pretrain_args: list[str], flag: str, default):
    """The value of ``flag`` in --pretrain-args (its last one), else ``default``."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument(flag, type=type(default))
    known, _ = p.parse_known_args(pretrain_args)
    value = getattr(known, flag.lstrip("-").replace("-", "_"))
    return default if value is None else value


def train(run: Run, args, settings: Settings, data_dir: Path, out_root: Path, shape: dict | None, threads) -> str:
    """pretrain.py for this run: fresh, or --resume from its checkpoint; returns 'trained' or 'resumed'."""
    from tqdm import tqdm

    key_name, value = run.budget
    flag, key, unit = BUDGETS[key_name]
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
        f"{value:g}",
        "--seed",
        str(run.seed),
        "--no-progress",
    ]
    if settings.position == "rope":
        cmd.append("--rope")
    cmd += ["--preset", run.size] if run.size else shape_flags(args)
    if settings.batch_size is not None:
        cmd += ["--batch-size", str(settings.batch_size)]
    cpt = train_chars_per_token(data_dir, run.slug)
    interval = eval_interval_for(args, run.budget, shape, vocab_size_of(data_dir, run.slug), cpt)
    if interval is not None:
        cmd += ["--eval-interval", str(interval)]
    if args.device:
        cmd += ["--device", args.device]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    cmd += settings.forwarded + settings.pretrain_args
    if getattr(args, "log", None):
        cmd += ["--log", args.log]  # tracking: not a setting of the runs (the folder of runs does not change)
    cmd.append("--resume" if resume else "--force")
    run.folder.mkdir(parents=True, exist_ok=True)
    record = read_json_or_none(run.folder / "compare.json") or {}
    record.update(
        spec=str(run.spec),
        settings=asdict(settings),
        budget=list(run.budget),
        seed=run.seed,
        warmup_steps=pretrain_setting(settings.pretrain_args, "--warmup-steps", warmup_of(settings.recipe_parts)),
    )
    write_text(run.folder / "compare.json", json.dumps(record, indent=2) + "\n")
    total = value * (60.0 if key_name == "minutes" else 1.0)
    bar = tqdm(
        total=total,
        desc=f"  {run.label}",
        unit="s" if key == "elapsed" else "",
        unit_scale=key != "elapsed",
        leave=False,
        disable=None if not (args.verbose or getattr(args, "no_bars", False)) else True,
        file=sys.stderr,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} " + unit + " [{elapsed}<{remaining}]",
    )
    cpu: list[float] = []  # the tool's own CPU seconds (runs at once: this process has several children)
    try:
        rc = toolrun.run_tool(
            cmd, run.log, args.verbose, toolrun.MetricsTail(run.folder / "metrics.jsonl", key), bar, cpu=cpu
        )
    finally:
        bar.close()
    if rc != 0:
        raise tool_failed("pretrain.py", run, rc)
    if not finished(run):
        raise CompareError(
            f"pretrain.py ended for {run.spec} but {run.folder / 'summary.json'} does not say its budget is spent "
            f"(log: {run.log})"
        )
    record["provenance"] = {
        **provenance.environment(HERE),
        "cpu_time": (record.get("provenance") or {}).get("cpu_time", 0.0) + sum(cpu),
        "token_files": provenance.token_fingerprints(token_files(data_dir, run.slug)),
        "command": ["pretrain.py", *cmd[2:]],
    }
    write_text(run.folder / "compare.json", json.dumps(record, indent=2) + "\n")
    return "resumed" if resume else "trained"


def measure(run: Run, args, settings: Settings, threads) -> None:
    """bits.py on the final checkpoint, writing run/bits.json (with the held-out block losses)."""
    cmd = python_tool("bits.py") + [
        str(run.folder / "ckpt.pt"),
        "--chars",
        str(settings.bits_chars),
        "--block-chars",
        str(args.block_chars),
        "--json",
        str(run.folder / "bits.json"),
        "--no-progress",
    ]
    if args.device:
        cmd += ["--device", args.device]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    # issue 33: per-character losses for the attribution, vocabulary health, named sets, robustness
    cmd += ["--save-losses", str(run.folder / "losses.npz"), "--vocab-health"]
    cmd += [f"--eval={e}" for e in settings.eval] + ([f"--perturb={settings.perturb}"] if settings.perturb else [])
    rc = toolrun.run_tool(cmd, run.log, args.verbose)
    if rc != 0:
        raise tool_failed("bits.py", run, rc)
    record = read_json_or_none(run.folder / "compare.json") or {"spec": str(run.spec), "settings": asdict(settings)}
    record["measured_chars"] = settings.bits_chars
    record["block_chars"] = args.block_chars
    record["measured_perturb"], record["measured_eval"] = settings.perturb, settings.eval
    write_text(run.folder / "compare.json", json.dumps(record, indent=2) + "\n")


# ------------------------------------------------------------------ checks before any training
def check_arguments(args) -> None:
    """Refuse values that cannot work together, naming them (before anything runs; single values: RANGES)."""
    if args.seed < 0 or args.seed + args.seeds - 1 > 2**63 - 1:
        raise CompareError(f"--seed {args.seed} with --seeds {args.seeds}: seeds must lie in 0 .. 2**63-1")
    if args.bits_chars and args.bits_chars < 2 * args.block_chars:
        raise CompareError(
            f"--bits-chars {args.bits_chars} holds fewer than 2 blocks of --block-chars {args.block_chars}: "
            "the bootstrap needs at least 2"
        )
    if args.train_file and not Path(args.train_file).is_file():
        raise CompareError(f"--train-file {args.train_file}: no such file")
    from storygpt.data.evalsets import read_eval_sets
    from storygpt.train import tracking

    try:  # every --eval file and --perturb kind is checked before anything runs
        parse_kinds(args.perturb)
        read_eval_sets(args.eval)
    except ValueError as e:
        raise CompareError(str(e)) from None
    try:  # --log: each run's pretrain.py would refuse it only after the data is prepared
        tracking.parse_kinds(args.log)
    except (ValueError, tracking.TrackingError) as e:
        raise CompareError(f"--log {args.log}: {e}" if isinstance(e, ValueError) else str(e)) from None


def check_eval_names(args, data_dir: Path, bits_chars: int) -> None:
    """Refuse an --eval NAME that bits.py would refuse after training: a set of the held-out text measured
    (its works' names, or doc-N), known once the data is prepared."""
    if not args.eval or not (data_dir / "valid.txt").is_file():
        return
    from storygpt.data.evalsets import read_eval_sets
    from storygpt.eval.bits import read_documents, take_characters
    from storygpt.eval.measure import texts_of

    valid = data_dir / "valid.txt"
    held = {name for name, _ in texts_of(take_characters(read_documents(valid), bits_chars or None), valid)[0].sets}
    for s in read_eval_sets(args.eval):
        if s.name in held:
            raise CompareError(
                f"--eval {s.name}={s.path}: {s.name!r} is already a set of the held-out text "
                f"({', '.join(sorted(held))}); choose another NAME"
            )


def chosen_threads(args, settings: Settings, shape, vocab_sizes: list[int]) -> int | None:
    """The thread count of every run: --threads, or --pretrain-args' --threads, or timed once here."""
    if args.threads:
        return args.threads
    if "--threads" in " ".join(settings.pretrain_args):
        return None  # the user's pretrain.py flag is passed as it is
    from storygpt.runtime import usable_cores

    cores = usable_cores()
    if cores <= 1 or (args.device or "cpu") != "cpu" or shape is None:
        return 1 if cores <= 1 else None
    t0 = time.perf_counter()
    threads, timings = probe.probe_threads(
        shape, max(vocab_sizes or [256]), settings.batch_size or PRETRAIN_BATCH, [1, cores], not args.learned
    )
    print(
        "threads: timed "
        + ", ".join(f"{n} -> {t * 1000:.0f} ms" for n, t in timings.items())
        + f" per training step (once, {duration_since(t0)}, charged to no budget); every run uses {threads}",
        flush=True,
    )
    return threads


def parse_sizes(args) -> list[str]:
    """``--sizes tiny,small,base`` as a list of presets ([] when not given).

    Raises:
        CompareError: an unknown or repeated preset, or --sizes beside --preset or a shape flag.
    """
    if args.sizes is None:
        return []
    if not args.sizes.strip():
        raise CompareError(f"--sizes {args.sizes!r}: no preset named; known: {', '.join(PRESETS)}")
    sizes = [s.strip() for s in args.sizes.split(",")]
    for i, s in enumerate(sizes):
        if s not in PRESETS:
            raise CompareError(f"--sizes: unknown preset {s!r}; known: {', '.join(PRESETS)}")
        if s in sizes[:i]:
            raise CompareError(f"--sizes: {s} is given twice")
    given = ["--preset"] * (args.preset is not None)
    given += [f"--{k.replace('_', '-')}" for k in DEFAULT_SHAPE if getattr(args, k, None) is not None]
    if given:
        raise CompareError(f"--sizes names the model shapes: drop {' and '.join(given)}")
    return sizes


def shape_for(run: Run, shape: dict | None) -> dict | None:
    """The model shape of a run: its --sizes preset's, or the comparison's one shape."""
    if not run.size:
        return shape
    fields = preset(run.size)
    return {k: fields[k] for k in DEFAULT_SHAPE}


class RunsFailed(Exception):
    """Some runs failed (each named with its log); the others finished.  Exit status 1, no report."""


@dataclass
class RunJob:
    """One run trained and measured on the resources of a slot (executors.Job's call; picklable for Ray and
    submitit, with absolute paths there)."""

    run: Run
    args: argparse.Namespace
    settings: Settings
    data_dir: Path
    out_root: Path
    shape: dict | None

    def __call__(self, slot: executors.Slot):
        args = argparse.Namespace(**vars(self.args))
        args.no_bars = True  # several runs at once: status lines, no progress bars
        if slot.device:
            args.device = slot.device
        t0, did = time.perf_counter(), []
        try:
            if not finished(self.run):
                how = train(self.run, args, self.settings, self.data_dir, self.out_root, self.shape, slot.threads)
                did.append(f"{how} {duration_since(t0)}")
            t1 = time.perf_counter()
            measure(self.run, args, self.settings, slot.threads)
            did.append(f"measured {duration_since(t1)}")
        except ToolKilled as e:
            raise executors.RunKilled(str(e)) from None
        except CompareError as e:
            raise executors.RunFailed(str(e)) from None
        return ", ".join(did), time.perf_counter() - t0


def cluster_engine(args, report_dir: Path):
    """The Ray or Slurm engine of --executor (None for this machine).

    Raises:
        CompareError: a missing extra, an unreachable --ray-address, a setting submitit refuses (one line).
    """
    made = None  # submitit makes its log folder at once: the topmost folder it makes is removed after a refusal
    for folder in (report_dir, *report_dir.parents):
        if folder.exists():
            break
        made = folder
    try:
        if args.executor == "ray":
            slot = executors.Slot(args.threads or 1, args.device, args.ray_gpus)
            return executors.RayEngine(args.ray_address, slot, HERE)
        if args.executor == "slurm":
            options = executors.SlurmOptions(
                partition=args.slurm_partition,
                time_minutes=args.slurm_time,
                gpus=args.slurm_gpus,
                cpus=args.slurm_cpus,
                params=executors.parse_slurm_params(args.slurm_param),
                cluster="local" if args.slurm_cluster == "local" else "slurm",
            )
            return executors.SlurmEngine(report_dir.resolve() / "slurm", options, HERE)
    except executors.RunFailed as e:
        if made is not None and made.is_dir():
            shutil.rmtree(made)
        raise CompareError(str(e)) from None
    return None


def run_at_once(engine, runs, todo, args, settings, data_dir, out_root, shape) -> None:
    """Train and measure the runs of ``todo`` on ``engine`` (several at once); a status line as each ends.

    Raises:
        RunsFailed: some runs failed (each named, with its log, as it ended); the others finished.
    """
    for i, run in enumerate(runs, 1):
        if run not in todo:
            print(status_line(i, len(runs), run, "done before"), flush=True)
    absolute = engine.name != "local"  # Ray workers and Slurm jobs start elsewhere: no relative paths
    jobs, position = [], {}
    for run in todo:
        r = replace(run, folder=run.folder.resolve(), log=run.log.resolve()) if absolute else run
        d, o = (data_dir.resolve(), out_root.resolve()) if absolute else (data_dir, out_root)
        jobs.append(executors.Job(run.label, r.log, RunJob(r, args, settings, d, o, shape_for(run, shape))))
        position[id(jobs[-1])] = (runs.index(run) + 1, run)
    print(f"training {len(todo)} run{'s' if len(todo) != 1 else ''} ({engine.name})", flush=True)

    def done(outcome) -> None:
        what, seconds = outcome.result
        i, run = position[id(outcome.job)]
        print(status_line(i, len(runs), run, what, seconds), flush=True)

    outcomes = executors.execute(engine, jobs, args.retries, say=lambda line: print(line, flush=True), done=done)
    failed = [o for o in outcomes if not o.ok]
    if failed:
        names = "; ".join(f"{o.job.label}: {o.message}" for o in failed)
        raise RunsFailed(
            f"error: {len(failed)} of {len(jobs)} runs failed ({names}); the others finished and are kept: "
            "fix the cause and run the same command again (no report until every run has finished)"
        )


def write_frontier(report_dir: Path, results, budget_key: str) -> list:
    """The isoFLOP frontier of a --sizes comparison: a section appended to report.md, ``frontiers`` in
    results.json, isoflop.png."""
    from storygpt.compare import frontier

    fronts = frontier.frontiers(results)

    def label(b):
        return budget_label(budget_key, b)

    path = report_dir / "report.md"
    text = path.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + "\n".join(frontier.markdown(fronts, label))
    write_text(path, text.rstrip("\n") + "\n")
    doc = read_json_or_none(report_dir / "results.json") or {}
    doc["frontiers"] = [frontier.as_dict(bf) for bf in fronts]
    write_text(report_dir / "results.json", json.dumps(doc, indent=2) + "\n")
    frontier.plot(fronts, report_dir / "isoflop.png", label)
    return fronts


def compare(args, argv: list[str]) -> int:
    """Run the comparison compare.py's ``args`` describe (``argv``: its arguments, recorded for --rerun):
    every check, then data, the thread probe, training and measuring, then the report; returns the exit
    status (2 after a one-line error, 130 after Ctrl-C)."""
    t_start = time.perf_counter()
    for name in ("pretrain_args", "data_args"):  # argparse reads --pretrain-args=-- (the end of flags) as a list
        if not isinstance(getattr(args, name), str):
            setattr(args, name, " ".join(getattr(args, name)))
    try:
        check_arguments(args)
        texts = args.specs or list(DEFAULT_SPECS)
        specs = parse_specs(texts)
        budget_key, budget_values = budget_of(args)
        try:
            pretrain_args, data_args = shlex.split(args.pretrain_args), shlex.split(args.data_args)
        except ValueError as e:
            raise CompareError(f"--pretrain-args/--data-args: {e}") from None
        check_pretrain_args(pretrain_args, forwarded_flags(args))
        corpus = corpus_name(args)
        default_name = f"{corpus}-{budget_label(budget_key, budget_values[0])}" + "".join(
            f"-{number(v)}" for v in budget_values[1:]
        )
        if args.seeds > 1:
            default_name += f"-{args.seeds}seeds"
        report = args.report or default_name
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", report) or report in (".", ".."):
            raise CompareError(f"--report {report!r}: use letters, digits, '.', '_' and '-' only (a folder name)")
        shape = shape_of(args)
        sizes = parse_sizes(args)
        data_dir = Path(args.data_root) / corpus
        settings = Settings(
            corpus=corpus,
            data_dir=str(data_dir.resolve()),
            position="learned" if args.learned else "rope",
            preset=args.preset,
            shape=shape_flags(args),
            batch_size=args.batch_size,
            bits_chars=args.bits_chars,
            pretrain_args=pretrain_args,
            data_args=data_args,
            forwarded=forwarded_flags(args),
            block_chars=args.block_chars,
            recipe_parts=dict(RECIPES.get(args.recipe, {})),
            perturb=",".join(parse_kinds(args.perturb)) or None,
            eval=list(args.eval or []),
        )
        out_root = Path(args.out_dir) / settings.key()  # pretrain.py puts a run in OUT_DIR/CORPUS/RUN_NAME
        report_dir = Path(args.reports_dir) / report
        seeds = [args.seed + i for i in range(args.seeds)]
        one_by_one = args.executor == "local" and args.jobs == 1  # else each run logs to its own file
        runs = []
        for spec in specs:
            try:
                slug = spec.slug
            except (FileNotFoundError, ValueError) as e:
                raise CompareError(str(e)) from None
            for size in sizes or [None]:
                for value in budget_values:
                    for seed in seeds:
                        sized = f"{size}-" if size else ""
                        name = f"{settings.position}-{sized}{slug}-{budget_label(budget_key, value)}-s{seed}"
                        folder = out_root / corpus / name
                        log = report_dir / "logs" / (f"{slug}.log" if one_by_one else f"{name}.log")
                        runs.append(Run(spec, slug, folder, log, (budget_key, value), seed, size))
        check_compared(texts, specs, budget_values, sizes)
        for run in runs:
            check_run_folder(run, settings)

        unit = BUDGETS[budget_key][2]
        print(
            f"compare: {len(specs)} tokenizer{'s' if len(specs) != 1 else ''} ({' '.join(map(str, specs))}) on {corpus}, "
            f"{', '.join(number(v) for v in budget_values)} {unit} each, {args.seeds} seed{'s' if args.seeds != 1 else ''}"
            f": {len(runs)} runs -> {report_dir}",
            flush=True,
        )
        todo = [r for r in runs if not (finished(r) and measured(r, settings))]
        engine = cluster_engine(args, report_dir) if todo else None  # a bad address or setting: before any work
        # data first for every tokenizer, then the budget warnings, then one thread probe: all before training
        for spec in dict.fromkeys(r.spec for r in todo if not finished(r)):
            first = next(r for r in todo if r.spec == spec)
            t1 = time.perf_counter()
            if prepare_data(first, args, settings, data_dir):
                print(f"data for {spec}: {duration_since(t1)}", flush=True)
        check_eval_names(args, data_dir, settings.bits_chars)
        warmup = pretrain_setting(pretrain_args, "--warmup-steps", warmup_of(settings.recipe_parts))
        batch = settings.batch_size or pretrain_setting(pretrain_args, "--batch-size", PRETRAIN_BATCH)
        notes = []
        for run in runs:
            cpt = train_chars_per_token(data_dir, run.slug)
            steps = estimate_steps(run.budget, shape_for(run, shape), vocab_size_of(data_dir, run.slug), batch, cpt)
            name = f"{run.spec}@{run.size}" if run.size else str(run.spec)
            why = budget_warning(name, run.budget, steps, warmup, MIN_EVALS)
            if why and why not in notes:
                notes.append(why)
                print(why, flush=True)
        threads = None
        if any(not finished(r) for r in todo):
            vocabs = [v for v in (vocab_size_of(data_dir, r.slug) for r in todo) if v]
            threads = chosen_threads(args, settings, shape_for(todo[-1], shape), vocabs)
        elif todo:
            threads = args.threads or None
        if engine is None and todo:
            slots, lines = executors.local_slots(args.jobs, len(todo), args.device, threads)
            for line in lines:
                print(line, flush=True)
            if len(slots) > 1:
                engine = executors.LocalEngine(slots)
        if engine is not None:
            run_at_once(engine, runs, todo, args, settings, data_dir, out_root, shape)

        for i, run in enumerate(runs, 1):
            if engine is not None:
                break
            t0 = time.perf_counter()
            if run not in todo:
                print(status_line(i, len(runs), run, "done before"), flush=True)
                continue
            print(f"[{i}/{len(runs)}] {run.label:<24} ...", flush=True)
            did = []
            if not finished(run):
                t1 = time.perf_counter()
                if prepare_data(run, args, settings, data_dir):
                    did.append(f"data {duration_since(t1)}")
                t1 = time.perf_counter()
                how = train(run, args, settings, data_dir, out_root, shape_for(run, shape), threads)
                did.append(f"{how} {duration_since(t1)}")
            t1 = time.perf_counter()
            measure(run, args, settings, threads)
            did.append(f"measured {duration_since(t1)}")
            print(status_line(i, len(runs), run, ", ".join(did), time.perf_counter() - t0), flush=True)

        results, curves = collect(runs)
        for run, r in zip(runs, results):
            if run.size:  # each (tokenizer, size) is a row of the report; the frontier section fits across sizes
                r.spec, r.size = f"{r.spec}@{run.size}", run.size
        meta = report_meta(args, settings, report, corpus, data_dir, shape, results, argv, seeds, budget_values, HERE)
        meta.notes += [n.removeprefix("warning: ") for n in notes]
        if sizes:
            meta.model = f"sizes {', '.join(sizes)} (pretrain.py presets; SPEC@SIZE in the tables)"
        from storygpt.compare.report import verdict_sections, write_report
        from storygpt.compare.report_tables import markdown_table

        try:
            write_report(report_dir, results, meta, curves)
            from storygpt.compare.plots import plot_bits_per_byte
            from storygpt.eval.where import write_sections

            write_sections(report_dir, results, Path(meta.data_dir) if meta.data_dir else None)
            if args.bits_per_byte:
                plot_bits_per_byte(report_dir, results, title=f"{meta.corpus}: bits per byte")
            fronts = write_frontier(report_dir, results, budget_key) if sizes else []
        except ValueError as e:
            raise CompareError(f"report {report_dir}: {e}") from None
        except OSError as e:  # a read-only or full reports folder: the runs are kept, the report can be made again
            why = e.strerror or str(e)
            raise CompareError(
                f"cannot write the report in {report_dir}: {why}; the runs are finished, run again"
            ) from None
        if getattr(args, "task_names", None):  # compare.py --tasks: a section of its own (storygpt/tasks/)
            from storygpt.tasks import TaskError
            from storygpt.tasks.report_section import add_task_section

            try:
                add_task_section(args, runs, results, report_dir, data_dir, args.device, threads)
            except TaskError as e:
                raise CompareError(str(e)) from None
    except CompareError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except RunsFailed as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted; run the same command again to continue", file=sys.stderr)
        return 130
    print()
    print(markdown_table(results))
    print()
    print("\n".join(verdict_sections(results, several_seeds=len(meta.seeds) > 1)).rstrip())
    if fronts:
        from storygpt.compare import frontier

        print("\nCompute-optimal frontier (isoFLOP):")
        for bf in fronts:
            print(frontier.verdict_line(bf, lambda b: budget_label(budget_key, b)).replace("**", ""))
    tasks = " (with its tasks section), tasks.json" if getattr(args, "task_names", None) else ""
    print(f"\nwrote {report_dir}/report.md{tasks}, results.csv, results.json and plots ({duration_since(t_start)})")
    return 0


def rerun(report: str, argv: list[str], parser, again) -> int:
    """``compare.py --rerun REPORT``: the report's command again, every run trained afresh in new folders
    (``--out-dir OUT_DIR/rerun``), then each run's bits/char beside the report's.  ``parser``: compare.py's
    argument parser; ``again``: compare.py's main, run on the report's arguments."""
    path = Path(report)
    path = path / "results.json" if path.is_dir() else path
    doc = read_json_or_none(path)
    argv_ok = isinstance(doc, dict) and isinstance(doc.get("meta"), dict) and isinstance(doc["meta"].get("argv"), list)
    if not argv_ok or not all(isinstance(a, str) for a in doc["meta"]["argv"]):
        print(f"{PROG}: error: --rerun {report}: no results.json with the command (meta.argv) there", file=sys.stderr)
        return 2
    old = [a for a in doc["meta"]["argv"]]
    others = [a for a in argv if a != report and not a.startswith("--rerun")]
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
    parsed = parser.parse_args(old)
    name = (parsed.report or doc["meta"].get("name") or path.parent.name) + "-rerun"
    new_argv = [*old, "--report", name, "--out-dir", str(Path(parsed.out_dir) / "rerun")]
    rc = again(new_argv)
    if rc != 0:
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


def measurement_flags(done, argv: list[str]) -> list[str]:
    """compare.py flags, put after the report's ``argv``, that measure as its ``meta.measurement`` records
    (``None``: a report from before 2026-12-05, measured by the defaults of then, the first 100,000 characters
    and no noisy copies, where ``argv`` does not give the flag, abbreviated or not).  --eval sets are in argv.

    Raises:
        ValueError: a field of the wrong type or range (the message names it).
    """
    if done is None:
        given = {a.split("=")[0] for a in argv if a.startswith("--")}
        flags = []
        for flag, then in (("--bits-chars", "100000"), ("--perturb", "none")):
            if not any(len(g) > 3 and flag.startswith(g) for g in given):
                flags += [flag, then]
        return flags
    if not isinstance(done, dict):
        raise ValueError(f"is not an object: {done!r}")
    flags = []
    for key, flag in (("bits_chars", "--bits-chars"), ("block_chars", "--block-chars")):
        v = done.get(key)
        if v is None and key == "block_chars":
            continue
        if not isinstance(v, int) or isinstance(v, bool) or v < (0 if key == "bits_chars" else 1):
            raise ValueError(f"{key} {v!r} is not a {'non-negative' if key == 'bits_chars' else 'positive'} integer")
        flags += [flag, str(v)]
    perturb = done.get("perturb")
    if perturb is not None and not isinstance(perturb, str):
        raise ValueError(f"perturb {perturb!r} is not a string of kinds")
    try:
        parse_kinds(perturb)
    except ValueError as e:
        raise ValueError(f"perturb: {e}") from None
    return flags + ["--perturb", perturb or "none"]


def duration_since(t0: float) -> str:
    from storygpt.compare.report_tables import duration

    return duration(time.perf_counter() - t0)
