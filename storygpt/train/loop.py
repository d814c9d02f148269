"""The training loop behind ``pretrain.py``: state, schedule, step, evaluation, checkpoints, the loop.

What is fixed for a run is a :class:`Run`; what the loop changes is a :class:`Live` (the
:class:`TrainState` stored in ``ckpt.pt``, the batch sampler, the open metrics.jsonl and progress bar).
The run folder's files are storygpt.train.runfolder's; the checkpoint format is storygpt.checkpoint's;
resuming is storygpt.train.resume's; building a run from the command line's values is storygpt.train.start's.

Budgets (:class:`Budgets`): the run stops before the first step at which a budget is reached
(``minutes`` of wall clock, ``max_steps``, ``tokens``, ``chars`` = tokens x the training split's
characters per token, ``flops`` = tokens x :func:`storygpt.model.flops.flops_per_token`); the
learning rate follows the budget nearest to its end.  See docs/training.md.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from storygpt import checkpoint
from storygpt.checkpoint import rng_state, save_checkpoint
from storygpt.cli import show
from storygpt.eval.bits import window_nats
from storygpt.model import optim as optim_parts
from storygpt.model.optim import OptimConfig
from storygpt.runtime import Dist, StopFlag
from storygpt.train import runfolder
from storygpt.train.inputs import HeldOut, windows_to_batch
from storygpt.train.runfolder import Interrupted, MetricsLog, RunError, RunFiles, counters

LN2 = math.log(2)


# ------------------------------------------------------------------- state
@dataclass
class TrainState:
    """Everything that changes while training, besides weights and optimizer (stored in ``ckpt.pt``).

    Attributes:
        step: optimizer steps taken.
        tokens: training tokens seen (all processes and micro-batches).
        chars: characters those tokens stand for (tokens x characters per training token), float.
        flops: training FLOPs spent (tokens x flops per token).
        elapsed: wall-clock seconds of training, evaluations and checkpoints (compilation excluded).
        train_time: wall-clock seconds spent in optimizer steps only (for tokens per second).
        train_cpu_time: this process's CPU seconds (all threads) in optimizer steps.
        compile_time: seconds spent compiling the model (``--compile``), not charged to the budget.
        rng: every rank's random states at the last checkpoint ``{"world_size", "ranks": [...]}``.
        history: one dict per evaluation (the ``eval`` rows of metrics.jsonl plus ``train_loss``).
        best_bpc: the lowest held-out bits/char so far (inf before the first evaluation).
        stop_reason: the budget that ended the run (``minutes``, ``max_steps``, ``tokens``,
            ``chars``, ``flops``), None while it can go on.
    """

    step: int = 0
    tokens: int = 0
    chars: float = 0.0
    flops: int = 0
    elapsed: float = 0.0
    train_time: float = 0.0
    train_cpu_time: float = 0.0
    compile_time: float = 0.0
    rng: dict | None = None
    history: list = field(default_factory=list)
    best_bpc: float = math.inf
    stop_reason: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TrainState:
        return cls(**d)

    @property
    def evaluated(self) -> bool:
        """Whether the current step has its evaluation in the history."""
        return bool(self.history) and self.history[-1]["step"] == self.step


@dataclass(frozen=True)
class Budgets:
    """When to stop; None means no limit.  ``minutes`` counts ``TrainState.elapsed``."""

    minutes: float | None = None
    max_steps: int | None = None
    tokens: int | None = None
    chars: float | None = None
    flops: float | None = None

    def fractions(self, state: TrainState) -> dict[str, float]:
        """Each given budget's spent fraction, in the order they are checked."""
        spent = {
            "max_steps": state.step,
            "tokens": state.tokens,
            "chars": state.chars,
            "flops": state.flops,
            "minutes": state.elapsed / 60.0,
        }
        out = {}
        for name, used in spent.items():
            limit = getattr(self, name)
            if limit is not None:
                out[name] = used / limit if limit > 0 else 1.0
        return out

    def reached(self, state: TrainState) -> str | None:
        """The first budget used up, or None."""
        return next((name for name, f in self.fractions(state).items() if f >= 1.0), None)

    def progress(self, state: TrainState) -> float:
        """Fraction of the binding budget (the one nearest its end), in [0, 1]; 0 without budgets."""
        return min(1.0, max(self.fractions(state).values(), default=0.0))


