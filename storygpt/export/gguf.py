"""A Hugging Face folder written by :func:`storygpt.export.hf.write_hf` as a llama.cpp GGUF file.

Written with llama.cpp's own package ``gguf`` (``GGUFWriter``, tensor names from
``get_tensor_name_map``), not its converter script, which is not on PyPI and refuses newly
trained vocabularies; the converter's layouts are applied here the same way (and tested).
Supported: ``gpt2`` and ``gptneox``, float32 tensors, byte-level BPE with the ``gpt2``,
``gpt4`` or ``o200k`` pattern; the ``simple`` pattern and non-BPE tokenizers are refused with
the reason.

The layouts, pre-tokenizer names and why the converter is not used: docs/export.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from storygpt.tokenizers.base import require

from .arch import ExportError

#: storygpt's HF split pattern -> llama.cpp's pre-tokenizer name (``tokenizer.ggml.pre``).
LLAMA_CPP_PRE = {"gpt2": "gpt-2", "gpt4": "llama-bpe", "o200k": "gpt-4o"}
#: Hugging Face model_type -> llama.cpp architecture.
GGUF_ARCH = {"gpt2": "gpt2", "gpt_neox": "gptneox"}
#: The exported architectures llama.cpp cannot run exactly, and why (one line each).
NO_GGUF = {
    "nanochat": "llama.cpp has no NanoChat architecture (gguf's MODEL_ARCH has none), and none of its "
    "architectures combines NanoChat's parts (a weightless RMSNorm after the token embedding, QK-norm, a ReLU^2 MLP)",
    "qwen3": "llama.cpp's qwen3 computes a SiLU-gated MLP (GGUF has no key to choose another activation); "
    "storygpt's ReLU^2 is exact in transformers' Qwen3 only as relu(gate) * up",
    "llama": "llama.cpp's llama computes a SiLU-gated MLP (GGUF has no key to choose another activation); "
    "storygpt's ReLU^2 is exact in transformers' Llama only as relu(gate) * up",
}


def _require_gguf():
    return require("gguf", "export.py --format gguf")


def llama_cpp_pre(tj: dict) -> str:
    """llama.cpp's pre-tokenizer name for a byte-level BPE ``tokenizer.json`` dict.

    Raises:
        ExportError: not a byte-level BPE, or a split pattern llama.cpp does not implement.
    """
    from storygpt.tokenizers.interop import InteropError, hf_pattern

    model = tj.get("model") or {}
    if model.get("type") != "BPE":
        raise ExportError(
            f"a {model.get('type')} tokenizer has no llama.cpp equivalent (GGUF holds byte-level BPE here)"
        )
    try:
        pattern = hf_pattern(tj.get("pre_tokenizer"), "tokenizer.json")
    except InteropError as e:
        raise ExportError(f"llama.cpp cannot split text like this tokenizer: {e}") from None
    if pattern not in LLAMA_CPP_PRE:
        raise ExportError(
            f"llama.cpp has no pre-tokenizer for storygpt's {pattern!r} split pattern "
            f"(GGUF supports {', '.join(LLAMA_CPP_PRE)}; train the tokenizer with one of them)"
        )
    return LLAMA_CPP_PRE[pattern]


def _token_list(tj: dict) -> tuple[list[str], list[int]]:
    """Every id's token string (GPT-2's byte-to-character spelling) and llama.cpp token type."""
    vocab = dict(tj["model"]["vocab"])
    special = {t["id"]: t["content"] for t in tj.get("added_tokens") or []}
    n = max([*vocab.values(), *special]) + 1
    tokens: list[str | None] = [None] * n
    types = [1] * n  # NORMAL
    for s, i in vocab.items():
        tokens[i] = s
    for i, s in special.items():
        tokens[i], types[i] = s, 3  # CONTROL
    missing = [i for i, t in enumerate(tokens) if t is None]
    if missing:
        raise ExportError(f"token id {missing[0]} has no token: GGUF needs every id from 0 to {n - 1}")
    return tokens, types  # type: ignore[return-value]


def _gguf_tensors(model_type: str, config: dict, tensors: dict) -> dict[str, np.ndarray]:
    """HF names and layouts -> llama.cpp's names and layouts (float32 numpy arrays)."""
    gguf = _require_gguf()
    arch = {"gpt2": gguf.MODEL_ARCH.GPT2, "gpt_neox": gguf.MODEL_ARCH.GPTNEOX}[model_type]
    n_layer = config["n_layer"] if model_type == "gpt2" else config["num_hidden_layers"]
    names = gguf.get_tensor_name_map(arch, n_layer)
    out: dict[str, np.ndarray] = {}
    for hf_name, t in tensors.items():
        a = t.astype(np.float32)
        if model_type == "gpt2" and hf_name.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight")):
            a = a.T  # Conv1D (in, out) -> (out, in)
        if model_type == "gpt_neox" and ".query_key_value." in hf_name:
            H = config["num_attention_heads"]
            a = a.reshape(H, 3, -1, *a.shape[1:]).swapaxes(0, 1).reshape(a.shape)
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if name is None:
            raise ExportError(f"llama.cpp's {arch.name.lower()} has no tensor for {hf_name!r}")
        out[name] = np.ascontiguousarray(a)
    tok_embd = gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.TOKEN_EMBD] + ".weight"
    out.setdefault(gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.OUTPUT] + ".weight", out[tok_embd].copy())
    return out


