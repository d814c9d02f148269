"""From a :class:`~storygpt.model.GPTConfig` to a stock architecture, as a table.

Every ``GPTConfig`` field has a row in :data:`FIELDS`: a size the stock config carries, a field
that does not change inference (``dropout``, ``zero_init``), or one whose value narrows the
exact architectures (``position``, ``norm``, ``qk_norm``, ``mlp``, ``tie_embeddings``, ...).
The first of :data:`ARCHITECTURES` left (``gpt2``, ``gpt_neox``, ``llama``, ``qwen3``, ``nanochat``)
is written; anything else is refused with one :class:`ExportError` line naming the fields, so
storygpt never writes a model that a stock library would run differently.

Why each architecture is exact (weight layouts, the rotary permutation, RMSNorm eps, ReLU^2
as a gated MLP, :func:`nanochat_embedding`): docs/export.md; checked by tests/tools/test_export.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import torch

from .destination import ExportError


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
LLAMA = Architecture("llama", "LlamaForCausalLM", "llama")
QWEN3 = Architecture("qwen3", "Qwen3ForCausalLM", "qwen3")
NANOCHAT = Architecture("nanochat", "NanoChatForCausalLM", "nanochat")
#: Preference when several architectures compute the same function: the first one.
ARCHITECTURES = (GPT2, GPT_NEOX, LLAMA, QWEN3, NANOCHAT)
_RMS = frozenset({LLAMA, QWEN3, NANOCHAT})
_ALL = frozenset(ARCHITECTURES)

#: A size or constant the stock config carries as it is.
CARRIED = "carried"
#: A field that changes nothing at inference (dropout is off in evaluation; an initialisation).
TRAINING_ONLY = "training only"


@dataclass(frozen=True)
class Picks:
    """A field whose value (through ``key``) narrows the architectures to those in ``table[key(value)]``."""

    table: dict
    key: Callable = staticmethod(lambda v: v)


#: The table: GPTConfig field -> CARRIED, TRAINING_ONLY, or a :class:`Picks` (a dict is one with
#: the value itself as key): the architectures that compute a field's value exactly.  A value missing
#: from its row has no stock equivalent.  A new GPTConfig field needs a row here before its
#: checkpoints export.
FIELDS: dict[str, object] = {
    "vocab_size": CARRIED,
    "block_size": CARRIED,
    "n_layer": CARRIED,
    "n_head": CARRIED,
    "n_embd": CARRIED,
    "rope_theta": CARRIED,  # rotary base; unused by learned positions
    "dropout": TRAINING_ONLY,
    "zero_init": TRAINING_ONLY,
    "position": {"learned": {GPT2}, "rope": _ALL - {GPT2}},
    "norm": {"layernorm": {GPT2, GPT_NEOX}, "rmsnorm": _RMS},  # RMSNorm gains written as 1
    "qk_norm": {False: {GPT2, GPT_NEOX, LLAMA}, True: {QWEN3, NANOCHAT}},
    "mlp": {"gelu": {GPT2, GPT_NEOX}, "relu2": _RMS},  # relu(Wx) * (Wx): gate = up = W, hidden_act "relu"
    "tie_embeddings": {True: _ALL, False: _RMS},
    "logit_softcap": Picks({"off": _ALL, "on": {NANOCHAT}}, lambda v: "on" if v > 0 else "off"),  # NanoChat: None
    "bias": {True: {GPT2, GPT_NEOX, LLAMA}, False: _ALL},  # GPT-2 / GPT-NeoX get zero biases
    # NanoChat alone norms the token embedding (weightless RMSNorm, before the first layer); no stock Qwen3,
    # Llama, GPT-2 or GPT-NeoX has a norm there, and none can fold it into the weights (it depends on the row)
    "embed_norm": {False: _ALL, True: {NANOCHAT}},
    "embed_std": TRAINING_ONLY,
}


def _row(name: str):
    row = FIELDS.get(name)
    return Picks(row) if isinstance(row, dict) else row


def choose_architecture(config) -> Architecture:
    """The stock architecture that computes exactly what a model of ``config`` computes.

    Every :class:`Picks` row narrows the candidates; the first of :data:`ARCHITECTURES` left is chosen.

    Args:
        config: a :class:`storygpt.model.GPTConfig`.

    Raises:
        ExportError: a field with no row in :data:`FIELDS`, a value with no stock equivalent,
            or values no single architecture computes together (the message names the fields).
    """
    left, why = set(ARCHITECTURES), []
    for f in fields(config):
        value = getattr(config, f.name)
        row = _row(f.name)
        if row is None:
            raise ExportError(
                f"GPTConfig.{f.name} = {value!r}: the exporter does not know this field, so no stock architecture "
                "is known to compute the same function (add a row to storygpt/export/arch.py FIELDS)"
            )
        if not isinstance(row, Picks):
            continue
        archs = row.table.get(row.key(value))
        if archs is None:
            raise ExportError(
                f"GPTConfig.{f.name} = {value!r} has no exact equivalent in a stock architecture "
                f"(exportable values: {', '.join(repr(v) for v in row.table)})"
            )
        named = f"{f.name} = {value!r} (in {'/'.join(a.name for a in ARCHITECTURES if a in archs)})"
        if not left & set(archs):
            raise ExportError(
                f"GPTConfig.{named} does not go with {', '.join(why)}: no stock architecture has them all"
            )
        left &= set(archs)
        if set(archs) != _ALL:
            why.append(named)
    return next(a for a in ARCHITECTURES if a in left)


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
    if arch in _RMS:
        return _rms_config(arch, config, common)
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


#: storygpt's RMSNorm epsilon: ``F.rms_norm`` without ``eps`` uses the float32 machine epsilon.
RMS_EPS = float(torch.finfo(torch.float32).eps)


def _rms_config(arch: Architecture, config, common: dict) -> dict:
    """``config.json`` of the RMSNorm architectures (Llama, Qwen3, NanoChat)."""
    d = {
        **common,
        "tie_word_embeddings": arch is not NANOCHAT and config.tie_embeddings,
        "hidden_size": config.n_embd,
        "intermediate_size": 4 * config.n_embd,
        "num_hidden_layers": config.n_layer,
        "num_attention_heads": config.n_head,
        "num_key_value_heads": config.n_head,
        "head_dim": config.head_dim,
        "max_position_embeddings": config.block_size,
        "rms_norm_eps": RMS_EPS,
        "attention_bias": config.bias,
        "attention_dropout": 0.0,
        "rope_parameters": {"rope_type": "default", "rope_theta": float(config.rope_theta)},
    }
    if arch is NANOCHAT:
        return {**d, "hidden_act": "relu2", "final_logit_softcapping": float(config.logit_softcap) or None}
    d["hidden_act"] = "relu"  # with gate = up: relu(Wx) * Wx = relu(Wx)**2
    if arch is LLAMA:
        return {**d, "mlp_bias": config.bias, "pretraining_tp": 1}
    return {**d, "use_sliding_window": False, "sliding_window": None, "max_window_layers": config.n_layer}


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
    used = {"lm_head.weight"} if config.tie_embeddings else set()

    def take(name: str, zeros_like: str | None = None) -> torch.Tensor:
        """The tensor ``name``; without biases (``config.bias`` off) a bias is zeros shaped like ``zeros_like``'s rows."""
        if zeros_like is not None and not config.bias and name not in sd:
            return torch.zeros(sd[zeros_like].shape[0])
        if name not in sd:
            raise ExportError(f"the checkpoint has no tensor {name!r}")
        used.add(name)
        return sd[name].detach().to("cpu", torch.float32)

    if arch in _RMS:
        out = _rms_state_dict(arch, config, take)
        left = sorted(set(sd) - used)
        if left:
            raise ExportError(f"the checkpoint tensor {left[0]!r} has no place in a {arch.hf_class}")
        return {k: v.contiguous().clone() for k, v in out.items()}

    H, hd = config.n_head, config.head_dim
    if arch is GPT2:
        out["transformer.wte.weight"] = take("wte.weight")
        out["transformer.wpe.weight"] = take("wpe.weight")
        for i in range(config.n_layer):
            s, p = f"blocks.{i}.", f"transformer.h.{i}."
            for mine, theirs in (("ln_1", "ln_1"), ("ln_2", "ln_2")):
                out[p + theirs + ".weight"] = take(s + mine + ".weight")
                out[p + theirs + ".bias"] = take(s + mine + ".bias", s + mine + ".weight")
            for mine, theirs in (
                ("attn.c_attn", "attn.c_attn"),
                ("attn.c_proj", "attn.c_proj"),
                ("mlp.c_fc", "mlp.c_fc"),
                ("mlp.c_proj", "mlp.c_proj"),
            ):
                out[p + theirs + ".weight"] = take(s + mine + ".weight").t()  # Conv1D: (in, out)
                out[p + theirs + ".bias"] = take(s + mine + ".bias", s + mine + ".weight")
        out["transformer.ln_f.weight"] = take("ln_f.weight")
        out["transformer.ln_f.bias"] = take("ln_f.bias", "ln_f.weight")
    else:
        out["gpt_neox.embed_in.weight"] = take("wte.weight")
        for i in range(config.n_layer):
            s, p = f"blocks.{i}.", f"gpt_neox.layers.{i}."
            for mine, theirs in (("ln_1", "input_layernorm"), ("ln_2", "post_attention_layernorm")):
                out[p + theirs + ".weight"] = take(s + mine + ".weight")
                out[p + theirs + ".bias"] = take(s + mine + ".bias", s + mine + ".weight")
            out[p + "attention.query_key_value.weight"] = _neox_qkv(take(s + "attn.c_attn.weight"), H, hd)
            out[p + "attention.query_key_value.bias"] = _neox_qkv(
                take(s + "attn.c_attn.bias", s + "attn.c_attn.weight"), H, hd
            )
            for mine, theirs in (
                ("attn.c_proj", "attention.dense"),
                ("mlp.c_fc", "mlp.dense_h_to_4h"),
                ("mlp.c_proj", "mlp.dense_4h_to_h"),
            ):
                out[p + theirs + ".weight"] = take(s + mine + ".weight")
                out[p + theirs + ".bias"] = take(s + mine + ".bias", s + mine + ".weight")
        out["gpt_neox.final_layer_norm.weight"] = take("ln_f.weight")
        out["gpt_neox.final_layer_norm.bias"] = take("ln_f.bias", "ln_f.weight")
    left = sorted(set(sd) - used)
    if left:
        raise ExportError(f"the checkpoint tensor {left[0]!r} has no place in a {arch.hf_class}")
    return {k: v.contiguous().clone() for k, v in out.items()}


