"""Importers and exporters: OpenAI's tiktoken, GPT-2's files, Hugging Face ``tokenizer.json``.

Every function here converts between :class:`~storygpt.tokenizers.BPETokenizer` and
another library's format *exactly*: the other library, given what is written, gives
the same ids as storygpt on every text (checked by ``tests/tokenizers/test_interop.py`` with
``tiktoken`` and Hugging Face ``tokenizers`` as oracles on the shared corpora).
What cannot be expressed exactly (a pre-tokenization pattern, a normalizer, another
model type, two ids for the same bytes) is refused with a :class:`InteropError`
naming the component, never written approximately.

This module gathers them; the importers here (:func:`from_tiktoken`, :func:`from_gpt2_files`,
:func:`from_hf`) read through their library's file (``read_*``, which knows no tokenizer
class) and build the :class:`BPETokenizer` with :meth:`BPETokenizer.from_parts`:

``interop_tiktoken``
    :func:`read_tiktoken` (an encoding name or a ``.tiktoken`` rank file), :func:`to_tiktoken`
    (a ``tiktoken.Encoding``), :func:`save_tiktoken` (a rank file and :func:`tiktoken_params` beside it).
``interop_gpt2``
    :func:`read_gpt2_files` (``encoder.json`` + ``vocab.bpe``) and GPT-2's byte table.
``interop_hf``
    :func:`read_hf` (a byte-level BPE ``tokenizer.json``), :func:`to_hf_dict` / :func:`save_hf`
    (a ``tokenizer.json`` and :func:`hf_token_roles`: ``tokenizer_config.json``, ``special_tokens_map.json``).
``interop_base``
    :class:`InteropError`, :class:`BPEParts`, :data:`TEXT_PATTERNS`, :func:`merges_from_ranks` (the merges list
    of a rank vocabulary, one per token).
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