@dataclass(frozen=True)
class Hyper:
    """The optimization settings the loop reads (the rates are the optimizer groups' ``peak_lr``/``end_lr``)."""

    batch_size: int
    grad_accum: int
    warmup_steps: int
    grad_clip: float
    eval_interval: int
    seed: int
    schedule: str = "cosine"  # OptimConfig.schedule: see lr_at
    decay_fraction: float = 1.0


@dataclass(frozen=True)
class Run:
    """What is fixed for one training session (built by storygpt.train.start); the loop's functions take it."""

    model: torch.nn.Module
    train_model: torch.nn.Module  # compiled and/or DDP-wrapped
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    autocast: contextlib.AbstractContextManager
    device: torch.device
    dist: Dist
    train: np.ndarray
    train_starts: np.ndarray  # the fixed windows of the train loss printed at each evaluation
    heldout: HeldOut
    hyper: Hyper
    budgets: Budgets
    files: RunFiles
    meta: dict  # storygpt.checkpoint.run_meta plus config, tokenizer and optim (OptimConfig.to_dict())
    chars_per_token: float
    flops_per_token: int
    params: tuple[int, int]  # (embedding, non-embedding)
    stop: StopFlag
    log: Callable[[str], None] = print
    peak_flops: float | None = None  # the device's bf16 peak FLOP/s (storygpt.model.sizing.BF16_PEAKS), for MFU

    @property
    def block_size(self) -> int:
        return self.model.config.block_size

    @property
    def tokens_per_step(self) -> int:
        return self.hyper.batch_size * self.hyper.grad_accum * self.block_size * self.dist.world


@dataclass
class Live:
    """What the loop changes besides weights and optimizer: the state, the batch sampler, its outputs."""

    state: TrainState
    batch_rng: np.random.Generator
    metrics: MetricsLog | None = None
    bar: object | None = None  # a tqdm bar or None
    before_step: Callable[[Run, Live], None] | None = None  # called before each optimizer step (storygpt.train.branch)


def build_optimizer(model: torch.nn.Module, optim: OptimConfig) -> torch.optim.Optimizer:
    """The run's optimizer, as ``optim`` describes it (:func:`storygpt.model.optim.build_optimizer`): AdamW
    (betas 0.9, 0.95, weight decay on matrices and embeddings only, as nanoGPT) for ``"adamw"``, Muon +
    AdamW with per-group rates for ``"muon"``; every group has its ``peak_lr`` and ``end_lr``."""
    return optim_parts.build_optimizer(model, optim)


# ---------------------------------------------------------------- schedule
def lr_at(
    step: int,
    progress: float,
    lr: float,
    min_lr: float,
    warmup_steps: int,
    schedule: str = "cosine",
    decay_fraction: float = 1.0,
) -> float:
    """Linear warm-up over ``warmup_steps``, times the schedule from ``lr`` to ``min_lr`` at ``progress`` (the
    fraction of the budget, clipped to [0, 1]): ``"cosine"`` a half cosine over the budget; ``"wsd"`` ``lr``
    until ``1 - decay_fraction``, then linear to ``min_lr`` at the end (warm-up, stable, decay)."""
    progress = min(max(progress, 0.0), 1.0)
    if schedule == "wsd":
        left = (1.0 - progress) / decay_fraction
        rate = min_lr + (lr - min_lr) * min(1.0, left)
    else:
        rate = min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * progress))
    warm = min(1.0, (step + 1) / warmup_steps) if warmup_steps > 0 else 1.0
    return rate * warm


