"""Importers and exporters: OpenAI's tiktoken, GPT-2's files, Hugging Face ``tokenizer.json``.

Every function converts between :class:`~storygpt.tokenizers.BPETokenizer` and another library's
format *exactly* (the other library gives the same ids on every text; tests/tokenizers/test_interop.py
uses ``tiktoken`` and ``tokenizers`` as oracles); what cannot be expressed exactly is refused with
an :class:`InteropError` naming the component.  The importers (:func:`from_tiktoken`,
:func:`from_gpt2_files`, :func:`from_hf`) read through ``interop_tiktoken``, ``interop_gpt2`` and
``interop_hf`` and build with :meth:`BPETokenizer.from_parts`; exporters: :func:`to_tiktoken`,
:func:`save_tiktoken`, :func:`to_hf_dict`, :func:`save_hf`.

Public names: docs/api.md; formats and limits: docs/tokenizers.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from .bpe import BPETokenizer
from .interop_base import TEXT_PATTERNS, BPEParts, InteropError, merges_from_ranks
from .interop_gpt2 import gpt2_bytes_to_unicode, read_gpt2_files
from .interop_hf import HF_PATTERNS, hf_pattern, hf_token_roles, read_hf, save_hf, to_hf_dict, write_hf_files
from .interop_tiktoken import (
    check_tiktoken_name,
    is_rank_file_path,
    read_rank_file,
    read_tiktoken,
    save_tiktoken,
    tiktoken_params,
    to_tiktoken,
)


def from_tiktoken(
    name_or_path: str | os.PathLike,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | Sequence[str] | None = None,
    backend: str = "cpp",
) -> BPETokenizer:
    """OpenAI's vocabulary ``"gpt2"``, ``"cl100k_base"``, ``"o200k_base"``, ... or a ``.tiktoken``
    rank file, with merge rule ``"ranks"``; arguments and errors: :func:`read_tiktoken`."""
    return BPETokenizer.from_parts(read_tiktoken(name_or_path, pattern, special_tokens), backend)


def from_gpt2_files(
    encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike, pattern: str = "gpt2", backend: str = "cpp"
) -> BPETokenizer:
    """GPT-2's ``encoder.json`` and ``vocab.bpe``; arguments and errors: :func:`read_gpt2_files`."""
    return BPETokenizer.from_parts(read_gpt2_files(encoder_json, vocab_bpe, pattern), backend)


def from_hf(path_or_dict, backend: str = "cpp", source: str | None = None) -> BPETokenizer:
    """A byte-level BPE ``tokenizer.json`` (a path or its dict); arguments and errors: :func:`read_hf`."""
    return BPETokenizer.from_parts(read_hf(path_or_dict, source), backend)


__all__ = [
    "HF_PATTERNS",
    "TEXT_PATTERNS",
    "BPEParts",
    "InteropError",
    "check_tiktoken_name",
    "from_gpt2_files",
    "from_hf",
    "from_tiktoken",
    "gpt2_bytes_to_unicode",
    "hf_pattern",
    "hf_token_roles",
    "is_rank_file_path",
    "merges_from_ranks",
    "read_gpt2_files",
    "read_hf",
    "read_rank_file",
    "read_tiktoken",
    "save_hf",
    "save_tiktoken",
    "tiktoken_params",
    "to_hf_dict",
    "to_tiktoken",
    "write_hf_files",
]
