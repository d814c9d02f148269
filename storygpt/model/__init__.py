"""The GPT model: :class:`GPTConfig` (config.py) and :class:`GPT` (gpt.py).

``GPT`` and the rotary helpers are imported on first use (PEP 562), so that the model's settings
(config, presets, recipes) load without torch: the tools check their flags before torch is imported.
"""

from .config import POSITIONS, GPTConfig

__all__ = ["GPT", "GPTConfig", "POSITIONS", "apply_rotary", "rotary_cos_sin"]


def __getattr__(name: str):
    if name in ("GPT", "apply_rotary", "rotary_cos_sin"):
        from . import gpt

        return getattr(gpt, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
