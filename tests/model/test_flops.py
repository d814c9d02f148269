"""storygpt.model.flops against an independent count: torch's FlopCounterMode on a forward + backward."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from storygpt.model import GPT, GPTConfig
from storygpt.model.flops import flops_per_token, matmul_parameters, parameter_split
from storygpt.model.presets import PRESETS, preset
from storygpt.model.recipes import ARCH, RECIPES

MODERN = {k: RECIPES["modern"][k] for k in ARCH}


@pytest.mark.parametrize(
    "shape",
    [
        dict(n_layer=2, n_head=2, n_embd=32, block_size=16, vocab_size=50, position="rope"),
        dict(n_layer=3, n_head=4, n_embd=48, block_size=24, vocab_size=301, position="learned"),
        # the modern recipe's architecture (storygpt/model/recipes.py): no extra matmul
        dict(n_layer=2, n_head=2, n_embd=32, block_size=16, vocab_size=50, position="rope", **MODERN),
        dict(n_layer=2, n_head=2, n_embd=32, block_size=16, vocab_size=50, position="learned", **MODERN),
    ],
)
def test_flops_per_token_equals_the_counted_matmuls(shape):
    torch.manual_seed(0)
    config = GPTConfig(**shape)
    model = GPT(config)
    B, T = 3, config.block_size
    x = torch.randint(0, config.vocab_size, (B, T))
    # the math kernel runs attention as two batched matmuls, which the counter sees
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        _, loss = model(x, x)
        loss.backward()
    counted = counter.get_total_flops()
    assert counted == B * T * flops_per_token(config)
    # the attention term alone: the counted batched matmuls
    bmm = sum(v for k, v in counter.get_flop_counts()["Global"].items() if "bmm" in str(k))
    assert bmm == B * T * 12 * config.n_layer * T * config.n_embd


def test_matmul_parameters_are_the_non_embedding_weight_matrices():
    config = GPTConfig(n_layer=2, n_head=2, n_embd=32, block_size=16, vocab_size=50, position="learned")
    model = GPT(config)
    mats = sum(p.numel() for n, p in model.named_parameters() if p.dim() == 2 and not n.startswith(("wte", "wpe")))
    assert matmul_parameters(config) == mats == 12 * 2 * 32**2
    emb, non_emb = parameter_split(model)
    assert emb == 50 * 32 + 16 * 32 and emb + non_emb == model.num_parameters()
    assert non_emb - mats == 2 * (3 * 32 + 32 + 4 * 32 + 32 + 4 * 32) + 2 * 32  # biases and LayerNorms


def test_parameter_split_counts_an_untied_output_layer_as_embedding():
    config = GPTConfig(n_layer=2, n_head=2, n_embd=32, block_size=16, vocab_size=50, position="rope", **MODERN)
    model = GPT(config)
    emb, non_emb = parameter_split(model)
    assert emb == 2 * 50 * 32  # wte and lm_head
    assert non_emb == matmul_parameters(config)  # no biases, no gains: the block matrices only
    assert emb + non_emb == model.num_parameters()


def test_presets_grow_and_fill_min_lr():
    sizes = [12 * p["n_layer"] * p["n_embd"] ** 2 for p in PRESETS.values()]
    assert sizes == sorted(sizes) and list(PRESETS)[0] == "tiny"
    assert preset("gpt2")["n_embd"] == 768 and preset("gpt2")["min_lr"] == pytest.approx(6e-5)
    for p in PRESETS.values():
        assert p["n_embd"] % p["n_head"] == 0 and (p["n_embd"] // p["n_head"]) % 2 == 0  # rope needs even heads
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        preset("huge")