def set_rates(
    optimizer, step: int, progress: float, warmup_steps: int, schedule: str = "cosine", decay_fraction: float = 1.0
) -> float:
    """Every group's learning rate at ``step`` and ``progress``: :func:`lr_at` from its ``peak_lr`` to its
    ``end_lr`` (one schedule for all groups).  Returns the first group's rate (metrics.jsonl's ``lr``)."""
    for group in optimizer.param_groups:
        group["lr"] = lr_at(step, progress, group["peak_lr"], group["end_lr"], warmup_steps, schedule, decay_fraction)
    return optimizer.param_groups[0]["lr"]


# -------------------------------------------------------------------- step
def train_step(r: Run, live: Live, progress: float) -> tuple[float, float, float]:
    """One optimizer step over ``grad_accum`` micro-batches at ``progress`` of the budget (the schedule:
    :func:`set_rates`); returns (mean loss, gradient norm, the first group's learning rate)."""
    h = r.hyper
    lr = set_rates(r.optimizer, live.state.step, progress, h.warmup_steps, h.schedule, h.decay_fraction)
    k = r.hyper.grad_accum
    total = 0.0
    for micro in range(k):
        starts = live.batch_rng.integers(0, len(r.train) - r.block_size, size=r.hyper.batch_size)
        x, y = windows_to_batch(r.train, starts, r.block_size, r.device)
        sync = micro == k - 1 or not r.dist.ddp
        with contextlib.nullcontext() if sync else r.train_model.no_sync():
            with r.autocast:
                _, loss = r.train_model(x, y)
            r.scaler.scale(loss / k).backward()
        total += loss.item()
    r.scaler.unscale_(r.optimizer)
    clip = r.hyper.grad_clip if r.hyper.grad_clip > 0 else math.inf
    norm = float(torch.nn.utils.clip_grad_norm_(r.model.parameters(), clip))
    r.scaler.step(r.optimizer)
    r.scaler.update()
    r.optimizer.zero_grad(set_to_none=True)
    return total / k, norm, lr


def all_sum(r: Run, values: list[float]) -> list[float]:
    """``values`` summed over all ranks (float64); themselves for one process."""
    if not r.dist.ddp:
        return values
    import torch.distributed as dist

    t = torch.tensor(values, dtype=torch.float64, device=r.device)
    dist.all_reduce(t)
    return t.tolist()


def agree(r: Run, elapsed: float, loss: float = 0.0) -> tuple[float, bool, float]:
    """(elapsed, stop, loss) agreed by all ranks (means; stop if any rank was signalled)."""
    elapsed, stop, loss = all_sum(r, [elapsed, 1.0 if r.stop else 0.0, loss])
    return elapsed / r.dist.world, stop > 0, loss / r.dist.world


# -------------------------------------------------------------- evaluation
@torch.no_grad()
def train_loss(r: Run) -> float | None:
    """Mean loss (nats/token) over the fixed training windows; None when stopped by the flag."""
    mine = r.train_starts[r.dist.rank :: r.dist.world]
    total, count = 0.0, 0
    for i in range(0, len(mine), r.hyper.batch_size):
        x, y = windows_to_batch(r.train, mine[i : i + r.hyper.batch_size], r.block_size, r.device)
        with r.autocast:
            _, loss = r.model(x, y)
        total += float(loss.double()) * len(x)
        count += len(x)
        if r.stop and not r.dist.ddp:
            return None
    total, count = all_sum(r, [total, count])
    return total / count


def heldout_nats(r: Run, heldout: HeldOut | None = None) -> list[float] | None:
    """``[total nats, nats of each set...]`` over a held-out text (default the slice of valid.txt; each
    rank scores every world-th window, with the scorer of bits.py: storygpt.eval.bits.window_nats); None
    when stopped by the flag."""
    h = r.heldout if heldout is None else heldout
    mine = h.windows[r.dist.rank :: r.dist.world]
    stop = None if r.dist.ddp else (lambda: bool(r.stop))  # all ranks must reach the all-reduce
    token_nats = np.zeros(h.tokens) if h.set_names else None
    with torch.inference_mode(), r.autocast:
        nats = window_nats(
            r.model, h.stream, mine, batch_size=r.hyper.batch_size, device=r.device, stop=stop, token_nats=token_nats
        )
    if nats is None:
        return None
    per_set = [] if token_nats is None else np.bincount(h.set_of_target, token_nats, len(h.set_names)).tolist()
    return all_sum(r, [nats, *per_set])


