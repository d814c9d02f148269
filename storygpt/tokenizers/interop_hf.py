"""Hugging Face ``tokenizers``: a byte-level BPE ``tokenizer.json`` in (:func:`from_hf`) and out
(:func:`to_hf_dict`, :func:`save_hf`, with the special-token roles ``transformers`` reads).

Source: the ``tokenizer.json`` schema of Hugging Face ``tokenizers`` (``BPE`` model,
``ByteLevel`` and ``Split`` pre-tokenizers, ``ByteLevel`` decoder, added tokens).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from storygpt.atomic import write_text

from . import bpe_reference
from .base import EOT
from .hf import HFFileError, read_hf_json
from .interop_base import TEXT_PATTERNS, BPEParts, InteropError, ids_by_bytes, merges_from_ranks
from .interop_gpt2 import bytes_to_unicode, gpt2_bytes_to_unicode, unicode_to_bytes
from .word import SPLIT_NAME

#: The same patterns as Hugging Face ``tokenizers`` (Oniguruma, Ruby syntax) must read them.
#: Oniguruma reads ``{1,3}+`` as "one or more groups of 1 to 3", not as possessive, so
#: ``gpt4`` is written in its original form without possessive quantifiers
#: (tiktoken's first cl100k_base pattern, which gives the same chunks); ``gpt2`` is the
#: ``ByteLevel`` pre-tokenizer's own regular expression (``use_regex: true``).
HF_PATTERNS = {
    "simple": TEXT_PATTERNS["simple"],
    "gpt4": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "o200k": bpe_reference.PATTERNS["o200k"],
    "superword": TEXT_PATTERNS["superword"],
}

#: Split patterns found in ``tokenizer.json`` files, mapped to storygpt's pattern names.
_HF_PATTERN_NAMES = {p: name for name, p in {**TEXT_PATTERNS, **HF_PATTERNS}.items()}
_HF_PATTERN_NAMES[r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""] = "gpt2"


def to_hf_dict(tok) -> dict:
    """The Hugging Face ``tokenizer.json`` content (a dict) of a BPETokenizer.

    Layout: no normalizer; pre-tokenizer ``ByteLevel`` with its own regex (``gpt2``) or
    ``Sequence[Split(pattern, Isolated), ByteLevel(use_regex=false)]`` (the other
    patterns, written as :data:`HF_PATTERNS`); model ``BPE`` with the vocabulary in GPT-2's
    byte-to-unicode spelling and the merges in rank order (rule ``"ranks"``:
    :func:`merges_from_ranks`); decoder ``ByteLevel``; special tokens as added tokens
    (``special: true``, never normalized or stripped).

    Raises:
        InteropError: two ids with the same bytes (``tokenizer.json`` maps a token to one id).
    """
    table = gpt2_bytes_to_unicode()
    vocab_bytes = tok.vocab
    seen = ids_by_bytes(vocab_bytes, "tokenizer.json maps each token to one id")
    vocab = {bytes_to_unicode(b, table): i for b, i in seen.items()}
    if tok.merges is not None:
        pairs = [(vocab_bytes[a], vocab_bytes[b]) for a, b, _ in tok.merges]
    else:
        try:
            pairs = merges_from_ranks(seen)
        except ValueError as e:
            raise InteropError(f"cannot write the merges of this rank vocabulary: {e}") from None
    merges = [[bytes_to_unicode(a, table), bytes_to_unicode(b, table)] for a, b in pairs]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    if tok.pattern == "gpt2":
        pre = byte_level
    else:
        pre = {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": HF_PATTERNS[tok.pattern]},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {**byte_level, "use_regex": False},
            ],
        }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": hf_added_tokens(tok),
        "normalizer": None,
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges,
        },
    }


def hf_added_tokens(tok) -> list[dict]:
    """``tokenizer.json``'s ``added_tokens`` for ``tok``'s special tokens, by id: ``special: true``,
    never normalized or stripped."""
    flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
    return [{"id": i, "content": s, **flags} for s, i in sorted(tok.special_tokens.items(), key=lambda kv: kv[1])]


def hf_token_roles(tok, model_max_length: int | None = None) -> tuple[dict, dict]:
    """``tokenizer_config.json`` and ``special_tokens_map.json`` contents for ``transformers``.

    They give ``PreTrainedTokenizerFast`` / ``AutoTokenizer`` the roles of the special
    tokens: ``eos_token`` and ``bos_token`` are ``<|endoftext|>`` (storygpt puts it between
    and before documents), ``pad_token`` the tokenizer's ``<pad>`` when it has one, else
    ``<|endoftext|>`` (GPT-2's habit; padded positions are masked out), ``unk_token`` its
    unknown token when it has one.  Nothing is added when encoding (no BOS/EOS), decoding
    does not clean up spaces, and ``model_max_length`` is the context length when given.

    Args:
        tok: any storygpt tokenizer (``eot_id``, ``pad_id``, ``unk_id``, ``id_to_token``, ``special_tokens``).
        model_max_length: the model's context length in tokens, or None (transformers' "no limit").
    """
    eot = tok.id_to_token(tok.eot_id)
    roles = {"bos_token": eot, "eos_token": eot, "pad_token": eot}
    if tok.pad_id is not None:
        roles["pad_token"] = tok.id_to_token(tok.pad_id)
    if tok.unk_id is not None:
        roles["unk_token"] = tok.id_to_token(tok.unk_id)
    ids = set(tok.special_tokens.values()) | {i for i in (tok.eot_id, tok.pad_id, tok.unk_id) if i is not None}
    flags = {"lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": True}
    added = {str(i): {"content": tok.id_to_token(i), **flags} for i in sorted(ids)}
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        **roles,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": added,
    }
    if model_max_length is not None:
        config["model_max_length"] = int(model_max_length)
    return config, dict(roles)


def save_hf(tok, path: str | os.PathLike, model_max_length: int | None = None) -> Path:
    """Write ``tok`` as a Hugging Face tokenizer (:func:`to_hf_dict`), atomically.

    ``path`` is a folder (created when missing; any path not ending in ``.json``) or a
    ``.json`` file.  In a folder, or when the file is named ``tokenizer.json``, the
    special-token roles (:func:`hf_token_roles`) go beside it as ``tokenizer_config.json``
    and ``special_tokens_map.json``, so ``transformers.AutoTokenizer.from_pretrained(folder)``
    knows ``eos_token`` and ``pad_token`` (``padding=True`` works).

    ``tokenizers.Tokenizer.from_file(tokenizer.json)`` and the ``transformers`` tokenizer
    then give the same ids as ``tok.encode(text, allowed_special="all")`` and the same ``decode``.

    Returns:
        The ``tokenizer.json`` path written.

    Raises:
        InteropError: as :func:`to_hf_dict`.
    """
    return write_hf_files(to_hf_dict(tok), tok, path, model_max_length)


def write_hf_files(tokenizer_json: dict, tok, path: str | os.PathLike, model_max_length: int | None = None) -> Path:
    """Write a ``tokenizer.json`` dict and, as :func:`save_hf` says, the roles of ``tok``'s special tokens."""
    path = Path(path)
    folder_mode = path.is_dir() or path.suffix != ".json"
    file = path / "tokenizer.json" if folder_mode else path
    write_text(file, json.dumps(tokenizer_json, ensure_ascii=False, indent=1) + "\n")
    if folder_mode or path.name == "tokenizer.json":
        config, roles = hf_token_roles(tok, model_max_length)
        write_text(file.parent / "tokenizer_config.json", json.dumps(config, ensure_ascii=False, indent=1) + "\n")
        write_text(file.parent / "special_tokens_map.json", json.dumps(roles, ensure_ascii=False, indent=1) + "\n")
    return file


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
    from storygpt.tokenizers.word import CLOSERS, GLUE, OPENERS

    cjk = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\x{3000}-\x{303f}\x{ff00}-\x{ffef}"
    rules = [
        rf"(?<=[{_chars(OPENERS | GLUE)}{cjk}])\x20",  # after an opener, a dash or /, a CJK character
        rf"\x20(?=[{_chars(CLOSERS | GLUE)}{cjk}])",  # before a closer, a dash or /, a CJK character
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


def word_to_hf_dict(tok) -> dict:
    """The ``tokenizer.json`` content of a :class:`~storygpt.tokenizers.WordTokenizer`: a ``WordLevel``
    model with its vocabulary and ``<unk>``, after one ``Split`` pre-tokenizer that keeps the matches
    of :data:`WORD_PATTERN` (the white space between them dropped, as storygpt drops it).  The ids
    are identical, and so is decoding (:func:`word_decoder`).

    Raises:
        InteropError: splitting rules other than ``"words-v1"``.
    """
    split = tok.to_dict().get("split", SPLIT_NAME)
    if split != SPLIT_NAME:
        raise InteropError(f"word tokenizer with splitting rules {split!r}: only {SPLIT_NAME!r} can be written")
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


def hf_to_hf_dict(tok) -> dict:
    """The ``tokenizer.json`` an :class:`~storygpt.tokenizers.HFTokenizer` was made from, without its
    post-processor (storygpt never adds ``[CLS]``/``[SEP]``-like tokens, so ``transformers`` must not either)."""
    d = dict(tok.to_dict()["tokenizer_json"])
    d["post_processor"] = None
    return d


def _hf_fail(source: str, component: str, what: str) -> InteropError:
    return InteropError(f"{source}: {component}: {what}; storygpt reads byte-level BPE tokenizer.json files only")


def hf_pattern(pre, source: str) -> str:
    """storygpt's pattern name for a tokenizer.json pre-tokenizer, or InteropError naming it."""
    if not isinstance(pre, dict):
        raise _hf_fail(source, "pre_tokenizer", f"{pre!r} is not supported (need ByteLevel)")
    kind = pre.get("type")
    if kind == "ByteLevel":
        if pre.get("add_prefix_space"):
            raise _hf_fail(source, "pre_tokenizer", "ByteLevel with add_prefix_space=true is not supported")
        if not pre.get("use_regex", True):
            raise _hf_fail(source, "pre_tokenizer", "ByteLevel with use_regex=false and no Split before it")
        return "gpt2"
    if kind == "Sequence":
        parts = pre.get("pretokenizers") or []
        types = [p.get("type") if isinstance(p, dict) else None for p in parts]
        if types != ["Split", "ByteLevel"]:
            raise _hf_fail(source, "pre_tokenizer", f"Sequence of {types} is not supported (need [Split, ByteLevel])")
        split, byte_level = parts
        if byte_level.get("add_prefix_space") or byte_level.get("use_regex", True):
            raise _hf_fail(
                source, "pre_tokenizer", "ByteLevel after Split must have add_prefix_space=false and use_regex=false"
            )
        if split.get("behavior") != "Isolated" or split.get("invert"):
            raise _hf_fail(
                source,
                "pre_tokenizer",
                f"Split with behavior={split.get('behavior')!r}, invert={split.get('invert')!r} "
                "is not supported (need Isolated, invert false)",
            )
        pat = split.get("pattern") or {}
        regex_text = pat.get("Regex") if isinstance(pat, dict) else None
        if regex_text not in _HF_PATTERN_NAMES:
            raise _hf_fail(
                source,
                "pre_tokenizer",
                f"Split pattern {pat!r} is not one of storygpt's patterns ({', '.join(sorted(TEXT_PATTERNS))})",
            )
        return _HF_PATTERN_NAMES[regex_text]
    raise _hf_fail(source, "pre_tokenizer", f"type {kind!r} is not supported (need ByteLevel or [Split, ByteLevel])")


def read_hf(path_or_dict, source: str | None = None) -> BPEParts:
    """A byte-level BPE ``tokenizer.json`` (GPT-2/RoBERTa style, or ``Split`` + ``ByteLevel``),
    read for a :class:`~storygpt.tokenizers.BPETokenizer` with the same ids as ``tokenizers``
    (``interop.from_hf`` builds it).

    Accepted: no normalizer; pre-tokenizer ``ByteLevel`` (``add_prefix_space: false``, its
    own regex = ``gpt2``) or ``Sequence[Split(one of storygpt's patterns, Isolated),
    ByteLevel(use_regex: false)]``; model ``BPE`` without dropout, byte fallback, word
    prefixes/suffixes or ``ignore_merges``; decoder ``ByteLevel`` or none; post-processor
    ``ByteLevel`` or none; added tokens (never stripped) become special tokens, keeping
    their ids (an added token that is also in the vocabulary keeps its id).

    Args:
        path_or_dict: the file, or its content as a dict.
        source: a name for error messages (default: the path).

    Raises:
        FileNotFoundError: no such file; IsADirectoryError: a folder (named).
        InteropError: anything that cannot be represented exactly, naming the file and the
            component (normalizer, pre_tokenizer, model type, decoder, post_processor,
            added token), or a vocabulary entry that no merge makes (a cut merges list).
    """
    if isinstance(path_or_dict, dict):
        d, source = path_or_dict, source or "tokenizer.json"
    else:
        try:
            d = read_hf_json(path_or_dict)
        except HFFileError as e:
            raise InteropError(str(e)) from None
        source = source or os.fspath(path_or_dict)
    if d.get("normalizer") is not None:
        kind = d["normalizer"].get("type") if isinstance(d["normalizer"], dict) else d["normalizer"]
        raise _hf_fail(source, "normalizer", f"{kind!r} is not supported (it changes the text before tokenizing)")
    pattern = hf_pattern(d.get("pre_tokenizer"), source)
    model = d["model"]
    if not isinstance(model, dict) or model.get("type") != "BPE":
        kind = model.get("type") if isinstance(model, dict) else model
        raise _hf_fail(source, "model type", f"{kind!r} is not supported (need BPE; use hf:PATH for any other)")
    for key, bad in (("dropout", None), ("continuing_subword_prefix", None), ("end_of_word_suffix", None)):
        if model.get(key) not in (bad, ""):
            raise _hf_fail(source, f"model.{key}", f"{model.get(key)!r} is not supported")
    for key in ("byte_fallback", "ignore_merges"):
        if model.get(key):
            raise _hf_fail(source, f"model.{key}", "true is not supported")
    for comp in ("decoder", "post_processor"):
        c = d.get(comp)
        if c is not None and (not isinstance(c, dict) or c.get("type") != "ByteLevel"):
            kind = c.get("type") if isinstance(c, dict) else c
            raise _hf_fail(source, comp, f"{kind!r} is not supported (need ByteLevel or none)")
    vocab_json, merges_json = model.get("vocab"), model.get("merges")
    if not isinstance(vocab_json, dict) or not isinstance(merges_json, list):
        raise _hf_fail(source, "model", "vocab must be an object and merges a list")
    specials: dict[str, int] = {}
    for t in d.get("added_tokens") or []:
        if not isinstance(t, dict) or not isinstance(t.get("content"), str) or not isinstance(t.get("id"), int):
            raise _hf_fail(source, "added_tokens", f"bad entry {t!r}")
        for flag in ("lstrip", "rstrip", "single_word"):
            if t.get(flag):
                raise _hf_fail(source, f"added token {t['content']!r}", f"{flag}=true is not supported")
        specials[t["content"]] = t["id"]
    vocab: dict[int, bytes] = {}
    names: dict[int, str] = {}
    try:
        for token, i in vocab_json.items():
            if not isinstance(i, int):
                raise ValueError(f"token {token!r} has id {i!r}, not an integer")
            if specials.get(token) == i:
                continue  # an added token also in the vocabulary: a special token with its id
            if i in names:
                raise ValueError(f"tokens {names[i]!r} and {token!r} both have id {i}")
            names[i] = token
            vocab[i] = unicode_to_bytes(token, "model.vocab")
        merges = []
        for m in merges_json:
            parts = m.split(" ") if isinstance(m, str) else m
            if not isinstance(parts, list) or len(parts) != 2:
                raise ValueError(f"merge {m!r}: expected 'left right' or [left, right]")
            merges.append((unicode_to_bytes(parts[0], "model.merges"), unicode_to_bytes(parts[1], "model.merges")))
    except InteropError:
        raise
    except ValueError as e:
        raise InteropError(f"{source}: model: {e}") from None
    return BPEParts(pattern, specials, vocab=vocab, merges=merges, source=f"{source}: model", error=InteropError)
