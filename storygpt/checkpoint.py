"""Checkpoints: a model, its tokenizer and the state to resume training.

A checkpoint is a ``dict`` of plain types and tensors (``torch.load(path, weights_only=True)``):
``model`` (+ ``model_sha256``), ``config``, ``tokenizer``, ``spec``/``slug``, ``corpus``, ``data``
(+ ``data_abs``) and ``trained`` (:func:`training_record`).  ``best.pt`` adds ``step`` and
``val_bpc``; ``ckpt.pt`` adds the training state (``optimizer``, ``scaler``, ``state``, ``args``,
``optim``).  This module owns the format: assemble (:func:`model_record`,
:func:`training_checkpoint`, :func:`best_checkpoint`), save atomically, read and check
(:func:`read_training_checkpoint`), load.

Every field and the files from older releases: docs/design.md.
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from storygpt.atomic import atomic_write
from storygpt.ckptpath import resolve_checkpoint  # noqa: F401 (public here; torch-free there)
from storygpt.cli import shorten

REQUIRED_KEYS = ("model", "config", "tokenizer")
# keys a ckpt.pt to resume from holds besides the model (best.pt has no optimizer, state, args)
TRAINING_KEYS = ("optimizer", "state", "args", "spec", "slug", "corpus", "data")


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used; the message names the file."""


def clean_state_dict(state_dict: dict) -> dict:
    """Strip the ``_orig_mod.`` (torch.compile) and ``module.`` (DDP) prefixes from keys."""
    out = {}
    for key, value in state_dict.items():
        changed = True
        while changed:
            changed = False
            for prefix in ("_orig_mod.", "module."):
                if key.startswith(prefix):
                    key = key[len(prefix) :]
                    changed = True
        out[key] = value
    return out


