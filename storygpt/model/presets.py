"""Named model shapes for ``pretrain.py --preset NAME`` (flags given beside it win).

Parameter counts (docs/training.md) are for a vocabulary of 8,192 tokens (``bpe``) and
rotary positions; :func:`storygpt.model.flops.parameter_split` gives them for any config.
The learning rate falls with width, as in GPT-2/GPT-3 practice; ``min_lr`` is a tenth of it.
"""

from __future__ import annotations

# name: n_layer, n_head, n_embd, block_size, lr
PRESETS: dict[str, dict] = {
    "tiny": dict(n_layer=2, n_head=2, n_embd=64, block_size=64, lr=3e-3),
    "small": dict(n_layer=3, n_head=4, n_embd=96, block_size=128, lr=3e-3),  # pretrain.py's defaults
    "base": dict(n_layer=4, n_head=4, n_embd=256, block_size=128, lr=1.5e-3),  # 5-7M: recipe.py's bigger preset
    "medium": dict(n_layer=6, n_head=6, n_embd=384, block_size=256, lr=1e-3),
    "gpt2": dict(n_layer=12, n_head=12, n_embd=768, block_size=1024, lr=6e-4),
    "gpt2-medium": dict(n_layer=24, n_head=16, n_embd=1024, block_size=1024, lr=3e-4),
    "gpt2-large": dict(n_layer=36, n_head=20, n_embd=1280, block_size=1024, lr=2.5e-4),
}


def preset(name: str) -> dict:
    """The fields of preset ``name`` (with ``min_lr = lr / 10``).

    Raises:
        ValueError: an unknown name, listing the known ones.
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    p = dict(PRESETS[name])
    p["min_lr"] = p["lr"] / 10
    return p
