"""Budgets that branch: one ``wsd`` run (the trunk, the largest budget) leaves a paused run folder for each smaller
budget at that budget's decay start; ``pretrain.py --resume`` on such a folder trains its decay.

Under ``wsd`` (storygpt.train.loop.lr_at) the rate at step t is the peak (times the warm-up) until the budget's
last ``decay_fraction``: every budget's run is the same run until its own decay starts.  The trunk checks before
each optimizer step whether a branch's rate would differ from its own (or the branch's budget is reached); at the
first such step it writes the branch's folder as an interrupted independent run of that budget would hold it:
``metrics.jsonl`` (the trunk's rows so far), ``best.pt`` (the trunk's, the best so far), ``ckpt.pt`` (weights,
optimizer, RNG and history of that moment, with the branch's flags) and ``summary.json``.  Resuming it is exact
(storygpt.train.resume), so each branch gives the weights and losses of ``pretrain.py`` run on its budget alone
(tests/training/test_branch.py).  A ``cosine`` schedule decays from step 0: nothing can be shared.  With
``pause`` (``pretrain.py --pause-after-branches``, compare.py's ``--halving``) the trunk stops once its last
branch is written, its checkpoint that of the same moment; ``--resume`` continues it as if it had not stopped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from storygpt import atomic, checkpoint
from storygpt.cli import show
from storygpt.train.loop import Budgets, Live, Run, TrainState, lr_at, save
from storygpt.train.runfolder import MetricsLog, Paused, RunError, RunFiles, os_reason

#: a branch's record of where it left its trunk: {"trunk": folder, "step", "tokens", "flops"} (compare.py's note)
BRANCH_RECORD = "branch.json"
#: the budget kinds a trunk may branch on (Budgets' fields; ``minutes`` is not known before training)
KINDS = ("max_steps", "tokens", "chars", "flops")
#: pretrain.py's flag of each of :data:`KINDS`
FLAGS = {"max_steps": "--max-steps", "tokens": "--budget-tokens", "chars": "--budget-chars", "flops": "--budget-flops"}


@dataclass(frozen=True)
class Branch:
    """One smaller budget of a trunk: its run folder, its budgets and the flags its checkpoint records."""

    folder: Path
    budgets: Budgets
    args: dict


def parse_branch(text: str) -> tuple[str, float]:
    """``NAME=BUDGET`` -> ``(NAME, BUDGET)``.

    Raises:
        ValueError: no ``=``, a name with a path separator, or a budget that is not a positive number.
    """
    name, sep, value = text.partition("=")
    if not sep or not name or name in (".", "..") or "/" in name or "\\" in name:
        raise ValueError(f"--branch {text!r}: expected NAME=BUDGET, NAME a plain folder name")
    try:
        budget = float(value)
    except ValueError:
        raise ValueError(f"--branch {text!r}: the budget {value!r} is not a number") from None
    if not budget > 0 or budget == float("inf"):
        raise ValueError(f"--branch {text!r}: the budget must be a positive finite number")
    return name, budget


def branch_kind(budgets: Budgets, schedule: str) -> str:
    """The one budget kind (:data:`KINDS`) a trunk with ``budgets`` branches on.

    Raises:
        ValueError: a schedule other than ``wsd`` (cosine decays from step 0: nothing to share), a ``minutes``
            budget, or not exactly one budget.
    """
    if schedule != "wsd":
        raise ValueError(f"--branch needs --schedule wsd: {schedule} decays from step 0, so nothing can be shared")
    if budgets.minutes is not None:
        raise ValueError("--branch cannot go with --minutes (a time budget is not known before training)")
    given = [k for k in KINDS if getattr(budgets, k) is not None]
    if len(given) != 1:
        got = ", ".join(FLAGS[k] for k in given) or "none"
        raise ValueError(f"--branch needs exactly one budget of {', '.join(FLAGS.values())} (the trunk's), got {got}")
    return given[0]


def check_branches(texts: list[str], budgets: Budgets | None, schedule: str | None, trunk: Path) -> list:
    """The ``--branch NAME=BUDGET`` values ``texts`` of the trunk in folder ``trunk`` as ``[(NAME, BUDGET)]``
    (BUDGET an int for ``max_steps``): pretrain.py's one check, before any work, of the run and of --dry-run.
    ``budgets`` and ``schedule`` None (not known yet: a --dry-run of a --resume): the names and values only.

    Raises:
        ValueError: one line naming the --branch value: :func:`parse_branch`'s, :func:`branch_kind`'s, a name
            or budget given twice, a branch not below the trunk's budget, not a whole number of steps, or the
            trunk's own folder.
    """
    kind = None if budgets is None else branch_kind(budgets, schedule)
    out: list = []
    for text in texts:
        name, value = parse_branch(text)
        if kind == "max_steps":
            if value != int(value):
                raise ValueError(f"--branch {text}: --max-steps counts whole steps")
            value = int(value)
        twin = next((t for t, (n, v) in zip(texts, out) if n == name or v == value), None)
        if twin is not None:
            what = "name" if twin.partition("=")[0] == name else "budget"
            raise ValueError(f"--branch {text}: the same {what} as --branch {twin}")
        if kind is not None and not value < getattr(budgets, kind):
            raise ValueError(f"--branch {text}: not below this run's {FLAGS[kind]} (the trunk)")
        if (trunk.parent / name).resolve() == trunk.resolve():
            raise ValueError(f"--branch {text}: that is this run's own folder")
        out.append((name, value))
    return out


def diverges(r: Run, state: TrainState, budgets: Budgets) -> bool:
    """Whether the run of ``budgets`` would take another step than the trunk ``r`` at ``state``: another rate in
    any optimizer group (storygpt.train.loop.lr_at) or its budget reached."""
    h = r.hyper
    if budgets.reached(state):
        return True
    mine, theirs = r.budgets.progress(state), budgets.progress(state)
    for g in r.optimizer.param_groups:
        a = lr_at(state.step, mine, g["peak_lr"], g["end_lr"], h.warmup_steps, h.schedule, h.decay_fraction)
        b = lr_at(state.step, theirs, g["peak_lr"], g["end_lr"], h.warmup_steps, h.schedule, h.decay_fraction)
        if a != b:
            return True
    return False


def counted(r: Run, step: int) -> TrainState:
    """The counters of the loop after ``step`` steps (tokens, chars, flops as storygpt.train.loop.run counts them)."""
    tokens = step * r.tokens_per_step
    return TrainState(step=step, tokens=tokens, chars=tokens * r.chars_per_token, flops=tokens * r.flops_per_token)


def branch_step(r: Run, budgets: Budgets) -> int:
    """The step at which the run of ``budgets`` first differs from the trunk ``r`` (its decay start)."""
    step = 0
    while not diverges(r, counted(r, step), budgets):
        step += 1
    return step


def started(folder: Path) -> bool:
    """Whether a branch's folder holds its checkpoint already (written before, by this trunk or a rerun)."""
    return (folder / "ckpt.pt").is_file()


