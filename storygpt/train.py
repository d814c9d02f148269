"""The training loop behind ``pretrain.py``: state, budgets, steps, evaluation, checkpoints, resume.

One run lives in a run folder (``checkpoints/<corpus>/<rope|learned>-<slug>`` by default)::

    ckpt.pt        the latest checkpoint (weights, optimizer, TrainState); see storygpt.checkpoint
    best.pt        weights, config and tokenizer of the best held-out bits/char so far
    metrics.jsonl  one JSON row per optimizer step and per evaluation (appended, flushed)
    summary.json   the run's figures (atomic, rewritten at each checkpoint)
    lock           the pid of the process writing the folder

Exact resume: SIGINT and SIGTERM only set a flag (:class:`storygpt.runtime.StopFlag`);
the loop looks at it between steps (and between evaluation batches), so a checkpoint
always holds the state after a whole step, with the RNG states of that moment.  An
evaluation cut short is redone on resume; ``metrics.jsonl`` rows past the checkpoint
are dropped on resume.  A run resumed from a checkpoint gives bit-identical weights,
optimizer state and history to one that was never stopped (tests/test_resume.py).

Budgets (:class:`Budgets`): the run stops before the first step at which a budget is
reached (``minutes`` of wall clock, ``max_steps``, ``tokens``, ``chars`` = tokens x the
training split's characters per token, ``flops`` = tokens x
:func:`storygpt.model.flops.flops_per_token`); the learning rate follows the budget
nearest to its end.  See docs/training.md.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from storygpt import atomic
from storygpt.atomic import write_text
from storygpt.checkpoint import clean_state_dict, rng_state, save_checkpoint, set_rng_state
from storygpt.cli import show
from storygpt.runtime import Dist, StopFlag

LN2 = math.log(2)


class RunError(Exception):
    """A problem the command line reports in one line (the message names the file or flag)."""


class Interrupted(Exception):
    """The run stopped on SIGINT/SIGTERM after writing a checkpoint (exit status 130)."""


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
        train_time: seconds spent in optimizer steps only (for tokens per second).
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


@dataclass
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


@dataclass
class Hyper:
    """The optimization settings the loop reads (numbers, not the argparse namespace)."""

    batch_size: int
    grad_accum: int
    lr: float
    min_lr: float
    warmup_steps: int
    grad_clip: float
    eval_interval: int
    seed: int


def lr_at(step: int, progress: float, lr: float, min_lr: float, warmup_steps: int) -> float:
    """Linear warm-up over ``warmup_steps``, times a half cosine from ``lr`` to ``min_lr`` over ``progress``."""
    progress = min(max(progress, 0.0), 1.0)
    cos = min_lr + 0.5 * (lr - min_lr) * (1.0 + math.cos(math.pi * progress))
    warm = min(1.0, (step + 1) / warmup_steps) if warmup_steps > 0 else 1.0
    return cos * warm


# -------------------------------------------------------------------- data
def fixed_windows(n_tokens: int, window: int, count: int) -> np.ndarray:
    """Start offsets of ``count`` evenly spaced windows of ``window + 1`` tokens (deterministic)."""
    last = n_tokens - window - 1
    starts = np.linspace(0, last, num=max(1, count)).round().astype(np.int64)
    return np.unique(starts)


def windows_to_batch(data, starts: np.ndarray, window: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets ``(B, window)`` int64 on ``device`` for windows of ``data`` starting at ``starts``."""
    arr = np.asarray(data[starts[:, None] + np.arange(window + 1)], dtype=np.int64)
    t = torch.from_numpy(arr)
    t = t.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else t.to(device)
    return t[:, :-1], t[:, 1:]


@dataclass
class HeldOut:
    """A fixed held-out slice, encoded once: the bits-per-character text of storygpt.evaluate.

    ``stream`` is ``[eot] enc(d_1) [eot] ... enc(d_n)`` (:func:`storygpt.evaluate.token_stream`) of the
    first ``--eval-chars`` characters of valid.txt; every token after the first is predicted once, in
    back-to-back windows of ``block_size`` (:func:`storygpt.evaluate.scoring_windows`).
    """

    stream: torch.Tensor
    characters: int
    windows: list

    @property
    def tokens(self) -> int:
        return len(self.stream) - 1


def heldout_slice(tokenizer, valid_txt: Path, eval_chars: int, block_size: int) -> HeldOut:
    """Read, cut and encode the held-out slice.

    Raises:
        FileNotFoundError / ValueError: naming ``valid_txt`` (missing, not UTF-8, no text).
    """
    from storygpt.evaluate import count_characters, read_documents, scoring_windows, take_characters, token_stream

    docs = take_characters(read_documents(valid_txt), eval_chars)
    stream, _ = token_stream(tokenizer, docs)
    windows = [(b, e) for b, e, _ in scoring_windows(len(stream) - 1, block_size)]
    return HeldOut(torch.from_numpy(stream), count_characters(docs), windows)


