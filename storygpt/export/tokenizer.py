"""A storygpt tokenizer as a Hugging Face ``tokenizer.json``, exactly or not at all.

``bpe`` (and ``byte``, ``tiktoken:``)
    :func:`storygpt.tokenizers.interop.to_hf_dict`: a byte-level ``BPE`` model; ids and
    decoding identical.
``word``
    A ``WordLevel`` model with storygpt's vocabulary and ``<unk>``, after one ``Split``
    pre-tokenizer that keeps the matches of :data:`WORD_PATTERN` (``invert: true``,
    ``behavior: removed``: the white space between them is dropped, as storygpt drops
    it).  The ids are identical, and so is decoding: :func:`word_decoder` writes
    storygpt's spacing rules as regular-expression replacements on the tokens joined
    with one space (``skip_special_tokens=True`` drops ``<unk>`` too, as for any special token).
``superbpe``
    As ``bpe``: a SuperBPE tokenizer encodes with the ordinary BPE encoder on
    ``"superword"`` chunks (:mod:`storygpt.tokenizers.superbpe`), which a ``Split``
    pre-tokenizer and a ``BPE`` model express exactly.
``hf``
    The ``tokenizer.json`` it was made from, without its post-processor (storygpt never
    adds ``[CLS]``/``[SEP]``-like tokens, so ``transformers`` must not either).
Anything else (a kind registered by a plugin) is refused with :class:`ExportError`.
"""

from __future__ import annotations

from storygpt.tokenizers.base import EOT

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


def _chars(chars) -> str:
    """A character class body for Oniguruma with every character written as ``\\x{HEX}`` (no escaping rules)."""
    return "".join(f"\\x{{{ord(c):x}}}" for c in sorted(chars))


def word_decoder() -> dict:
    """A ``tokenizer.json`` decoder that decodes as :meth:`storygpt.tokenizers.WordTokenizer.decode`.

    Tokens hold no white space, so with ``<|endoftext|>`` replaced by a line break and the tokens joined with
    one space (``Replace(^, " ")``, ``Fuse``, ``Strip``), every space is a boundary between two tokens and every
    line break a document boundary.  One ``Replace`` removes the spaces storygpt does not write (after an opener
    or a dash, before a closer or a dash, next to CJK, after an opening and before a closing straight quote,
    found by counting the quotes since the last line break in a look-behind); all its matches are found before
    any is replaced, as storygpt decides each space from the tokens before it.  The line breaks then become
    ``<|endoftext|>`` on a line of its own, and a leading one loses its first line break.
    """
    from storygpt.tokenizers.word import _CLOSERS, _GLUE, _OPENERS

    cjk = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\x{3000}-\x{303f}\x{ff00}-\x{ffef}"
    rules = [
        rf"(?<=[{_chars(_OPENERS | _GLUE)}{cjk}])\x20",  # after an opener, a dash or /, a CJK character
        rf"\x20(?=[{_chars(_CLOSERS | _GLUE)}{cjk}])",  # before a closer, a dash or /, a CJK character
    ]
    for q in "\"'":
        odd = rf"(?:\A|\n)(?:[^{q}\n]*{q}[^{q}\n]*{q})*[^{q}\n]*{q}"  # an odd number of quotes in the document
        rules.append(rf"(?<={q})(?<={odd})\x20")  # after a token that ends with an opening quote
        rules.append(rf"(?=\x20{q})(?<={odd}[^{q}\n]*)\x20")  # before a token that starts with a closing quote
    return {
        "type": "Sequence",
        "decoders": [
            {"type": "Replace", "pattern": {"String": EOT}, "content": "\n"},
            {"type": "Replace", "pattern": {"Regex": "^"}, "content": " "},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            {"type": "Replace", "pattern": {"Regex": "|".join(rules)}, "content": ""},
            {"type": "Replace", "pattern": {"Regex": r"\x20?\n\x20?"}, "content": f"\n{EOT}\n"},
            {"type": "Replace", "pattern": {"Regex": r"\A\n"}, "content": ""},
        ],
    }


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
        "decoder": word_decoder(),
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

    if tok.kind in ("bpe", "superbpe"):
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
        f"a {tok.kind!r} tokenizer has no exact Hugging Face tokenizer.json form (exportable kinds: bpe, "
        "superbpe, byte, tiktoken, word, hf)"
    )