def write_branch(r: Run, live: Live, branch: Branch) -> None:
    """Write ``branch``'s folder from the trunk's state now: metrics.jsonl and best.pt first, ckpt.pt (the
    sign that the branch exists) and summary.json last, each atomically.

    Raises:
        RunError: a file that cannot be written, named.
    """
    files = RunFiles(branch.folder)
    data_dir = Path(r.meta["data_abs"])
    meta = {**r.meta, "args": branch.args, "data": checkpoint.relative_data_path(data_dir, files.folder)}
    rb = replace(r, files=files, budgets=branch.budgets, meta=meta)
    if r.dist.master:
        path = files.metrics
        try:
            files.folder.mkdir(parents=True, exist_ok=True)
            rows = [x for x in MetricsLog.read(r.files.metrics) if x["step"] <= live.state.step]
            atomic.write_text(path, "".join(json.dumps(x) + "\n" for x in rows))
            path = files.best
            if r.files.best.is_file():
                best = checkpoint.read_checkpoint(r.files.best)
                checkpoint.save_checkpoint(path, {**best, "data": meta["data"]})
            else:
                path.unlink(missing_ok=True)
            path, state = files.folder / BRANCH_RECORD, live.state
            record = {"trunk": str(r.files.folder), "step": state.step, "tokens": state.tokens, "flops": state.flops}
            atomic.write_text(path, json.dumps(record) + "\n")
        except OSError as e:
            raise RunError(f"cannot write {show(path)}: {os_reason(e)}") from None
        except checkpoint.CheckpointError as e:
            raise RunError(f"branch {show(files.folder)}: {e}") from None
    save(rb, live, best=False)  # ckpt.pt, then summary.json (a collective: every rank calls it)
    r.log(f"branch {show(files.folder)}: its decay starts at step {live.state.step}; continue it with --resume")


def brancher(branches: list[Branch], pause: bool = False):
    """A :attr:`storygpt.train.loop.Live.before_step` that writes each branch not yet written at its decay start
    (:func:`branch_step`); a branch whose decay start the trunk has passed without it is left out, with a warning.
    With ``pause``, once no branch is left to write it saves the trunk's checkpoint and raises :class:`Paused`
    (before the step: at once when every branch was written before)."""
    pending = [b for b in branches if not started(b.folder)]
    at: dict[int, int] = {}

    def stop_when_written(r: Run, live: Live) -> None:
        if pause and not pending:
            save(r, live, best=False)
            raise Paused(live.state.step, r.files.ckpt)

    def before_step(r: Run, live: Live) -> None:
        stop_when_written(r, live)
        for b in list(pending):
            step = at.setdefault(id(b), branch_step(r, b.budgets))
            if live.state.step == step:
                write_branch(r, live, b)
                pending.remove(b)
            elif live.state.step > step:
                r.log(
                    f"warning: --branch {b.folder.name}: this run is past its decay start (step {step}) without it; "
                    "train that budget alone"
                )
                pending.remove(b)
        stop_when_written(r, live)

    return before_step


