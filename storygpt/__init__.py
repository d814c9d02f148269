"""storygpt: a small GPT training framework with pluggable tokenizers."""

__version__ = "0.1.0"
