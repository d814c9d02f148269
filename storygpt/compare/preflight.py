"""What compare.py decides and checks before any training: values that cannot work together, --eval names,
the pretrain.py flags forwarded from compare.py's own (:data:`FORWARDED`) and those refused inside
--pretrain-args (:data:`OWN_FLAGS`, checked with ``pretrain.py --dry-run``), the --sizes presets, and the
thread count of every run (:func:`chosen_threads`, timed once per call by :func:`probe_threads`, charged to
no budget).  Problems are :class:`~storygpt.compare.settings.CompareError`, one line each.
"""

from __future__ import annotations

import argparse
import json
import shlex
import time
from pathlib import Path

from storygpt.compare.report_tables import duration, number
from storygpt.compare.settings import (
    BUDGETS,
    DEFAULT_SHAPE,
    PRETRAIN_BATCH,
    CompareError,
    CompareOptions,
    Settings,
    budget_label,
    budget_of,
    corpus_name,
    estimate_flops_per_token,
    finished,
    given_shape,
    measured,
    read_json_or_none,
    train_chars_per_token,
    vocab_size_of,
)
from storygpt.compare.toolrun import HERE, python_tool
from storygpt.eval.perturb import parse_kinds
from storygpt.eval.sequential import FIRST_SEEDS
from storygpt.model.presets import PRESETS

#: compare.py flags passed on to every pretrain.py run as they are: option -> pretrain.py flag.  A new
#: pretrain.py setting that a comparison must vary goes here (and in compare.py's build_parser); it is part of the
#: settings that name the folder of runs, and it is recorded in each run's compare.json.
FORWARDED = {"recipe": "--recipe"}
#: pretrain.py's defaults that the pre-training guard needs (when --pretrain-args does not set them).
PRETRAIN_WARMUP = 20  # the warm-up of a recipe that names none (warmup_of reads the recipe's own)


def warmup_of(recipe_parts: dict) -> int:
    """The warm-up steps pretrain.py gives a run of this recipe (its ``warmup_steps`` part; gpt2 20, modern 5)."""
    return int(recipe_parts.get("warmup_steps", PRETRAIN_WARMUP))


def forwarded_flags(options: CompareOptions) -> list[str]:
    """The :data:`FORWARDED` flags compare.py was given, as pretrain.py flags."""
    out = []
    for attr, flag in FORWARDED.items():
        value = getattr(options, attr, None)
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


def check_options(options: CompareOptions) -> None:
    """Refuse values that cannot work together, naming them (before anything runs; single values: compare.py's
    RANGES)."""
    o = options
    if o.seed < 0 or o.seed + o.seeds - 1 > 2**63 - 1:
        raise CompareError(f"--seed {o.seed} with --seeds {o.seeds}: seeds must lie in 0 .. 2**63-1")
    if o.bits_chars and o.bits_chars < 2 * o.block_chars:
        raise CompareError(
            f"--bits-chars {o.bits_chars} holds fewer than 2 blocks of --block-chars {o.block_chars}: "
            "the bootstrap needs at least 2"
        )
    if o.train_file and not Path(o.train_file).is_file():
        raise CompareError(f"--train-file {o.train_file}: no such file")
    from storygpt.data.evalsets import read_eval_sets
    from storygpt.train import tracking

    try:  # every --eval file and --perturb kind is checked before anything runs
        parse_kinds(o.perturb)
        read_eval_sets(o.eval)
    except ValueError as e:
        raise CompareError(str(e)) from None
    try:  # --log: each run's pretrain.py would refuse it only after the data is prepared
        tracking.parse_kinds(o.log)
    except (ValueError, tracking.TrackingError) as e:
        raise CompareError(f"--log {o.log}: {e}" if isinstance(e, ValueError) else str(e)) from None