def nanochat_embedding(wte: torch.Tensor, eps: float = RMS_EPS) -> torch.Tensor:
    """Token embedding rows ``c_i e_i`` that NanoChat's weightless RMSNorm after the embedding turns back into ``e_i``.

    ``rms_norm(c e) = c e / sqrt(c**2 m + eps)`` with ``m = mean(e**2)`` equals ``e`` exactly when
    ``c**2 = eps / (1 - m)``, which exists only for rows with RMS below 1: that norm's output always
    has RMS below 1.  Computed in float64.

    Args:
        wte: (vocab_size, n_embd) float, storygpt's ``wte.weight``.

    Raises:
        ExportError: a row with RMS >= 1, naming the token id and its RMS.
    """
    e = wte.to(torch.float64)
    m = e.square().mean(dim=1)
    worst = int(m.argmax())
    if m[worst] >= 1.0 - 1e-6:
        raise ExportError(
            f"GPTConfig.logit_softcap > 0 exports only as NanoChatForCausalLM, whose weightless RMSNorm after the "
            f"token embedding storygpt does not have; it can be undone only for embedding rows with RMS < 1, "
            f"and token {worst} has RMS {m[worst].sqrt().item():.3g} (a run with --logit-softcap 0 exports as Qwen3)"
        )
    return (e * (eps / (1.0 - m)).sqrt()[:, None]).float()


