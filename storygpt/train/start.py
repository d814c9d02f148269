"""Starting a training session from the command line's values: data, model, optimizer, resume, then the loop."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from storygpt.checkpoint import MIN_EVALS, rng_state, set_rng_state, under_trained_reason
from storygpt.cli import show
from storygpt.model.optim import OptimConfig
from storygpt.runtime import Dist, StopFlag, autocast_for, fastest_threads
from storygpt.train import resume
from storygpt.train.inputs import HeldOut, SetNameError, fixed_windows, heldout_slice, load_data, windows_to_batch
from storygpt.train.loop import Budgets, Hyper, Live, Run, TrainState, build_optimizer, run
from storygpt.train.runfolder import MetricsLog, RunError, RunFiles, remove_leftovers, summary


@dataclass(frozen=True)
class Options:
    """The tool's settings a session reads besides the model shape, :class:`Hyper` and :class:`Budgets`.

    ``optim``: the optimizer (storygpt/model/optim.py; the recipe's, storygpt/model/recipes.py), recorded
    in ``ckpt.pt`` and summary.json.
    """

    optim: OptimConfig = field(default_factory=OptimConfig)
    eval_windows: int = 64
    compile: bool = False
    probe_threads: bool = True  # time 1 thread against ``threads`` on a CPU (no --threads given)
    progress: bool = True
    log: tuple[str, ...] = ()  # trackers beside metrics.jsonl: "tensorboard", "wandb" (storygpt/train/tracking.py)


def grad_accum_for(total_batch: int | None, batch_size: int, world: int, grad_accum: int) -> int:
    """Micro-batches per step: ``total_batch / (batch_size x world)`` when a total is given, else ``grad_accum``.

    Raises:
        RunError: a total that is not a multiple of batch_size x world.
    """
    if total_batch is None:
        return grad_accum
    k, rest = divmod(total_batch, batch_size * world)
    if rest or not k:
        raise RunError(
            f"--total-batch {total_batch} is not a multiple of --batch-size {batch_size} x {world} process(es)"
        )
    return k


def grad_accum_for_tokens(total_tokens: int, batch_size: int, block_size: int, world: int) -> int:
    """Micro-batches per step for ``--total-batch-size`` tokens (nanoGPT's count): ``total_tokens /
    (batch_size x block_size x world)``.

    Raises:
        RunError: a total that is not a multiple of batch_size x block_size x world, naming the numbers.
    """
    per = batch_size * block_size * world
    k, rest = divmod(total_tokens, per)
    if rest or not k:
        raise RunError(
            f"--total-batch-size {total_tokens} tokens is not a multiple of --batch-size {batch_size} x "
            f"--block-size {block_size} x {world} process(es) = {per} tokens a micro-step"
        )
    return k


def load_run_data(
    data_dir: Path, spec, block_size: int, eval_chars: int, ckpt: dict | None, ckpt_path: Path, eval_sets=()
):
    """``(tokenizer, train tokens, held-out slice)`` of ``data_dir``; on resume the stored tokenizer must match.

    Raises:
        RunError: see :func:`storygpt.train.inputs.load_data`, :func:`storygpt.train.resume.check_stored_tokenizer`;
            a missing or unreadable valid.txt.
    """
    tokenizer, train = load_data(data_dir, spec, block_size)
    if ckpt is not None:
        resume.check_stored_tokenizer(ckpt, ckpt_path, tokenizer, data_dir)
    try:
        heldout = heldout_slice(tokenizer, data_dir / "valid.txt", eval_chars, block_size, eval_sets)
        return tokenizer, train, heldout
    except SetNameError as e:
        raise RunError(str(e)) from None
    except (OSError, ValueError) as e:
        raise RunError(f"{e} (the held-out text of --data; run data.py again)") from None


def build(
    *,
    config,
    tokenizer,
    train: np.ndarray,
    heldout: HeldOut,
    hyper: Hyper,
    budgets: Budgets,
    files: RunFiles,
    meta: dict,
    device: torch.device,
    dtype: torch.dtype,
    dist: Dist,
    stop: StopFlag,
    log: Callable[[str], None],
    options: Options,
    chars_per_token: float,
    ckpt: dict | None,
) -> tuple[Run, Live]:
    """Build the model (seeded with ``hyper.seed``; weights from ``ckpt`` when resuming), the optimizer, the
    compiled/DDP wrapper and the :class:`Run`; restore the optimizer and RNG states from ``ckpt``."""
    from storygpt.model import GPT
    from storygpt.model.flops import flops_per_token, parameter_split
    from storygpt.model.sizing import peak_flops

    torch.manual_seed(hyper.seed)
    model = GPT(config).to(device)
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
    optimizer = build_optimizer(model, options.optim)
    train_model = torch.compile(model) if options.compile else model
    if dist.ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP

        train_model = DDP(train_model, device_ids=[device.index] if device.type == "cuda" else None)
    r = Run(
        model=model,
        train_model=train_model,
        optimizer=optimizer,
        scaler=torch.amp.GradScaler(device.type, enabled=(dtype == torch.float16)),
        autocast=autocast_for(device, dtype),
        device=device,
        dist=dist,
        train=train,
        train_starts=fixed_windows(len(train), config.block_size, options.eval_windows),
        heldout=heldout,
        hyper=hyper,
        budgets=budgets,
        files=files,
        meta={**meta, "config": config.to_dict(), "tokenizer": tokenizer.to_dict(), "optim": options.optim.to_dict()},
        chars_per_token=chars_per_token,
        flops_per_token=flops_per_token(config),
        params=parameter_split(model),
        stop=stop,
        log=log,
        peak_flops=peak_flops(torch.cuda.get_device_name(device)) if device.type == "cuda" else None,
    )
    if ckpt is None:
        return r, Live(TrainState(), np.random.default_rng([hyper.seed, dist.rank]))
    return r, Live(*resume.restore(r, ckpt))


def fixed_batch(r: Run) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch of evenly spaced training windows (the same every time)."""
    return windows_to_batch(
        r.train, fixed_windows(len(r.train), r.block_size, r.hyper.batch_size), r.block_size, r.device
    )


def probe_threads(r: Run, candidates) -> tuple[int, dict]:
    """:func:`storygpt.runtime.fastest_threads` over one forward+backward on a fixed batch, in eval mode (no
    dropout: no RNG is used); gradients are dropped afterwards.  Returns ``(threads, {threads: seconds})``."""
    x, y = fixed_batch(r)

    def step():
        with r.autocast:
            _, loss = r.model(x, y)
        loss.backward()

    was_training = r.model.training
    r.model.eval()
    try:
        return fastest_threads(step, candidates)
    finally:
        r.model.zero_grad(set_to_none=True)
        r.model.train(was_training)


def warm_up_compiled(r: Run) -> float:
    """Compile ``train_model`` on one fixed batch (forward + backward, RNG states restored); seconds taken."""
    rng = rng_state()
    t = time.perf_counter()
    x, y = fixed_batch(r)
    with r.autocast:
        _, loss = r.train_model(x, y)
    loss.backward()
    r.optimizer.zero_grad(set_to_none=True)
    if r.device.type == "cuda":
        torch.cuda.synchronize()
    set_rng_state(rng)
    return time.perf_counter() - t


#: pretrain.py's flag of each budget (storygpt.train.loop.Budgets' fields).
BUDGET_FLAGS = {
    "minutes": "--minutes",
    "max_steps": "--max-steps",
    "tokens": "--budget-tokens",
    "chars": "--budget-chars",
    "flops": "--budget-flops",
}


def evals_in(steps: int, eval_interval: int) -> int:
    """Held-out evaluations of a run of ``steps`` steps: one every ``eval_interval`` steps and one at the end."""
    return -(-steps // eval_interval)


def steps_allowed(r: Run) -> tuple[int, str] | None:
    """The most optimizer steps the budgets other than ``minutes`` allow (known before training) and the
    budget that allows them; None with only a time budget."""
    per_step = {
        "max_steps": 1,
        "tokens": r.tokens_per_step,
        "chars": r.tokens_per_step * r.chars_per_token,
        "flops": r.tokens_per_step * r.flops_per_token,
    }
    known = [
        (math.ceil(getattr(r.budgets, name) / per - 1e-9), name)
        for name, per in per_step.items()
        if getattr(r.budgets, name) is not None
    ]
    return min(known) if known else None


def under_trained_advice(r: Run, steps: int, budget: str | None) -> str:
    """What gives the run enough steps and evaluations: a budget scaled up from ``budget`` (which gave
    ``steps``) to twice the warm-up, and/or a shorter ``--eval-interval``."""
    h, advice = r.hyper, []
    want = steps
    if steps < h.warmup_steps:
        want = 2 * h.warmup_steps
        value = getattr(r.budgets, budget, None) if budget else None
        if budget == "max_steps" or value is None or steps <= 0:
            advice.append(f"--max-steps {want}")
        else:
            advice.append(f"{BUDGET_FLAGS[budget]} {value * want / steps:.3g}")
    if evals_in(want, h.eval_interval) < MIN_EVALS:
        advice.append(f"--eval-interval {max(1, want // MIN_EVALS)}")
    return " and ".join(advice)


def warn_if_under_trained_ahead(r: Run, state: TrainState) -> None:
    """Before training: warn when the budgets already imply an under-trained run (storygpt.checkpoint)."""
    allowed = steps_allowed(r)
    if allowed is None:
        return
    steps, budget = allowed
    reason = under_trained_reason(steps, r.hyper.warmup_steps, evals_in(steps, r.hyper.eval_interval))
    if reason is not None:
        r.log(
            f"warning: {BUDGET_FLAGS[budget]} allows about {reason}: the run will be under-trained (its "
            f"bits/char says little; bits.py and compare.py mark it); {under_trained_advice(r, steps, budget)} would do"
        )


def open_trackers(r: Run, kinds, resume_step: int | None) -> list:
    """The ``--log`` trackers of the run, with its recipe and provenance as config (storygpt/train/tracking.py).

    Raises:
        RunError: a tracker that cannot start (one line).
    """
    if not kinds:
        return []
    from storygpt.train import tracking

    emb, non_emb = r.params
    m = r.meta
    config = {
        "recipe": m["args"].get("recipe"),
        **{k: m[k] for k in ("spec", "corpus")},
        "params": emb + non_emb,
        "params_non_embedding": non_emb,
        "model": m["config"],
        "optim": m["optim"],
        "batch_windows": r.hyper.batch_size * r.hyper.grad_accum * r.dist.world,
        "processes": r.dist.world,
        "args": m["args"],  # every resolved flag
        "provenance": tracking.provenance(),
    }
    try:
        kinds = tracking.parse_kinds(",".join(kinds))  # a resumed run's trackers: their packages still there?
        trackers = tracking.open_trackers(kinds, r.files.folder, r.files.folder.name, config, resume_step)
    except tracking.TrackingError as e:
        raise RunError(str(e)) from None
    r.log("tracking: " + "; ".join(t.where for t in trackers))
    return trackers


def speed_extras(result: dict) -> str:
    """The done line's MFU and peak CUDA memory, where summary.json has them."""
    out = f", MFU {100 * result['mfu']:.1f}%" if result.get("mfu") is not None else ""
    if result.get("max_memory_allocated"):
        out += f", peak memory {result['max_memory_allocated'] / 2**30:.2f} GiB"
    return out


def train(r: Run, live: Live, options: Options, threads: int, dtype, fresh: bool) -> dict:
    """Probe threads, open metrics.jsonl, compile, show progress, run the loop; summary.json's dict + history."""
    from tqdm import tqdm

    state = live.state
    nothing_left = r.budgets.reached(state) is not None and state.evaluated
    if options.probe_threads and r.device.type == "cpu" and threads > 1 and not nothing_left:
        threads, timings = probe_threads(r, sorted({1, threads}))
        r.log(
            "torch threads: timed "
            + ", ".join(f"{n} -> {t * 1000:.0f} ms" for n, t in timings.items())
            + f" per training step; using {threads} (set --threads to choose)"
        )
    if r.dist.master:
        remove_leftovers(r.files.folder)
        live.metrics = MetricsLog(r.files.metrics, open_trackers(r, options.log, None if fresh else state.step))
        live.metrics.open(None if fresh else state.step, state.evaluated)
        if fresh:
            for p in (r.files.ckpt, r.files.best, r.files.summary, r.files.folder / "branch.json"):  # branch.py
                p.unlink(missing_ok=True)
        m, (emb, non_emb) = r.meta, r.params
        r.log(
            f"run {show(r.files.folder)} | corpus {m['corpus']} ({m['spec']}, vocab "
            f"{m['config']['vocab_size']:,}) | train {len(r.train):,} tokens, held-out "
            f"{r.heldout.characters:,} characters | {emb + non_emb:,} parameters ({non_emb:,} non-embedding), "
            f"{m['config']['position']} positions | {r.tokens_per_step:,} tokens/step, "
            f"{r.flops_per_token:,} FLOPs/token | device {r.device}, {str(dtype).replace('torch.', '')}, "
            f"{threads} thread{'s' if threads != 1 else ''} x {r.dist.world} process{'es' if r.dist.world != 1 else ''}"
            + (f" | resumed at step {state.step}, {state.elapsed:.0f}s spent" if not fresh else "")
        )
        if not nothing_left:
            warn_if_under_trained_ahead(r, state)
    if options.compile and not nothing_left:
        seconds = warm_up_compiled(r)
        state.compile_time += seconds
        r.log(f"compiled in {seconds:.1f}s (not charged to the budget)")
    live.bar = tqdm(
        total=100,
        initial=round(100 * r.budgets.progress(state)),
        unit="%",
        disable=(not r.dist.master) or not options.progress or nothing_left,
        dynamic_ncols=True,
        file=sys.stderr,
        desc="budget",
        bar_format="{l_bar}{bar}| {elapsed}<{remaining}{postfix}",  # "budget:  20%|##   | 00:12<00:48, step ..."
    )
    steps_before = state.step
    try:
        state = run(r, live)
    finally:
        live.bar.close()
        if live.metrics is not None:
            live.metrics.close()
    result = {**summary(r, state), "history": state.history}
    if state.step == steps_before and not fresh:
        r.log(f"budget already spent ({state.stop_reason}): nothing to train | {show(r.files.folder)}")
    else:
        r.log(
            f"done ({state.stop_reason}): {result['params']:,} parameters, {state.step:,} steps, "
            f"{state.tokens:,} tokens, {state.flops:.3g} FLOPs, {result['tokens_per_sec'] or 0:,.0f} tokens/s, "
            f"{result['flops_per_sec'] or 0:.3g} FLOPs/s{speed_extras(result)}, "
            f"held-out {result['val_loss']:.4f} nats/token, {result['val_bpc']:.4f} bits/char "
            f"(best {result['best_val_bpc']:.4f}) | {state.elapsed:.0f}s"
            + (f" + {state.compile_time:.0f}s compiling" if state.compile_time else "")
            + f" | {show(r.files.folder)}"
        )
    if r.dist.master and result["under_trained"] is not None:
        r.log(
            f"warning: under-trained: {result['under_trained']}; its bits/char says little about the tokenizer "
            f"(bits.py and compare.py mark it); {under_trained_advice(r, state.step, state.stop_reason)} would do"
        )
    return result