def chars_per_token(data_dir: Path, slug: str, train_tokens: int) -> float:
    """Characters per training token, counted as bits per character counts them.

    ``(characters + documents - 1) / tokens`` of the training split (a document boundary is one
    character, and its eot one token), from ``stats-<slug>.json`` (data.py), else from train.txt.

    Raises:
        RunError: neither file is there.
    """
    from storygpt.evaluate import count_characters, read_documents

    stats = data_dir / f"stats-{slug}.json"
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
        s = json.loads(stats.read_text(encoding="utf-8"))["splits"]["train"]
        return (int(s["characters"]) + int(s["documents"]) - 1) / int(s["tokens"])
    try:
        return count_characters(read_documents(data_dir / "train.txt")) / train_tokens
    except (OSError, ValueError) as e:
        raise RunError(f"{stats} is missing and so is a readable train.txt ({e}); run data.py again") from None


def load_data(data_dir: Path, spec, block_size: int):
    """The tokenizer and memmapped training tokens of SPEC ``spec`` in ``data_dir``.

    Raises:
        RunError: a missing folder or file (naming it, and the tokenizers the folder does hold), a token
            file of another tokenizer, ids outside the vocabulary, fewer tokens than one window.
    """
    from storygpt.checkpoint import load_tokenizer
    from storygpt.data import read_tokens

    if not data_dir.is_dir():
        what = "is a file, not a folder" if data_dir.exists() else "no such folder"
        raise RunError(f"--data {show(data_dir)}: {what} (give the corpus folder data.py wrote, e.g. data/shakespeare)")
    slug = spec.slug
    tok_path, train_path = data_dir / f"tokenizer-{slug}.json", data_dir / f"train-{slug}.bin"
    if not tok_path.is_file():
        have = sorted(p.name[len("tokenizer-") : -len(".json")] for p in data_dir.glob("tokenizer-*.json"))
        hint = f"; it holds the token files of: {', '.join(have)} (pass --tokenizer with one of those)" if have else ""
        raise RunError(f"{show(tok_path)} not found; run `python data.py --tokenizer {spec}` to write it{hint}")
    try:
        tokenizer = load_tokenizer(tok_path)
        train = read_tokens(train_path, tokenizer)
    except IsADirectoryError as e:
        raise RunError(f"{show(e.filename or train_path)}: is a folder, not a token file; run data.py again") from None
    except (OSError, ValueError) as e:
        raise RunError(str(e)) from None
    if len(train) and int(train.max()) >= tokenizer.vocab_size:  # a corrupt body would crash the embedding
        pos = int(np.argmax(train >= tokenizer.vocab_size))
        raise RunError(
            f"{show(train_path)}: token id {int(train[pos])} at position {pos:,} is outside the vocabulary "
            f"(vocab_size {tokenizer.vocab_size}); the file is corrupt, run data.py again"
        )
    if len(train) < block_size + 1:
        raise RunError(
            f"{show(train_path)} has {len(train)} tokens, fewer than one training window "
            f"(block_size + 1 = {block_size + 1}); use a smaller --block-size"
        )
    return tokenizer, train


# ----------------------------------------------------------------- session
@dataclass
class RunFiles:
    """The files of a run folder."""

    folder: Path

    @property
    def ckpt(self) -> Path:
        return self.folder / "ckpt.pt"

    @property
    def best(self) -> Path:
        return self.folder / "best.pt"

    @property
    def metrics(self) -> Path:
        return self.folder / "metrics.jsonl"

    @property
    def summary(self) -> Path:
        return self.folder / "summary.json"

    @property
    def lock(self) -> Path:
        return self.folder / "lock"


@dataclass
class Session:
    """What one training session works with (built by pretrain.py); the loop's functions take it."""

    model: torch.nn.Module
    train_model: torch.nn.Module  # compiled and/or DDP-wrapped
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    autocast: contextlib.AbstractContextManager
    device: torch.device
    dist: Dist
    train: np.ndarray
    train_starts: np.ndarray
    heldout: HeldOut
    hyper: Hyper
    budgets: Budgets
    batch_rng: np.random.Generator
    files: RunFiles
    meta: dict  # spec, slug, corpus, data (relative), data_abs, args, config, tokenizer
    chars_per_token: float
    flops_per_token: int
    params: tuple[int, int]  # (embedding, non-embedding)
    stop: StopFlag
    log: Callable[[str], None] = print
    metrics: MetricsLog | None = None
    progress: object | None = None  # a tqdm bar or None
    hooks: InterruptHooks | None = None

    @property
    def block_size(self) -> int:
        return self.model.config.block_size

    @property
    def tokens_per_step(self) -> int:
        return self.hyper.batch_size * self.hyper.grad_accum * self.block_size * self.dist.world


