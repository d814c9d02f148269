"""The GPT model: :class:`GPTConfig` and :class:`GPT` (see gpt.py)."""

from .gpt import GPT, POSITIONS, GPTConfig, apply_rotary, rotary_cos_sin

__all__ = ["GPT", "GPTConfig", "POSITIONS", "apply_rotary", "rotary_cos_sin"]
