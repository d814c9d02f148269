"""FLOPs of training: the compute budget unit of ``pretrain.py --budget-flops``.

Per training token (forward + backward = 3x forward; Kaplan et al. 2020, sec. 2.1, and the
attention term of Chowdhery et al. 2022, "PaLM", appendix B)::

    flops_per_token = 6 * N + 12 * n_layer * block_size * n_embd + 6 * n_embd * vocab_size

with ``N = 12 * n_layer * n_embd**2`` (blocks), the full T x T attention and the output layer.
Biases, norms and the ``modern`` recipe's elementwise parts are left out, so it counts the
matmuls exactly for both recipes (tests/model/test_flops.py, against ``FlopCounterMode``).
Derivation: docs/training.md.
"""

from __future__ import annotations


def matmul_parameters(config) -> int:
    """``12 * n_layer * n_embd**2``: weights of the blocks' linear layers (``N`` above)."""
    return 12 * config.n_layer * config.n_embd**2


def flops_per_token(config) -> int:
    """Training FLOPs (forward + backward) per token of a ``block_size``-long window; see the module docstring.

    Args:
        config: a :class:`storygpt.model.GPTConfig` (uses n_layer, n_embd, block_size, vocab_size).

    Returns:
        FLOPs as an int (a multiply-add counts 2).
    """
    L, d, T, V = config.n_layer, config.n_embd, config.block_size, config.vocab_size
    return 6 * matmul_parameters(config) + 12 * L * T * d + 6 * d * V


def parameter_split(model) -> tuple[int, int]:
    """``(embedding, non_embedding)`` parameter counts of a :class:`storygpt.model.GPT`.

    Embedding: the token embedding (a tied output layer counted once with it), an untied
    output layer, and the learned position embedding when there is one; non-embedding:
    everything else.
    """
    total = model.num_parameters()
    emb = model.wte.weight.numel() + (model.wpe.weight.numel() if model.wpe is not None else 0)
    if model.lm_head.weight is not model.wte.weight:
        emb += model.lm_head.weight.numel()
    return emb, total - emb