def set_figures(h: HeldOut, per_set: list[float]) -> dict:
    """metrics.jsonl's ``sets``: per set ``val_bpc`` and ``val_bpb`` (storygpt/data/evalsets.py)."""
    return {
        name: {"val_bpc": n / (LN2 * c), "val_bpb": n / (LN2 * b), "characters": c}
        for name, n, c, b in zip(h.set_names, per_set, h.set_chars, h.set_bytes)
    }


def evaluate(r: Run, live: Live) -> bool:
    """Measure, log, append to the history and metrics.jsonl.  False when cut short by the stop flag."""
    state = live.state
    r.model.eval()
    try:
        tl = train_loss(r)
        got = None if tl is None else heldout_nats(r)
        extra = []
        for h in r.heldout.extra:
            extra.append(None if got is None else heldout_nats(r, h))
    finally:
        r.model.train()
    if got is None or any(x is None for x in extra):
        return False
    nats = got[0]
    row = {"kind": "eval", **counters(state)}
    row["val_loss"] = nats / r.heldout.tokens
    row["val_bpc"] = nats / (LN2 * r.heldout.characters)
    row["val_bpb"] = nats / (LN2 * r.heldout.bytes)
    sets = set_figures(r.heldout, got[1:])
    for h, x in zip(r.heldout.extra, extra):
        sets |= set_figures(h, x[1:])
    if sets:
        row["sets"] = sets
        row["sets_macro_bpc"] = float(np.mean([s["val_bpc"] for s in sets.values()]))
        chars = r.heldout.characters + sum(h.characters for h in r.heldout.extra)
        row["sets_micro_bpc"] = (nats + sum(x[0] for x in extra)) / (LN2 * chars)
    if live.metrics is not None:
        live.metrics.write(row)
    state.history.append({**row, "train_loss": tl})
    best = row["val_bpc"] < state.best_bpc
    state.best_bpc = min(state.best_bpc, row["val_bpc"])
    r.log(
        f"step {state.step}: train loss {tl:.4f}, held-out {row['val_loss']:.4f} nats/token, "
        f"{row['val_bpc']:.4f} bits/char, {row['val_bpb']:.4f} bits/byte{' (best)' if best else ''} | "
        f"{state.elapsed:.0f}s"
    )
    return True


# ------------------------------------------------------------- checkpoints
def gather_rng(r: Run, live: Live) -> dict:
    """Every rank's global and batch random states (a collective: all ranks call it)."""
    mine = {"global": rng_state(), "batch": live.batch_rng.bit_generator.state}
    if not r.dist.ddp:
        return {"world_size": 1, "ranks": [mine]}
    import torch.distributed as dist

    states = [None] * r.dist.world
    dist.all_gather_object(states, mine)
    return {"world_size": r.dist.world, "ranks": states}


def save(r: Run, live: Live, best: bool) -> None:
    """Write ckpt.pt (and best.pt when ``best``), then summary.json; signals wait until all are written.

    Raises:
        RunError: a file cannot be written (full disk, ...); the previous ckpt.pt is kept.
    """
    state = live.state
    state.rng = gather_rng(r, live)  # collective
    if not r.dist.master:
        return
    now = {"step": state.step, "tokens": state.tokens, "flops": state.flops, "history": state.history}
    trained = checkpoint.training_record(now, r.hyper.warmup_steps)
    record = {**checkpoint.model_record(r.model, r.meta), "trained": trained}
    path = r.files.ckpt
    try:
        save_checkpoint(
            path,
            checkpoint.training_checkpoint(
                record, r.optimizer, r.scaler, state.to_dict(), r.meta["args"], r.meta["optim"]
            ),
        )
        if best:
            path = r.files.best
            save_checkpoint(path, checkpoint.best_checkpoint(record, state.step, state.best_bpc))
        path = r.files.summary
        runfolder.write_summary(r.files, runfolder.summary(r, state))
    except OSError as e:
        kept = "the previous checkpoint is kept" if r.files.ckpt.exists() else "no checkpoint was written"
        raise RunError(f"cannot write {show(path)}: {runfolder.os_reason(e)}; {kept}") from None
    runfolder.refresh_plot(r.files, r.log)


