"""compare.py's run order: the tools as subprocesses, for every tokenizer SPEC, budget and seed.

Every check first (the options, SPECs, run folders: storygpt.compare.preflight), then ``data.py`` for every tokenizer (skipped when its
token files are there and were made with these options), the budget warnings and one thread probe, then
``pretrain.py`` (continued with ``--resume`` when a checkpoint is there, skipped when the run has finished)
and ``bits.py --json --block-chars`` per run, then the report (storygpt.compare.report).  Tools run through
:func:`storygpt.compare.toolrun.run_tool`, which tests replace.  :func:`compare` is compare.py's command (its
--rerun is compare.py's own); it takes :class:`~storygpt.compare.settings.CompareOptions`, never the command line.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from storygpt.atomic import write_text
from storygpt.compare import executors, toolrun
from storygpt.compare.analysis import MIN_EVALS
from storygpt.compare.executors import cluster_engine
from storygpt.compare.preflight import (
    check_eval_names,
    check_options,
    check_pretrain_args,
    chosen_threads,
    duration_since,
    forwarded_flags,
    parse_sizes,
    pretrain_setting,
    report_name,
    warmup_of,
)
from storygpt.compare.settings import (
    BUDGETS,
    DEFAULT_SHAPE,
    DEFAULT_SPECS,
    PRETRAIN_BATCH,
    CompareError,
    CompareOptions,
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
    given_shape,
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
from storygpt.compare.toolrun import HERE, python_tool
from storygpt.eval.perturb import parse_kinds
from storygpt.model.presets import preset
from storygpt.model.recipes import RECIPES
from storygpt.train import branch

PROG = "compare.py"


class ToolKilled(CompareError):
    """A tool stopped from outside (a signal, a kill): the run is kept and may be continued with --resume."""


def tool_failed(tool: str, run: Run, rc: int) -> CompareError:
    why = toolrun.last_line(run.log)
    kind = ToolKilled if executors.killed(rc) else CompareError
    return kind(f"{tool} failed for {run.spec} (exit {rc}): {why} (log: {run.log})")


def prepare_data(run: Run, options: CompareOptions, settings: Settings, data_dir: Path) -> bool:
    """data.py for this tokenizer unless its files are there, made with these options; True when it ran."""
    if all(p.is_file() for p in token_files(data_dir, run.slug)) and (data_dir / "valid.txt").is_file():
        why = stale_token_files(data_dir, run.slug, settings.data_args)
        if why is None:
            return False
        print(f"{run.spec}: the token files in {data_dir} were made with {why}: making them again", flush=True)
    o = options
    cmd = python_tool("data.py") + ["--tokenizer", str(run.spec), "--out", o.data_root, "--quiet"]
    cmd += ["--train-file", o.train_file] if o.train_file else ["--corpus", o.corpus]
    for flag, value in (
        ("--valid-file", o.valid_file),
        ("--valid-fraction", o.valid_fraction),
        ("--sdist", o.sdist),
        ("--name", o.name),
    ):
        if value is not None:
            cmd += [flag, str(value)]
    cmd += settings.data_args
    rc = toolrun.run_tool(cmd, run.log, o.verbose)
    if rc != 0:
        raise tool_failed("data.py", run, rc)
    missing = [str(p) for p in token_files(data_dir, run.slug) if not p.is_file()]
    if missing:
        raise CompareError(f"data.py did not write {', '.join(missing)} for {run.spec} (log: {run.log})")
    return True


def pretrain_command(
    run: Run,
    options: CompareOptions,
    settings: Settings,
    data_dir: Path,
    out_root: Path,
    shape: dict | None,
    threads,
    branches: tuple = (),
    eval_budget: tuple | None = None,
) -> list[str]:
    """The pretrain.py command of a run (``--resume`` when its checkpoint is there, else ``--force``); a trunk's
    ``branches`` (runs) as ``--branch`` (storygpt/train/branch.py), evaluated as at ``eval_budget``."""
    key_name, value = run.budget
    cmd = python_tool("pretrain.py") + [
        "--data",
        str(data_dir),
        "--tokenizer",
        str(run.spec),
        "--out-dir",
        str(out_root),
        "--run-name",
        run.folder.name,
        BUDGETS[key_name][0],
        f"{value:g}",
        "--seed",
        str(run.seed),
        "--no-progress",
    ]
    if settings.position == "rope":
        cmd.append("--rope")
    cmd += ["--preset", run.size] if run.size else shape_flags(options.preset, given_shape(options))
    if settings.batch_size is not None:
        cmd += ["--batch-size", str(settings.batch_size)]
    cpt = train_chars_per_token(data_dir, run.slug)
    interval = eval_interval_for(
        eval_budget or run.budget,
        shape,
        vocab_size_of(data_dir, run.slug),
        cpt,
        given=options.eval_interval,
        batch_size=options.batch_size,
    )
    if interval is not None:
        cmd += ["--eval-interval", str(interval)]
    if options.device:
        cmd += ["--device", options.device]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    cmd += settings.forwarded + settings.pretrain_args
    if options.log:
        cmd += ["--log", options.log]  # tracking: not a setting of the runs (the folder of runs does not change)
    cmd += [f"--branch={b.folder.name}={b.budget[1]:g}" for b in branches] + ["--pause-after-branches"] * run.pause
    cmd.append("--resume" if (run.folder / "ckpt.pt").is_file() else "--force")
    return cmd


def train(
    run: Run,
    options: CompareOptions,
    settings: Settings,
    data_dir: Path,
    out_root: Path,
    shape: dict | None,
    threads,
    branches: tuple = (),
    eval_budget: tuple | None = None,
) -> str:
    """pretrain.py for this run: fresh, or --resume from its checkpoint; returns 'trained' or 'resumed'.

    Its progress follows metrics.jsonl: a bar on a terminal, a plain line every few seconds otherwise
    (none with --verbose, where pretrain.py's own output shows, or with ``options.no_bars``)."""
    key_name, value = run.budget
    _, key, unit = BUDGETS[key_name]
    resume = (run.folder / "ckpt.pt").is_file()
    cmd = pretrain_command(run, options, settings, data_dir, out_root, shape, threads, branches, eval_budget)
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
    follow = toolrun.MetricsTail(run.folder / "metrics.jsonl", key)
    bar = toolrun.progress_for(
        f"  {run.label}",
        value * (60.0 if key_name == "minutes" else 1.0),
        follow,
        "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} " + unit + " [{elapsed}<{remaining}]",
        quiet=options.verbose or options.no_bars,
        unit_seconds=key == "elapsed",
    )
    cpu: list[float] = []  # the tool's own CPU seconds (runs at once: this process has several children)
    try:
        rc = toolrun.run_tool(cmd, run.log, options.verbose, follow, bar, cpu=cpu)
    finally:
        bar.close()
    if rc != 0:
        raise tool_failed("pretrain.py", run, rc)
    if not (finished(run) or run.pause):  # a --halving trunk stops at its branches
        raise CompareError(
            f"pretrain.py ended for {run.spec} but {run.folder / 'summary.json'} does not say its budget is spent "
            f"(log: {run.log})"
        )
    record["provenance"] = {
        **toolrun.environment(HERE),
        "cpu_time": (record.get("provenance") or {}).get("cpu_time", 0.0) + sum(cpu),
        "token_files": toolrun.token_fingerprints(token_files(data_dir, run.slug)),
        "command": ["pretrain.py", *cmd[2:]],
    }
    write_text(run.folder / "compare.json", json.dumps(record, indent=2) + "\n")
    return "resumed" if resume else "trained"


def measure(run: Run, options: CompareOptions, settings: Settings, threads) -> None:
    """bits.py on the final checkpoint, writing run/bits.json (with the held-out block losses)."""
    cmd = python_tool("bits.py") + [
        str(run.folder / "ckpt.pt"),
        "--chars",
        str(settings.bits_chars),
        "--block-chars",
        str(options.block_chars),
        "--json",
        str(run.folder / "bits.json"),
        "--no-progress",
    ]
    if options.device:
        cmd += ["--device", options.device]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    # issue 33: per-character losses for the attribution, vocabulary health, named sets, robustness
    cmd += ["--save-losses", str(run.folder / "losses.npz"), "--vocab-health"]
    cmd += [f"--eval={e}" for e in settings.eval] + ([f"--perturb={settings.perturb}"] if settings.perturb else [])
    rc = toolrun.run_tool(cmd, run.log, options.verbose)
    if rc != 0:
        raise tool_failed("bits.py", run, rc)
    record = read_json_or_none(run.folder / "compare.json") or {"spec": str(run.spec), "settings": asdict(settings)}
    record["measured_chars"] = settings.bits_chars
    record["block_chars"] = options.block_chars
    record["measured_perturb"], record["measured_eval"] = settings.perturb, settings.eval
    write_text(run.folder / "compare.json", json.dumps(record, indent=2) + "\n")


def settled(run: Run, settings: Settings, runs: list[Run], trunks: dict) -> bool:
    """Nothing left to do: finished and measured, or a paused --halving trunk whose branches are all written."""
    if run.pause:
        return all(branch.started(runs[b].folder) for b in trunks.get(runs.index(run), ()))
    return finished(run) and measured(run, settings)


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
    options: CompareOptions
    settings: Settings
    data_dir: Path
    out_root: Path
    shape: dict | None
    shared: dict = field(default_factory=dict)  # train()'s branches and eval_budget (storygpt.train.branch)

    def __call__(self, slot: executors.Slot):
        # several runs at once: status lines, no progress bars; the slot's device, when it has one
        options = replace(self.options, no_bars=True, device=slot.device or self.options.device)
        t0, did = time.perf_counter(), []
        try:
            if not finished(self.run):
                how = train(
                    self.run,
                    options,
                    self.settings,
                    self.data_dir,
                    self.out_root,
                    self.shape,
                    slot.threads,
                    **self.shared,
                )
                did.append(f"{how} {duration_since(t0)}")
            t1 = time.perf_counter()
            if not self.run.pause:
                measure(self.run, options, self.settings, slot.threads)
                did.append(f"measured {duration_since(t1)}")
        except ToolKilled as e:
            raise executors.RunKilled(str(e)) from None
        except CompareError as e:
            raise executors.RunFailed(str(e)) from None
        return ", ".join(did), time.perf_counter() - t0


def run_at_once(engine, runs, todo, options, settings, data_dir, out_root, shape, trunks=None, pending=()) -> None:
    """Train and measure the runs of ``todo`` on ``engine`` (several at once); a status line as each ends (and
    "done before" for the runs neither in ``todo`` nor ``pending``); ``trunks``: storygpt.train.branch.plan's.

    Raises:
        RunsFailed: some runs failed (each named, with its log, as it ended); the others finished.
    """
    for i, run in enumerate(runs, 1):
        if run not in todo and run not in pending:
            print(status_line(i, len(runs), run, "done before"), flush=True)
    absolute = engine.name != "local"  # Ray workers and Slurm jobs start elsewhere: no relative paths
    jobs, position = [], {}
    for run in todo:
        r = replace(run, folder=run.folder.resolve(), log=run.log.resolve()) if absolute else run
        d, o = (data_dir.resolve(), out_root.resolve()) if absolute else (data_dir, out_root)
        shared = branch.shared_args(runs, trunks or {}, runs.index(run))
        jobs.append(executors.Job(run.label, r.log, RunJob(r, options, settings, d, o, shape_for(run, shape), shared)))
        position[id(jobs[-1])] = (runs.index(run) + 1, run)
    print(f"training {len(todo)} run{'s' if len(todo) != 1 else ''} ({engine.name})", flush=True)

    def done(outcome) -> None:
        what, seconds = outcome.result
        i, run = position[id(outcome.job)]
        print(status_line(i, len(runs), run, what, seconds), flush=True)

    outcomes = executors.execute(engine, jobs, options.retries, say=lambda line: print(line, flush=True), done=done)
    failed = [o for o in outcomes if not o.ok]
    if failed:
        names = "; ".join(f"{o.job.label}: {o.message}" for o in failed)
        raise RunsFailed(
            f"error: {len(failed)} of {len(jobs)} runs failed ({names}); the others finished and are kept: "
            "fix the cause and run the same command again (no report until every run has finished)"
        )


def halving_runs(runs: list, plan, branching: bool) -> list:
    """The runs of ``runs`` (the grid) that ``plan`` trains: each SPEC's runs at its first N budgets, and (with
    ``branching``) the largest budget's run of a SPEC that stops below it as a paused trunk (``pause``).

    Raises:
        CompareError: a plan that names a SPEC the comparison does not have, or more budgets than it has.
    """
    wanted, values = dict(plan), sorted({r.budget[1] for r in runs})
    have = {str(r.spec) for r in runs}
    for spec, n in wanted.items():
        if spec not in have or n > len(values):
            raise CompareError(f"the halving plan names {spec} at {n} budgets: no such runs in this comparison")
    out = []
    for r in runs:
        n = wanted.get(str(r.spec), 0)
        if values.index(r.budget[1]) < n:
            out.append(r)
        elif branching and n and r.budget[1] == values[-1]:
            out.append(replace(r, pause=True))
    return out


def list_runs(specs, grid: tuple, position: str, runs_dir: Path, logs: Path, one_log_per_spec: bool) -> list[Run]:
    """Every run of the comparison, in order: each SPEC at each (size, budget, seed) of ``grid``, its folder in
    ``runs_dir`` and its log in ``logs`` (one per SPEC when runs go one by one, else one per run)."""
    sizes, budgets, seeds = grid
    runs = []
    for spec in specs:
        try:
            slug = spec.slug
        except (FileNotFoundError, ValueError) as e:
            raise CompareError(str(e)) from None
        for size in sizes:
            for budget in budgets:
                for seed in seeds:
                    sized = f"{size}-" if size else ""
                    name = f"{position}-{sized}{slug}-{budget_label(*budget)}-s{seed}"
                    log = logs / (f"{slug}.log" if one_log_per_spec else f"{name}.log")
                    runs.append(Run(spec, slug, runs_dir / name, log, budget, seed, size))
    return runs


def compare(options: CompareOptions, argv: list[str]) -> int:
    """Run the comparison ``options`` describe (``argv``: compare.py's arguments, recorded for --rerun):
    every check, then data, the thread probe, training and measuring, then the report; returns the exit
    status (2 after a one-line error, 130 after Ctrl-C)."""
    t_start = time.perf_counter()
    try:
        check_options(options)
        texts = options.specs or list(DEFAULT_SPECS)
        specs = parse_specs(texts)
        budget_key, budget_values = budget_of(options)
        try:
            pretrain_args, data_args = shlex.split(options.pretrain_args), shlex.split(options.data_args)
        except ValueError as e:
            raise CompareError(f"--pretrain-args/--data-args: {e}") from None
        check_pretrain_args(pretrain_args, forwarded_flags(options))
        corpus = corpus_name(options.name, options.train_file, options.corpus)
        report = options.report or report_name(options)
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", report) or report in (".", ".."):
            raise CompareError(f"--report {report!r}: use letters, digits, '.', '_' and '-' only (a folder name)")
        shape = shape_of(options.preset, given_shape(options))
        sizes = parse_sizes(options.sizes, options.preset, given_shape(options))
        data_dir = Path(options.data_root) / corpus
        settings = Settings(
            corpus=corpus,
            data_dir=str(data_dir.resolve()),
            position="learned" if options.learned else "rope",
            preset=options.preset,
            shape=shape_flags(options.preset, given_shape(options)),
            batch_size=options.batch_size,
            bits_chars=options.bits_chars,
            pretrain_args=pretrain_args,
            data_args=data_args,
            forwarded=forwarded_flags(options),
            block_chars=options.block_chars,
            recipe_parts=dict(RECIPES.get(options.recipe, {})),
            perturb=",".join(parse_kinds(options.perturb)) or None,
            eval=list(options.eval or []),
        )
        out_root = Path(options.out_dir) / settings.key()  # pretrain.py puts a run in OUT_DIR/CORPUS/RUN_NAME
        report_dir = Path(options.reports_dir) / report
        seeds = [options.seed + i for i in range(options.seeds)]
        one_by_one = options.executor == "local" and options.jobs == 1  # else each run logs to its own file
        grid = (sizes or [None], [(budget_key, v) for v in budget_values], seeds)
        runs = list_runs(specs, grid, settings.position, out_root / corpus, report_dir / "logs", one_by_one)
        if options.seed_plan is not None:  # --seeds auto's round, or --rerun of one: only the runs it names
            from storygpt.compare.seeds_auto import planned_runs

            runs = planned_runs(runs, options.seed_plan)
            seeds = sorted({r.seed for r in runs})
        check_compared(texts, specs, budget_values, sizes)
        for run in runs:
            check_run_folder(run, settings)
        schedule = pretrain_setting(pretrain_args, "--schedule", settings.recipe_parts.get("schedule", "cosine"))
        if options.halving_plan is not None:  # --halving's round (storygpt/halving): each SPEC to its last budget
            runs = halving_runs(runs, options.halving_plan, branching=schedule == "wsd" and budget_key != "minutes")
        trunks, unshared = branch.plan(runs, budget_key, schedule)  # issue 45: budgets that branch
        if options.dry_run:  # the plan, its FLOPs and time; nothing written
            from storygpt.compare.preflight import show_plan

            return show_plan(runs, options, settings, lambda r: shape_for(r, shape), report_dir, data_dir, trunks)

        unit = BUDGETS[budget_key][2]
        print(
            f"compare: {len(specs)} tokenizer{'s' if len(specs) != 1 else ''} ({' '.join(map(str, specs))}) on {corpus}, "
            f"{', '.join(number(v) for v in budget_values)} {unit} each, "
            + (
                f"round {max(r.round for r in runs)} of --seeds auto:{options.seeds}"
                if options.seed_plan
                else f"{options.seeds} seed{'s' if options.seeds != 1 else ''}"
            )
            + f": {len(runs)} runs -> {report_dir}",
            flush=True,
        )
        todo = [r for r in runs if not settled(r, settings, runs, trunks)]
        engine = cluster_engine(options, report_dir) if todo else None  # a bad address or setting: before any work
        # data first for every tokenizer, then the budget warnings, then one thread probe: all before training
        for spec in dict.fromkeys(r.spec for r in todo if not finished(r)):
            first = next(r for r in todo if r.spec == spec)
            t1 = time.perf_counter()
            if prepare_data(first, options, settings, data_dir):
                print(f"data for {spec}: {duration_since(t1)}", flush=True)
        check_eval_names(options.eval, data_dir, settings.bits_chars)
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
            threads = chosen_threads(
                settings,
                shape_for(todo[-1], shape),
                vocabs,
                threads=options.threads,
                device=options.device,
                learned=options.learned,
            )
        elif todo:
            threads = options.threads or None
        if engine is None and todo:
            slots, lines = executors.local_slots(options.jobs, len(todo), options.device, threads)
            for line in lines:
                print(line, flush=True)
            if len(slots) > 1:
                engine = executors.LocalEngine(slots)
        if engine is not None:  # the trunks first, then their branches (written by the trunks)
            first = [r for k, r in enumerate(runs) if k in trunks and r in todo]
            parts = [p for p in ([first, [r for r in todo if r not in first]] if first else [todo]) if p]
            for n, part in enumerate(parts):  # an engine ends with its jobs: the branches get a new one
                if n:
                    engine = (
                        executors.LocalEngine(slots) if engine.name == "local" else cluster_engine(options, report_dir)
                    )
                run_at_once(engine, runs, part, options, settings, data_dir, out_root, shape, trunks, todo)

        for i, run in sorted(enumerate(runs, 1), key=lambda p: p[0] - 1 not in trunks):  # trunks first
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
                if prepare_data(run, options, settings, data_dir):
                    did.append(f"data {duration_since(t1)}")
                t1 = time.perf_counter()
                shared = branch.shared_args(runs, trunks, i - 1)
                how = train(run, options, settings, data_dir, out_root, shape_for(run, shape), threads, **shared)
                did.append(f"{how} {duration_since(t1)}")
            t1 = time.perf_counter()
            if not run.pause:
                measure(run, options, settings, threads)
                did.append(f"measured {duration_since(t1)}")
            print(status_line(i, len(runs), run, ", ".join(did), time.perf_counter() - t0), flush=True)

        reported = [r for r in runs if not r.pause]  # a paused --halving trunk has no result yet
        results, curves = collect(reported)
        for run, r in zip(reported, results):
            r.seed_round = run.round
            r.branch_of, r.branched_at_step = branch.branched_from(run.folder)
            if run.size:  # each (tokenizer, size) is a row of the report; the frontier section fits across sizes
                r.spec, r.size = f"{r.spec}@{run.size}", run.size
        meta = report_meta(
            options, settings, report, corpus, data_dir, shape, results, argv, seeds, budget_values, HERE
        )
        meta.notes += [n.removeprefix("warning: ") for n in notes]
        if trunks or unshared:
            meta.notes.append(unshared or branch.shared_note([r.folder for r in runs], sum(map(len, trunks.values()))))
        if sizes:
            meta.model = f"sizes {', '.join(sizes)} (pretrain.py presets; SPEC@SIZE in the tables)"
        from storygpt.compare import frontier
        from storygpt.compare.report import verdict_sections, write_report
        from storygpt.compare.report_tables import markdown_table

        try:
            write_report(report_dir, results, meta, curves)
            from storygpt.compare.plots import plot_bits_per_byte
            from storygpt.eval.where import write_sections

            write_sections(report_dir, results, Path(meta.data_dir) if meta.data_dir else None)
            if options.bits_per_byte:
                plot_bits_per_byte(report_dir, results, title=f"{meta.corpus}: bits per byte")
            fronts = frontier.write(report_dir, results, lambda b: budget_label(budget_key, b)) if sizes else []
        except ValueError as e:
            raise CompareError(f"report {report_dir}: {e}") from None
        except OSError as e:  # a read-only or full reports folder: the runs are kept, the report can be made again
            why = e.strerror or str(e)
            raise CompareError(
                f"cannot write the report in {report_dir}: {why}; the runs are finished, run again"
            ) from None
        if options.task_names:  # compare.py --tasks: a section of its own (storygpt/tasks/)
            from storygpt.tasks import TaskError
            from storygpt.tasks.report_section import add_task_section

            try:
                add_task_section(
                    runs,
                    results,
                    report_dir,
                    data_dir,
                    options.device,
                    threads,
                    names=options.task_names,
                    items=options.task_items,
                    task_data=options.task_data,
                )
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
        print("\nCompute-optimal frontier (isoFLOP):")
        for bf in fronts:
            print(frontier.verdict_line(bf, lambda b: budget_label(budget_key, b)).replace("**", ""))
    tasks = " (with its tasks section), tasks.json" if options.task_names else ""
    print(f"\nwrote {report_dir}/report.md{tasks}, results.csv, results.json and plots ({duration_since(t_start)})")
    return 0
