"""Models go out: a storygpt checkpoint as a Hugging Face folder or a llama.cpp GGUF file.

    from storygpt.export import export
    export("checkpoints/shakespeare/rope-bpe-8192", "exported/rope-bpe-8192")          # HF folder
    export("checkpoints/shakespeare/rope-bpe-8192", "rope-bpe-8192.gguf", fmt="gguf")  # GGUF file

The configuration is mapped to a stock architecture by a table of GPTConfig fields
(:mod:`storygpt.export.arch`: learned positions -> GPT-2, rotary -> GPT-NeoX), the
tokenizer to a ``tokenizer.json`` (:mod:`storygpt.export.tokenizer`); what has no exact
stock equivalent is refused with one line (:class:`ExportError`) and nothing is written.
Details and the checks made: docs/export.md.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from storygpt.atomic import write_text
from storygpt.cli import show

from .destination import FORMATS, ExportError, check_paths

__all__ = ["ExportError", "FORMATS", "check_paths", "choose_architecture", "export", "read_source"]


def __getattr__(name):
    # Lazy: the architecture table imports torch; export.py checks its paths first.
    if name == "choose_architecture":
        from .arch import choose_architecture

        return choose_architecture
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_source(checkpoint: str | os.PathLike):
    """The model and tokenizer of a checkpoint file or run folder (best.pt, else ckpt.pt), on the CPU.

    The one place the exporter reads checkpoints, through the same public functions as bits.py.

    Returns:
        ``(model, tokenizer, path)``: a :class:`storygpt.model.GPT` in eval mode, its tokenizer, the file read.

    Raises:
        FileNotFoundError, CheckpointError (a ValueError): as :func:`storygpt.checkpoint.load_checkpoint`.
    """
    from storygpt import load_checkpoint
    from storygpt.checkpoint import resolve_checkpoint

    path = resolve_checkpoint(checkpoint)
    model, tok, _ = load_checkpoint(str(path), device="cpu")
    return model, tok, path


def _usual_modes(folder: Path) -> None:
    """The permissions a new folder and its files get under the umask (mkdtemp makes 0700, safetensors 0600)."""
    from storygpt.atomic import file_mode

    os.chmod(folder, file_mode() | ((file_mode() & 0o444) >> 2))  # r -> x: 0644 -> 0755
    for p in folder.iterdir():
        os.chmod(p, file_mode())


def _publish_folder(tmp: Path, out: Path) -> None:
    """Move the finished folder ``tmp`` to ``out``; an old ``out`` is removed only once ``tmp`` is in place."""
    if not out.exists():
        os.replace(tmp, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", suffix=".tmp", dir=out.parent))
    try:
        os.replace(out, old / out.name)
    except BaseException:
        shutil.rmtree(old, ignore_errors=True)
        raise
    try:
        os.replace(tmp, out)
    except BaseException:
        os.replace(old / out.name, out)
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)


def export(checkpoint: str | os.PathLike, out: str | os.PathLike, fmt: str = "hf", force: bool = False) -> dict:
    """Export a checkpoint as a Hugging Face folder (``fmt="hf"``) or a GGUF file (``"gguf"``).

    Everything is written into a temporary folder beside ``out`` and renamed into place at
    the end, so ``out`` is never half-written (a Hugging Face folder gets a model card, ``README.md``:
    :func:`storygpt.export.card.model_card`); an existing ``out`` is replaced only with
    ``force`` (an empty folder is always fine).  Missing folders above ``out`` are created (and removed
    again when the export is refused).

    Args:
        checkpoint: a checkpoint file or a run folder.
        out: the folder (hf) or file (gguf) to create.

    Returns:
        ``{"path": out, "checkpoint": file read, "format", "architecture": HF model_type or
        llama.cpp architecture, "files": names written}``.

    Raises:
        ExportError: an unknown format, a destination refused (see above), a model or
            tokenizer with no exact equivalent in the format (one line with the reason).
        FileNotFoundError, CheckpointError: a checkpoint that is missing or is not one.
        ImportError: safetensors (and for gguf: gguf) is not installed.
    """
    source, out = check_paths(checkpoint, out, fmt, force)
    from storygpt import load_checkpoint

    from .card import load_path, model_card
    from .hf import HF_FILES, write_hf

    model, tok, ckpt = load_checkpoint(str(source), device="cpu")
    path = source
    made = [p for p in (out.parent, *out.parent.parents) if not p.exists()]  # removed again if the export fails
    tmp, done = None, False
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
        hf_dir = tmp / "hf" if fmt == "gguf" else tmp
        hf_dir.mkdir(exist_ok=True)
        arch = write_hf(model, tok, hf_dir)
        if fmt == "hf":
            write_text(tmp / "README.md", model_card(ckpt, model, tok, arch, out.name, show(path), load_path(out)))
            _usual_modes(tmp)
            _publish_folder(tmp, out)
            done = True
            files = (*HF_FILES, "README.md")
            return {"path": out, "checkpoint": path, "format": fmt, "architecture": arch.name, "files": files}
        from .gguf import write_gguf

        gguf_arch = write_gguf(hf_dir, tmp / "model.gguf", name=out.stem)
        os.replace(tmp / "model.gguf", out)
        done = True
        return {"path": out, "checkpoint": path, "format": fmt, "architecture": gguf_arch, "files": (out.name,)}
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(tmp)
        for folder in [] if done else made:  # deepest first: nothing is left of a refused export
            with contextlib.suppress(OSError):
                folder.rmdir()
