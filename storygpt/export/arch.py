"""From a :class:`~storygpt.model.GPTConfig` to a stock architecture, as a table.

Every field of ``GPTConfig`` has a row in :data:`FIELDS`: either it is a size the stock
config carries (``n_layer``, ...), or it does not change the function the trained
model computes at inference (``dropout``), or it chooses the architecture by its value
(``position``: ``"learned"`` -> GPT-2, ``"rope"`` -> GPT-NeoX).  A value with no row,
or a field the table does not know (a new model option), is refused with a one-line
:class:`ExportError` naming the field: storygpt never writes a model that a stock
library would run differently.

The two architectures and why they are exact (checked by ``tests/test_export.py``,
logits within 1e-4 in float32):

``gpt2`` (Hugging Face ``GPT2LMHeadModel``; llama.cpp ``gpt2``)
    Learned absolute positions, pre-norm blocks with LayerNorm (eps 1e-5, weight and
    bias), one fused query/key/value projection with bias, exact (erf) GELU
    (``activation_function: "gelu"``, not GPT-2's tanh ``gelu_new``), MLP 4 x n_embd,
    attention scaled by 1/sqrt(head_dim), output layer tied to the token embedding.
    GPT-2's ``Conv1D`` stores weights as (in, out): the Linear weights are transposed.
``gpt_neox`` (Hugging Face ``GPTNeoXForCausalLM``; llama.cpp ``gptneox``)
    The same blocks with rotary positions on the whole head (``rotary_pct`` 1.0, base
    ``rope_theta``), sequential residuals (``use_parallel_residual: false``), a tied
    output layer.  Two layouts differ and are converted: GPT-NeoX's fused projection
    holds [q, k, v] per head (storygpt: all q, then all k, then all v), and GPT-NeoX
    rotates dimension i with i + head_dim/2 (``rotate_half``) where storygpt rotates
    the pair (2i, 2i+1) (RoFormer).  Permuting every head's query and key rows to
    (0, 2, 4, ..., 1, 3, 5, ...) turns one rotation into the other and leaves q.k
    unchanged, so the attention is the same.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch


class ExportError(ValueError):
    """A checkpoint, tokenizer or destination that cannot be exported exactly; one line naming the reason."""


@dataclass(frozen=True)
class Architecture:
    """A stock architecture a storygpt model is exported as.

    Attributes:
        name: storygpt's name (``"gpt2"`` or ``"gpt_neox"``), also Hugging Face's ``model_type``.
        hf_class: the Hugging Face class (``config.json`` ``architectures``).
        gguf_arch: llama.cpp's architecture name (``general.architecture``).
    """

    name: str
    hf_class: str
    gguf_arch: str


GPT2 = Architecture("gpt2", "GPT2LMHeadModel", "gpt2")
GPT_NEOX = Architecture("gpt_neox", "GPTNeoXForCausalLM", "gptneox")

#: A size or constant the stock config carries as it is.
CARRIED = "carried"
#: A field that changes nothing at inference (dropout is off in evaluation).
TRAINING_ONLY = "training only"

#: The table: GPTConfig field -> CARRIED, TRAINING_ONLY, or {value: Architecture} for a
#: field whose value picks the architecture (a value missing here has no stock equivalent).
#: A new GPTConfig field needs a row here before its checkpoints export.
FIELDS: dict[str, object] = {
    "vocab_size": CARRIED,
    "block_size": CARRIED,
    "n_layer": CARRIED,
    "n_head": CARRIED,
    "n_embd": CARRIED,
    "rope_theta": CARRIED,  # GPT-NeoX rotary base; unused by learned positions
    "dropout": TRAINING_ONLY,
    "position": {"learned": GPT2, "rope": GPT_NEOX},
}


def choose_architecture(config) -> Architecture:
    """The stock architecture that computes exactly what a model of ``config`` computes.

    Args:
        config: a :class:`storygpt.model.GPTConfig`.

    Raises:
        ExportError: a field with no row in :data:`FIELDS`, or a value with no stock
            equivalent (the message names the field and its value).
    """
    chosen: list[tuple[str, Architecture]] = []
    for f in fields(config):
        value = getattr(config, f.name)
        row = FIELDS.get(f.name)
        if row is None:
            raise ExportError(
                f"GPTConfig.{f.name} = {value!r}: the exporter does not know this field, so no stock architecture "
                "is known to compute the same function (add a row to storygpt/export/arch.py FIELDS)"
            )
        if isinstance(row, dict):
            if value not in row:
                raise ExportError(
                    f"GPTConfig.{f.name} = {value!r} has no exact equivalent in a stock architecture "
                    f"(exportable values: {', '.join(repr(v) for v in row)})"
                )
            chosen.append((f.name, row[value]))
    archs = {a for _, a in chosen}
    if len(archs) != 1:
        names = ", ".join(f"{n} -> {a.name}" for n, a in chosen) or "no field chooses one"
        raise ExportError(f"GPTConfig: the fields choose no single stock architecture ({names})")
    return archs.pop()


# --------------------------------------------------------------------------- configs
def hf_config(arch: Architecture, config, eot_id: int, pad_id: int, dtype: str = "float32") -> dict:
    """The Hugging Face ``config.json`` content for ``arch`` and a GPTConfig.

    Dropout is written as 0 (the exported model is for inference; storygpt's checkpoint
    keeps the training value).  ``bos_token_id`` and ``eos_token_id`` are ``<|endoftext|>``
    (storygpt puts it before every document), ``pad_token_id`` is ``pad_id``.
    """
    d, common = (
        config.n_embd,
        {
            "architectures": [arch.hf_class],
            "model_type": arch.name,
            "vocab_size": config.vocab_size,
            "bos_token_id": eot_id,
            "eos_token_id": eot_id,
            "pad_token_id": pad_id,
            "tie_word_embeddings": True,
            "use_cache": True,
            "initializer_range": 0.02,
            "dtype": dtype,
        },
    )
    if arch is GPT2:
        return {
            **common,
            "n_positions": config.block_size,
            "n_embd": d,
            "n_layer": config.n_layer,
            "n_head": config.n_head,
            "n_inner": 4 * d,
            "activation_function": "gelu",
            "layer_norm_epsilon": 1e-5,
            "resid_pdrop": 0.0,
            "embd_pdrop": 0.0,
            "attn_pdrop": 0.0,
            "scale_attn_weights": True,
            "scale_attn_by_inverse_layer_idx": False,
            "reorder_and_upcast_attn": False,
            "add_cross_attention": False,
        }
    return {
        **common,
        "hidden_size": d,
        "num_hidden_layers": config.n_layer,
        "num_attention_heads": config.n_head,
        "intermediate_size": 4 * d,
        "hidden_act": "gelu",
        "max_position_embeddings": config.block_size,
        "layer_norm_eps": 1e-5,
        "use_parallel_residual": False,
        "attention_bias": True,
        "attention_dropout": 0.0,
        "hidden_dropout": 0.0,
        # transformers < 5 reads rotary_pct / rotary_emb_base; 5 reads rope_parameters
        "rotary_pct": 1.0,
        "rotary_emb_base": float(config.rope_theta),
        "rope_parameters": {
            "rope_type": "default",
            "rope_theta": float(config.rope_theta),
            "partial_rotary_factor": 1.0,
        },
    }


# --------------------------------------------------------------------------- weights
def rotary_row_order(head_dim: int) -> torch.Tensor:
    """(head_dim,) int64: the rows of one head's query/key, storygpt order -> GPT-NeoX order.

    storygpt rotates the pairs (2i, 2i+1); GPT-NeoX rotates (i, i + head_dim/2).  Row j of
    the GPT-NeoX head is row ``order[j]`` of storygpt's: ``(0, 2, ..., head_dim-2, 1, 3, ..., head_dim-1)``.
    """
    return torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))


def _neox_qkv(t: torch.Tensor, n_head: int, head_dim: int) -> torch.Tensor:
    """storygpt's fused [all q; all k; all v] rows (3d, ...) -> GPT-NeoX's [q_h; k_h; v_h] per head, rotary rows permuted."""
    rest = t.shape[1:]
    qkv = t.reshape(3, n_head, head_dim, *rest)
    order = rotary_row_order(head_dim)
    q, k, v = qkv[0][:, order], qkv[1][:, order], qkv[2]
    return torch.stack((q, k, v), dim=1).reshape(3 * n_head * head_dim, *rest)


def hf_state_dict(arch: Architecture, config, sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """storygpt's state_dict -> the Hugging Face names, shapes and layouts of ``arch``.

    Args:
        sd: a :class:`storygpt.model.GPT` state_dict (``lm_head.weight`` is the tied
            ``wte.weight`` and is left out: the stock configs tie it back).

    Returns:
        New contiguous float32 tensors (safetensors refuses shared or strided storage).

    Raises:
        ExportError: a tensor the mapping does not place (named), or one it needs that is missing.
    """
    out: dict[str, torch.Tensor] = {}
    used = {"lm_head.weight"}

    def take(name: str) -> torch.Tensor:
        if name not in sd:
            raise ExportError(f"the checkpoint has no tensor {name!r}")
        used.add(name)
        return sd[name].detach().to("cpu", torch.float32)

    H, hd = config.n_head, config.head_dim
    if arch is GPT2:
        out["transformer.wte.weight"] = take("wte.weight")
        out["transformer.wpe.weight"] = take("wpe.weight")
        for i in range(config.n_layer):
            s, p = f"blocks.{i}.", f"transformer.h.{i}."
            for mine, theirs in (("ln_1", "ln_1"), ("ln_2", "ln_2")):
                out[p + theirs + ".weight"] = take(s + mine + ".weight")
                out[p + theirs + ".bias"] = take(s + mine + ".bias")
            for mine, theirs in (
                ("attn.c_attn", "attn.c_attn"),
                ("attn.c_proj", "attn.c_proj"),
                ("mlp.c_fc", "mlp.c_fc"),
                ("mlp.c_proj", "mlp.c_proj"),
            ):
                out[p + theirs + ".weight"] = take(s + mine + ".weight").t()  # Conv1D: (in, out)
                out[p + theirs + ".bias"] = take(s + mine + ".bias")
        out["transformer.ln_f.weight"] = take("ln_f.weight")
        out["transformer.ln_f.bias"] = take("ln_f.bias")
    else:
        out["gpt_neox.embed_in.weight"] = take("wte.weight")
        for i in range(config.n_layer):
            s, p = f"blocks.{i}.", f"gpt_neox.layers.{i}."
            for mine, theirs in (("ln_1", "input_layernorm"), ("ln_2", "post_attention_layernorm")):
                out[p + theirs + ".weight"] = take(s + mine + ".weight")
                out[p + theirs + ".bias"] = take(s + mine + ".bias")
            out[p + "attention.query_key_value.weight"] = _neox_qkv(take(s + "attn.c_attn.weight"), H, hd)
            out[p + "attention.query_key_value.bias"] = _neox_qkv(take(s + "attn.c_attn.bias"), H, hd)
            for mine, theirs in (
                ("attn.c_proj", "attention.dense"),
                ("mlp.c_fc", "mlp.dense_h_to_4h"),
                ("mlp.c_proj", "mlp.dense_4h_to_h"),
            ):
                out[p + theirs + ".weight"] = take(s + mine + ".weight")
                out[p + theirs + ".bias"] = take(s + mine + ".bias")
        out["gpt_neox.final_layer_norm.weight"] = take("ln_f.weight")
        out["gpt_neox.final_layer_norm.bias"] = take("ln_f.bias")
    left = sorted(set(sd) - used)
    if left:
        raise ExportError(f"the checkpoint tensor {left[0]!r} has no place in a {arch.hf_class}")
    return {k: v.contiguous().clone() for k, v in out.items()}