def _rms_state_dict(arch: Architecture, config, take: Callable) -> dict[str, torch.Tensor]:
    """Tensors of Llama / Qwen3 / NanoChat: separate q/k/v rows (each head's q/k in rotate-half order, for
    NanoChat with their second half negated), RMSNorm gains of 1 (Llama, Qwen3), the MLP's c_fc as both
    gate and up (Llama, Qwen3) or fc1 (NanoChat), NanoChat's embedding rows rescaled (:func:`nanochat_embedding`)."""
    H, hd, n = config.n_head, config.head_dim, config.n_embd
    order = torch.cat([h * hd + rotary_row_order(hd) for h in range(H)])
    # NanoChat's rotate_half is (x2, -x1), not (-x2, x1): it turns by -angle.  Negating the second half of
    # every head's q and k rows (a reflection S, S R(a) S = R(-a), which keeps q.k and each head's RMS) undoes it.
    sign = torch.ones(H, hd)
    if arch is NANOCHAT:
        sign[:, hd // 2 :] = -1.0
    ones = torch.ones(n)
    wte = take("wte.weight")
    undo = arch is NANOCHAT and not config.embed_norm  # NanoChat's norm after the embedding, storygpt has none
    out = {"model.embed_tokens.weight": nanochat_embedding(wte) if undo else wte}
    if arch is NANOCHAT or not config.tie_embeddings:
        out["lm_head.weight"] = wte if config.tie_embeddings else take("lm_head.weight")
    if arch is not NANOCHAT:
        out["model.norm.weight"] = ones
    for i in range(config.n_layer):
        s, p = f"blocks.{i}.", f"model.layers.{i}."
        parts = {"weight": take(s + "attn.c_attn.weight")}
        if config.bias:
            parts["bias"] = take(s + "attn.c_attn.bias")
        for kind, t in parts.items():
            q, k, v = t.split(n, dim=0)
            flip = sign.reshape(-1, *([1] * (q.dim() - 1)))
            out[p + f"self_attn.q_proj.{kind}"] = q[order] * flip
            out[p + f"self_attn.k_proj.{kind}"] = k[order] * flip
            out[p + f"self_attn.v_proj.{kind}"] = v
        kinds = ("weight", "bias") if config.bias else ("weight",)
        for kind in kinds:
            out[p + f"self_attn.o_proj.{kind}"] = take(s + f"attn.c_proj.{kind}")
            fc, proj = take(s + f"mlp.c_fc.{kind}"), take(s + f"mlp.c_proj.{kind}")
            if arch is NANOCHAT:
                out[p + f"mlp.fc1.{kind}"], out[p + f"mlp.fc2.{kind}"] = fc, proj
            else:
                out[p + f"mlp.gate_proj.{kind}"], out[p + f"mlp.up_proj.{kind}"] = fc, fc.clone()
                out[p + f"mlp.down_proj.{kind}"] = proj
        if arch is not NANOCHAT:
            out[p + "input_layernorm.weight"] = ones
            out[p + "post_attention_layernorm.weight"] = ones
        if arch is QWEN3:
            out[p + "self_attn.q_norm.weight"] = torch.ones(hd)
            out[p + "self_attn.k_norm.weight"] = torch.ones(hd)
    return out