def check_eval_names(eval_sets, data_dir: Path, bits_chars: int) -> None:
    """Refuse an --eval NAME that bits.py would refuse after training: a set of the held-out text measured
    (its works' names, or doc-N), known once the data is prepared.  ``eval_sets``: the --eval NAME=PATH values."""
    if not eval_sets or not (data_dir / "valid.txt").is_file():
        return
    from storygpt.data.evalsets import read_eval_sets
    from storygpt.eval.bits import read_characters
    from storygpt.eval.measure import texts_of

    valid = data_dir / "valid.txt"
    held = {name for name, _ in texts_of(read_characters(valid, bits_chars or None), valid)[0].sets}
    for s in read_eval_sets(eval_sets):
        if s.name in held:
            raise CompareError(
                f"--eval {s.name}={s.path}: {s.name!r} is already a set of the held-out text "
                f"({', '.join(sorted(held))}); choose another NAME"
            )


def chosen_threads(
    settings: Settings, shape, vocab_sizes: list[int], *, threads: int, device: str | None, learned: bool
) -> int | None:
    """The thread count of every run: --threads (``threads``), or --pretrain-args' --threads, or timed once here."""
    if threads:
        return threads
    if "--threads" in " ".join(settings.pretrain_args):
        return None  # the user's pretrain.py flag is passed as it is
    from storygpt.runtime import usable_cores

    cores = usable_cores()
    if cores <= 1 or (device or "cpu") != "cpu" or shape is None:
        return 1 if cores <= 1 else None
    t0 = time.perf_counter()
    fastest, timings = probe_threads(
        shape, max(vocab_sizes or [256]), settings.batch_size or PRETRAIN_BATCH, [1, cores], not learned
    )
    print(
        "threads: timed "
        + ", ".join(f"{n} -> {t * 1000:.0f} ms" for n, t in timings.items())
        + f" per training step (once, {duration_since(t0)}, charged to no budget); every run uses {fastest}",
        flush=True,
    )
    return fastest


def parse_sizes(sizes_text: str | None, preset_name: str | None, explicit: dict) -> list[str]:
    """``--sizes tiny,small,base`` as a list of presets ([] when not given).

    Raises:
        CompareError: an unknown or repeated preset, or --sizes beside --preset or a shape flag (``explicit``:
            the shape flags given).
    """
    if sizes_text is None:
        return []
    if not sizes_text.strip():
        raise CompareError(f"--sizes {sizes_text!r}: no preset named; known: {', '.join(PRESETS)}")
    sizes = [s.strip() for s in sizes_text.split(",")]
    for i, s in enumerate(sizes):
        if s not in PRESETS:
            raise CompareError(f"--sizes: unknown preset {s!r}; known: {', '.join(PRESETS)}")
        if s in sizes[:i]:
            raise CompareError(f"--sizes: {s} is given twice")
    given = ["--preset"] * (preset_name is not None)
    given += [f"--{k.replace('_', '-')}" for k in DEFAULT_SHAPE if explicit.get(k) is not None]
    if given:
        raise CompareError(f"--sizes names the model shapes: drop {' and '.join(given)}")
    return sizes


def report_name(options: CompareOptions) -> str:
    """The report's name when --report is not given: ``CORPUS-BUDGET[-BUDGET...][-sizes-SIZE...][-[auto]Nseeds]``,
    e.g. ``shakespeare-flops1e12-3e12-sizes-tiny-small-2seeds``: the budgets ascending (:func:`budget_of`), the
    sizes in :data:`PRESETS` order, so a sweep typed in another order names the same report.

    Raises:
        CompareError: a bad budget or --sizes (:func:`budget_of`, :func:`parse_sizes`).
    """
    key, values = budget_of(options)
    sizes = parse_sizes(options.sizes, options.preset, given_shape(options))
    name = f"{corpus_name(options.name, options.train_file, options.corpus)}-{budget_label(key, values[0])}"
    name += "".join(f"-{number(v)}" for v in values[1:])
    if sizes:
        name += "-sizes-" + "-".join(s for s in PRESETS if s in sizes)
    if options.seeds > 1:
        name += f"-{'auto' if options.seeds_auto else ''}{options.seeds}seeds"
    return name