def build_session(
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
    weight_decay: float,
    eval_windows: int,
    chars_per_token: float,
    compile: bool,
    ckpt: dict | None,
    optim=None,
) -> tuple[Session, TrainState]:
    """Build the model (seeded with ``hyper.seed``; weights from ``ckpt`` when resuming), AdamW, the
    compiled/DDP wrapper and the :class:`Session`; restore the optimizer and RNG states from ``ckpt``.
    ``optim``: a :class:`storygpt.model.optim.OptimConfig` (None: AdamW with ``hyper.lr`` and ``weight_decay``)."""
    from storygpt.model import GPT
    from storygpt.model.flops import flops_per_token, parameter_split

    torch.manual_seed(hyper.seed)
    model = GPT(config).to(device)
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
    from storygpt.model.optim import OptimConfig, build_optimizer  # recipe: the optimizer of the run

    optim = optim if optim is not None else OptimConfig("adamw", hyper.lr, weight_decay)
    optimizer = build_optimizer(model, optim)
    train_model = torch.compile(model) if compile else model
    if dist.ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP

        train_model = DDP(train_model, device_ids=[device.index] if device.type == "cuda" else None)
    from storygpt.runtime import autocast_for

    s = Session(
        model=model,
        train_model=train_model,
        optimizer=optimizer,
        scaler=torch.amp.GradScaler(device.type, enabled=(dtype == torch.float16)),
        autocast=autocast_for(device, dtype),
        device=device,
        dist=dist,
        train=train,
        train_starts=fixed_windows(len(train), config.block_size, eval_windows),
        heldout=heldout,
        hyper=hyper,
        budgets=budgets,
        batch_rng=np.random.default_rng([hyper.seed, dist.rank]),
        files=files,
        meta={**meta, "config": config.to_dict(), "tokenizer": tokenizer.to_dict(), "optim": optim.to_dict()},
        chars_per_token=chars_per_token,
        flops_per_token=flops_per_token(config),
        params=parameter_split(model),
        stop=stop,
        log=log,
        hooks=InterruptHooks.from_env(),
    )
    return s, (restore(s, ckpt) if ckpt is not None else TrainState())


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


def check_stored_tokenizer(ckpt: dict, path: Path, tokenizer, data_dir: Path) -> None:
    """On resume: the checkpoint's tokenizer must load and be the data folder's.

    Raises:
        RunError: a malformed stored tokenizer, or another tokenizer than the data folder's.
    """
    try:
        stored = tokenizer_from_stored(ckpt["tokenizer"])
    except (KeyError, TypeError, ValueError) as e:
        raise RunError(
            f"--resume: {show(path)}: bad tokenizer stored in it ({str(e)[:200]}); the checkpoint is kept unchanged"
        ) from None
    if stored.fingerprint() != tokenizer.fingerprint():
        raise RunError(
            f"--resume: the tokenizer in {show(data_dir)} is not the one {show(path)} was trained with "
            "(the corpus folder was rebuilt?)"
        )


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
    from storygpt.checkpoint import data_dir_of

    saved = dict(ckpt["args"])
    if saved["tokenizer"] != given["tokenizer"] and ({"tokenizer", "bpe", "run_dir", "run_name"} & explicit):
        raise RunError(
            f"--resume: {show(path)} was trained with --tokenizer {saved['tokenizer']}, not {given['tokenizer']}"
        )
    stored, asked = data_dir_of(ckpt, path), Path(given["data"]).resolve()
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


@contextlib.contextmanager
def locked(files: RunFiles, master: bool):
    """Create the run folder and hold its lock while inside (rank 0 only); an empty new folder is removed."""
    if not master:
        yield
        return
    existing = files.folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise RunError(f"cannot create the run folder {show(files.folder)}: {existing} is a file, not a folder")
    created = not files.folder.exists()
    try:
        files.folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunError(f"cannot create the run folder {show(files.folder)}: {e.strerror}") from None
    acquire_lock(files.lock)
    try:
        yield
    finally:
        release_lock(files.lock)
        if created and not any(files.folder.iterdir()):
            files.folder.rmdir()


def read_resumable(path: Path) -> dict:
    """The ``ckpt.pt`` to resume from.

    Raises:
        RunError: no such file, a corrupt file, or one without the training state (a best.pt).
    """
    from storygpt.checkpoint import TRAINING_KEYS, CheckpointError, read_checkpoint

    try:
        ckpt = read_checkpoint(path)
    except FileNotFoundError:
        raise RunError(f"--resume: no checkpoint at {show(path)}") from None
    except CheckpointError as e:
        raise RunError(f"--resume: {e}") from None
    if any(k not in ckpt for k in TRAINING_KEYS):
        raise RunError(f"--resume: {show(path)} holds no training state (a best.pt?)")
    return ckpt


