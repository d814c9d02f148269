"""Tokenizers for storygpt (namespaced so it never shadows Hugging Face ``tokenizers``).

Both tokenizers implement :class:`Tokenizer` (docs/design.md, docs/tokenizers.md):

* :class:`BPETokenizer`: byte-level BPE (C++ core ``storygpt._bpe`` or the
  Python reference), trained here or loaded from OpenAI's / GPT-2's files;
* :class:`WordTokenizer`: the most frequent words, the rest ``<unk>`` (lossy).

:func:`load` reads any tokenizer file and returns the right class;
:func:`from_dict` does the same for a dict (e.g. from a checkpoint).
"""

from .base import EOT, Tokenizer
from .bpe import BPETokenizer, gpt2_bytes_to_unicode
from .io import FORMAT_VERSION, TokenizerFileError, from_dict, load
from .word import WordTokenizer

__all__ = [
    "EOT",
    "FORMAT_VERSION",
    "BPETokenizer",
    "Tokenizer",
    "TokenizerFileError",
    "WordTokenizer",
    "from_dict",
    "gpt2_bytes_to_unicode",
    "load",
]