def probe_threads(
    shape: dict, vocab_size: int, batch: int, candidates: list[int], rope: bool = True
) -> tuple[int, dict]:
    """``(fastest thread count, {threads: seconds per forward+backward})`` on the CPU: the comparison's model
    shape with random weights, one forward and backward pass of one batch per thread count after a warm-up
    pass (as pretrain.py's own start-up probe does per run, via runtime.fastest_threads).

    Args:
        shape: n_layer, n_head, n_embd, block_size of the model.
        vocab_size: the vocabulary of the output layer (the largest of the comparison).
        batch: windows per step.
        candidates: thread counts to time (e.g. ``[1, 2]``).
    """
    import torch

    from storygpt.model import GPT, GPTConfig
    from storygpt.runtime import fastest_threads

    before = torch.get_num_threads()
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size, **shape, position="rope" if rope else "learned"))
    x = torch.randint(0, vocab_size, (batch, shape["block_size"]))

    def step() -> None:
        _, loss = model(x, x)
        loss.backward()

    try:
        return fastest_threads(step, candidates)
    finally:
        torch.set_num_threads(before)


def duration_since(t0: float) -> str:
    from storygpt.compare.report_tables import duration

    return duration(time.perf_counter() - t0)


# -------------------- compare.py --dry-run --------------------
# ``compare.py --dry-run``: the runs a comparison would train, their FLOPs and time, and what is reused; nothing
# is written, nothing trained.
#
# Called by :func:`storygpt.compare.run.compare` after every check and before anything is written, with the
# runs of the comparison (every SPEC x budget x seed; with ``--seeds auto:MAX`` the largest plan, MAX seeds, of
# which round 1 is the smallest).  Per run: ``reused`` (finished and measured with these settings: nothing to
# do), ``measure`` (finished; only bits.py again), ``resume`` (a checkpoint: the rest of its budget) or
# ``train``.  FLOPs: the budget itself for ``--budget-flops``; for tokens and characters budgets the tokens
# times docs/training.md's FLOPs per token (:func:`storygpt.compare.settings.estimate_flops_per_token`, the
# characters through data.py's characters per token when its files are there); none for ``--minutes``.
# Time: per tokenizer, the tokens/s of its finished runs in the folder of runs (summary.json's tokens over
# train_time), else one forward and backward pass of one batch timed here
# (:func:`storygpt.compare.preflight.probe_threads`, CPU only), times the run's tokens; evaluations, data.py
# and bits.py are not counted, so it is a lower bound.

#: Vocabulary sizes of SPECs that do not name one (for the FLOPs estimate before data.py has run).
KNOWN_VOCAB = {"byte": 258}


def state_of(run, settings) -> str:
    """``reused``, ``measure``, ``resume`` or ``train`` (see the module's docstring)."""
    if finished(run):
        return "reused" if measured(run, settings) else "measure"
    return "resume" if (run.folder / "ckpt.pt").is_file() else "train"


def vocab_of(run, data_dir: Path) -> int | None:
    """The run's vocabulary: data.py's tokenizer file when it is there, else the SPEC's size, else None."""
    v = vocab_size_of(data_dir, run.slug) if (data_dir / f"tokenizer-{run.slug}.json").is_file() else None
    if v:
        return v
    asked = getattr(run.spec, "vocab_size", None)
    return asked if isinstance(asked, int) else KNOWN_VOCAB.get(getattr(run.spec, "kind", None))