# -------------------------------------------------------------------- loop
def throughput(r: Run, tokens: int, seconds: float) -> dict:
    """``tokens_per_sec``, ``flops_per_sec`` (flops_per_token x tokens/s, all processes) and, where the device's
    peak is known (CUDA, storygpt.model.sizing), ``mfu``: flops/s over the peak of all processes, as nanoGPT."""
    if seconds <= 0:
        return {}
    tps = tokens / seconds
    out = {"tokens_per_sec": tps, "flops_per_sec": tps * r.flops_per_token}
    if r.peak_flops:
        out["mfu"] = out["flops_per_sec"] / (r.peak_flops * r.dist.world)
    return out


def run(r: Run, live: Live) -> TrainState:
    """Train until a budget is reached; evaluate every ``eval_interval`` steps and at the end.

    Raises:
        Interrupted: SIGINT/SIGTERM arrived; a checkpoint of the last whole step was written.
        RunError: the loss became non-finite, or a file could not be written.
    """
    state, h = live.state, r.hyper
    done = r.budgets.reached(state)
    if done and state.evaluated:  # a resume with nothing left to do: the files stay as they are
        if state.stop_reason != done:
            state.stop_reason = done
            save(r, live, best=False)
        return state
    start_elapsed, t0 = state.elapsed, time.perf_counter()
    state.stop_reason = None
    saved_at = None  # the step of the last checkpoint this session wrote
    r.model.train()
    while True:
        state.elapsed, stopped, _ = agree(r, start_elapsed + time.perf_counter() - t0)
        if stopped:
            if saved_at != state.step:
                save(r, live, best=False)
            raise Interrupted(state.step, r.files.ckpt)
        reason = r.budgets.reached(state)
        if state.step > 0 and not state.evaluated and (state.step % h.eval_interval == 0 or reason):
            before = state.best_bpc
            if not evaluate(r, live):
                continue  # cut short by a signal: checkpoint at the top of the loop, redone on resume
            state.stop_reason = reason
            save(r, live, best=state.best_bpc < before)
            saved_at = state.step
            continue  # a signal during the evaluation or the save stops the run here
        if reason:
            break
        if live.before_step is not None:
            live.before_step(r, live)
        t_step, cpu_step = time.perf_counter(), time.process_time()
        loss, norm, lr = train_step(r, live, r.budgets.progress(state))
        seconds = time.perf_counter() - t_step
        state.train_time += seconds
        state.train_cpu_time += time.process_time() - cpu_step
        state.step += 1
        state.tokens += r.tokens_per_step
        state.chars = state.tokens * r.chars_per_token
        state.flops = state.tokens * r.flops_per_token
        state.elapsed, _, loss = agree(r, start_elapsed + time.perf_counter() - t0, loss)
        if not math.isfinite(loss):
            hint = OptimConfig.from_dict(r.meta["optim"]).rate_flags()
            raise RunError(f"the training loss became {loss} at step {state.step}; try a lower {hint}")
        if live.metrics is not None:
            row = {"kind": "step", **counters(state), "lr": lr, "loss": loss, "grad_norm": norm}
            live.metrics.write(row | throughput(r, r.tokens_per_step, seconds))
        if live.bar is not None:
            live.bar.n = round(100 * r.budgets.progress(state))
            tps = state.tokens / state.train_time if state.train_time > 0 else 0.0
            live.bar.set_postfix_str(f"step {state.step} loss {loss:.3f} {tps:,.0f} tok/s", refresh=False)
            live.bar.update(0)
    if saved_at != state.step or state.stop_reason != reason:
        state.stop_reason = reason
        save(r, live, best=False)
    return state
