"""Tokenizers for storygpt (namespaced so it never shadows Hugging Face ``tokenizers``).

Every tokenizer implements :class:`Tokenizer` (docs/design.md, docs/tokenizers.md):

* :class:`BPETokenizer`: byte-level BPE (C++ core ``storygpt._bpe`` or the
  Python reference), trained by :func:`train_bpe` or loaded from OpenAI's, GPT-2's or
  Hugging Face files (:mod:`storygpt.tokenizers.interop`, which also exports to them);
* :class:`ByteTokenizer`: the 256 bytes, no merges;
* :class:`WordTokenizer`: the most frequent words, the rest ``<unk>`` (lossy);
* :class:`HFTokenizer`: any Hugging Face ``tokenizer.json`` (WordPiece, Unigram, ...).

A SPEC string names one (:func:`parse_spec`, :func:`build_tokenizer`).  The kinds live
in one table, :mod:`storygpt.tokenizers.registry` (help line, SPEC, builder, file class,
export): a new kind is one :func:`register_kind` call; :func:`load` reads any tokenizer
file and returns the right class, :func:`from_dict` does the same for a dict.  The public
names are listed in docs/api.md.

Layers (each imports only those below it): ``spec`` -> ``registry`` -> ``interop``, the other
kinds -> ``bpe`` (the class, its constructors, ``train_bpe``) -> ``bpe_train`` (merges) and the
``interop_*`` readers -> ``bpe_vocab`` (checks), ``word``, ``hf`` -> ``base`` -> ``io``.
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
