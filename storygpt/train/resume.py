"""Resume reconciliation: which checkpoint, which flags and data a resumed run goes on with, and its state back.

Exact resume: SIGINT and SIGTERM only set a flag (:class:`storygpt.runtime.StopFlag`); the loop
looks at it between steps (and between evaluation batches), so a checkpoint always holds the state
after a whole step, with the RNG states of that moment.  An evaluation cut short is redone on resume;
``metrics.jsonl`` rows past the checkpoint are dropped on resume.  A run resumed from a checkpoint
gives bit-identical weights, optimizer state and history to one that was never stopped
(tests/training/test_resume.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from storygpt import checkpoint
from storygpt.cli import shorten, show
from storygpt.model import recipes
from storygpt.train.loop import Run, TrainState
from storygpt.train.runfolder import RunError


def read_resumable(path: Path) -> dict:
    """The ``ckpt.pt`` to resume from.

    Raises:
        RunError: no such file, a corrupt file, or one without the training state (a best.pt).
    """
    try:
        return checkpoint.read_training_checkpoint(path)
    except FileNotFoundError:
        raise RunError(f"--resume: no checkpoint at {show(path)}") from None
    except checkpoint.CheckpointError as e:
        raise RunError(f"--resume: {e}") from None


def check_stored_tokenizer(ckpt: dict, path: Path, tokenizer, data_dir: Path) -> None:
    """On resume: the checkpoint's tokenizer must load and be the data folder's.

    Raises:
        RunError: a malformed stored tokenizer, or another tokenizer than the data folder's.
    """
    try:
        stored = checkpoint.tokenizer_from_dict(ckpt["tokenizer"])
    except (KeyError, TypeError, ValueError) as e:
        raise RunError(
            f"--resume: {show(path)}: bad tokenizer stored in it ({shorten(' '.join(str(e).splitlines()))}); the checkpoint is kept unchanged"
        ) from None
    if stored.fingerprint() != tokenizer.fingerprint():
        raise RunError(
            f"--resume: the tokenizer in {show(data_dir)} is not the one {show(path)} was trained with "
            "(the corpus folder was rebuilt?)"
        )


def check_recipe(ckpt: dict, path: Path, recipe: str, explicit: set[str]) -> None:
    """On resume: fill a run from before recipes in as ``gpt2`` (:func:`storygpt.model.recipes.legacy_args`,
    ``ckpt["args"]`` replaced), check its stored parts, refuse a ``--recipe`` given explicitly that is not the
    run's own, and check the flags given against the run's recipe (its optimizer kind and schedule).

    Raises:
        RunError: a stored part of the wrong type or out of range (an edited checkpoint), naming it; ``recipe``
            in ``explicit`` and not the stored recipe, which it names; a flag of the other optimizer kind than
            the run's, or ``--decay-fraction`` on a run without the ``wsd`` schedule.
    """
    if not isinstance(ckpt.get("args"), dict):
        raise RunError(f"--resume: {show(path)} holds no flags (its args are {type(ckpt.get('args')).__name__})")
    ckpt["args"] = recipes.legacy_args(ckpt["args"])
    why = recipes.stored_error(ckpt["args"]) or disagreement(ckpt)
    if why:
        raise RunError(f"--resume: {show(path)} holds a bad setting: {why}; the checkpoint is kept unchanged")
    stored = ckpt["args"]["recipe"]
    if "recipe" in explicit and recipe != stored:
        raise RunError(
            f"--resume: {show(path)} is a --recipe {stored} run, not --recipe {recipe}; "
            f"resume it with --recipe {stored} (or start a new run)"
        )
    try:
        recipes.Recipe.from_flags(ckpt["args"], explicit)
    except ValueError as e:
        raise RunError(
            f"--resume: {show(path)} is a --recipe {stored} run: {e} (a resumed run keeps its parts)"
        ) from None


#: Flags (dest) stored beside the model's config, which must agree with it: the shape and every model part.
SHAPE = ("n_layer", "n_head", "n_embd", "block_size", "dropout", "rope_theta")


def disagreement(ckpt: dict) -> str | None:
    """Where a checkpoint's stored flags (after :func:`storygpt.model.recipes.legacy_args`) disagree with its
    model config (the shape, the model parts, rotary or learned positions) or its optimizer (``optim``: the
    optimizer parts), else None.  Only an edited checkpoint disagrees: both are written from one run."""
    from storygpt.model.config import OptimConfig

    args, config, optim = ckpt["args"], ckpt.get("config"), ckpt.get("optim")
    if isinstance(config, dict):  # a key either lacks (a run from before it) is not compared
        for key in (*SHAPE, *recipes.ARCH):
            if key in args and key in config and args[key] != config[key]:
                return f"--{key.replace('_', '-')} {args[key]!r} in its flags, {config[key]!r} in its model config"
        if "rope" in args and "position" in config and ("rope" if args["rope"] else "learned") != config["position"]:
            return f"--rope {args['rope']!r} in its flags, position {config['position']!r} in its model config"
    if isinstance(optim, dict):
        try:
            stored = OptimConfig.from_dict(optim)
        except (TypeError, ValueError) as e:
            return f"its optimizer settings (optim): {e}"
        mine = recipes.Recipe.from_flags(args).optim
        for key in (k for k in recipes.OPTIM_PARTS if k in optim):
            if getattr(mine, key) != getattr(stored, key):
                flag = "--optimizer" if key == "kind" else "--" + key.replace("_", "-")
                return f"{flag} {getattr(mine, key)!r} in its flags, {getattr(stored, key)!r} in its optimizer settings"
    return None


def check_stored_flags(ckpt: dict, path: Path, parser, ranges: dict) -> None:
    """On resume, after :func:`check_recipe`: the run's other stored flags (``parser``'s number and yes/no flags,
    within ``ranges``; a tokenizer SPEC) are what the parser could have given.

    Raises:
        RunError: the first flag that is not, named (an edited or damaged checkpoint).
    """
    from storygpt.cli import stored_flag_error

    skip = set(recipes.RECIPES[recipes.DEFAULT]) | {"recipe"}  # every part (each recipe lists them all): check_recipe
    saved = ckpt["args"]
    why = stored_flag_error(parser, saved, ranges, skip)
    if why is None and not isinstance(saved.get("tokenizer"), str):
        why = f"--tokenizer must be a SPEC, got {saved.get('tokenizer')!r}"
    if why:
        raise RunError(f"--resume: {show(path)} holds a bad setting: {why}; the checkpoint is kept unchanged")


def resumed_args(
    given: dict, explicit: set[str], ckpt: dict, path: Path, overridable: set[str], budgets: tuple, log
) -> dict:
    """The flags a resumed run goes on with: the run's own, except the ``overridable`` ones given explicitly;
    when any of the ``budgets`` flags is given, the given budgets replace all the run's budgets.

    ``given``: this command line's values (tokenizer as a canonical SPEC, data as given).  The data
    folder is the stored one (see :func:`storygpt.checkpoint.data_dir_of`), or ``given["data"]`` when
    that names a folder of the same corpus (a moved corpus).

    Raises:
        RunError: another tokenizer or corpus than the run's, or a corpus folder that is gone.
    """
    saved = dict(ckpt["args"])
    if saved["tokenizer"] != given["tokenizer"] and ({"tokenizer", "bpe", "run_dir", "run_name"} & explicit):
        raise RunError(
            f"--resume: {show(path)} was trained with --tokenizer {saved['tokenizer']}, not {given['tokenizer']}"
        )
    stored, asked = checkpoint.data_dir_of(ckpt, path), Path(given["data"]).resolve()
    if "data" in explicit and asked != stored:
        if asked.name != ckpt["corpus"]:
            raise RunError(
                f"--resume: {show(path)} was trained on corpus {ckpt['corpus']!r}, not on {asked.name!r} "
                f"({given['data']})"
            )
        log(f"note: resuming on --data {given['data']} (the run was trained on {show(stored)})")
        stored = asked
    elif not stored.is_dir():
        raise RunError(
            f"--resume: the corpus folder {show(stored)} that {show(path)} was trained on is gone; "
            "pass --data with its new place"
        )
    kept = sorted(k for k in explicit - overridable if k in saved and saved[k] != given[k])
    if kept:
        log(f"warning: --resume keeps the run's own {', '.join('--' + k.replace('_', '-') for k in kept)}")
    out = {k: v for k, v in saved.items() if k not in overridable or k not in explicit}
    if explicit & set(budgets):  # budgets given replace the run's own; with none given, the run keeps its own
        out.update({b: given[b] for b in budgets})
    return {**out, "data": str(stored)}


def restore(run: Run, ckpt: dict) -> tuple[TrainState, np.random.Generator]:
    """Load optimizer, scaler and random states from ``ckpt``; its TrainState and batch sampler (which restarts
    from fresh seeds, with a warning, when the run had another number of processes)."""
    checkpoint.restore_optimizer(ckpt, run.optimizer, run.scaler)
    state = TrainState.from_dict(dict(ckpt["state"]))
    state.history = [dict(h) for h in state.history]
    rng = state.rng or {}
    if int(rng.get("world_size", 0)) == run.dist.world:
        mine = rng["ranks"][run.dist.rank]
        checkpoint.set_rng_state(mine["global"])
        batch_rng = np.random.default_rng()
        batch_rng.bit_generator.state = mine["batch"]
        return state, batch_rng
    run.log(
        f"warning: the run was saved with {rng.get('world_size')} processes, now {run.dist.world}: "
        "batch sampling restarts from fresh seeds"
    )
    return state, np.random.default_rng([run.hyper.seed, run.dist.rank, state.step])
