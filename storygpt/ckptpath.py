"""Which checkpoint file a path names: torch-free, so tools refuse a bad path before importing torch."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_checkpoint(path: str | os.PathLike) -> Path:
    """A checkpoint file, or a run folder (its best.pt, else ckpt.pt).

    Raises:
        FileNotFoundError: naming the path when nothing loadable is there.
    """
    p = Path(path)
    if p.is_dir():
        for name in ("best.pt", "ckpt.pt"):
            if (p / name).is_file():
                return p / name
        raise FileNotFoundError(f"no best.pt or ckpt.pt in run folder {p}")
    if not p.is_file():
        raise FileNotFoundError(f"checkpoint not found: {p}")
    return p