def load_run_data(data_dir: Path, spec, block_size: int, eval_chars: int, ckpt: dict | None, ckpt_path: Path):
    """``(tokenizer, train tokens, held-out slice)`` of ``data_dir``; on resume the stored tokenizer must match.

    Raises:
        RunError: see :func:`load_data`, :func:`check_stored_tokenizer`; a missing or unreadable valid.txt.
    """
    tokenizer, train = load_data(data_dir, spec, block_size)
    if ckpt is not None:
        check_stored_tokenizer(ckpt, ckpt_path, tokenizer, data_dir)
    try:
        heldout = heldout_slice(tokenizer, data_dir / "valid.txt", eval_chars, block_size)
    except (OSError, ValueError) as e:
        raise RunError(f"{e} (the held-out text of --data; run data.py again)") from None
    return tokenizer, train, heldout


def run_meta(spec, data_dir: Path, folder: Path, args: dict) -> dict:
    """What every checkpoint of the run records about it besides the model (see storygpt.checkpoint)."""
    from storygpt.checkpoint import relative_data_path

    return dict(
        spec=str(spec),
        slug=spec.slug,
        corpus=data_dir.name,
        data=relative_data_path(data_dir, folder),
        data_abs=str(data_dir),
        args=args,
    )


# -------------------------------------------------------------- test hooks
@dataclass
class InterruptHooks:
    """``STORYGPT_TEST_HOOK="POINT@STEP:ACTION[,...]"``: send this process a signal at a named point.

    POINT: ``step`` (mid-step, after the first micro-batch's backward), ``eval`` (after the first batch
    of an evaluation), ``save`` (while ckpt.pt is written: after its bytes, before the rename).
    ACTION: ``INT``, ``TERM``, ``TERM2`` (two SIGTERMs), ``KILL``.  STEP: the step being taken or saved.
    For the interrupt tests only; nothing happens without the variable.
    """

    points: dict

    @classmethod
    def from_env(cls) -> InterruptHooks | None:
        spec = os.environ.get("STORYGPT_TEST_HOOK")
        if not spec:
            return None
        points = {}
        for item in spec.split(","):
            where, action = item.split(":")
            point, step = where.split("@")
            points[(point, int(step))] = action
        return cls(points)

    def fire(self, point: str, step: int) -> None:
        action = self.points.pop((point, step), None)
        if action is None:
            return
        sig = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "TERM2": signal.SIGTERM, "KILL": signal.SIGKILL}[action]
        for _ in range(2 if action == "TERM2" else 1):
            os.kill(os.getpid(), sig)
            time.sleep(0.01)  # let the handler run before the next one arrives


def fire(s: Session, point: str, step: int) -> None:
    if s.hooks is not None:
        s.hooks.fire(point, step)


# ------------------------------------------------------------ metrics.jsonl
class MetricsLog:
    """``metrics.jsonl``: rows appended and flushed one by one, so a killed run keeps its rows."""

    def __init__(self, path: Path):
        self.path = path
        self.file = None

    @staticmethod
    def read(path: Path) -> list[dict]:
        """The whole rows of a metrics.jsonl (a last line cut short by a kill is dropped)."""
        rows = []
        with contextlib.suppress(FileNotFoundError):
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    break
        return rows

    def open(self, state: TrainState | None) -> None:
        """Start the file afresh (``state`` None) or keep the rows up to ``state`` (resume)."""
        rows = []
        if state is not None:
            for r in self.read(self.path):
                if r["step"] < state.step or (
                    r["step"] == state.step and (r["kind"] == "step" or (r["kind"] == "eval" and state.evaluated))
                ):
                    rows.append(r)
        write_text(self.path, "".join(json.dumps(r) + "\n" for r in rows))
        self.file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())

    def write(self, row: dict) -> None:
        self.file.write(json.dumps(row) + "\n")
        self.file.flush()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def counters(state: TrainState) -> dict:
    return {
        "step": state.step,
        "tokens": state.tokens,
        "chars": state.chars,
        "flops": state.flops,
        "elapsed": round(state.elapsed, 3),
    }


# -------------------------------------------------------------------- lock
def os_reason(e: OSError) -> str:
    """The operating system's words for ``e`` ("Permission denied", "No space left on device")."""
    return e.strerror or os.strerror(e.errno or errno.EIO)


