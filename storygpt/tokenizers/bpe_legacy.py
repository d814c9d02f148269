"""The last release's interop spellings of :class:`~storygpt.tokenizers.bpe.BPETokenizer`
(``.from_tiktoken``, ``.from_gpt2_files``, ``.from_hf``, ``tok.save_hf``, ``tok.to_tiktoken``,
``tok.save_tiktoken``): they still work, through :mod:`storygpt.tokenizers.interop`, and warn
``DeprecationWarning`` naming their replacement (:func:`deprecated`; the training spellings, which need
train_bpe, stay in bpe.py).  Mixed into BPETokenizer.
"""

from __future__ import annotations

import warnings

from . import interop_gpt2, interop_hf, interop_tiktoken


def deprecated(old: str, new: str) -> None:
    """One ``DeprecationWarning``: ``old`` (a spelling of the last release) now reads ``new``."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new}", DeprecationWarning, stacklevel=3
    )


class LastReleaseSpellings:
    """BPETokenizer's deprecated spellings of the last release."""

    @classmethod
    def from_tiktoken(cls, name_or_path, pattern=None, special_tokens=None, backend: str = "cpp"):
        """Deprecated: :func:`storygpt.tokenizers.interop.from_tiktoken`."""
        deprecated("BPETokenizer.from_tiktoken(...)", "storygpt.tokenizers.interop.from_tiktoken(...)")
        return cls.from_parts(interop_tiktoken.read_tiktoken(name_or_path, pattern, special_tokens), backend)

    @classmethod
    def from_gpt2_files(cls, encoder_json, vocab_bpe, pattern: str = "gpt2", backend: str = "cpp"):
        """Deprecated: :func:`storygpt.tokenizers.interop.from_gpt2_files`."""
        deprecated("BPETokenizer.from_gpt2_files(...)", "storygpt.tokenizers.interop.from_gpt2_files(...)")
        return cls.from_parts(interop_gpt2.read_gpt2_files(encoder_json, vocab_bpe, pattern), backend)

    @classmethod
    def from_hf(cls, path, backend: str = "cpp"):
        """Deprecated: :func:`storygpt.tokenizers.interop.from_hf`."""
        deprecated("BPETokenizer.from_hf(path)", "storygpt.tokenizers.interop.from_hf(path)")
        return cls.from_parts(interop_hf.read_hf(path), backend)

    def save_hf(self, path):
        """Deprecated: :func:`storygpt.tokenizers.interop.save_hf` (returns the file written)."""
        deprecated("tok.save_hf(path)", "storygpt.tokenizers.interop.save_hf(tok, path)")
        return interop_hf.save_hf(self, path)

    def to_tiktoken(self, name: str | None = None):
        """Deprecated: :func:`storygpt.tokenizers.interop.to_tiktoken`."""
        deprecated("tok.to_tiktoken()", "storygpt.tokenizers.interop.to_tiktoken(tok)")
        return interop_tiktoken.to_tiktoken(self, name)

    def save_tiktoken(self, path):
        """Deprecated: :func:`storygpt.tokenizers.interop.save_tiktoken` (returns its side file)."""
        deprecated("tok.save_tiktoken(path)", "storygpt.tokenizers.interop.save_tiktoken(tok, path)")
        return interop_tiktoken.save_tiktoken(self, path)
