"""A storygpt tokenizer as a Hugging Face ``tokenizer.json``, exactly or not at all.

``bpe`` (and ``byte``, ``tiktoken:``)
    :func:`storygpt.tokenizers.interop.to_hf_dict`: a byte-level ``BPE`` model; ids and
    decoding identical.
``word``
    A ``WordLevel`` model with storygpt's vocabulary and ``<unk>``, after one ``Split``
    pre-tokenizer that keeps the matches of :data:`WORD_PATTERN` (``invert: true``,
    ``behavior: removed``: the white space between them is dropped, as storygpt drops
    it).  The ids are identical; decoding is not (Hugging Face joins tokens with one
    space, storygpt's rules leave none before closing punctuation and so on: a word-level
    model's decoding is lossy either way).
``hf``
    The ``tokenizer.json`` it was made from, without its post-processor (storygpt never
    adds ``[CLS]``/``[SEP]``-like tokens, so ``transformers`` must not either).
Anything else (a kind registered by a plugin) is refused with :class:`ExportError`.
"""

from __future__ import annotations

from .arch import ExportError

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}"
_WORD = rf"[\p{{L}}\p{{M}}\p{{N}}_&&[^{_CJK}]]"
#: storygpt's word splitting ("words-v1", storygpt/tokenizers/word.py) in Oniguruma's
#: syntax (``&&[^...]`` where Python's ``regex`` writes the set difference ``--[...]``):
#: numbers with separators, one CJK character, words with inner apostrophes, punctuation runs.
WORD_PATTERN = "|".join(
    [
        r"\p{N}+(?:[.,:]\p{N}+)+",
        rf"[{_CJK}]",
        rf"{_WORD}+(?:['’]{_WORD}+)*",
        r"[^\s\p{L}\p{M}\p{N}_]+",
    ]
)


def word_level_dict(tok) -> dict:
    """The ``tokenizer.json`` content of a :class:`~storygpt.tokenizers.WordTokenizer` (see the module docstring)."""
    from storygpt.tokenizers.interop_hf import hf_added_tokens
    from storygpt.tokenizers.word import SPLIT_NAME

    split = tok.to_dict().get("split", SPLIT_NAME)
    if split != SPLIT_NAME:
        raise ExportError(f"word tokenizer with splitting rules {split!r}: only {SPLIT_NAME!r} can be written")
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": hf_added_tokens(tok),
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Split",
            "pattern": {"Regex": WORD_PATTERN},
            "behavior": "Removed",
            "invert": True,
        },
        "post_processor": None,
        "decoder": None,
        "model": {
            "type": "WordLevel",
            "vocab": {t: i for i, t in enumerate(tok.tokens)},
            "unk_token": tok.id_to_token(tok.unk_id),
        },
    }


def tokenizer_json(tok) -> dict:
    """The ``tokenizer.json`` content (a dict) that gives the same ids as ``tok``.

    Raises:
        ExportError: a tokenizer kind the format cannot express exactly, or a BPE
            vocabulary it cannot hold (two ids with the same bytes), with the reason.
    """
    from storygpt.tokenizers.interop import InteropError, to_hf_dict

    if tok.kind == "bpe":
        try:
            return to_hf_dict(tok)
        except InteropError as e:
            raise ExportError(f"the BPE tokenizer cannot be written as tokenizer.json: {e}") from None
    if tok.kind == "word":
        return word_level_dict(tok)
    if tok.kind == "hf":
        d = dict(tok.to_dict()["tokenizer_json"])
        d["post_processor"] = None
        return d
    raise ExportError(
        f"a {tok.kind!r} tokenizer has no exact Hugging Face tokenizer.json form (exportable kinds: bpe, byte, "
        "tiktoken, word, hf)"
    )
