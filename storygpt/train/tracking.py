"""Experiment tracking beside metrics.jsonl: TensorBoard and Weights & Biases (``pretrain.py --log``).

Off by default.  Every metrics.jsonl row is logged as scalars ``KIND/FIELD`` at its step; the
recipe, flags and provenance are the run's config; only rank 0 logs.  ``tensorboard`` writes
``RUN/tensorboard/``, ``wandb`` a run in ``RUN/wandb/`` (``$WANDB_PROJECT``, ``WANDB_MODE=offline``),
both following ``--resume`` and ``--force``.  Each package is imported only here
(``pip install -e .[tensorboard]`` / ``.[wandb]``).  Details: docs/training.md.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
from pathlib import Path

from storygpt.cli import show

KINDS = ("tensorboard", "wandb")
PACKAGE = {"tensorboard": "tensorboard", "wandb": "wandb"}


class TrackingError(Exception):
    """A tracker that cannot start (a missing package, wandb without a login): one line for the user."""


def parse_kinds(text: str | None) -> tuple[str, ...]:
    """``"tensorboard,wandb"`` -> ``("tensorboard", "wandb")``; None or ``""`` or ``"none"`` -> ``()``.

    Raises:
        ValueError: an unknown name (the known ones listed).
        TrackingError: a tracker whose package is missing (the extra to install named).
    """
    if text is None or text.strip() in ("", "none"):
        return ()
    kinds = tuple(dict.fromkeys(k.strip() for k in text.split(",")))
    for k in kinds:
        if k not in KINDS:
            raise ValueError(f"unknown tracker {k!r}: use {', '.join(KINDS)} (comma-separated for both)")
        if importlib.util.find_spec(PACKAGE[k]) is None:
            raise TrackingError(f"--log {k} needs the {PACKAGE[k]} package: pip install -e .[{k}]")
    return kinds


def provenance() -> dict:
    """storygpt's version, the git commit of its checkout and whether tracked files differ from it (``dirty``;
    None outside a git checkout), the torch, numpy and Python versions and the platform."""
    import platform
    import subprocess
    from importlib import metadata

    import storygpt

    repo = Path(storygpt.__file__).resolve().parent.parent

    def git(*args):
        try:
            done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    def version(package):
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None

    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "storygpt": storygpt.__version__,
        "commit": git("rev-parse", "HEAD"),
        "dirty": None if status is None else bool(status),
        "torch": version("torch"),
        "numpy": version("numpy"),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
    }


def scalars(row: dict) -> dict[str, float]:
    """A metrics.jsonl row's numbers as ``{KIND/FIELD: value}`` (the step itself and non-numbers left out)."""
    kind = row.get("kind", "row")
    out = {}
    for k, v in row.items():
        if k in ("kind", "step") or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        out[f"{kind}/{k}"] = v
    return out


class TensorBoard:
    """Event files in ``folder/tensorboard``."""

    def __init__(self, folder: Path, config: dict, resume_step: int | None):
        from torch.utils.tensorboard import SummaryWriter

        logdir = folder / "tensorboard"
        if resume_step is None and logdir.is_dir():  # a fresh run: the old run's events would mix in
            for old in logdir.glob("events.out.tfevents.*"):
                old.unlink()
        # purge_step: events at steps past the checkpoint are dropped (written before a kill, then redone)
        self.writer = SummaryWriter(str(logdir), purge_step=None if resume_step is None else resume_step + 1)
        if resume_step is None:
            self.writer.add_text("config", "```\n" + json.dumps(config, indent=1, default=str) + "\n```", 0)
        self.where = show(logdir)

    def log(self, row: dict) -> None:
        for k, v in scalars(row).items():
            self.writer.add_scalar(k, v, row["step"])

    def close(self) -> None:
        self.writer.close()


class Wandb:
    """A wandb run in ``folder/wandb`` (``WANDB_MODE`` and ``WANDB_PROJECT`` as wandb reads them)."""

    def __init__(self, folder: Path, name: str, config: dict, resume_step: int | None):
        import wandb

        id_file = folder / "wandb" / "storygpt-run-id"
        run_id = None
        if resume_step is not None and id_file.is_file():
            run_id = id_file.read_text(encoding="utf-8").strip() or None
        if run_id is None:
            run_id = secrets.token_hex(4)  # 8 of [0-9a-f], as wandb's own ids
        id_file.parent.mkdir(parents=True, exist_ok=True)
        from storygpt.atomic import write_text

        write_text(id_file, run_id + "\n")
        try:
            self.run = wandb.init(
                project=os.environ.get("WANDB_PROJECT", "storygpt"),
                dir=str(folder),
                name=name,
                id=run_id,
                resume="allow",
                config=json.loads(json.dumps(config, default=str)),
                settings=wandb.Settings(silent=True, console="off"),
            )
        except Exception as e:  # wandb's errors (no API key, no network) are its own classes
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise TrackingError(
                f"--log wandb: {first} (wandb login, or WANDB_MODE=offline to keep the run on disk)"
            ) from None
        offline = getattr(self.run.settings, "mode", "") == "offline" or os.environ.get("WANDB_MODE") == "offline"
        self.where = f"wandb run {run_id} " + (
            "(offline, in " + show(folder / "wandb") + ")" if offline else self.run.url
        )

    def log(self, row: dict) -> None:
        self.run.log(scalars(row), step=row["step"])

    def close(self) -> None:
        self.run.finish()


def open_trackers(kinds, folder: Path, name: str, config: dict, resume_step: int | None) -> list:
    """The trackers ``kinds`` names, opened (``resume_step``: the step a resumed run continues from; None: fresh).

    Raises:
        TrackingError: a tracker that cannot start (one line).
    """
    trackers = []
    try:
        for k in kinds:
            if k == "tensorboard":
                trackers.append(TensorBoard(folder, config, resume_step))
            else:
                trackers.append(Wandb(folder, name, config, resume_step))
    except BaseException:
        for t in trackers:
            t.close()
        raise
    return trackers