def steps_for(budget: float, per_step: float) -> int:
    """Optimizer steps of a run whose budget is ``budget`` and spends ``per_step`` a step (it stops at the first
    step that reaches it: Budgets.reached)."""
    n = int(budget // per_step)
    while n * per_step / budget < 1.0:
        n += 1
    return n


def decay_start(budget: float, per_step: float, decay_fraction: float) -> int:
    """The first step whose ``wsd`` rate is below the stable one in a run of ``budget`` (lr_at: its progress
    ``step x per_step / budget`` past ``1 - decay_fraction``)."""
    t = 0
    while (1.0 - min(1.0, t * per_step / budget)) / decay_fraction >= 1.0:
        t += 1
    return t


def shared_flops(budgets: list[float], per_step: float, decay_fraction: float) -> tuple[float, float]:
    """``(branched, independent)`` training FLOPs (or tokens: ``per_step``'s unit) of runs at ``budgets``:
    independent runs train every step of each; branched ones the largest in full and, of every other, the steps
    from its decay start on (:func:`decay_start`)."""
    top = max(budgets)
    independent = sum(steps_for(b, per_step) for b in budgets)
    branched = steps_for(top, per_step) + sum(
        steps_for(b, per_step) - decay_start(b, per_step, decay_fraction) for b in budgets if b != top
    )
    return branched * per_step, independent * per_step


def plan(runs: list, kind: str, schedule: str) -> tuple[dict[int, list[int]], str | None]:
    """compare.py's branching: ``{index of a trunk: [indices of its branches]}`` over ``runs`` (objects with
    ``spec``, ``size``, ``seed`` and ``budget`` = ``(kind, value)``): per tokenizer, size and seed, the largest
    budget is the trunk, the others its branches, smallest first.  Empty, with why nothing is shared (None with
    one budget), under a schedule other than ``wsd`` or a ``minutes`` budget."""
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(runs):
        groups.setdefault((str(r.spec), r.size, r.seed), []).append(i)
    if all(len(g) < 2 for g in groups.values()):
        return {}, None
    if schedule != "wsd":
        return {}, f"nothing was shared: {schedule} schedule decays from step 0 (every budget trained on its own)"
    if kind == "minutes":
        return {}, "nothing was shared: a time budget is not known before training (every budget trained on its own)"
    out = {}
    for g in groups.values():
        g = sorted(g, key=lambda i: runs[i].budget[1])
        if len(g) > 1:
            out[g[-1]] = g[:-1]
    return out, None


def shared_args(runs: list, trunks: dict[int, list[int]], k: int) -> dict:
    """compare.py's train() keywords of ``runs[k]`` under :func:`plan`'s ``trunks``: ``eval_budget`` (its trunk's
    smallest budget: every run of a trunk evaluates at the same steps) and, for a trunk, its ``branches``."""
    for t, bs in trunks.items():
        if k == t or k in bs:
            out = {"eval_budget": runs[bs[0]].budget}
            return out | ({"branches": tuple(runs[b] for b in bs)} if k == t else {})
    return {}


def flops_trained(folders: list[Path]) -> tuple[float, float]:
    """``(trained, independent)`` training FLOPs of finished run folders: summary.json's ``flops`` of each, less
    the FLOPs a branch took over from its trunk (its :data:`BRANCH_RECORD`), against all of them in full."""
    trained = independent = 0.0
    for folder in folders:
        done = json.loads((folder / "summary.json").read_text(encoding="utf-8"))["flops"]
        independent += done
        record = folder / BRANCH_RECORD
        trained += done - (json.loads(record.read_text(encoding="utf-8"))["flops"] if record.is_file() else 0.0)
    return trained, independent


def branched_from(folder: Path) -> tuple[str | None, int | None]:
    """``(trunk's folder name, step)`` of a branch's :data:`BRANCH_RECORD`; ``(None, None)`` for a run trained
    from step 0 (or a record that cannot be read)."""
    try:
        record = json.loads((folder / BRANCH_RECORD).read_text(encoding="utf-8"))
        return Path(record["trunk"]).name, int(record["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, None


def shared_note(folders: list[Path], branches: int) -> str:
    """The report's line on what branching saved (:func:`flops_trained`)."""
    trained, independent = flops_trained(folders)
    return (
        f"budgets branched (wsd): {branches} of {len(folders)} runs continued from their trunk's decay start; "
        f"{trained:.3g} training FLOPs, {trained / independent:.2f}x the {independent:.3g} of independent runs"
    )