def done_flops(run) -> float:
    """Training FLOPs an interrupted run has done (its metrics.jsonl's last row; 0 when none)."""
    last = 0.0
    try:
        for line in (run.folder / "metrics.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            last = float(row.get("flops", last))
    except (OSError, ValueError, AttributeError):
        return 0.0
    return last


def run_tokens_flops(run, shape: dict | None, vocab: int | None, data_dir: Path) -> tuple[float | None, float | None]:
    """(training tokens, training FLOPs) of the run's whole budget (None where they cannot be estimated)."""
    key, value = run.budget
    fpt = estimate_flops_per_token(shape, vocab) if shape and vocab else None
    tokens = None
    if key == "budget_tokens":
        tokens = value
    elif key == "budget_chars":
        cpt = train_chars_per_token(data_dir, run.slug)
        tokens = value / cpt if cpt else None
    elif key == "budget_flops":
        return (value / fpt if fpt else None), value
    return tokens, (tokens * fpt if tokens is not None and fpt else None)


def known_speed(run, runs_dir: Path) -> float | None:
    """Tokens/s of the finished runs of the same SPEC in the folder of runs (mean of tokens / train_time)."""
    speeds = []
    for summary in sorted(runs_dir.glob("*/summary.json")) if runs_dir.is_dir() else []:
        s = read_json_or_none(summary) or {}
        t, n = s.get("train_time") or s.get("elapsed"), s.get("tokens")
        if s.get("spec") == str(run.spec) and s.get("stop_reason") and t and n:
            speeds.append(n / t)
    return sum(speeds) / len(speeds) if speeds else None


def probed_speed(shape: dict, vocab: int, batch: int, threads: int, learned: bool) -> tuple[float, str]:
    """Tokens/s of one timed forward and backward pass (:func:`probe_threads`) and the thread count used."""
    from storygpt.runtime import usable_cores

    candidates = [threads] if threads else sorted({1, usable_cores()})
    fastest, timings = probe_threads(shape, vocab, batch, candidates, not learned)
    return batch * shape["block_size"] / timings[fastest], f"{fastest} thread{'s' if fastest != 1 else ''}"


def decay_part(run, tokens: float, tokens_per_step: int, decay_fraction: float) -> float:
    """The share of a branch's steps after its decay start (what it trains when it branches from its trunk)."""
    from storygpt.train.branch import decay_start, steps_for

    per = run.budget[1] * tokens_per_step / tokens  # the budget's units per step
    steps = steps_for(run.budget[1], per)
    return (steps - decay_start(run.budget[1], per, decay_fraction)) / steps


def show_plan(runs: list, options, settings, shape_of_run, report_dir: Path, data_dir: Path, trunks=None) -> int:
    """Print the plan of ``runs`` (compare.py --dry-run) and return 0; ``shape_of_run(run)``: its model shape;
    ``trunks``: storygpt.train.branch.plan's (a branch trains its decay only: plan ``branch``)."""
    batch = settings.batch_size or pretrain_setting(settings.pretrain_args, "--batch-size", PRETRAIN_BATCH)
    decay = pretrain_setting(
        settings.pretrain_args, "--decay-fraction", settings.recipe_parts.get("decay_fraction", 0.6)
    )
    branches = {b for bs in (trunks or {}).values() for b in bs}
    speeds: dict[str, tuple[float | None, str]] = {}
    rows = []
    for k, run in enumerate(runs):
        shape, vocab = shape_of_run(run), vocab_of(run, data_dir)
        state = state_of(run, settings)
        tokens, flops = run_tokens_flops(run, shape, vocab, data_dir)
        todo_flops = 0.0 if state in ("reused", "measure") else flops
        if state == "resume" and flops is not None:
            todo_flops = max(0.0, flops - done_flops(run))
        if k in branches and state == "train" and tokens and flops and shape:
            state, todo_flops = "branch", flops * decay_part(run, tokens, batch * shape["block_size"], decay)
        name = f"{run.spec}@{run.size}" if run.size else str(run.spec)  # one speed per tokenizer and shape
        if name not in speeds:
            known = None if run.size else known_speed(run, run.folder.parent)
            if run.budget[0] == "minutes":
                speeds[name] = (None, "its --minutes budget")
            elif known:
                speeds[name] = (known, "its finished runs' tokens/s")
            elif shape and vocab and (options.device or "cpu") == "cpu":
                tps, threads = probed_speed(shape, vocab, batch, options.threads, options.learned)
                speeds[name] = (tps, f"one training step timed here, {threads}")
            else:
                speeds[name] = (None, "no estimate (no finished run, not on the CPU or no shape)")
        tps, how = speeds[name]
        if run.budget[0] == "minutes":
            seconds = 0.0 if state in ("reused", "measure") else run.budget[1] * 60
        elif tps and tokens is not None and flops and todo_flops is not None:
            seconds = tokens / tps * (todo_flops / flops)
        else:
            seconds = None
        rows.append((run, state, flops, todo_flops, seconds))
    unit = BUDGETS[runs[0].budget[0]][2]
    print(
        f"compare.py --dry-run: {len({str(r.spec) for r in runs})} tokenizers on {settings.corpus}, "
        f"{', '.join(number(v) for v in sorted({r.budget[1] for r in runs}))} {unit} each -> {report_dir} (nothing is written)"
    )
    print(f"{'run':<34} {'round':>5}  {'plan':<7} {'FLOPs':>9} {'to train':>9} {'time':>8}")
    for run, state, flops, todo, seconds in rows:
        rnd = (
            run.round
            if not options.seeds_auto or options.seed_plan
            else (1 if run.seed - options.seed < FIRST_SEEDS else "2+")
        )
        if options.halving:  # the halving round that first trains it; the top budget's trunk trains in each
            values = sorted({r.budget[1] for r in runs})
            at = values.index(run.budget[1]) + 1
            rnd = f"1-{at}" if at == len(values) else at
        print(
            f"{run.label:<34} {rnd!s:>5}  {state:<7} {_sci(flops):>9} {_sci(todo):>9} "
            f"{duration(seconds) if seconds is not None else '?':>8}"
        )
    print(
        "time estimated from: "
        + "; ".join(f"{k}: {how}" + (f" ({v:,.0f} tokens/s)" if v else "") for k, (v, how) in speeds.items())
    )
    if options.seeds_auto and options.seed_plan is None:
        first = [r for r in rows if r[0].seed - options.seed < FIRST_SEEDS]
        print(totals(f"smallest plan (every pair decided after round 1, {FIRST_SEEDS} seeds each)", first))
        print(totals(f"largest plan (--seeds auto:{options.seeds}: {options.seeds} seeds each)", rows))
    else:
        print(totals("total", rows))
    shared = [r for r in rows if r[1] == "branch" and r[2]]
    if shared:
        saved = sum(r[2] - r[3] for r in shared)
        print(
            f"shared (wsd): {len(shared)} of {len(rows)} runs branch from their trunk's decay start, "
            f"{_sci(saved)} training FLOPs their trunks train for them"
        )
    print("not counted: evaluations during training, data.py and bits.py's measuring (the time is a lower bound)")
    return 0


def totals(what: str, rows: list) -> str:
    """One line: the runs, how many reused, the FLOPs to train and the time of ``rows``."""
    todo = [r for r in rows if r[1] not in ("reused", "measure")]
    reused = sum(1 for r in rows if r[1] == "reused")
    flops = [r[3] for r in todo]
    seconds = [r[4] for r in rows]
    time = duration(sum(seconds)) if all(s is not None for s in seconds) else "?"
    total = _sci(sum(flops)) if all(f is not None for f in flops) else "?"
    return (
        f"{what}: {len(rows)} runs, {len(todo)} to train ({total} training FLOPs), {reused} reused, "
        f"{len(rows) - len(todo) - reused} only measured again; about {time} of training"
    )


def _sci(v: float | None) -> str:
    return "?" if v is None else f"{v:.3g}"