def acquire_lock(path: Path) -> None:
    """Create ``path`` holding this pid; a lock of a dead process on this machine is taken over.

    Raises:
        RunError: another live process holds the lock, or the folder cannot be written.
    """
    import socket

    me = f"{os.getpid()} {socket.gethostname()}\n"
    for _ in range(3):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                pid_text, _, host = path.read_text(encoding="utf-8").strip().partition(" ")
                pid = int(pid_text)
            except (OSError, ValueError):
                pid, host = None, ""
            if pid is not None and (host != socket.gethostname() or _alive(pid)):
                where = f" on {host}" if host else ""
                raise RunError(
                    f"{show(path.parent)} is being written by process {pid}{where} (lock file {show(path)}); "
                    "wait for it to end or stop it"
                ) from None
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # stale: its process is gone
            continue
        except OSError as e:  # a read-only run folder, a full disk, ...
            why = os_reason(e)
            raise RunError(
                f"cannot write in the run folder {show(path.parent)} (lock file {show(path)}): {why}"
            ) from None
        with os.fdopen(fd, "w") as f:
            f.write(me)
        return
    raise RunError(f"cannot take the lock file {path}")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def release_lock(path: Path) -> None:
    """Remove ``path`` if this process holds it."""
    with contextlib.suppress(OSError, ValueError):
        if int(path.read_text(encoding="utf-8").split()[0]) == os.getpid():
            path.unlink()


# ------------------------------------------------------------- evaluation
@torch.no_grad()
def train_loss(s: Session) -> float | None:
    """Mean loss (nats/token) over the fixed training windows; None when stopped by the flag."""
    mine = s.train_starts[s.dist.rank :: s.dist.world]
    total = torch.zeros(2, dtype=torch.float64, device=s.device)
    for i in range(0, len(mine), s.hyper.batch_size):
        x, y = windows_to_batch(s.train, mine[i : i + s.hyper.batch_size], s.block_size, s.device)
        with s.autocast:
            _, loss = s.model(x, y)
        total[0] += loss.double() * len(x)
        total[1] += len(x)
        if s.stop and not s.dist.ddp:
            return None
    if s.dist.ddp:
        import torch.distributed as dist

        dist.all_reduce(total)
    return (total[0] / total[1]).item()


@torch.no_grad()
def heldout_nats(s: Session, step: int) -> float | None:
    """Total nats over the held-out slice (each rank scores every world-th window); None when stopped."""
    h = s.heldout
    mine = h.windows[s.dist.rank :: s.dist.world]
    total = torch.zeros(1, dtype=torch.float64, device=s.device)
    groups: dict[int, list] = {}
    for b, e in mine:
        groups.setdefault(e - b, []).append(b)
    first = True
    for length, begins in groups.items():
        for i in range(0, len(begins), s.hyper.batch_size):
            rows = begins[i : i + s.hyper.batch_size]
            x = torch.stack([h.stream[b : b + length] for b in rows]).to(s.device)
            y = torch.stack([h.stream[b + 1 : b + length + 1] for b in rows]).to(s.device)
            with s.autocast:
                logits, _ = s.model(x)
            total += F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1), reduction="sum")
            if first:
                fire(s, "eval", step)
                first = False
            if s.stop and not s.dist.ddp:
                return None
    if s.dist.ddp:
        import torch.distributed as dist

        dist.all_reduce(total)
    return float(total.item())


def evaluate(s: Session, state: TrainState) -> bool:
    """Measure, log, append to the history and metrics.jsonl.  False when cut short by the stop flag."""
    s.model.eval()
    try:
        tl = train_loss(s)
        nats = None if tl is None else heldout_nats(s, state.step)
    finally:
        s.model.train()
    if nats is None:
        return False
    row = {"kind": "eval", **counters(state)}
    row["val_loss"] = nats / s.heldout.tokens
    row["val_bpc"] = nats / (LN2 * s.heldout.characters)
    if s.metrics is not None:
        s.metrics.write(row)
    state.history.append({**row, "train_loss": tl})
    best = row["val_bpc"] < state.best_bpc
    state.best_bpc = min(state.best_bpc, row["val_bpc"])
    s.log(
        f"step {state.step}: train loss {tl:.4f}, held-out {row['val_loss']:.4f} nats/token, "
        f"{row['val_bpc']:.4f} bits/char{' (best)' if best else ''} | {state.elapsed:.0f}s"
    )
    return True


# ------------------------------------------------------------- checkpoints
def gather_rng(s: Session) -> dict:
    """Every rank's global and batch random states (a collective: all ranks call it)."""
    mine = {"global": rng_state(), "batch": s.batch_rng.bit_generator.state}
    if not s.dist.ddp:
        return {"world_size": 1, "ranks": [mine]}
    import torch.distributed as dist

    states = [None] * s.dist.world
    dist.all_gather_object(states, mine)
    return {"world_size": s.dist.world, "ranks": states}


def model_record(s: Session) -> dict:
    """What best.pt holds: weights, config, tokenizer, and where the run's data is."""
    m = s.meta
    return {
        "model": clean_state_dict(s.model.state_dict()),
        "config": m["config"],
        "tokenizer": m["tokenizer"],
        **{k: m[k] for k in ("spec", "slug", "corpus", "data", "data_abs")},
    }