def write_gguf(hf_folder: str | Path, path: str | Path, name: str | None = None) -> str:
    """Write the model of ``hf_folder`` (written by :func:`~storygpt.export.hf.write_hf`) as GGUF at ``path``.

    ``name`` is the model's ``general.name`` (default: the file name without its suffix).

    Returns:
        llama.cpp's architecture name (``"gpt2"`` or ``"gptneox"``).

    Raises:
        ExportError: an architecture or tokenizer llama.cpp cannot hold (see the module docstring).
        ImportError: gguf or safetensors is not installed.
    """
    gguf = _require_gguf()
    from safetensors.numpy import load_file

    hf_folder = Path(hf_folder)
    config = json.loads((hf_folder / "config.json").read_text(encoding="utf-8"))
    tj = json.loads((hf_folder / "tokenizer.json").read_text(encoding="utf-8"))
    model_type = config["model_type"]
    if model_type in NO_GGUF:
        raise ExportError(f"no GGUF for this model: {NO_GGUF[model_type]}; train with --recipe gpt2 for a GGUF export")
    if model_type not in GGUF_ARCH:
        raise ExportError(f"llama.cpp has no architecture for a {model_type!r} model")
    pre = llama_cpp_pre(tj)
    tokens, types = _token_list(tj)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    tensors = _gguf_tensors(model_type, config, load_file(str(hf_folder / "model.safetensors")))

    arch = GGUF_ARCH[model_type]
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(name or Path(path).stem)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    if model_type == "gpt2":
        w.add_context_length(config["n_positions"])
        w.add_embedding_length(config["n_embd"])
        w.add_feed_forward_length(config["n_inner"])
        w.add_block_count(config["n_layer"])
        w.add_head_count(config["n_head"])
        w.add_layer_norm_eps(config["layer_norm_epsilon"])
    else:
        d, H = config["hidden_size"], config["num_attention_heads"]
        w.add_context_length(config["max_position_embeddings"])
        w.add_embedding_length(d)
        w.add_feed_forward_length(config["intermediate_size"])
        w.add_block_count(config["num_hidden_layers"])
        w.add_head_count(H)
        w.add_layer_norm_eps(config["layer_norm_eps"])
        w.add_rope_dimension_count(int(config["rope_parameters"]["partial_rotary_factor"] * d // H))
        w.add_rope_freq_base(config["rope_parameters"]["rope_theta"])
        w.add_parallel_residual(config["use_parallel_residual"])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(config["bos_token_id"])
    w.add_eos_token_id(config["eos_token_id"])
    w.add_pad_token_id(config["pad_token_id"])
    w.add_add_bos_token(False)
    for name, a in tensors.items():
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return arch
