"""Write a Hugging Face model folder: config, safetensors weights, generation config, tokenizer files."""

from __future__ import annotations

import json
from pathlib import Path

from storygpt.atomic import write_text
from storygpt.tokenizers.base import EOT, require

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
    require("safetensors", "export.py")
    return require("safetensors.torch", "export.py")


def _write_json(path: Path, d: dict) -> None:
    write_text(path, json.dumps(d, ensure_ascii=False, indent=2) + "\n")


def start_of_text(tj: dict, eot_id: int) -> dict:
    """``tokenizer.json`` content ``tj`` with a post-processor that puts ``<|endoftext|>`` before the text.

    storygpt trains and samples with ``<|endoftext|>`` before every document (``sample.py`` feeds
    ``[eot] + prompt``), so the export's tokenizer adds it too: ``tok(text)`` and ``pipeline("text-generation")``
    give the model the start it was trained with.  A pair of texts gets one before each.
    """
    eot = {"SpecialToken": {"id": EOT, "type_id": 0}}
    return {
        **tj,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [eot, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [
                eot,
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": EOT, "type_id": 1}},
                {"Sequence": {"id": "B", "type_id": 1}},
            ],
            "special_tokens": {EOT: {"id": EOT, "ids": [eot_id], "tokens": [EOT]}},
        },
    }


def write_hf(model, tok, folder: str | Path) -> Architecture:
    """Write ``model`` and ``tok`` into ``folder`` (which must exist) as the files of :data:`HF_FILES`.

    ``transformers.AutoModelForCausalLM.from_pretrained(folder)`` and
    ``AutoTokenizer.from_pretrained(folder)`` load them with stock classes (no custom code).  The
    tokenizer puts ``<|endoftext|>`` before the text (:func:`start_of_text`; ``add_special_tokens=False`` leaves
    it out) and decodes as storygpt does.

    Args:
        model: a :class:`storygpt.model.GPT` (its ``config`` and ``state_dict()``).
        tok: its storygpt tokenizer.

    Returns:
        The architecture written (:func:`~storygpt.export.arch.choose_architecture`).

    Raises:
        ExportError: a config or tokenizer with no exact stock equivalent (nothing is written then).
        ImportError: safetensors is not installed.
    """
    from storygpt.tokenizers.interop import hf_token_roles

    config = model.config
    arch = choose_architecture(config)
    tj = start_of_text(tokenizer_json(tok), tok.eot_id)  # before any file: a refused tokenizer writes nothing
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
            # sample.py never draws <pad> (it never follows anything in the training data)
            **({"suppress_tokens": [tok.pad_id]} if tok.pad_id not in (None, tok.eot_id) else {}),
        },
    )
    st.save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    roles_config, roles = hf_token_roles(tok, model_max_length=config.block_size)
    # transformers 5 rebuilds the post-processor from add_bos_token: it must say what tokenizer.json does
    roles_config["add_bos_token"] = True
    for name, d in (
        ("tokenizer.json", tj),
        ("tokenizer_config.json", roles_config),
        ("special_tokens_map.json", roles),
    ):
        _write_json(folder / name, d)
    return arch