def assemble(s: Session, state: TrainState) -> dict:
    """The ``ckpt.pt`` dict (see storygpt.checkpoint)."""
    ckpt = {**model_record(s), "optimizer": s.optimizer.state_dict(), "state": state.to_dict(), "args": s.meta["args"]}
    ckpt["optim"] = s.meta["optim"]  # recipe: the OptimConfig
    if s.scaler.is_enabled():
        ckpt["scaler"] = s.scaler.state_dict()
    return ckpt


def summary(s: Session, state: TrainState) -> dict:
    """summary.json (the contract in docs/training.md)."""
    last = state.history[-1] if state.history else {}
    emb, non_emb = s.params
    m = s.meta
    return {
        "spec": m["spec"],
        "slug": m["slug"],
        "corpus": m["corpus"],
        "params": emb + non_emb,
        "params_embedding": emb,
        "params_non_embedding": non_emb,
        "steps": state.step,
        "tokens": state.tokens,
        "chars": state.chars,
        "flops": state.flops,
        "elapsed": state.elapsed,
        "train_time": state.train_time,
        "stop_reason": state.stop_reason,
        "val_loss": last.get("val_loss"),
        "val_bpc": last.get("val_bpc"),
        "best_val_bpc": state.best_bpc if state.best_bpc < math.inf else None,
        "compile_time": state.compile_time,
        "tokens_per_sec": state.tokens / state.train_time if state.train_time > 0 else None,
        "flops_per_token": s.flops_per_token,
        "chars_per_token": s.chars_per_token,
        "config": m["config"],
        "optim": m.get("optim"),  # recipe: the OptimConfig
        "batch_windows": s.hyper.batch_size * s.hyper.grad_accum * s.dist.world,
        "processes": s.dist.world,
        "device": str(s.device),
        "heldout_chars": s.heldout.characters,
    }


def save(s: Session, state: TrainState, best: bool) -> None:
    """Write ckpt.pt (and best.pt when ``best``), then summary.json; signals wait until all are written.

    Raises:
        RunError: a file cannot be written (full disk, ...); the previous ckpt.pt is kept.
    """
    state.rng = gather_rng(s)  # collective
    if not s.dist.master:
        return
    path = s.files.ckpt
    try:
        save_checkpoint(path, assemble(s, state), during_write=lambda: fire(s, "save", state.step))
        if best:
            path = s.files.best
            save_checkpoint(path, {**model_record(s), "step": state.step, "val_bpc": state.best_bpc})
        path = s.files.summary
        write_text(path, json.dumps(summary(s, state), indent=2) + "\n")
    except OSError as e:
        kept = "the previous checkpoint is kept" if s.files.ckpt.exists() else "no checkpoint was written"
        why = os_reason(e)
        raise RunError(f"cannot write {show(path)}: {why}; {kept}") from None
    refresh_plot(s)


def refresh_plot(s: Session) -> None:
    """Redraw RUN/loss.png (held-out bits/char curves); a plot that fails never stops training."""
    from storygpt.plot import write_loss_png

    try:
        write_loss_png(s.files.folder)
    except (OSError, ValueError) as e:
        s.log(f"warning: loss.png not refreshed: {e}")


def log_master(msg: str) -> None:
    """Print ``msg`` on rank 0, between progress-bar redraws, flushed (whole lines even into a pipe)."""
    if Dist.from_env().master:
        from tqdm import tqdm

        with tqdm.external_write_mode(file=sys.stdout):
            print(msg, file=sys.stdout, flush=True)


# ------------------------------------------------------------------ resume
def restore(s: Session, ckpt: dict) -> TrainState:
    """Load optimizer, scaler and random states from ``ckpt``; return its TrainState."""
    s.optimizer.load_state_dict(ckpt["optimizer"])
    if "scaler" in ckpt and s.scaler.is_enabled():
        s.scaler.load_state_dict(ckpt["scaler"])
    state = TrainState.from_dict(dict(ckpt["state"]))
    state.history = [dict(h) for h in state.history]
    rng = state.rng or {}
    if int(rng.get("world_size", 0)) == s.dist.world:
        mine = rng["ranks"][s.dist.rank]
        set_rng_state(mine["global"])
        s.batch_rng.bit_generator.state = mine["batch"]
    else:
        s.log(
            f"warning: the run was saved with {rng.get('world_size')} processes, now {s.dist.world}: "
            "batch sampling restarts from fresh seeds"
        )
        s.batch_rng = np.random.default_rng([s.hyper.seed, s.dist.rank, state.step])
    return state


