"""Tokenizers for storygpt (namespaced so it never shadows Hugging Face ``tokenizers``).

Every tokenizer implements :class:`Tokenizer` (docs/design.md, docs/tokenizers.md):

* :class:`BPETokenizer`: byte-level BPE (C++ core ``storygpt._bpe`` or the
  Python reference), trained here or loaded from OpenAI's, GPT-2's or Hugging Face
  files (:mod:`storygpt.tokenizers.interop`, which also exports to them);
* :class:`ByteTokenizer`: the 256 bytes, no merges;
* :class:`WordTokenizer`: the most frequent words, the rest ``<unk>`` (lossy);
* :class:`HFTokenizer`: any Hugging Face ``tokenizer.json`` (WordPiece, Unigram, ...).

A SPEC string names one (:func:`parse_spec`, :func:`build_tokenizer`); more kinds plug
in with :func:`register_kind`.

:func:`load` reads any tokenizer file and returns the right class;
:func:`from_dict` does the same for a dict (e.g. from a checkpoint).
"""

from .base import EOT, Tokenizer
from .bpe import BPETokenizer, ByteTokenizer, gpt2_bytes_to_unicode
from .hf import HFTokenizer
from .interop import InteropError, merges_from_ranks
from .io import FORMAT_VERSION, TokenizerFileError, from_dict, load
from .spec import BuildOptions, SpecError, TokenizerSpec, build_tokenizer, parse_spec, register_kind
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
    "load",
    "merges_from_ranks",
    "parse_spec",
    "register_kind",
]
