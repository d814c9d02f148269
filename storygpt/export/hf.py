"""Write a Hugging Face model folder: config, safetensors weights, generation config, tokenizer files."""

from __future__ import annotations

import json
from pathlib import Path

from storygpt.atomic import write_text

from .arch import Architecture, choose_architecture, hf_config, hf_state_dict
from .tokenizer import tokenizer_json

#: The files :func:`write_hf` writes.
HF_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)


def _require_safetensors():
    try:
        import safetensors.torch
    except ImportError as e:
        raise ImportError(
            "exporting a model needs the optional package safetensors (pip install safetensors, or "
            "pip install -e .[interop])"
        ) from e
    return safetensors.torch


def _write_json(path: Path, d: dict) -> None:
    write_text(path, json.dumps(d, ensure_ascii=False, indent=2) + "\n")


def write_hf(model, tok, folder: str | Path) -> Architecture:
    """Write ``model`` and ``tok`` into ``folder`` (which must exist) as the files of :data:`HF_FILES`.

    ``transformers.AutoModelForCausalLM.from_pretrained(folder)`` and
    ``AutoTokenizer.from_pretrained(folder)`` load them with stock classes (no custom code).

    Args:
        model: a :class:`storygpt.model.GPT` (its ``config`` and ``state_dict()``).
        tok: its storygpt tokenizer.

    Returns:
        The architecture written (:func:`~storygpt.export.arch.choose_architecture`).

    Raises:
        ExportError: a config or tokenizer with no exact stock equivalent (nothing is written then).
        ImportError: safetensors is not installed.
    """
    from storygpt.tokenizers.interop import write_hf_files

    config = model.config
    arch = choose_architecture(config)
    tj = tokenizer_json(tok)  # before any file: a refused tokenizer writes nothing
    tensors = hf_state_dict(arch, config, model.state_dict())
    st = _require_safetensors()
    folder = Path(folder)
    pad = tok.pad_id if tok.pad_id is not None else tok.eot_id
    _write_json(folder / "config.json", hf_config(arch, config, tok.eot_id, pad))
    _write_json(
        folder / "generation_config.json",
        {
            "bos_token_id": tok.eot_id,
            "eos_token_id": tok.eot_id,
            "pad_token_id": pad,
        },
    )
    st.save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    write_hf_files(tj, tok, folder, model_max_length=config.block_size)
    return arch
