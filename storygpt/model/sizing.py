"""Sizes of a run before it starts: parameters, memory, device peaks (``pretrain.py --dry-run``, its memory check).

No torch at import: ``pretrain.py --dry-run`` stays a fraction of a second.  The formulas (docs/training.md):

* parameters, counted from the config as :class:`storygpt.model.GPT` builds them (tests/model/test_sizing.py
  checks them against the model built on the meta device);
* weights and gradients in float32 (autocast keeps float32 weights): 4 bytes each per parameter;
* optimizer state: AdamW 2 float32 states (8 bytes) per parameter; Muon 1 float32 momentum (4 bytes) per
  block matrix, AdamW's 8 bytes for the rest (storygpt/model/optim.py's split);
* activations of one micro-batch, after Korthikanti et al. 2022 ("Reducing activation recomputation", table 2,
  no recomputation, 16-bit activations): per block ``(34*T*C + 5*H*T**2) * B`` bytes, doubled in float32, plus
  the logits ``B*T*V`` twice in float32 (their value and their gradient).  The ``5*H*T**2`` term (the attention
  matrix) is an upper bound where scaled_dot_product_attention uses a fused kernel that never stores it.
"""

from __future__ import annotations

import os

GIB = 2**30

#: dense bf16 peak FLOP/s by CUDA device name (first match of the substrings, in order); else MFU is omitted
BF16_PEAKS = (
    ("H100 PCIe", 756e12),
    ("H100", 989e12),  # SXM (and NVL, HBM3)
    ("H200", 989e12),
    ("A100", 312e12),
)


def peak_flops(device_name: str | None) -> float | None:
    """The bf16 peak of a CUDA device named ``device_name`` (:data:`BF16_PEAKS`), None when unknown."""
    for key, peak in BF16_PEAKS:
        if device_name and key.lower() in device_name.lower():
            return peak
    return None


def parameter_counts(cfg: dict) -> tuple[int, int]:
    """``(total, embedding)`` parameters of a GPT with config fields ``cfg`` (vocab_size, block_size, n_layer,
    n_embd, position, norm, bias, tie_embeddings), as :func:`storygpt.model.flops.parameter_split` counts."""
    V, T, L, C = cfg["vocab_size"], cfg["block_size"], cfg["n_layer"], cfg["n_embd"]
    bias = bool(cfg.get("bias", True))
    norm = 0 if cfg.get("norm", "layernorm") == "rmsnorm" else C * (2 if bias else 1)
    emb = V * C + (T * C if cfg.get("position", "learned") == "learned" else 0)
    if not cfg.get("tie_embeddings", True):
        emb += V * C
    block = 12 * C * C + 2 * norm + (9 * C if bias else 0)  # attention 4 C^2 (+4C), MLP 8 C^2 (+5C)
    return emb + L * block + norm, emb


def memory_estimate(cfg: dict, optimizer: str, batch_size: int, half: bool) -> dict:
    """Bytes of weights, gradients, optimizer state and activations (one micro-batch of ``batch_size``
    windows of ``cfg["block_size"]`` tokens; ``half``: 16-bit autocast); see the module docstring."""
    total, _ = parameter_counts(cfg)
    V, T, L, C, H = cfg["vocab_size"], cfg["block_size"], cfg["n_layer"], cfg["n_embd"], cfg["n_head"]
    matrices = L * 12 * C * C if optimizer == "muon" else 0
    per_layer = (34 * T * C + 5 * H * T * T) * batch_size * (1 if half else 2)
    out = {
        "weights": 4 * total,
        "gradients": 4 * total,
        "optimizer": 4 * matrices + 8 * (total - matrices),
        "activations": L * per_layer + 2 * 4 * batch_size * T * V,
    }
    out["total"] = sum(out.values())
    return out


def machine_memory() -> int | None:
    """Bytes of RAM of this machine (os.sysconf), None where it cannot tell."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def device_memory(device) -> tuple[int | None, str]:
    """``(bytes, what)`` of memory ``device`` can hold: a CUDA device's total (torch.cuda.mem_get_info), else
    the machine's RAM."""
    if getattr(device, "type", device) == "cuda":
        import torch

        _, total = torch.cuda.mem_get_info(device)
        return total, f"{torch.cuda.get_device_name(device)}'s memory"
    return machine_memory(), "this machine's RAM"


def gib(n: float) -> str:
    return f"{n / GIB:.2f} GiB"
