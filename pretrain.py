#!/usr/bin/env python
"""Pretrain a GPT on the token files data.py wrote; the loop itself is storygpt/train/loop.py.

    python data.py --bpe                      # first: token files in data/shakespeare/
    python pretrain.py --rope --bpe           # -> checkpoints/shakespeare/rope-bpe-8192/
    python pretrain.py --rope --bpe --resume  # continue where it stopped
    python pretrain.py --tokenizer bpe:2048 --preset medium --budget-flops 1e15
    torchrun --nproc_per_node 2 pretrain.py   # several processes (DistributedDataParallel)

See docs/training.md for the flags, budgets, schedule, files and how the defaults were chosen.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from storygpt import runtime
from storygpt.cli import check_ranges, range_text, show, table_parser
from storygpt.model import recipes
from storygpt.model.presets import PRESETS, preset
from storygpt.tokenizers.registry import kind_help
from storygpt.tokenizers.spec import SpecError, parse_spec
from storygpt.train import tracking
from storygpt.train.runfolder import Interrupted, Paused, RunError, RunFiles, locked, log_master

# Nothing above imports torch: a bad flag or an existing run folder is answered in a fraction of a second.
# train_in imports the training modules (and with them torch) once the run is sure to start.

POSITION = {False: "learned", True: "rope"}
BUDGETS = ("minutes", "max_steps", "budget_tokens", "budget_chars", "budget_flops")
# flags a --resume may change; every other flag keeps the run's value
RESUME_OVERRIDABLE = {*BUDGETS, "eval_interval", "device", "dtype", "threads", "compile", "no_progress", "data", "eval"}
RESUME_OVERRIDABLE |= {
    "out_dir",
    "run_name",
    "run_dir",
    "resume",
    "force",
    "total_batch",
    "total_batch_size",
    "dry_run",
    "log",
    "branch",
    "pause_after_branches",
}


def on_off(text: str) -> bool:
    """``on`` -> True, ``off`` -> False (the type of the recipe's yes/no parts)."""
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")
    return text == "on"


on_off.__name__ = "on/off"  # argparse names the type in its error
# (flag, type, default, help) by group; bool flags have type None
FLAGS = {
    "data and run folder": [
        ("--data", str, "data/shakespeare", "corpus folder written by data.py"),
        ("--tokenizer", str, None, "SPEC of the token files, as data.py took it (the kinds: below)"),
        ("--bpe", None, False, "short for --tokenizer bpe (= bpe:8192)"),
        ("--rope", None, False, "rotary position embeddings instead of learned absolute positions"),
        ("--out-dir", str, "checkpoints", "root of the run folders: OUT_DIR/CORPUS/RUN_NAME"),
        ("--run-name", str, None, "run folder name (default: rope-SLUG or learned-SLUG, e.g. rope-bpe-8192)"),
        ("--run-dir", str, None, "the run folder itself (instead of --out-dir/CORPUS/--run-name)"),
        ("--resume", None, False, "continue the run in the run folder from its ckpt.pt"),
        ("--force", None, False, "start afresh even if the run folder holds a checkpoint (it is overwritten)"),
        (
            "--dry-run",
            None,
            False,
            "print the settings (after --preset), the run folder and the size estimate (parameters, FLOPs/token, "
            "memory: docs/training.md) as JSON, the estimate also on stderr; train nothing",
        ),
    ],
    "budget (the run stops at the first one reached; default: --minutes 10 when none is given)": [
        ("--minutes", float, None, "wall-clock minutes, evaluations included, compilation excluded"),
        ("--max-steps", int, None, "optimizer steps"),
        ("--budget-tokens", float, None, "training tokens seen"),
        ("--budget-chars", float, None, "training characters seen (tokens x characters per token)"),
        ("--budget-flops", float, None, "training FLOPs (docs/training.md gives the formula)"),
        (
            "--branch",
            list,
            None,
            "NAME=BUDGET: also leave the run folder NAME beside this one, a run of this budget kind at BUDGET "
            "(below this run's) paused at its decay start; pretrain.py --resume there trains its decay, the same "
            "run as one trained on that budget alone (repeatable; --schedule wsd only; docs/training.md)",
        ),
        (
            "--pause-after-branches",
            None,
            False,
            "with --branch: stop once every branch is written (before training past the last one's decay start), "
            "a checkpoint written; --resume continues the run as if it had not stopped (compare.py --halving)",
        ),
    ],
    "model (a --preset fills these; flags given beside it win)": [
        ("--preset", str, None, f"named model shape: {', '.join(PRESETS)} (docs/training.md)"),
        ("--n-layer", int, 3, "transformer blocks"),
        ("--n-head", int, 4, "attention heads per block"),
        ("--n-embd", int, 96, "embedding width"),
        ("--block-size", int, 128, "context length in tokens"),
        ("--dropout", float, 0.0, "dropout probability (0 .. below 1)"),
        ("--rope-theta", float, 10000.0, "rotary frequency base (with --rope)"),
    ],
    "recipe (docs/training.md; a part flag given beside --recipe replaces that part)": [
        ("--recipe", str, recipes.DEFAULT, "modern (RMSNorm, QK-norm, ReLU^2, Muon) or gpt2 (LayerNorm, GELU, AdamW)"),
        *recipes.flag_rows(on_off),  # every part (storygpt/model/config.py), from its field
    ],
    "optimization": [
        ("--batch-size", int, 16, "windows per micro-batch and process"),
        ("--grad-accum", int, 1, "micro-batches per step: a step is batch-size x grad-accum x processes"),
        ("--total-batch", int, None, "windows per step, all processes: --grad-accum = this/(batch x processes)"),
        (
            "--total-batch-size",
            int,
            None,
            "tokens per optimizer step, all processes, as nanoGPT counts them: --grad-accum = "
            "this/(batch-size x block-size x processes)",
        ),
        ("--lr", float, 3e-3, "adamw only (gpt2 recipe): peak learning rate"),
        ("--min-lr", float, 3e-4, "adamw only: learning rate at the end of the schedule"),
        ("--weight-decay", float, 0.1, "adamw only: weight decay (matrices and embeddings only)"),
        ("--grad-clip", float, 1.0, "clip the gradient norm to this (0: off)"),
        ("--seed", int, 1337, "random seed (model init; batch sampling uses seed and rank)"),
    ],
    "evaluation": [
        ("--eval-interval", int, 100, "evaluate and write a checkpoint every this many steps"),
        ("--eval-windows", int, 64, "fixed training windows for the train loss printed at each evaluation"),
        ("--eval-chars", int, 100_000, "held-out characters (the start of valid.txt) for nats/token and bits/char"),
        (
            "--eval",
            list,
            None,
            "NAME=PATH: also measure this named evaluation set (its first --eval-chars characters) at each "
            "evaluation, logged in metrics.jsonl under sets (repeatable; default: each held-out work of valid.txt)",
        ),
        (
            "--log",
            str,
            None,
            "also log metrics.jsonl's scalars, recipe and provenance to tensorboard (RUN/tensorboard), wandb "
            "(RUN/wandb; WANDB_MODE=offline: no upload) or tensorboard,wandb; off unless given (none: off on --resume)",
        ),
    ],
    "hardware": [
        ("--device", str, "auto", "auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N, mps"),
        ("--dtype", str, "auto", "compute dtype (auto: bfloat16/float16 on CUDA, CPU: docs/training.md)"),
        ("--threads", int, None, "CPU threads per process (default: 1 or cores/processes, the faster)"),
        ("--compile", None, False, "torch.compile the model (its time is reported apart, not charged to --minutes)"),
        ("--no-progress", None, False, "no tqdm progress bar"),
    ],
}
# allowed values: (low, high), both inclusive, None for no bound; every float must be finite
RANGES = dict.fromkeys(
    "batch_size grad_accum total_batch total_batch_size eval_interval eval_windows eval_chars".split(), (1, None)
)
RANGES |= dict.fromkeys("block_size threads max_steps budget_tokens budget_chars budget_flops".split(), (1, None))
RANGES |= dict.fromkeys("lr min_lr grad_clip weight_decay".split(), (0, None))
RANGES |= recipes.flag_ranges()
RANGES |= {
    "minutes": (0, None, "strict"),
    "seed": (0, 2**63 - 1),
    "dropout": (0, None),  # and below 1 (parse)
    "rope_theta": (0, None, "strict"),
}


def build_parser(suppress_defaults: bool = False) -> argparse.ArgumentParser:
    """The parser of FLAGS; with ``suppress_defaults`` it returns only the flags given explicitly."""
    description = "Pretrain a GPT on token files written by data.py."
    choices = {"--dtype": ["auto", "float32", "bfloat16", "float16"], "--recipe": list(recipes.RECIPES)}
    choices |= recipes.flag_choices()
    p = table_parser("pretrain.py", description, FLAGS, choices, suppress_defaults)
    parts = recipes.flag_ranges()  # their help gives their range already
    for action in p._actions:  # the kinds registered when the parser is built (plug-ins too), from the registry
        if action.dest == "tokenizer":
            action.help = f"SPEC of the token files, as data.py took it: {kind_help()}"
        elif action.dest in RANGES and action.dest not in parts and action.dest != "dropout":
            action.help += f" ({range_text(RANGES[action.dest])})"
    return p


def parse(argv: list[str]) -> tuple[argparse.Namespace, set[str]]:
    """Parse, check ranges, fill a --preset in; returns (args, the flags given explicitly)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    explicit = set(vars(build_parser(suppress_defaults=True).parse_args(argv)))
    check_ranges(parser, args, RANGES)
    if args.dropout is not None and args.dropout >= 1:
        parser.error(f"--dropout must be below 1 (a probability of zeroing), got {args.dropout}")
    if args.preset is not None:
        try:
            vars(args).update({k: v for k, v in preset(args.preset).items() if k not in explicit})
        except ValueError as e:
            parser.error(f"--preset: {e}")
    # the recipe's parts, part flags given win; a flag of the other optimizer is refused (on a --resume without
    # --recipe, once the run's own recipe is read: resume.check_recipe)
    checked = set() if args.resume and "recipe" not in explicit else explicit
    try:
        vars(args).update(recipes.Recipe.from_flags(vars(args), checked).flags())
    except ValueError as e:
        parser.error(str(e))
    why = recipes.model_error(vars(args))  # the soft-cap's 0 or 0.01 .. 10000
    if why:
        parser.error(why)
    if args.min_lr > args.lr and "min_lr" in explicit and not args.resume:  # a --resume keeps the run's own
        parser.error(f"--min-lr {args.min_lr} is above --lr {args.lr} (the peak learning rate)")
    args.min_lr = min(args.min_lr, args.lr)  # a --lr below the default --min-lr: no rise at the end
    if args.total_batch is not None and args.total_batch_size is not None:
        parser.error("--total-batch (windows) and --total-batch-size (tokens) set the same thing: give one of them")
    if args.device not in ("auto", "cpu"):  # refused at once, before any data is read (this imports torch)
        try:
            runtime.resolve_device(args.device)
        except ValueError as e:
            parser.error(str(e))
    if args.bpe and args.tokenizer is not None:
        parser.error("--bpe is short for --tokenizer bpe: give one of them")
    try:
        args.tokenizer = str(parse_spec(args.tokenizer or ("bpe" if args.bpe else "word")))
    except SpecError as e:
        parser.error(f"--tokenizer: {e}")
    args.bpe = False
    try:
        args.log = list(tracking.parse_kinds(args.log))
    except (ValueError, tracking.TrackingError) as e:
        parser.error(f"--log {args.log}: {e}" if isinstance(e, ValueError) else str(e))
    from storygpt.data.evalsets import read_eval_sets

    try:  # a usage error (exit 2); session() reads them again, cut to --eval-chars
        read_eval_sets(args.eval)
    except ValueError as e:
        parser.error(str(e))
    return args, explicit


def run_folder(args) -> Path:
    if args.run_dir is not None:
        return Path(args.run_dir)
    name = args.run_name if args.run_name is not None else f"{POSITION[args.rope]}-{parse_spec(args.tokenizer).slug}"
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise RunError(f"--run-name {name!r} must be a plain folder name (no path separators)")
    return Path(args.out_dir) / Path(args.data).resolve().name / name


def main(argv: list[str] | None = None) -> dict:
    args, explicit = parse(list(sys.argv[1:] if argv is None else argv))
    dist, stop = runtime.Dist.from_env(), runtime.StopFlag()
    try:
        if args.dry_run:
            return dry_run(args)
        # run as a process (argv None): after a stop, a second signal must not kill it while it logs and exits
        stopping = lambda s: log("stopping: finishing the step, then writing a checkpoint")  # noqa: E731
        with stop.catching(on_first=stopping, until_exit=argv is None):
            return session(args, explicit, dist, stop)
    except RunError as e:
        raise SystemExit(f"pretrain.py: error: {e}") from None
    except Interrupted as e:
        log(f"interrupted: checkpoint written at step {e.args[0]} to {show(e.args[1])}; continue with --resume")
        raise SystemExit(130) from None
    except Paused as e:
        log(
            f"paused after its branches: checkpoint written at step {e.args[0]} to {show(e.args[1])}; continue with --resume"
        )
        return {"paused_at_step": e.args[0], "folder": str(Path(e.args[1]).parent)}
    finally:
        dist.close()


log = log_master


def dry_run(args) -> int:
    """Print the flags' settings, the run folder and :func:`estimate` (a --resume run's stored settings are
    not read); the estimate also on stderr, in words."""
    folder = run_folder(args)
    check_pause(args)
    if args.branch:  # as the run refuses them (a --resume's stored budgets and recipe are not read: names only)
        checked_branches(args, folder, resumed=args.resume)
    with_budget(args)
    size = estimate(args)
    settings = {k: v for k, v in vars(args).items() if k != "dry_run"}
    print(json.dumps({**settings, "run_folder": str(folder), "estimate": size}, indent=1))
    print(estimate_text(size), file=sys.stderr)
    return 0


#: the vocabulary size assumed by the estimate where the SPEC does not give one (GPT-2's)
ASSUMED_VOCAB = 50257
#: vocabulary sizes of SPECs without a size in them (the byte tokenizer: 256 bytes and its end-of-text)
KNOWN_VOCAB = {"byte": 257, "tiktoken:gpt2": 50257}


def spec_vocab(text: str) -> int | None:
    """The vocabulary size SPEC ``text`` gives or :data:`KNOWN_VOCAB` knows, else None."""
    spec = parse_spec(text)
    return spec.vocab_size or KNOWN_VOCAB.get(str(spec))


def estimate(args, vocab_size: int | None = None, half: bool | None = None) -> dict:
    """Parameters (total, embedding, rest), training FLOPs per token and memory (bytes: weights, gradients,
    optimizer state, activations of one micro-batch; storygpt/model/sizing.py) of the run ``args`` describes.

    ``vocab_size``: the tokenizer's (default: the SPEC's, else :data:`ASSUMED_VOCAB`); ``half``: 16-bit autocast
    (default: --dtype bfloat16/float16, or auto on CUDA; auto elsewhere counts float32, the larger).
    """
    from types import SimpleNamespace

    from storygpt.model import flops, sizing

    assumed = vocab_size is None and spec_vocab(args.tokenizer) is None
    if vocab_size is None:
        vocab_size = spec_vocab(args.tokenizer) or ASSUMED_VOCAB
    if half is None:
        half = args.dtype in ("bfloat16", "float16") or (args.dtype == "auto" and args.device.startswith("cuda"))
    cfg = {k: getattr(args, k) for k in ("n_layer", "n_head", "n_embd", "block_size", "norm", "bias")}
    cfg |= {"vocab_size": vocab_size, "tie_embeddings": args.tie_embeddings, "position": POSITION[args.rope]}
    total, emb = sizing.parameter_counts(cfg)
    return {
        "vocab_size": vocab_size,
        "vocab_assumed": assumed,
        "params": total,
        "params_embedding": emb,
        "params_non_embedding": total - emb,
        "flops_per_token": flops.flops_per_token(SimpleNamespace(**cfg)),
        "micro_batch_tokens": args.batch_size * args.block_size,
        "activation_bytes": 2 if half else 4,
        "memory": sizing.memory_estimate(cfg, args.optimizer, args.batch_size, half),
    }


def estimate_text(size: dict) -> str:
    """:func:`estimate` in words (one line each for parameters, FLOPs and memory)."""
    from storygpt.model.sizing import gib

    m = size["memory"]
    vocab = f"vocab {size['vocab_size']:,}" + (
        " (assumed: GPT-2's; the SPEC gives none)" if size["vocab_assumed"] else ""
    )
    return (
        f"parameters: {size['params']:,} ({size['params_embedding']:,} embedding, "
        f"{size['params_non_embedding']:,} rest; {vocab})\n"
        f"FLOPs per token: {size['flops_per_token']:,} (training: forward + backward)\n"
        f"memory: weights {gib(m['weights'])}, gradients {gib(m['gradients'])}, optimizer state "
        f"{gib(m['optimizer'])}, activations {gib(m['activations'])} ({size['micro_batch_tokens']:,} tokens "
        f"a micro-batch, {size['activation_bytes']}-byte activations); total {gib(m['total'])}"
    )


def check_fits(args, device, dtype, vocab_size: int | None = None) -> None:
    """Refuse a run whose :func:`estimate` exceeds the device's memory (CUDA: its total; else the RAM).

    Raises:
        RunError: naming both numbers.
    """
    import torch

    from storygpt.model.sizing import device_memory, gib

    need = estimate(args, vocab_size, dtype in (torch.bfloat16, torch.float16))["memory"]["total"]
    have, what = device_memory(device)
    if have is not None and need > have:
        raise RunError(
            f"--batch-size {args.batch_size} x --block-size {args.block_size} does not fit: the estimate is "
            f"{gib(need)} (pretrain.py --dry-run shows its parts), above {what}, {gib(have)}; use a smaller "
            "--batch-size (and --grad-accum or --total-batch-size for the same tokens per step)"
        )


def with_budget(args) -> None:
    """No budget given: ``--minutes 10``."""
    if not any(getattr(args, b) is not None for b in BUDGETS):
        args.minutes = 10.0


def session(args, explicit: set[str], dist: runtime.Dist, stop: runtime.StopFlag) -> dict:
    from storygpt.data.evalsets import read_eval_sets
    from storygpt.eval.bits import take_characters

    try:  # every --eval file is read before the run folder is touched
        eval_sets = read_eval_sets(args.eval, lambda docs: take_characters(docs, args.eval_chars))
    except ValueError as e:
        raise RunError(str(e)) from None
    files = RunFiles(run_folder(args))
    if args.resume and args.force:
        raise RunError("--resume and --force contradict each other")
    with locked(files, dist.master):
        return train_in(files, args, explicit, dist, stop, eval_sets)


def train_in(
    files: RunFiles, args, explicit: set[str], dist: runtime.Dist, stop: runtime.StopFlag, eval_sets=()
) -> dict:
    if not args.resume and files.ckpt.exists() and not args.force:
        raise RunError(
            f"{show(files.ckpt)} already exists; pass --resume to continue that run, --force to "
            "start it over (overwriting it), or --run-name for a new run folder"
        )
    from storygpt.checkpoint import run_meta, to_plain
    from storygpt.train import resume, start
    from storygpt.train.inputs import chars_per_token
    from storygpt.train.loop import Budgets, Hyper

    ckpt = resume.read_resumable(files.ckpt) if args.resume else None
    if ckpt is not None:
        resume.check_recipe(ckpt, files.ckpt, args.recipe, explicit)  # a run from before recipes is gpt2
        resume.check_stored_flags(ckpt, files.ckpt, build_parser(), RANGES)
        given, pause = vars(args), args.pause_after_branches
        vars(args).update(resume.resumed_args(given, explicit, ckpt, files.ckpt, RESUME_OVERRIDABLE, BUDGETS, log))
        args.pause_after_branches = pause  # an instruction to this session, never kept by the run
    spec, data_dir = parse_spec(args.tokenizer), Path(args.data).resolve()
    before_step = None
    check_pause(args)
    if args.branch:  # refused before any data is read (and before --minutes 10 fills in a missing budget)
        wanted = checked_branches(args, files.folder, ckpt)
        before_step = brancher_of(args, files, wanted, to_plain({**vars(args), "data": str(data_dir)}))
    with_budget(args)
    try:
        device, dtype, threads = runtime.setup(args.device, args.dtype, args.threads, dist, log)
    except ValueError as e:
        raise RunError(str(e)) from None
    check_fits(args, device, dtype)  # before any data is read
    a = args
    tokenizer, train, heldout = start.load_run_data(
        data_dir, spec, a.block_size, a.eval_chars, ckpt, files.ckpt, eval_sets
    )
    recipe = recipes.Recipe.from_checkpoint(ckpt) if ckpt is not None else recipes.Recipe.from_flags(vars(a))
    shape = {k: getattr(a, k) for k in ("n_layer", "n_head", "n_embd", "block_size", "dropout", "rope_theta")}
    try:
        config = recipe.config(vocab_size=tokenizer.vocab_size, **shape, position=POSITION[a.rope])
    except ValueError as e:
        raise RunError(f"{e} (check --n-layer/--n-head/--n-embd/--block-size/--dropout)") from None
    accum = start.grad_accum_for(a.total_batch, a.batch_size, dist.world, a.grad_accum)
    if a.total_batch_size is not None:
        accum = start.grad_accum_for_tokens(a.total_batch_size, a.batch_size, a.block_size, dist.world)
    log(f"recipe {recipe}")  # its name and the parts that differ from it (rank 0 only)
    options = start.Options(
        recipe.optim, a.eval_windows, a.compile, a.threads is None, not a.no_progress, tuple(a.log or ())
    )
    r, live = start.build(
        config=config,
        tokenizer=tokenizer,
        train=train,
        heldout=heldout,
        hyper=Hyper(
            a.batch_size,
            accum,
            recipe.optim.warmup_steps,
            a.grad_clip,
            a.eval_interval,
            a.seed,
            recipe.optim.schedule,
            recipe.optim.decay_fraction,
        ),
        budgets=Budgets(*(getattr(a, b) for b in BUDGETS)),
        files=files,
        meta={
            **run_meta(spec, data_dir, files.folder, to_plain({**vars(a), "data": str(data_dir)})),
            "recipe": recipe.to_dict(),
        },
        device=device,
        dtype=dtype,
        dist=dist,
        stop=stop,
        log=log,
        options=options,
        chars_per_token=chars_per_token(data_dir, spec.slug, len(train)),
        ckpt=ckpt,
    )
    live.before_step = before_step
    return start.train(r, live, options, threads, dtype, fresh=ckpt is None)


def check_pause(args) -> None:
    """Raises RunError: --pause-after-branches without a --branch (nothing would stop the run)."""
    if args.pause_after_branches and not args.branch:
        raise RunError("--pause-after-branches goes with --branch NAME=BUDGET (it stops the run once they are written)")


def checked_branches(args, folder: Path, ckpt: dict | None = None, resumed: bool = False) -> list:
    """The --branch values of the trunk in ``folder`` as ``[(NAME, BUDGET)]``, checked by
    storygpt.train.branch.check_branches against the run's budgets and schedule (``ckpt``'s recipe on a
    --resume); ``resumed`` without ``ckpt`` (a --dry-run of a --resume): the names and values only.

    Raises:
        RunError: its one line.
    """
    from storygpt.train import branch
    from storygpt.train.loop import Budgets

    budgets, schedule = None, None  # not known: names and values only
    if ckpt is not None or not resumed:
        recipe = recipes.Recipe.from_checkpoint(ckpt) if ckpt else recipes.Recipe.from_flags(vars(args))
        budgets, schedule = Budgets(*(getattr(args, b) for b in BUDGETS)), recipe.optim.schedule
    try:
        return branch.check_branches(args.branch, budgets, schedule, folder)
    except ValueError as e:
        raise RunError(str(e)) from None


def brancher_of(args, files: RunFiles, wanted: list, stored: dict):
    """The --branch folders ``wanted`` (:func:`checked_branches`) of a trunk run (storygpt/train/branch.py) as the
    loop's ``before_step``; ``stored``: the trunk's flags, which each branch's checkpoint records with its budget."""
    from dataclasses import replace

    from storygpt.train import branch
    from storygpt.train.loop import Budgets

    budgets = Budgets(*(getattr(args, b) for b in BUDGETS))
    kind = branch.branch_kind(budgets, "wsd")  # checked already
    flag = BUDGETS[("minutes", *branch.KINDS).index(kind)]
    out = []
    for name, value in wanted:
        flags = {**stored, flag: value, "run_name": name, "run_dir": None, "branch": None, "resume": False}
        flags["pause_after_branches"] = False
        out.append(branch.Branch(files.folder.parent / name, replace(budgets, **{kind: value}), flags))
    return branch.brancher(out, pause=args.pause_after_branches)


if __name__ == "__main__":
    from storygpt.cli import run

    run(main)
