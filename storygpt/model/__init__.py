"""The GPT model: :class:`GPTConfig` (config.py) and :class:`GPT` (gpt.py)."""

from .config import POSITIONS, GPTConfig
from .gpt import GPT, apply_rotary, rotary_cos_sin

__all__ = ["GPT", "GPTConfig", "POSITIONS", "apply_rotary", "rotary_cos_sin"]
