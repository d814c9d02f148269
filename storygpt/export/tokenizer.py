"""A storygpt tokenizer as a Hugging Face ``tokenizer.json``, exactly or not at all.

Each kind says how it is written (``register_kind(..., export=...)`` in
:mod:`storygpt.tokenizers.registry`): ``bpe`` (and ``byte``, ``tiktoken:``, whose tokenizers
are BPE) by :func:`storygpt.tokenizers.interop.to_hf_dict` (ids and decoding identical);
``superbpe`` the same way (a ``Split`` on its superword chunks, then ``BPE``);
``word`` by :func:`storygpt.tokenizers.interop_hf.word_to_hf_dict` (ids and decoding identical:
:func:`~storygpt.tokenizers.interop_hf.word_decoder`); ``hf`` gives back the file it was made from,
without its post-processor.  A kind registered without ``export`` (SentencePiece, a
plug-in) is refused with :class:`ExportError` naming the kinds that can be written.
"""

from __future__ import annotations

from storygpt.tokenizers.interop import InteropError
from storygpt.tokenizers.registry import exportable_kinds, kinds

from .destination import ExportError


def tokenizer_json(tok) -> dict:
    """The ``tokenizer.json`` content (a dict) that gives the same ids as ``tok``.

    Raises:
        ExportError: a tokenizer kind the format cannot express exactly, or a vocabulary it
            cannot hold, with the reason.
    """
    kind = kinds().get(tok.kind)
    if kind is None or kind.export is None:
        raise ExportError(
            f"a {tok.kind!r} tokenizer has no exact Hugging Face tokenizer.json form (exportable kinds: "
            f"{', '.join(exportable_kinds())})"
        )
    try:
        return kind.export(tok)
    except InteropError as e:
        raise ExportError(f"the {tok.kind} tokenizer cannot be written as tokenizer.json: {e}") from None
