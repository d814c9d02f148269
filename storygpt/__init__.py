"""storygpt: a small GPT training framework with pluggable tokenizers."""

__version__ = "0.1.0"

__all__ = ["load_checkpoint"]


def __getattr__(name):
    # Lazy: `import storygpt` must not import torch.
    if name == "load_checkpoint":
        from .checkpoint import load_checkpoint

        return load_checkpoint
    raise AttributeError(f"module 'storygpt' has no attribute {name!r}")