def state_dict_digest(state_dict: dict) -> str:
    """Hex sha256 over the names, dtypes, shapes and bytes of a state_dict's tensors (sorted by name)."""
    h = hashlib.sha256()
    for key in sorted(state_dict):
        t = state_dict[key].detach().cpu().contiguous()
        h.update(f"{key}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def save_checkpoint(path: str | os.PathLike, ckpt: dict, during_write: Callable[[], None] | None = None) -> None:
    """Write ``ckpt`` to ``path`` atomically (temp file + fsync + os.replace).

    A ``model_sha256`` entry (:func:`state_dict_digest` of ``ckpt["model"]``)
    is added so that :func:`read_checkpoint` detects corrupted weights, which
    torch.load alone would load silently.  The checkpoint is serialized in
    memory first, so a failed write raises the operating system's error
    (e.g. ``OSError`` ENOSPC for a full disk) rather than torch's wrapped one.
    ``during_write`` (tests) is called after the bytes are written, before the rename.

    Raises:
        OSError: the file cannot be written; ``path`` is left as it was.
    """
    path = Path(path)
    if isinstance(ckpt.get("model"), dict):
        ckpt = {**ckpt, "model_sha256": state_dict_digest(ckpt["model"])}
    buf = io.BytesIO()
    torch.save(ckpt, buf)
    with atomic_write(path, "wb") as f:
        f.write(buf.getbuffer())
        if during_write is not None:
            during_write()


def run_meta(spec, data_dir: Path, folder: Path, args: dict) -> dict:
    """What every checkpoint of a run records about it besides the model: spec, slug, corpus, data,
    data_abs (see the module docstring) and ``args`` (plain values, :func:`to_plain`)."""
    return dict(
        spec=str(spec),
        slug=spec.slug,
        corpus=data_dir.name,
        data=relative_data_path(data_dir, folder),
        data_abs=str(data_dir),
        args=args,
    )


def model_record(model, meta: dict) -> dict:
    """What best.pt holds: weights (prefixes stripped), config, tokenizer, and where the run's data is
    (``meta``: :func:`run_meta` plus ``config`` and ``tokenizer`` as dicts)."""
    return {
        "model": clean_state_dict(model.state_dict()),
        "config": meta["config"],
        "tokenizer": meta["tokenizer"],
        **{k: meta[k] for k in ("spec", "slug", "corpus", "data", "data_abs")},
    }


#: A run with fewer held-out evaluations than this is under-trained: its curve says nothing (compare.py's rule).
MIN_EVALS = 3


def under_trained_reason(steps: int, warmup_steps: int | None, evals: int) -> str | None:
    """Why a run of ``steps`` optimizer steps and ``evals`` held-out evaluations is under-trained (it never
    left its learning-rate warm-up, or has fewer than :data:`MIN_EVALS` evaluations), or None when it is not.
    compare.py marks such runs and never names them best; bits.py and pretrain.py say so too."""
    reasons = []
    if warmup_steps is not None and steps < warmup_steps:
        reasons.append(f"{steps:,} steps, fewer than its {warmup_steps:,} warm-up steps")
    if evals < MIN_EVALS:
        reasons.append(f"{evals} held-out evaluation{'s' if evals != 1 else ''}, fewer than {MIN_EVALS}")
    return "; ".join(reasons) or None


def training_record(state: dict, warmup_steps: int | None) -> dict:
    """The ``trained`` entry of a checkpoint from a TrainState dict (``step``, ``tokens``, ``flops``, ``history``)."""
    steps, evals = int(state["step"]), len(state.get("history") or ())
    return {
        "steps": steps,
        "tokens": int(state["tokens"]),
        "flops": float(state["flops"]),
        "warmup_steps": warmup_steps,
        "evals": evals,
        "under_trained": under_trained_reason(steps, warmup_steps, evals),
    }


def trained_of(ckpt: dict) -> dict | None:
    """A checkpoint's ``trained`` entry; for a file from before it, the same from a ckpt.pt's training state,
    or ``{"steps": step}`` alone from a best.pt (None when nothing is known)."""
    if isinstance(ckpt.get("trained"), dict):
        return ckpt["trained"]
    state, args = ckpt.get("state"), ckpt.get("args") or {}
    if isinstance(state, dict) and "step" in state and "tokens" in state and "flops" in state:
        return training_record(state, args.get("warmup_steps"))
    if isinstance(ckpt.get("step"), int):
        return {"steps": ckpt["step"]}
    return None


def training_checkpoint(record: dict, optimizer, scaler, state: dict, args: dict, optim: dict) -> dict:
    """The ``ckpt.pt`` dict: a :func:`model_record` plus optimizer, scaler (when enabled), state, args and
    optim (an OptimConfig as a dict, storygpt/model/optim.py)."""
    scaler_state = {"scaler": scaler.state_dict()} if scaler.is_enabled() else {}
    training = {"optimizer": optimizer.state_dict(), **scaler_state, "state": state, "args": args, "optim": optim}
    return {**record, **training}


def best_checkpoint(record: dict, step: int, val_bpc: float) -> dict:
    """The ``best.pt`` dict: a :func:`model_record` plus the step and held-out bits/char it was measured at."""
    return {**record, "step": step, "val_bpc": val_bpc}


def read_training_checkpoint(path: str | os.PathLike) -> dict:
    """:func:`read_checkpoint` of a ``ckpt.pt`` to resume from; its errors, and CheckpointError for a file
    without the training state (a best.pt)."""
    ckpt = read_checkpoint(path)
    if any(k not in ckpt for k in TRAINING_KEYS):
        raise CheckpointError(f"{path} holds no training state (a best.pt?)")
    return ckpt


def restore_optimizer(ckpt: dict, optimizer, scaler) -> None:
    """Load a :func:`training_checkpoint`'s optimizer state, and its scaler's when both have one."""
    optimizer.load_state_dict(ckpt["optimizer"])
    if "scaler" in ckpt and scaler.is_enabled():
        scaler.load_state_dict(ckpt["scaler"])


def relative_data_path(data_dir: Path, folder: Path) -> str:
    """``data_dir`` relative to ``folder`` when the two share a parent other than the root, else absolute."""
    data_dir, folder = Path(data_dir).resolve(), Path(folder).resolve()
    common = Path(os.path.commonpath([data_dir, folder]))
    if common == Path(common.anchor):
        return str(data_dir)
    return os.path.relpath(data_dir, folder)


def data_dir_of(ckpt: dict, path: str | os.PathLike) -> Path | None:
    """The corpus folder a checkpoint at ``path`` was trained on, or None when it records none.

    ``data`` is resolved against the checkpoint's folder; when that folder does not exist,
    ``data_abs`` (the absolute place at save time) is tried; else the resolved ``data``.
    Checkpoints written by other tools may carry ``data_dir`` (absolute) instead.
    """
    if ckpt.get("data"):
        rel = (Path(path).resolve().parent / ckpt["data"]).resolve()
        if rel.is_dir() or not ckpt.get("data_abs") or not Path(ckpt["data_abs"]).is_dir():
            return rel
        return Path(ckpt["data_abs"])
    return Path(ckpt["data_dir"]) if ckpt.get("data_dir") else None


def torch_reason(e: BaseException) -> str:
    """The informative line of an error torch raised, without its advice (``weights_only=False``...).

    torch's unpickler wraps the real cause ("Unsupported operand 255") in a paragraph that suggests
    loading the file with ``weights_only=False``, which would run arbitrary code from a damaged or
    foreign file; a truncated zip's cause is followed by four sentences on how files get corrupted;
    ``load_state_dict`` lists every mismatching tensor on its own line.
    """
    text = str(e)
    if "WeightsUnpickler error:" in text:
        text = text.split("WeightsUnpickler error:", 1)[1]
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith(("Error(s) in loading state_dict", "Check the documentation"))]
    first = lines[0] if lines else type(e).__name__
    first = first.split(" This is an internal miniz error.", 1)[0]  # then torch's paragraph on what corrupts files
    more = (
        f" (and {len(lines) - 1} more)"
        if len(lines) > 1 and first.startswith(("size mismatch", "Missing", "Unexpected"))
        else ""
    )
    return f"{shorten(first)}{more}"


