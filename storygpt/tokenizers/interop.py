"""Importers and exporters: OpenAI's tiktoken, GPT-2's files, Hugging Face ``tokenizer.json``.

Every function here converts between :class:`~storygpt.tokenizers.BPETokenizer` and
another library's format *exactly*: the other library, given what is written, gives
the same ids as storygpt on every text (checked by ``tests/tokenizers/test_interop.py`` with
``tiktoken`` and Hugging Face ``tokenizers`` as oracles on the shared corpora).
What cannot be expressed exactly (a pre-tokenization pattern, a normalizer, another
model type, two ids for the same bytes) is refused with a :class:`InteropError`
naming the component, never written approximately.

This module gathers them; each library has its own file:

``interop_tiktoken``
    :func:`from_tiktoken` (an encoding name or a ``.tiktoken`` rank file), :func:`to_tiktoken`
    (a ``tiktoken.Encoding``), :func:`save_tiktoken` (a rank file and :func:`tiktoken_params` beside it).
``interop_gpt2``
    :func:`from_gpt2_files` (``encoder.json`` + ``vocab.bpe``) and GPT-2's byte table.
``interop_hf``
    :func:`from_hf` (a byte-level BPE ``tokenizer.json``), :func:`to_hf_dict` / :func:`save_hf`
    (a ``tokenizer.json`` and :func:`hf_token_roles`: ``tokenizer_config.json``, ``special_tokens_map.json``).
``interop_base``
    :class:`InteropError`, :data:`TEXT_PATTERNS`, :func:`merges_from_ranks` (the merges list
    of a rank vocabulary, one per token).
"""

from .interop_base import TEXT_PATTERNS, InteropError, merges_from_ranks
from .interop_gpt2 import from_gpt2_files, gpt2_bytes_to_unicode
from .interop_hf import HF_PATTERNS, from_hf, hf_pattern, hf_token_roles, save_hf, to_hf_dict, write_hf_files
from .interop_tiktoken import (
    check_tiktoken_name,
    from_tiktoken,
    is_rank_file_path,
    read_rank_file,
    save_tiktoken,
    tiktoken_params,
    to_tiktoken,
)

__all__ = [
    "HF_PATTERNS",
    "TEXT_PATTERNS",
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
    "read_rank_file",
    "save_hf",
    "save_tiktoken",
    "tiktoken_params",
    "to_hf_dict",
    "to_tiktoken",
    "write_hf_files",
]
