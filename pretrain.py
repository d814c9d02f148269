#!/usr/bin/env python
"""Pretrain a GPT on a tokenized corpus for a time budget.

    python data.py --bpe                      # first: token files in data/shakespeare/
    python pretrain.py --rope --bpe           # -> checkpoints/pretrain-rope-bpe/{ckpt.pt,best.pt,metrics.json}
    python pretrain.py --rope --bpe --resume  # continue where it stopped
    torchrun --nproc_per_node 2 pretrain.py   # several processes (DistributedDataParallel)

Batches are random windows of block_size + 1 tokens from the memory-mapped
train-{word,bpe}.bin; the held-out loss is measured on a fixed, evenly spaced
set of windows of valid-{word,bpe}.bin, so runs are comparable.  The learning
rate warms up linearly, then follows a cosine from --lr down to --min-lr over
the fraction of the time budget (or of --max-steps, whichever is further
along) that has been used.  See docs/training.md for the defaults and how they
were chosen.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import torch

from storygpt.atomic import write_text
from storygpt.checkpoint import (
    CheckpointError,
    clean_state_dict,
    load_tokenizer,
    read_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
    to_plain,
    tokenizer_from_dict,
)
from storygpt.data import read_tokens
from storygpt.evaluate import resolve_device
from storygpt.helpformat import DefaultsOnceHelpFormatter
from storygpt.model import GPT, GPTConfig

# flags that may change when a run is resumed; every other flag keeps the run's value
RESUME_OVERRIDABLE = {
    "minutes",
    "max_steps",
    "eval_interval",
    "device",
    "dtype",
    "threads",
    "compile",
    "no_progress",
    "out_dir",
    "run_name",
    "resume",
    "force",
}


def build_parser(suppress_defaults: bool = False) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pretrain.py",
        description="Pretrain a GPT on token files written by data.py, for a time budget.",
        formatter_class=DefaultsOnceHelpFormatter,
        argument_default=argparse.SUPPRESS if suppress_defaults else None,
    )

    current = [p]

    def group(title: str) -> None:
        current[0] = p.add_argument_group(title)

    def add(*names, **kw):
        if suppress_defaults:
            kw.pop("default", None)
        current[0].add_argument(*names, **kw)

    group("data and run folder")
    add(
        "--data",
        default="data/shakespeare",
        help="corpus folder written by data.py (holds train-*.bin, valid-*.bin, tokenizer-*.json)",
    )
    add(
        "--bpe",
        action="store_true",
        default=False,
        help="use the byte-level BPE token files (*-bpe.*) instead of the word-level ones (*-word.*)",
    )
    add(
        "--rope",
        action="store_true",
        default=False,
        help="rotary position embeddings instead of learned absolute positions",
    )
    add("--out-dir", default="checkpoints", help="root folder for run folders")
    add("--run-name", default=None, help="run folder name (default: pretrain[-rope][-bpe] from the flags)")
    add(
        "--resume",
        action="store_true",
        default=False,
        help="continue the run in the run folder from its ckpt.pt (step, optimizer, RNG, time spent)",
    )
    add(
        "--force",
        action="store_true",
        default=False,
        help="start afresh even if the run folder holds a checkpoint (it is overwritten)",
    )
    group("budget")
    add(
        "--minutes",
        type=float,
        default=10.0,
        help="training time budget in minutes (wall clock, including evaluations)",
    )
    add("--max-steps", type=int, default=None, help="stop after this many optimizer steps even if time is left")
    group("model")
    add("--n-layer", type=int, default=3, help="transformer blocks")
    add("--n-head", type=int, default=4, help="attention heads per block")
    add("--n-embd", type=int, default=96, help="embedding width")
    add("--block-size", type=int, default=128, help="context length in tokens")
    add("--dropout", type=float, default=0.0, help="dropout probability")
    add("--rope-theta", type=float, default=10000.0, help="rotary frequency base (with --rope)")
    group("optimization")
    add("--batch-size", type=int, default=16, help="windows per optimizer step (per process)")
    add("--lr", type=float, default=3e-3, help="peak learning rate (AdamW)")
    add("--min-lr", type=float, default=3e-4, help="learning rate at the end of the cosine decay")
    add("--warmup-steps", type=int, default=20, help="linear learning-rate warm-up steps")
    add("--weight-decay", type=float, default=0.1, help="AdamW weight decay (matrices and embeddings only)")
    add("--grad-clip", type=float, default=1.0, help="clip the gradient norm to this (0: off)")
    add("--seed", type=int, default=1337, help="random seed (model init; batch sampling uses seed and rank)")
    group("evaluation")
    add("--eval-interval", type=int, default=100, help="evaluate and write a checkpoint every this many steps")
    add(
        "--eval-windows",
        type=int,
        default=64,
        help="fixed held-out (and train) windows of block_size tokens per evaluation",
    )
    group("hardware")
    add("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N, mps")
    add(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16", "float16"],
        help="compute dtype (autocast); auto: bfloat16 on CUDA when supported, else float16 on CUDA; on CPU bfloat16 when the CPU has native bfloat16 instructions (avx512_bf16/amx_bf16), else float32; float32 on MPS (measured: benchmarks/train_throughput.py, docs/training.md)",
    )
    add(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads per process (default on CPU: times a training step with 1 thread and with cores/processes threads and keeps the faster; OpenMP threads slow down badly on a busy machine)",
    )
    add(
        "--compile",
        action="store_true",
        default=False,
        help="torch.compile the model (slow start; worth it on long GPU runs)",
    )
    add("--no-progress", action="store_true", default=False, help="no tqdm progress bar")
    return p


def probe_threads(model, data, block_size, batch_size, autocast, candidates) -> tuple[int, dict]:
    """Time one forward+backward per thread count (after a warm-up) and set the fastest.

    Runs in eval mode (no dropout: no RNG is used) on a fixed batch; gradients are dropped afterwards.
    Returns ``(threads, {threads: seconds})``.
    """
    starts = fixed_windows(len(data), block_size, batch_size)
    x, y = windows_to_batch(data, starts, block_size, torch.device("cpu"))
    was_training = model.training
    model.eval()
    timings = {}
    for n in candidates:
        torch.set_num_threads(n)
        best = math.inf
        for _ in range(2):  # the first is a warm-up
            t0 = time.perf_counter()
            with autocast:
                _, loss = model(x, y)
            loss.backward()
            best = time.perf_counter() - t0
        timings[n] = best
    model.zero_grad(set_to_none=True)
    model.train(was_training)
    threads = min(timings, key=timings.get)
    torch.set_num_threads(threads)
    return threads, timings


def run_name_for(args) -> str:
    if args.run_name is not None:
        name = args.run_name
        if not name or name in (".", "..") or "/" in name or os.sep in name:
            raise SystemExit(
                f"pretrain.py: error: --run-name {name!r} must be a plain folder name "
                "(no path separators; it is created under --out-dir)"
            )
        return name
    return "pretrain" + ("-rope" if args.rope else "") + ("-bpe" if args.bpe else "")


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextlib.contextmanager
def sigterm_as_interrupt(enabled: bool = True):
    """While inside, SIGTERM (kill, timeout, a scheduler's preemption) raises KeyboardInterrupt, so it takes
    Ctrl-C's path: write a checkpoint, exit 130.  Off for multi-process runs (the ranks would not agree) and
    outside the main thread (Python delivers signals there only)."""
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def pick_device(name: str, local_rank: int) -> torch.device:
    if name != "auto":
        try:
            dev = torch.device(resolve_device(name))
        except ValueError as e:
            raise SystemExit(f"pretrain.py: error: {e}") from None
        if dev.type == "cuda" and dev.index is None:
            dev = torch.device("cuda", local_rank)
        return dev
    if torch.cuda.is_available():
        return torch.device("cuda", local_rank)
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def pick_dtype(name: str, device: torch.device) -> torch.dtype:
    if name != "auto":
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "cpu" and cpu_has_native_bf16():
        return torch.bfloat16  # measured 4-13% faster than float32, same loss per step (docs/training.md)
    return torch.float32


def cpu_has_native_bf16() -> bool:
    """True when /proc/cpuinfo lists avx512_bf16 or amx_bf16 (without them bfloat16 is emulated, slowly)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = f.read()
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


def lr_at(step: int, progress: float, args) -> float:
    """Linear warm-up over ``warmup_steps``, times a cosine from lr to min_lr over ``progress`` in [0, 1]."""
    progress = min(max(progress, 0.0), 1.0)
    cos = args.min_lr + 0.5 * (args.lr - args.min_lr) * (1.0 + math.cos(math.pi * progress))
    warm = min(1.0, (step + 1) / args.warmup_steps) if args.warmup_steps > 0 else 1.0
    return cos * warm


def write_json_atomic(path: Path, obj) -> None:
    """``obj`` as indented JSON, written atomically (:mod:`storygpt.atomic`)."""
    write_text(path, json.dumps(obj, indent=2) + "\n")


def fixed_windows(n_tokens: int, window: int, count: int) -> np.ndarray:
    """Start offsets of ``count`` evenly spaced windows of ``window + 1`` tokens (deterministic)."""
    last = n_tokens - window - 1
    starts = np.linspace(0, last, num=max(1, count)).round().astype(np.int64)
    return np.unique(starts)


def windows_to_batch(data: np.ndarray, starts: np.ndarray, window: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    arr = np.asarray(data[starts[:, None] + np.arange(window + 1)], dtype=np.int64)
    t = torch.from_numpy(arr)
    if device.type == "cuda":
        t = t.pin_memory().to(device, non_blocking=True)
    else:
        t = t.to(device)
    return t[:, :-1], t[:, 1:]


def load_data(data_dir: Path, kind: str, block_size: int, log):
    """The tokenizer and (train, valid) memmaps of ``data_dir``; SystemExit with a clear message on problems."""
    tok_path = data_dir / f"tokenizer-{kind}.json"
    if not data_dir.is_dir():
        raise SystemExit(
            f"pretrain.py: error: --data {data_dir}: no such folder (give the corpus folder data.py "
            "wrote, e.g. data/shakespeare)"
        )
    if not tok_path.is_file():
        other = "word" if kind == "bpe" else "bpe"
        if (data_dir / f"tokenizer-{other}.json").is_file():
            raise SystemExit(
                f"pretrain.py: error: {tok_path} not found, but {data_dir} holds the {other} token files: "
                f"{'drop' if kind == 'bpe' else 'add'} --bpe, or run `python data.py{' --bpe' if kind == 'bpe' else ''}` "
                f"to write the {kind} ones"
            )
        raise SystemExit(
            f"pretrain.py: error: {tok_path} not found; run `python data.py{' --bpe' if kind == 'bpe' else ''}` "
            f"to write the {kind} token files, or point --data at a corpus folder"
        )
    try:
        tokenizer = load_tokenizer(tok_path)
        train = read_tokens(data_dir / f"train-{kind}.bin", tokenizer)
        valid = read_tokens(data_dir / f"valid-{kind}.bin", tokenizer)
    except (OSError, ValueError) as e:
        raise SystemExit(f"pretrain.py: error: {e}") from e
    for split, tokens in (("train", train), ("valid", valid)):  # a corrupt body would crash the embedding
        if len(tokens) and int(tokens.max()) >= tokenizer.vocab_size:
            pos = int(np.argmax(tokens >= tokenizer.vocab_size))
            raise SystemExit(
                f"pretrain.py: error: {data_dir / f'{split}-{kind}.bin'}: token id {int(tokens[pos])} at position "
                f"{pos:,} is outside the vocabulary (vocab_size {tokenizer.vocab_size}); the file is corrupt, "
                f"run data.py again"
            )
    if len(train) < block_size + 1:
        raise SystemExit(
            f"pretrain.py: error: {data_dir / f'train-{kind}.bin'} has {len(train)} tokens, fewer than one training window "
            f"(block_size + 1 = {block_size + 1}); use a smaller --block-size"
        )
    eval_window = block_size
    if len(valid) < block_size + 1:
        if len(valid) < 2:
            raise SystemExit(
                f"pretrain.py: error: {data_dir / f'valid-{kind}.bin'} has {len(valid)} tokens; at least 2 are needed "
                "for a held-out loss"
            )
        eval_window = len(valid) - 1
        log(
            f"warning: {data_dir / f'valid-{kind}.bin'} has only {len(valid)} tokens, fewer than one window "
            f"(block_size + 1 = {block_size + 1}); the held-out loss uses one window of {eval_window} tokens"
        )
    return tokenizer, train, valid, eval_window


def main(argv: list[str] | None = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    explicit = set(vars(build_parser(suppress_defaults=True).parse_args(argv)))
    for name, low in (
        ("minutes", 0.0),
        ("batch_size", 1),
        ("eval_interval", 1),
        ("eval_windows", 1),
        ("block_size", 1),
        ("lr", 0.0),
        ("min_lr", 0.0),
        ("warmup_steps", 0),
        ("grad_clip", 0.0),
        ("weight_decay", 0.0),
        ("max_steps", 0),
        ("threads", 1),
    ):
        value = getattr(args, name)
        if value is not None and value < low:
            parser.error(f"--{name.replace('_', '-')} must be >= {low}, got {value}")
    for name in ("minutes", "lr", "min_lr", "weight_decay", "grad_clip", "dropout", "rope_theta"):
        if not math.isfinite(getattr(args, name)):
            parser.error(f"--{name.replace('_', '-')} must be a finite number, got {getattr(args, name)}")

    # ---------------------------------------------------------- distributed
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
    ddp = world > 1
    master = rank == 0

    def log(msg: str) -> None:
        if master:
            from tqdm import tqdm

            # clear the progress bar (on stderr), print and flush, then redraw the bar: flushing before the
            # redraw keeps the line whole even when stdout is a pipe or a file (block-buffered)
            with tqdm.external_write_mode(file=sys.stdout):
                print(msg, file=sys.stdout, flush=True)

    run_dir = Path(args.out_dir) / run_name_for(args)
    ckpt_path, best_path, metrics_path = run_dir / "ckpt.pt", run_dir / "best.pt", run_dir / "metrics.json"
    existing = run_dir
    while not existing.exists() and existing != existing.parent:  # the folder the run folder will be made in
        existing = existing.parent
    if not existing.is_dir():
        raise SystemExit(f"pretrain.py: error: --out-dir {args.out_dir}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise SystemExit(f"pretrain.py: error: --out-dir {args.out_dir}: cannot write in {existing}")
    resumed = None
    if args.resume:
        if args.force:
            raise SystemExit("pretrain.py: error: --resume and --force contradict each other")
        try:
            resumed = read_checkpoint(ckpt_path)
        except FileNotFoundError:
            raise SystemExit(f"pretrain.py: error: --resume: no checkpoint at {ckpt_path}") from None
        except CheckpointError as e:
            raise SystemExit(f"pretrain.py: error: --resume: {e}") from None
        missing = [k for k in ("optimizer", "step", "rng", "args", "data_dir") if k not in resumed]
        if missing:
            raise SystemExit(f"pretrain.py: error: --resume: {ckpt_path} lacks the training state {missing}")
        saved = dict(resumed["args"])
        moved_data = None  # the corpus folder was moved: --data names its new place (the fingerprint is checked)
        if not Path(resumed["data_dir"]).is_dir():
            if "data" not in explicit:
                raise SystemExit(
                    f"pretrain.py: error: --resume: the corpus folder {resumed['data_dir']} that {ckpt_path} was "
                    "trained on is gone; pass --data with its new place"
                )
            moved_data = args.data
            explicit = explicit - {"data"}

        def differs(k: str) -> bool:
            if k == "data":  # paths: the same folder may be named relatively or absolutely
                return Path(args.data).resolve() != Path(resumed["data_dir"]).resolve()
            return saved[k] != getattr(args, k)

        ignored = sorted(k for k in explicit - RESUME_OVERRIDABLE if k in saved and differs(k))
        if ignored:
            log(f"warning: --resume keeps the run's own {', '.join('--' + k.replace('_', '-') for k in ignored)}")
        for k, v in saved.items():
            if k not in RESUME_OVERRIDABLE or k not in explicit:
                if k not in ("out_dir", "run_name", "resume", "force"):
                    setattr(args, k, v)
        args.data = resumed["data_dir"] if moved_data is None else moved_data
        if moved_data is not None:
            log(f"note: {resumed['data_dir']} is gone; resuming on --data {moved_data}")
    elif ckpt_path.exists() and not args.force:
        raise SystemExit(
            f"pretrain.py: error: {ckpt_path} already exists; pass --resume to continue that run, --force to start it "
            f"over (overwriting it), or --run-name for a new run folder"
        )

    if ddp:
        import torch.distributed as dist

    device = pick_device(args.device, local_rank)
    if ddp:
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend=backend)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    max_threads = max(1, usable_cores() // max(1, local_world))
    threads = args.threads or max_threads
    if threads > usable_cores():  # far too many OpenMP threads crash the process (a segfault, no message)
        log(
            f"warning: --threads {threads} is more than the {usable_cores()} cores this process may use; "
            f"using {usable_cores()}"
        )
        threads = usable_cores()
    torch.set_num_threads(threads)
    dtype = pick_dtype(args.dtype, device)
    if dtype == torch.float32:
        autocast = contextlib.nullcontext()
    else:
        autocast = torch.autocast(device_type=device.type, dtype=dtype)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    # ------------------------------------------------------------------ data
    data_dir = Path(args.data).resolve()
    args.data = str(data_dir)  # checkpoints store the absolute folder, whatever the cwd of this run
    kind = "bpe" if args.bpe else "word"
    tokenizer, train, valid, eval_window = load_data(data_dir, kind, args.block_size, log)
    if resumed is not None and tokenizer.fingerprint() != _fingerprint_of_dict(resumed["tokenizer"]):
        raise SystemExit(
            f"pretrain.py: error: --resume: the tokenizer in {data_dir} is not the one {ckpt_path} was trained with "
            "(the corpus folder was rebuilt?)"
        )
    valid_starts = fixed_windows(len(valid), eval_window, args.eval_windows)
    train_starts = fixed_windows(len(train), eval_window, args.eval_windows)

    # ----------------------------------------------------------------- model
    try:
        config = (
            GPTConfig(
                vocab_size=tokenizer.vocab_size,
                block_size=args.block_size,
                n_layer=args.n_layer,
                n_head=args.n_head,
                n_embd=args.n_embd,
                dropout=args.dropout,
                position="rope" if args.rope else "learned",
                rope_theta=args.rope_theta,
            )
            if resumed is None
            else GPTConfig.from_dict(dict(resumed["config"]))
        )
    except ValueError as e:
        raise SystemExit(f"pretrain.py: error: {e} (check --n-layer/--n-head/--n-embd/--block-size/--dropout)") from e
    torch.manual_seed(args.seed)
    model = GPT(config).to(device)
    if resumed is not None:
        model.load_state_dict(clean_state_dict(resumed["model"]))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=args.lr,
        betas=(0.9, 0.95),
        eps=1e-8,
    )
    scaler = torch.amp.GradScaler(device.type, enabled=(dtype == torch.float16))
    if resumed is not None:
        optimizer.load_state_dict(resumed["optimizer"])
        if "scaler" in resumed and scaler.is_enabled():
            scaler.load_state_dict(resumed["scaler"])
    train_model = model
    if args.compile:
        train_model = torch.compile(train_model)
    if ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP

        train_model = DDP(train_model, device_ids=[device.index] if device.type == "cuda" else None)

    batch_rng = np.random.default_rng([args.seed, rank])
    step, tokens_seen, elapsed_before = 0, 0, 0.0
    train_time_before = 0.0  # seconds spent in training steps (not evaluations) by earlier sessions; None: unknown
    previous_tps = None  # tokens/s an earlier session recorded, for checkpoints older than "train_time"
    history: list[dict] = []
    best_valid = math.inf
    if resumed is not None:
        step, tokens_seen = int(resumed["step"]), int(resumed["tokens_seen"])
        elapsed_before = float(resumed["elapsed"])
        train_time_before = float(resumed["train_time"]) if "train_time" in resumed else None
        if train_time_before is None and master:
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                previous_tps = float(json.loads(metrics_path.read_text(encoding="utf-8"))["tokens_per_sec"])
        history = [dict(h) for h in resumed["history"]]
        best_valid = min((h["valid_loss"] for h in history), default=math.inf)
        rng = resumed["rng"]
        if int(rng.get("world_size", 1)) == world:
            mine = rng["ranks"][rank]
            set_rng_state(mine["global"])
            batch_rng.bit_generator.state = mine["batch"]
        else:
            log(
                f"warning: the run was saved with {rng.get('world_size')} processes, now {world}: "
                "batch sampling restarts from fresh seeds"
            )
            batch_rng = np.random.default_rng([args.seed, rank, step])
    elif master and args.force:
        for p in (ckpt_path, best_path, metrics_path):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()

    nothing_left = (
        step >= (args.max_steps if args.max_steps is not None else math.inf) or elapsed_before >= args.minutes * 60.0
    )
    if args.threads is None and device.type == "cpu" and max_threads > 1 and not nothing_left:
        threads, timings = probe_threads(
            model, train, args.block_size, args.batch_size, autocast, sorted({1, max_threads})
        )
        log(
            "torch threads: timed "
            + ", ".join(f"{n} -> {t * 1000:.0f} ms" for n, t in timings.items())
            + f" per training step; using {threads} (set --threads to choose)"
        )
    n_params = model.num_parameters()
    budget = args.minutes * 60.0
    max_steps = args.max_steps if args.max_steps is not None else math.inf
    if master:
        run_dir.mkdir(parents=True, exist_ok=True)
        # temporary files a killed run (kill -9, power loss) left behind; the files under final names are whole
        for pattern in (
            "ckpt.pt.*.tmp",
            "best.pt.*.tmp",
            "metrics.json.*.tmp",  # older versions' names
            ".ckpt.pt.*.tmp",
            ".best.pt.*.tmp",
            ".metrics.json.*.tmp",
        ):
            for stale in run_dir.glob(pattern):
                stale.unlink(missing_ok=True)
        log(
            f"run {run_dir} | corpus {data_dir.name} ({kind}, vocab {tokenizer.vocab_size}) | "
            f"train {len(train):,} tokens, valid {len(valid):,} | {n_params:,} parameters, "
            f"{config.position} positions | device {device}, {str(dtype).replace('torch.', '')}, "
            f"{threads} threads x {world} process(es)"
            + (f" | resumed at step {step}, {elapsed_before:.0f}s spent" if resumed is not None else "")
        )

    # ------------------------------------------------------------ helpers
    @torch.no_grad()
    def evaluate() -> tuple[float, float]:
        model.eval()
        out = []
        for data, starts in ((train, train_starts), (valid, valid_starts)):
            mine = starts[rank::world]
            total = torch.zeros(2, dtype=torch.float64, device=device)
            for i in range(0, len(mine), args.batch_size):
                x, y = windows_to_batch(data, mine[i : i + args.batch_size], eval_window, device)
                with autocast:
                    _, loss = model(x, y)
                total[0] += loss.double() * len(x)
                total[1] += len(x)
            if ddp:
                dist.all_reduce(total)
            out.append((total[0] / total[1]).item())
        model.train()
        return out[0], out[1]

    def gather_rng() -> dict:
        mine = {"global": rng_state(), "batch": batch_rng.bit_generator.state}
        if not ddp:
            return {"world_size": 1, "ranks": [mine]}
        all_states = [None] * world
        dist.all_gather_object(all_states, mine)
        return {"world_size": world, "ranks": all_states}

    def checkpoint(elapsed: float, is_best: bool) -> None:
        rng = gather_rng()  # collective: every rank takes part
        if not master:
            return
        ckpt = {
            "model": clean_state_dict(model.state_dict()),
            "config": config.to_dict(),
            "tokenizer": tokenizer.to_dict(),
            "data_dir": str(data_dir),
            "corpus": data_dir.name,
            "optimizer": optimizer.state_dict(),
            "step": step,
            "tokens_seen": tokens_seen,
            "elapsed": elapsed,
            "history": history,
            "rng": rng,
            "train_time": (train_time_before or 0.0) + session_train_time,
            "args": to_plain(vars(args)),
        }
        if scaler.is_enabled():
            ckpt["scaler"] = scaler.state_dict()
        save_checkpoint(ckpt_path, ckpt)
        if is_best:
            save_checkpoint(best_path, ckpt)

    def tokens_per_sec(session_tokens: int, session_train_time: float) -> float | None:
        """Tokens seen over the whole run / seconds spent in training steps over the whole run."""
        if train_time_before is not None and train_time_before + session_train_time > 0:
            return tokens_seen / (train_time_before + session_train_time)
        if session_train_time > 0:  # a checkpoint from before "train_time" was recorded: this session's figure
            return session_tokens / session_train_time
        return previous_tps

    def metrics(final: bool, session_tokens: int, session_train_time: float) -> dict:
        last = history[-1] if history else {}
        return {
            "run": str(run_dir),
            "corpus": data_dir.name,
            "tokenizer": kind,
            "position": config.position,
            "parameters": n_params,
            "steps": step,
            "tokens_seen": tokens_seen,
            "tokens_per_sec": tokens_per_sec(session_tokens, session_train_time),
            "elapsed": last.get("elapsed", 0.0),
            "final_valid_loss": last.get("valid_loss"),
            "best_valid_loss": best_valid if best_valid < math.inf else None,
            "finished": final,
            "config": config.to_dict(),
            "device": str(device),
            "dtype": str(dtype).replace("torch.", ""),
            "processes": world,
            "history": history,
        }

    def record_eval(elapsed: float, lr: float) -> bool:
        nonlocal best_valid
        train_loss, valid_loss = evaluate()
        history.append(
            {
                "step": step,
                "tokens_seen": tokens_seen,
                "elapsed": round(elapsed, 3),
                "lr": lr,
                "train_loss": train_loss,
                "valid_loss": valid_loss,
            }
        )
        is_best = valid_loss < best_valid
        best_valid = min(best_valid, valid_loss)
        log(
            f"step {step}: train loss {train_loss:.4f}, held-out loss {valid_loss:.4f}"
            f"{' (best)' if is_best else ''} | {elapsed:.0f}s"
        )
        return is_best

    # -------------------------------------------------------------- training
    from tqdm import tqdm

    bar = tqdm(
        total=round(budget),
        initial=min(round(elapsed_before), round(budget)),
        unit="s",
        disable=(not master) or args.no_progress or nothing_left,
        dynamic_ncols=True,
        file=sys.stderr,
        bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt}s{postfix}",
    )
    t_start = time.perf_counter()
    session_tokens, session_train_time, session_steps = 0, 0.0, 0
    last_eval_step = step if resumed is not None else -1
    lr = lr_at(step, 0.0, args)
    loss_value = float("nan")
    model.train()

    def now_elapsed() -> float:
        el = elapsed_before + time.perf_counter() - t_start
        if ddp:  # every rank must agree on the schedule and on when to stop
            t = torch.tensor([el], dtype=torch.float64)
            dist.broadcast(t, 0)
            el = float(t.item())
        return el

    with sigterm_as_interrupt(enabled=not ddp):  # kill/timeout/preemption: checkpoint like Ctrl-C
        try:
            while True:
                elapsed = now_elapsed()
                if step >= max_steps or elapsed >= budget:
                    break
                progress = max(
                    elapsed / budget if budget > 0 else 1.0, step / max_steps if max_steps < math.inf else 0.0
                )
                lr = lr_at(step, progress, args)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                t0 = time.perf_counter()
                starts = batch_rng.integers(0, len(train) - args.block_size, size=args.batch_size)
                x, y = windows_to_batch(train, starts, args.block_size, device)
                with autocast:
                    _, loss = train_model(x, y)
                scaler.scale(loss).backward()
                if args.grad_clip > 0:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
                loss_value = loss.item()
                step += 1
                session_steps += 1
                tokens_seen += args.batch_size * args.block_size * world
                session_tokens += args.batch_size * args.block_size * world
                session_train_time += time.perf_counter() - t0
                if not math.isfinite(loss_value):
                    raise SystemExit(
                        f"pretrain.py: error: the training loss became {loss_value} at step {step}; try a lower --lr"
                    )
                if master and not bar.disable:
                    el = elapsed_before + time.perf_counter() - t_start
                    tps = session_tokens / session_train_time
                    left = budget - el
                    if max_steps < math.inf:
                        left = min(left, (max_steps - step) * (time.perf_counter() - t_start) / session_steps)
                    bar.n = min(round(el), round(budget))
                    bar.set_postfix_str(
                        f"step {step} loss {loss_value:.3f} {tps:,.0f} tok/s {max(0, left):.0f}s left", refresh=False
                    )
                    bar.update(0)
                if step % args.eval_interval == 0:
                    el = now_elapsed()
                    is_best = record_eval(el, lr)
                    last_eval_step = step
                    checkpoint(el, is_best)
                    if master:
                        write_json_atomic(metrics_path, metrics(False, session_tokens, session_train_time))
        except KeyboardInterrupt:
            bar.close()
            if not ddp and step > 0:
                checkpoint(elapsed_before + time.perf_counter() - t_start, False)
                log(f"interrupted: checkpoint written at step {step} to {ckpt_path}; continue with --resume")
            raise SystemExit(130) from None
    bar.close()

    elapsed = now_elapsed()
    if resumed is not None and session_steps == 0:
        if master:
            spent = (
                f"{elapsed_before:.0f} s of {budget:.0f} s"
                if elapsed_before >= budget
                else f"{step:,} of {max_steps:,} steps"
            )
            result = metrics(True, 0, 0.0)
            write_json_atomic(metrics_path, result)
            log(f"budget already spent ({spent}): nothing to train | {run_dir}")
        else:
            result = metrics(True, 0, 0.0)
        if ddp:
            dist.barrier()
            dist.destroy_process_group()
        return result
    if last_eval_step != step:
        is_best = record_eval(elapsed, lr)
        checkpoint(elapsed, is_best)
    result = metrics(True, session_tokens, session_train_time)
    if master:
        write_json_atomic(metrics_path, result)
        log(
            f"done: {n_params:,} parameters, {step:,} steps, {tokens_seen:,} tokens seen, "
            f"{result['tokens_per_sec'] or 0:,.0f} tokens/s, final held-out loss {result['final_valid_loss']:.4f} "
            f"(best {result['best_valid_loss']:.4f}) | {elapsed:.0f}s | {run_dir}"
        )
    if ddp:
        dist.barrier()
        dist.destroy_process_group()
    return result


def _fingerprint_of_dict(d: dict) -> str:
    return tokenizer_from_dict(d).fingerprint()


if __name__ == "__main__":
    main()