# -------------------------------------------------------------------- loop
def train_step(s: Session, state: TrainState, lr: float) -> tuple[float, float]:
    """One optimizer step over ``grad_accum`` micro-batches; returns (mean loss, gradient norm)."""
    from storygpt.model.optim import group_lr  # recipe: per-group rates (lr_scale) under one schedule

    for group in s.optimizer.param_groups:
        group["lr"] = group_lr(group, lr)
    k = s.hyper.grad_accum
    total = 0.0
    for micro in range(k):
        starts = s.batch_rng.integers(0, len(s.train) - s.block_size, size=s.hyper.batch_size)
        x, y = windows_to_batch(s.train, starts, s.block_size, s.device)
        sync = micro == k - 1 or not s.dist.ddp
        with contextlib.nullcontext() if sync else s.train_model.no_sync():
            with s.autocast:
                _, loss = s.train_model(x, y)
            s.scaler.scale(loss / k).backward()
        total += loss.item()
        if micro == 0:
            fire(s, "step", state.step + 1)
    s.scaler.unscale_(s.optimizer)
    clip = s.hyper.grad_clip if s.hyper.grad_clip > 0 else math.inf
    norm = float(torch.nn.utils.clip_grad_norm_(s.model.parameters(), clip))
    s.scaler.step(s.optimizer)
    s.scaler.update()
    s.optimizer.zero_grad(set_to_none=True)
    return total / k, norm


def agree(s: Session, elapsed: float, loss: float = 0.0) -> tuple[float, bool, float]:
    """(elapsed, stop, loss) agreed by all ranks (means; stop if any rank was signalled)."""
    if not s.dist.ddp:
        return elapsed, bool(s.stop), loss
    import torch.distributed as dist

    t = torch.tensor([elapsed, 1.0 if s.stop else 0.0, loss], dtype=torch.float64, device=s.device)
    dist.all_reduce(t)
    return float(t[0]) / s.dist.world, bool(t[1] > 0), float(t[2]) / s.dist.world


def run(s: Session, state: TrainState) -> TrainState:
    """Train until a budget is reached; evaluate every ``eval_interval`` steps and at the end.

    Raises:
        Interrupted: SIGINT/SIGTERM arrived; a checkpoint of the last whole step was written.
        RunError: the loss became non-finite, or a file could not be written.
    """
    done = s.budgets.reached(state)
    if done and state.evaluated:  # a resume with nothing left to do: the files stay as they are
        if state.stop_reason != done:
            state.stop_reason = done
            save(s, state, best=False)
        return state
    start_elapsed, t0 = state.elapsed, time.perf_counter()
    state.stop_reason = None
    h = s.hyper
    saved_at = None  # the step of the last checkpoint this session wrote
    s.model.train()
    while True:
        state.elapsed, stopped, _ = agree(s, start_elapsed + time.perf_counter() - t0)
        if stopped:
            if saved_at != state.step:
                save(s, state, best=False)
            raise Interrupted(state.step, s.files.ckpt)
        reason = s.budgets.reached(state)
        if state.step > 0 and not state.evaluated and (state.step % h.eval_interval == 0 or reason):
            before = state.best_bpc
            if not evaluate(s, state):
                continue  # cut short by a signal: checkpoint at the top of the loop, redone on resume
            state.stop_reason = reason
            save(s, state, best=state.best_bpc < before)
            saved_at = state.step
            continue  # a signal during the evaluation or the save stops the run here
        if reason:
            break
        lr = lr_at(state.step, s.budgets.progress(state), h.lr, h.min_lr, h.warmup_steps)
        t_step = time.perf_counter()
        loss, norm = train_step(s, state, lr)
        state.train_time += time.perf_counter() - t_step
        state.step += 1
        state.tokens += s.tokens_per_step
        state.chars = state.tokens * s.chars_per_token
        state.flops = state.tokens * s.flops_per_token
        state.elapsed, _, loss = agree(s, start_elapsed + time.perf_counter() - t0, loss)
        if not math.isfinite(loss):
            raise RunError(f"the training loss became {loss} at step {state.step}; try a lower --lr")
        if s.metrics is not None:
            s.metrics.write({"kind": "step", **counters(state), "lr": lr, "loss": loss, "grad_norm": norm})
        if s.progress is not None:
            s.progress.n = round(100 * s.budgets.progress(state))
            tps = state.tokens / state.train_time if state.train_time > 0 else 0.0
            s.progress.set_postfix_str(f"step {state.step} loss {loss:.3f} {tps:,.0f} tok/s", refresh=False)
            s.progress.update(0)
    if saved_at != state.step or state.stop_reason != reason:
        state.stop_reason = reason
        save(s, state, best=False)
    return state


# ----------------------------------------------------------- thread probe
def probe_threads(model, data, block_size: int, batch_size: int, autocast, candidates) -> tuple[int, dict]:
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
            t = time.perf_counter()
            with autocast:
                _, loss = model(x, y)
            loss.backward()
            best = time.perf_counter() - t
        timings[n] = best
    model.zero_grad(set_to_none=True)
    model.train(was_training)
    threads = min(timings, key=timings.get)
    torch.set_num_threads(threads)
    return threads, timings


