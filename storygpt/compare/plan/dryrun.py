"""``compare.py --dry-run``: the runs a comparison would train, their FLOPs and time, and what is reused; nothing
is written, nothing trained.

Called by :func:`storygpt.compare.run.compare` after every check and before anything is written, with the
runs of the comparison (every SPEC x budget x seed; with ``--seeds auto:MAX`` the largest plan, MAX seeds, of
which round 1 is the smallest).  Per run: ``reused`` (finished and measured with these settings: nothing to
do), ``measure`` (finished; only bits.py again), ``resume`` (a checkpoint: the rest of its budget) or
``train``.  FLOPs: the budget itself for ``--budget-flops``; for tokens and characters budgets the tokens
times docs/training.md's FLOPs per token (:func:`storygpt.compare.settings.estimate_flops_per_token`, the
characters through data.py's characters per token when its files are there); none for ``--minutes``.
Time: per tokenizer, the tokens/s of its finished runs in the folder of runs (summary.json's tokens over
train_time), else one forward and backward pass of one batch timed here
(:func:`storygpt.compare.preflight.probe_threads`, CPU only), times the run's tokens; evaluations, data.py
and bits.py are not counted, so it is a lower bound.
"""

from __future__ import annotations

import json
from pathlib import Path

from storygpt.compare.preflight import pretrain_setting, probe_threads
from storygpt.compare.report_tables import duration, number
from storygpt.compare.settings import (
    BUDGETS,
    PRETRAIN_BATCH,
    estimate_flops_per_token,
    finished,
    measured,
    read_json_or_none,
    train_chars_per_token,
    vocab_size_of,
)
from storygpt.eval.sequential import FIRST_SEEDS

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


def show_plan(runs: list, options, settings, shape_of_run, report_dir: Path, data_dir: Path) -> int:
    """Print the plan of ``runs`` (compare.py --dry-run) and return 0; ``shape_of_run(run)``: its model shape."""
    batch = settings.batch_size or pretrain_setting(settings.pretrain_args, "--batch-size", PRETRAIN_BATCH)
    speeds: dict[str, tuple[float | None, str]] = {}
    rows = []
    for run in runs:
        shape, vocab = shape_of_run(run), vocab_of(run, data_dir)
        state = state_of(run, settings)
        tokens, flops = run_tokens_flops(run, shape, vocab, data_dir)
        todo_flops = 0.0 if state in ("reused", "measure") else flops
        if state == "resume" and flops is not None:
            todo_flops = max(0.0, flops - done_flops(run))
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
        f"{', '.join(sorted({number(r.budget[1]) for r in runs}))} {unit} each -> {report_dir} (nothing is written)"
    )
    print(f"{'run':<34} {'round':>5}  {'plan':<7} {'FLOPs':>9} {'to train':>9} {'time':>8}")
    for run, state, flops, todo, seconds in rows:
        rnd = (
            run.round
            if not options.seeds_auto or options.seed_plan
            else (1 if run.seed - options.seed < FIRST_SEEDS else "2+")
        )
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