def read_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict:
    """Load a checkpoint dict with ``weights_only=True``; check its keys and the weights' checksum.

    Raises:
        FileNotFoundError: no such file.
        CheckpointError (a ValueError): a corrupt or truncated file, something
            that is not a storygpt checkpoint, a missing key, or weights whose
            checksum (``model_sha256``, when present) does not match.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    with open(path, "rb") as f:
        head = f.read(4)
    # torch.save writes a zip archive; files from torch < 1.6 start with a pickle protocol marker
    if not (head.startswith(b"PK") or head.startswith(b"\x80")):
        raise CheckpointError(
            f"{path}: not a checkpoint file (a torch.save file starts with a zip or pickle "
            f"header; this one starts with {head!r})"
        )
    try:
        ckpt = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:  # the unpickler raises many kinds (EOFError, IndexError, UnpicklingError...)
        raise CheckpointError(
            f"{path}: cannot read checkpoint (corrupt or truncated file?): {type(e).__name__}: {torch_reason(e)}"
        ) from e
    if not isinstance(ckpt, dict):
        raise CheckpointError(f"{path}: not a storygpt checkpoint (holds a {type(ckpt).__name__}, not a dict)")
    missing = [k for k in REQUIRED_KEYS if k not in ckpt]
    if missing:
        raise CheckpointError(f"{path}: checkpoint is missing key(s) {missing}")
    if "model_sha256" in ckpt:
        try:
            ok = state_dict_digest(ckpt["model"]) == ckpt["model_sha256"]
        except Exception:
            ok = False
        if not ok:
            raise CheckpointError(f"{path}: the model weights are corrupt (checksum mismatch)")
    return ckpt


def _with_fallback(make, what: str):
    """``make()``, or ``make(backend="reference")`` when the C++ BPE extension is not built."""
    try:
        return make()
    except ImportError as e:
        warnings.warn(f"{what}: {e}; using the Python reference BPE (slow)", RuntimeWarning, stacklevel=3)
        return make(backend="reference")


def tokenizer_from_dict(d: dict):
    """``storygpt.tokenizers.from_dict(d)``, falling back to the reference BPE without the C++ extension."""
    from . import tokenizers  # imported late: keeps `import storygpt` light

    return _with_fallback(lambda **kw: tokenizers.from_dict(d, **kw), "tokenizer")


def load_tokenizer(path: str | os.PathLike):
    """``storygpt.tokenizers.load(path)``, falling back to the reference BPE without the C++ extension."""
    from . import tokenizers

    return _with_fallback(lambda **kw: tokenizers.load(path, **kw), str(path))


def load_checkpoint(path: str | os.PathLike, device: str | torch.device = "cpu"):
    """Load a model and its tokenizer from a checkpoint written by pretrain.py.

    Args:
        path: a ``ckpt.pt`` / ``best.pt`` file, or a run folder (its best.pt, else ckpt.pt).
        device: where to put the model (and tensors of the returned dict).

    Returns:
        ``(model, tokenizer, ckpt)``: a :class:`storygpt.model.GPT` in eval
        mode on ``device``; the tokenizer rebuilt by
        ``storygpt.tokenizers.from_dict`` (BPE or word-level, by its ``kind``);
        the checkpoint dict itself.

    Raises:
        FileNotFoundError: no such file.
        ValueError: an unknown or unavailable ``device`` ("auto" picks the best one).
        CheckpointError (ValueError): corrupt/truncated file, missing key, a bad
            config, weights that do not fit the config, or a tokenizer whose
            vocab_size differs from the model's.  Messages name the file.
    """
    from .model import GPT, GPTConfig

    path = resolve_checkpoint(path)
    if isinstance(device, str):  # a bad name would otherwise be reported as a corrupt checkpoint
        from .runtime import resolve_device

        device = resolve_device(device, flag="device")
    ckpt = read_checkpoint(path, map_location=device)
    try:
        config = GPTConfig.from_dict(dict(ckpt["config"]))
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: bad model config in checkpoint: {e}") from e
    try:
        tokenizer = tokenizer_from_dict(ckpt["tokenizer"])
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: bad tokenizer in checkpoint: {e}") from e
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(
            f"{path}: tokenizer vocab_size {tokenizer.vocab_size} does not match the model's "
            f"vocab_size {config.vocab_size}"
        )
    model = GPT(config)
    try:
        model.load_state_dict(clean_state_dict(ckpt["model"]))
    except RuntimeError as e:
        raise CheckpointError(f"{path}: model weights do not fit the config: {torch_reason(e)}") from e
    model.to(device).eval()
    return model, tokenizer, ckpt


# ---------------------------------------------------------------- RNG states
def rng_state() -> dict:
    """The global random states as plain types (loadable with weights_only=True).

    Returns ``{"torch": ByteTensor, "cuda": [ByteTensor, ...] , "numpy": {...},
    "python": [...]}``; numpy's MT19937 key becomes an int64 tensor.
    """
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    state = {
        "torch": torch.get_rng_state(),
        "cuda": [s for s in torch.cuda.get_rng_state_all()] if torch.cuda.is_available() else [],
        "numpy": {
            "kind": str(kind),
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "python": [int(version), [int(x) for x in internal], gauss_next],
    }
    return state


def set_rng_state(state: dict) -> None:
    """Restore states saved by :func:`rng_state`."""
    torch.set_rng_state(state["torch"].cpu())
    if state.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])
    n = state["numpy"]
    np.random.set_state(
        (n["kind"], n["keys"].cpu().numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["cached_gaussian"])
    )
    version, internal, gauss_next = state["python"]
    random.setstate((version, tuple(internal), gauss_next))


def to_plain(obj: Any) -> Any:
    """Convert argparse values etc. to types ``weights_only`` accepts (Path -> str, tuples -> lists)."""
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str, torch.Tensor)):
        return obj
    return str(obj)
