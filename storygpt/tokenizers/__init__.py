"""Tokenizers for storygpt (namespaced so it never shadows Hugging Face ``tokenizers``).

Every tokenizer implements :class:`Tokenizer`: :class:`BPETokenizer` (byte-level BPE, trained by
:func:`train_bpe` or imported through :mod:`storygpt.tokenizers.interop`), :class:`ByteTokenizer`,
:class:`WordTokenizer` (lossy, ``<unk>``), :class:`HFTokenizer` (any ``tokenizer.json``), ...
A SPEC string names one (:func:`parse_spec`, :func:`build_tokenizer`); the kinds live in one
table, :mod:`storygpt.tokenizers.registry` (:func:`register_kind`); :func:`load` and
:func:`from_dict` return the right class.

Public names: docs/api.md; the kinds: docs/tokenizers.md; the layers of this package: docs/design.md.
"""

from .base import EOT, Tokenizer
from .bpe import BPETokenizer, ByteTokenizer, train_bpe
from .hf import HFTokenizer
from .interop_base import InteropError, merges_from_ranks
from .interop_gpt2 import gpt2_bytes_to_unicode
from .io import FORMAT_VERSION, TokenizerFileError
from .registry import BuildOptions, SpecError, from_dict, kind_help, load, register_kind
from .spec import TokenizerSpec, build_tokenizer, parse_spec
from .word import WordTokenizer

__all__ = [
    "EOT",
    "FORMAT_VERSION",
    "BPETokenizer",
    "BuildOptions",
    "ByteTokenizer",
    "HFTokenizer",
    "InteropError",
    "SpecError",
    "Tokenizer",
    "TokenizerFileError",
    "TokenizerSpec",
    "WordTokenizer",
    "build_tokenizer",
    "from_dict",
    "gpt2_bytes_to_unicode",
    "kind_help",
    "load",
    "merges_from_ranks",
    "parse_spec",
    "register_kind",
    "train_bpe",
]