def warm_up_compiled(s: Session) -> float:
    """Compile ``train_model`` on one fixed batch (forward + backward, RNG states restored); seconds taken."""
    rng = rng_state()
    t = time.perf_counter()
    x, y = windows_to_batch(
        s.train, fixed_windows(len(s.train), s.block_size, s.hyper.batch_size), s.block_size, s.device
    )
    with s.autocast:
        _, loss = s.train_model(x, y)
    loss.backward()
    s.optimizer.zero_grad(set_to_none=True)
    if s.device.type == "cuda":
        torch.cuda.synchronize()
    set_rng_state(rng)
    return time.perf_counter() - t


def stderr_is_tty() -> bool:
    return sys.stderr.isatty()


def tokenizer_from_stored(d: dict):
    """The tokenizer a checkpoint stores (ValueError/KeyError/TypeError when malformed)."""
    from storygpt.checkpoint import tokenizer_from_dict

    return tokenizer_from_dict(d)


def remove_leftovers(folder: Path) -> None:
    """Temporary files a killed run (kill -9, power loss) left in ``folder``; the files under final names are whole."""
    for name in ("ckpt.pt", "best.pt", "summary.json", "metrics.jsonl"):
        for stale in atomic.leftovers(folder / name):
            stale.unlink(missing_ok=True)


def session_run(s: Session, state: TrainState, args, threads: int, dtype, fresh: bool) -> dict:
    """Probe threads, open metrics.jsonl, compile, show progress, :func:`run`; returns summary.json's dict.

    ``args`` is read for ``threads``, ``compile`` and ``no_progress`` only.
    """
    from tqdm import tqdm

    nothing_left = s.budgets.reached(state) is not None and state.evaluated
    if args.threads is None and s.device.type == "cpu" and threads > 1 and not nothing_left:
        threads, timings = probe_threads(
            s.model, s.train, s.block_size, s.hyper.batch_size, s.autocast, sorted({1, threads})
        )
        s.log(
            "torch threads: timed "
            + ", ".join(f"{n} -> {t * 1000:.0f} ms" for n, t in timings.items())
            + f" per training step; using {threads} (set --threads to choose)"
        )
    if s.dist.master:
        remove_leftovers(s.files.folder)
        s.metrics = MetricsLog(s.files.metrics)
        s.metrics.open(None if fresh else state)
        if fresh:
            for p in (s.files.ckpt, s.files.best, s.files.summary):
                p.unlink(missing_ok=True)
        emb, non_emb = s.params
        s.log(
            f"run {show(s.files.folder)} | corpus {s.meta['corpus']} ({s.meta['spec']}, vocab "
            f"{s.meta['config']['vocab_size']:,}) | train {len(s.train):,} tokens, held-out "
            f"{s.heldout.characters:,} characters | {emb + non_emb:,} parameters ({non_emb:,} non-embedding), "
            f"{s.meta['config']['position']} positions | {s.tokens_per_step:,} tokens/step, "
            f"{s.flops_per_token:,} FLOPs/token | device {s.device}, {str(dtype).replace('torch.', '')}, "
            f"{threads} threads x {s.dist.world} process(es)"
            + (f" | resumed at step {state.step}, {state.elapsed:.0f}s spent" if not fresh else "")
        )
    if args.compile and not nothing_left:
        seconds = warm_up_compiled(s)
        state.compile_time += seconds
        s.log(f"compiled in {seconds:.1f}s (not charged to the budget)")
    s.progress = tqdm(
        total=100,
        initial=round(100 * s.budgets.progress(state)),
        unit="%",
        disable=(not s.dist.master) or args.no_progress or nothing_left,
        dynamic_ncols=True,
        file=sys.stderr,
        bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt}%{postfix}",
    )
    steps_before = state.step
    try:
        state = run(s, state)
    finally:
        s.progress.close()
        if s.metrics is not None:
            s.metrics.close()
    result = {**summary(s, state), "history": state.history}
    if state.step == steps_before and not fresh:
        s.log(f"budget already spent ({state.stop_reason}): nothing to train | {show(s.files.folder)}")
    else:
        s.log(
            f"done ({state.stop_reason}): {result['params']:,} parameters, {state.step:,} steps, "
            f"{state.tokens:,} tokens, {state.flops:.3g} FLOPs, {result['tokens_per_sec'] or 0:,.0f} tokens/s, "
            f"held-out {result['val_loss']:.4f} nats/token, {result['val_bpc']:.4f} bits/char "
            f"(best {result['best_val_bpc']:.4f}) | {state.elapsed:.0f}s"
            + (f" + {state.compile_time:.0f}s compiling" if state.compile_time else "")
            + f" | {show(s.files.folder)}"
        )
    return result
