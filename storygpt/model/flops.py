"""FLOPs of training: the compute budget unit of ``pretrain.py --budget-flops``.

Per training token (one forward and one backward pass, the backward costing twice
the forward; Kaplan et al. 2020, "Scaling Laws for Neural Language Models", sec. 2.1,
and the attention term of Chowdhery et al. 2022, "PaLM", appendix B)::

    flops_per_token = 6 * N  +  12 * n_layer * block_size * n_embd  +  6 * n_embd * vocab_size
                      ^^^^^     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^     ^^^^^^^^^^^^^^^^^^^^^^^^
                      blocks    attention scores and weighted sum       output layer

* ``N = 12 * n_layer * n_embd**2``: the non-embedding weight matrices (per block: the
  query/key/value projection 3 d^2, the output projection d^2, the MLP 4 d^2 + 4 d^2).
  Biases and LayerNorm gains are non-embedding parameters too, but they multiply no
  activations (13 n_layer n_embd + 2 n_embd of them, under 1% of N for n_embd >= 64),
  so they are left out: the formula is then an exact count of the multiply-adds.
* Attention: per layer and token, ``q k^T`` and ``softmax(.) v`` take ``2 * 2 * T * d``
  FLOPs forward (T = block_size, the full T x T score matrix the kernels compute, no
  discount for the causal mask), times 3 for forward + backward.
* Output layer: ``2 * d * V`` forward, times 3, tied to the token embedding or not (the
  embedding lookup costs no FLOPs); position embeddings and rotary angles are not matmuls.
* The ``modern`` recipe's parts (storygpt/model/recipes.py) add no matmul: RMSNorm, the
  RMSNorm of queries and keys, ReLU^2 and the logit soft-cap are elementwise (a few FLOPs per
  activation, like LayerNorm and GELU, left out likewise), an untied output layer costs what the
  tied one does, and without biases the matrices are the same.  So one formula serves both
  recipes and equal ``--budget-flops`` means equal matmul work (tests/model/test_flops.py counts both).

Tested against ``torch.utils.flop_counter.FlopCounterMode`` on a forward + backward
(tests/model/test_flops.py): equal to its count of matmul FLOPs.
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
