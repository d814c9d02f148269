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

from storygpt.compare.settings import DEFAULT_SHAPE, PRETRAIN_BATCH, CompareError, CompareOptions, Settings
from storygpt.compare.toolrun import HERE, python_tool
from storygpt.eval.perturb import parse_kinds
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
