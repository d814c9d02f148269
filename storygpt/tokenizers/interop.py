"""Importers and exporters: OpenAI's tiktoken, GPT-2's files, Hugging Face ``tokenizer.json``.

Every function here converts between :class:`~storygpt.tokenizers.BPETokenizer` and
another library's format *exactly*: the other library, given what is written, gives
the same ids as storygpt on every text (checked by ``tests/test_interop.py`` with
``tiktoken`` and Hugging Face ``tokenizers`` as oracles on the shared corpora).
What cannot be expressed exactly (a pre-tokenization pattern, a normalizer, another
model type, two ids for the same bytes) is refused with a :class:`InteropError`
naming the component, never written approximately.

Import
    :func:`from_tiktoken` (an encoding name or a ``.tiktoken`` rank file),
    :func:`from_gpt2_files` (``encoder.json`` + ``vocab.bpe``),
    :func:`from_hf` (a byte-level BPE ``tokenizer.json``).
Export
    :func:`to_tiktoken` (a ``tiktoken.Encoding``), :func:`save_tiktoken` (a rank file and
    :func:`tiktoken_params` beside it), :func:`to_hf_dict` / :func:`save_hf` (a ``tokenizer.json``
    and :func:`hf_token_roles`: ``tokenizer_config.json``, ``special_tokens_map.json``).
Shared
    :func:`merges_from_ranks`: the merges list of a rank vocabulary (one per token).

Sources: the ``.tiktoken`` format and ``tiktoken.Encoding`` (github.com/openai/tiktoken);
the ``tokenizer.json`` schema of Hugging Face ``tokenizers`` (``BPE`` model,
``ByteLevel`` and ``Split`` pre-tokenizers, ``ByteLevel`` decoder, added tokens).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from storygpt.atomic import write_text

from . import bpe_reference
from .base import EOT

#: Pre-tokenization patterns as regular expressions over *text* for the other libraries.
#: ``simple`` is defined on bytes; on text (valid UTF-8) a byte >= 0x80 belongs to a
#: non-ASCII character and every non-ASCII character is made of such bytes, so the
#: class ``\x{80}-\x{10FFFF}`` gives the same chunks.
TEXT_PATTERNS = {
    "simple": r"[ ]?[A-Za-z0-9\x{80}-\x{10FFFF}]+|[ ]?[^A-Za-z0-9\x{80}-\x{10FFFF}\t\n\x{0B}\x{0C}\r ]+"
    r"|[\t\n\x{0B}\x{0C}\r ]+",
    "gpt2": bpe_reference.PATTERNS["gpt2"],
    "gpt4": bpe_reference.PATTERNS["gpt4"],
    "o200k": bpe_reference.PATTERNS["o200k"],
}

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
}

#: Split patterns found in ``tokenizer.json`` files, mapped to storygpt's pattern names.
_HF_PATTERN_NAMES = {p: name for name, p in {**TEXT_PATTERNS, **HF_PATTERNS}.items()}
_HF_PATTERN_NAMES[r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""] = "gpt2"


class InteropError(ValueError):
    """A file or tokenizer that cannot be converted exactly; the message names the file and component."""


def _require(package: str, what: str):
    """Import an optional package, or ImportError naming it and what needs it."""
    import importlib

    try:
        return importlib.import_module(package)
    except ImportError as e:
        pip = {"tokenizers": "tokenizers", "tiktoken": "tiktoken"}[package]
        raise ImportError(f"{what} needs the optional package {package} (pip install {pip})") from e


# ------------------------------------------------------------------------------------ merges
def merges_from_ranks(ranks: Mapping[bytes, int]) -> list[tuple[bytes, bytes]]:
    """The merges list of a rank vocabulary (tiktoken's ``mergeable_ranks``): one merge per token.

    A token's merge is the pair of parts that byte-level BPE leaves when it runs on the
    token's own bytes with only the ranks *lower* than the token's (lowest rank first,
    leftmost on ties).  Applied in rank order, these merges give the same ids as the
    rank rule on vocabularies made by BPE training (GPT-2, cl100k_base, o200k_base).

    Args:
        ranks: token bytes -> rank; must hold the 256 single bytes.

    Returns:
        ``(left bytes, right bytes)`` pairs in increasing rank of ``left + right``,
        one for every token of two bytes or more.

    Raises:
        ValueError: a token that lower ranks cannot build from two parts (named with its rank).
    """
    out = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) < 2:
            continue
        parts = [bytes([b]) for b in token]
        while len(parts) > 2:
            best = None
            for i in range(len(parts) - 1):
                r = ranks.get(parts[i] + parts[i + 1])
                if r is not None and r < rank and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                raise ValueError(f"token {token!r} (rank {rank}) cannot be built from tokens of lower rank")
            i = best[1]
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        out.append((parts[0], parts[1]))
    return out


# ------------------------------------------------------------------------------------ tiktoken
def is_rank_file_path(name_or_path: str | os.PathLike) -> bool:
    """True when :func:`from_tiktoken` reads ``name_or_path`` as a ``.tiktoken`` file, not
    an encoding name: it holds a path separator, ends in ``.tiktoken`` or exists."""
    s = os.fspath(name_or_path)
    return os.sep in s or s.endswith(".tiktoken") or (bool(s) and os.path.exists(s))


def check_tiktoken_name(name: str) -> str:
    """``name`` if tiktoken knows the encoding (``tiktoken.list_encoding_names()``).

    The one check of encoding names, used by :func:`from_tiktoken` and the SPEC
    parser (``tiktoken:NAME``), before any file is read or downloaded.

    Raises:
        ImportError: tiktoken is not installed.
        InteropError: an unknown name: ``unknown tiktoken encoding 'nope'; known: ...``.
    """
    tiktoken = _require("tiktoken", "a tiktoken encoding")
    known = sorted(tiktoken.list_encoding_names())
    if name not in known:
        raise InteropError(f"unknown tiktoken encoding {name!r}; known: {', '.join(known)}")
    return name


def read_rank_file(path: str | os.PathLike) -> dict[bytes, int]:
    """Read a ``.tiktoken`` rank file: one ``base64(token) rank`` line per token.

    Raises:
        FileNotFoundError: no such file; IsADirectoryError: a folder (named).
        InteropError: a malformed line, a rank or token that appears twice (both line
            numbers named), or no tokens at all; every message names the file.
    """
    s = os.fspath(path)
    if os.path.isdir(s):
        raise IsADirectoryError(f"{s}: is a folder, not a .tiktoken rank file")
    if not os.path.isfile(s):
        raise FileNotFoundError(f"tiktoken rank file not found: {s}")
    with open(s, "rb") as f:
        lines = f.read().splitlines()
    ranks: dict[bytes, int] = {}
    rank_line: dict[int, int] = {}
    token_line: dict[bytes, int] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            token_b64, rank_text = line.split()
            token, rank = base64.b64decode(token_b64, validate=True), int(rank_text)
        except (ValueError, binascii.Error):
            raise InteropError(
                f"{s}:{n}: not a .tiktoken rank file (base64 token and rank per line), got {line[:80]!r}"
            ) from None
        if rank in rank_line:
            raise InteropError(f"{s}: rank {rank} appears twice, lines {rank_line[rank]} and {n}")
        if token in token_line:
            raise InteropError(f"{s}: token {token!r} appears twice, lines {token_line[token]} and {n}")
        rank_line[rank], token_line[token] = n, n
        ranks[token] = rank
    if not ranks:
        raise InteropError(f"{s}: empty .tiktoken rank file (no tokens)")
    return ranks


def from_tiktoken(
    name_or_path: str | os.PathLike,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | Sequence[str] | None = None,
    backend: str = "cpp",
):
    """OpenAI's vocabularies, read through ``tiktoken``'s own loader and cache.

    Args:
        name_or_path: an encoding name known to tiktoken (``"gpt2"``, ``"r50k_base"``,
            ``"p50k_base"``, ``"cl100k_base"``, ``"o200k_base"``), read with
            ``tiktoken.get_encoding`` (honours ``TIKTOKEN_CACHE_DIR``; it downloads only if
            the cache lacks the file), or the path of a ``.tiktoken`` rank file.
        pattern: for a name, taken from the encoding (must be one of storygpt's); for a
            path, default ``"gpt2"``.
        special_tokens: for a name, the encoding's; for a path, default
            ``{"<|endoftext|>": number of ranks}``.

    Returns:
        A :class:`~storygpt.tokenizers.BPETokenizer` with merge rule ``"ranks"``.

    Raises:
        ImportError: tiktoken is not installed.
        InteropError: an unknown encoding name (the known ones listed); the encoding's
            split pattern is not one storygpt implements; a rank file that is malformed,
            empty, repeats a rank or token, or lacks single bytes (file named).
        FileNotFoundError: a path that does not exist; IsADirectoryError: a folder.
    """
    from .bpe import BPETokenizer

    tiktoken = _require("tiktoken", "from_tiktoken")
    s = os.fspath(name_or_path)
    if is_rank_file_path(s):
        ranks = read_rank_file(s)
        specials = special_tokens if special_tokens is not None else {EOT: len(ranks)}
        try:
            return BPETokenizer.from_ranks(ranks, specials, pattern or "gpt2", backend)
        except InteropError:
            raise
        except ValueError as e:
            raise InteropError(f"{s}: {e}") from None
    name = check_tiktoken_name(s)
    try:
        enc = tiktoken.get_encoding(name)
    except Exception as e:  # requests' / urllib3's connection errors, a bad cache file, ...
        if isinstance(e, (ValueError, KeyError)) and "Unknown encoding" in str(e):
            raise
        cache = os.environ.get("TIKTOKEN_CACHE_DIR")
        where = f"TIKTOKEN_CACHE_DIR={cache} does not hold them" if cache else "TIKTOKEN_CACHE_DIR is not set"
        reason = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
        raise InteropError(
            f"tiktoken:{name} needs OpenAI's BPE files, downloaded on first use, and the download failed "
            f"({type(e).__name__}: {reason}); {where} (docs/tokenizers.md: using tiktoken offline)"
        ) from None
    specials = special_tokens if special_tokens is not None else dict(enc._special_tokens)
    if pattern is None:
        names = [n for n, p in TEXT_PATTERNS.items() if p == enc._pat_str]
        if not names:
            raise InteropError(
                f"tiktoken encoding {s!r} uses a split pattern storygpt does not implement: {enc._pat_str!r}"
            )
        pattern = names[0]
    return BPETokenizer.from_ranks(enc._mergeable_ranks, specials, pattern, backend)


def _ranks_of(tok) -> dict[bytes, int]:
    """Token bytes -> id of a BPETokenizer whose merges follow the rank rule exactly.

    Raises:
        InteropError: two ids with the same bytes, or a merge that the rank rule would
            not make (the tokenizer's merges differ from :func:`merges_from_ranks`).
    """
    ranks: dict[bytes, int] = {}
    for i, b in sorted(tok._vocab.items()):
        if b in ranks:
            raise InteropError(
                f"tokens {ranks[b]} and {i} are the same bytes {b!r}: a rank file holds one id per token"
            )
        ranks[b] = i
    if tok.merges is None:
        return ranks
    made = {tok._vocab[new]: (tok._vocab[a], tok._vocab[b]) for a, b, new in tok.merges}
    for left, right in merges_from_ranks(ranks):
        want = made.get(left + right)
        if want is not None and want != (left, right):
            raise InteropError(
                f"token {ranks[left + right]} ({left + right!r}) is merged from {want[0]!r} + {want[1]!r}, but the "
                f"rank rule would build it from {left!r} + {right!r}: ranks cannot express these merges exactly"
            )
    if any(len(b) >= 2 and b not in made for b in ranks):
        b = next(b for b in ranks if len(b) >= 2 and b not in made)
        raise InteropError(f"token {ranks[b]} ({b!r}) is made by no merge: ranks cannot express this vocabulary")
    return ranks


def to_tiktoken(tok, name: str | None = None):
    """A ``tiktoken.Encoding`` that gives the same ids as ``tok`` (``encode_ordinary`` and
    ``encode`` with special tokens allowed).

    Args:
        tok: a :class:`~storygpt.tokenizers.BPETokenizer`.
        name: the encoding's name (default ``"storygpt-<pattern>-<vocab_size>"``).

    Raises:
        ImportError: tiktoken is not installed.
        InteropError: two ids share their bytes, or merges the rank rule would not make.
    """
    tiktoken = _require("tiktoken", "to_tiktoken")
    ranks = _ranks_of(tok)
    return tiktoken.Encoding(
        name or f"storygpt-{tok.pattern}-{tok.vocab_size}",
        pat_str=TEXT_PATTERNS[tok.pattern],
        mergeable_ranks=ranks,
        special_tokens=tok.special_tokens,
    )


def tiktoken_params(tok, name: str | None = None) -> dict:
    """What ``tiktoken.Encoding`` needs besides the ranks, as JSON-ready keyword arguments.

    Returns:
        ``{"name", "pat_str", "special_tokens", "explicit_n_vocab"}``: with the ranks of
        ``tiktoken.load.load_tiktoken_bpe(path)``, ``tiktoken.Encoding(mergeable_ranks=...,
        **params)`` gives the same ids as ``tok``.
    """
    return {
        "name": name or f"storygpt-{tok.pattern}-{tok.vocab_size}",
        "pat_str": TEXT_PATTERNS[tok.pattern],
        "special_tokens": dict(sorted(tok.special_tokens.items(), key=lambda kv: kv[1])),
        "explicit_n_vocab": tok.vocab_size,
    }


def save_tiktoken(tok, path: str | os.PathLike) -> Path:
    """Write ``tok``'s ranks as a ``.tiktoken`` file (``base64(token) rank`` per line, by rank), and
    beside it ``<path>.json`` with the rest (:func:`tiktoken_params`: split pattern, special
    tokens, vocabulary size), both atomically.

    Plain tiktoken loads the two in three lines (docs/tokenizers.md)::

        ranks = {base64.b64decode(t): int(r) for t, r in (ln.split() for ln in open(path, "rb") if ln.strip())}
        params = json.load(open(path + ".json"))
        enc = tiktoken.Encoding(mergeable_ranks=ranks, **params)

    (``tiktoken.load.load_tiktoken_bpe(path)`` reads the ranks too, but caches a local file
    by its path in a temporary folder, so a file written again at the same path is read stale
    unless ``TIKTOKEN_CACHE_DIR=""``.)

    storygpt reads them with ``from_tiktoken(path, pattern=tok.pattern, special_tokens=tok.special_tokens)``.

    Returns:
        The path of the ``.json`` file.

    Raises:
        InteropError: as :func:`to_tiktoken`.
    """
    ranks = _ranks_of(tok)
    lines = [f"{base64.b64encode(b).decode('ascii')} {r}\n" for b, r in sorted(ranks.items(), key=lambda kv: kv[1])]
    write_text(path, "".join(lines))
    side = Path(os.fspath(path) + ".json")
    write_text(side, json.dumps(tiktoken_params(tok), ensure_ascii=False, indent=1) + "\n")
    return side


# ------------------------------------------------------------------------------------ GPT-2 files
def from_gpt2_files(
    encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike, pattern: str = "gpt2", backend: str = "cpp"
):
    """GPT-2's original ``encoder.json`` (token -> id) and ``vocab.bpe`` (merges), from local paths.

    Both files write bytes through GPT-2's reversible byte <-> printable unicode table
    (:func:`~storygpt.tokenizers.gpt2_bytes_to_unicode`); tokens are mapped back to raw
    bytes here.  Ids come from ``encoder.json`` (so byte ids differ from byte values);
    merge ranks are the line order of ``vocab.bpe``; tokens of ``encoder.json`` that look
    like ``<|...|>`` (``<|endoftext|>``) become special tokens with their ids.

    Raises:
        FileNotFoundError: a missing file (named).
        ValueError: malformed content (file named).
    """
    from .bpe import BPETokenizer

    for p in (encoder_json, vocab_bpe):
        if not os.path.isfile(p):
            raise FileNotFoundError(f"GPT-2 vocabulary file not found: {p}")
    with open(encoder_json, encoding="utf-8") as f:
        try:
            encoder = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{encoder_json}: not valid JSON: {e}") from e
    vocab: dict[int, bytes] = {}
    specials: dict[str, int] = {}
    for token, i in encoder.items():
        if token.startswith("<|") and token.endswith("|>"):
            specials[token] = int(i)
        else:
            vocab[int(i)] = _unicode_to_bytes(token, str(encoder_json))
    merges = []
    with open(vocab_bpe, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#version"):
                continue
            parts = line.split(" ")
            if len(parts) != 2:
                raise ValueError(f"{vocab_bpe}:{n}: expected two tokens separated by a space, got {line!r}")
            merges.append((_unicode_to_bytes(parts[0], str(vocab_bpe)), _unicode_to_bytes(parts[1], str(vocab_bpe))))
    try:
        return BPETokenizer.from_vocab(vocab, merges, specials, pattern, backend)
    except ValueError as e:
        raise ValueError(f"{vocab_bpe}: {e}") from None


def _byte_decoder() -> dict[str, int]:
    from .bpe import gpt2_bytes_to_unicode

    return {c: b for b, c in gpt2_bytes_to_unicode().items()}


def _unicode_to_bytes(token: str, where: str) -> bytes:
    dec = _byte_decoder()
    try:
        return bytes(dec[c] for c in token)
    except KeyError as e:
        raise ValueError(f"{where}: token {token!r} has a character outside GPT-2's byte table") from e


def _bytes_to_unicode(b: bytes, table: dict[int, str]) -> str:
    return "".join(table[x] for x in b)


# ------------------------------------------------------------------------------------ Hugging Face
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
    from .bpe import gpt2_bytes_to_unicode

    table = gpt2_bytes_to_unicode()
    seen: dict[bytes, int] = {}
    vocab: dict[str, int] = {}
    for i, b in sorted(tok._vocab.items()):
        if b in seen:
            raise InteropError(
                f"tokens {seen[b]} and {i} are the same bytes {b!r}: tokenizer.json maps each token to one id"
            )
        seen[b] = i
        vocab[_bytes_to_unicode(b, table)] = i
    if tok.merges is not None:
        pairs = [(tok._vocab[a], tok._vocab[b]) for a, b, _ in tok.merges]
    else:
        try:
            pairs = merges_from_ranks(seen)
        except ValueError as e:
            raise InteropError(f"cannot write the merges of this rank vocabulary: {e}") from None
    merges = [[_bytes_to_unicode(a, table), _bytes_to_unicode(b, table)] for a, b in pairs]
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
    added = [
        {
            "id": i,
            "content": s,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for s, i in sorted(tok.special_tokens.items(), key=lambda kv: kv[1])
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
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


def _hf_fail(source: str, component: str, what: str) -> InteropError:
    return InteropError(f"{source}: {component}: {what}; storygpt reads byte-level BPE tokenizer.json files only")


def _hf_pattern(pre, source: str) -> str:
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


def read_hf_json(path: str | os.PathLike) -> dict:
    """Read a ``tokenizer.json`` file as a dict.

    Raises:
        FileNotFoundError: no such file (named); IsADirectoryError: a folder (named).
        InteropError: not valid UTF-8 JSON, or not a JSON object (file named).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"tokenizer.json not found: {path}") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"{path}: is a folder, not a tokenizer.json file") from None
    try:
        d = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InteropError(f"{path}: corrupt tokenizer.json (not valid JSON): {e}") from None
    if not isinstance(d, dict) or "model" not in d:
        raise InteropError(f"{path}: not a Hugging Face tokenizer.json (no 'model' object)")
    return d


def from_hf(path_or_dict, backend: str = "cpp", source: str | None = None):
    """A byte-level BPE ``tokenizer.json`` (GPT-2/RoBERTa style, or ``Split`` + ``ByteLevel``)
    as a :class:`~storygpt.tokenizers.BPETokenizer` with the same ids as ``tokenizers``.

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
    from .bpe import BPETokenizer

    if isinstance(path_or_dict, dict):
        d, source = path_or_dict, source or "tokenizer.json"
    else:
        d, source = read_hf_json(path_or_dict), source or os.fspath(path_or_dict)
    if d.get("normalizer") is not None:
        kind = d["normalizer"].get("type") if isinstance(d["normalizer"], dict) else d["normalizer"]
        raise _hf_fail(source, "normalizer", f"{kind!r} is not supported (it changes the text before tokenizing)")
    pattern = _hf_pattern(d.get("pre_tokenizer"), source)
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
    try:
        for token, i in vocab_json.items():
            if not isinstance(i, int):
                raise ValueError(f"token {token!r} has id {i!r}, not an integer")
            if specials.get(token) == i:
                continue  # an added token also in the vocabulary: a special token with its id
            vocab[i] = _unicode_to_bytes(token, "model.vocab")
        merges = []
        for m in merges_json:
            parts = m.split(" ") if isinstance(m, str) else m
            if not isinstance(parts, list) or len(parts) != 2:
                raise ValueError(f"merge {m!r}: expected 'left right' or [left, right]")
            merges.append((_unicode_to_bytes(parts[0], "model.merges"), _unicode_to_bytes(parts[1], "model.merges")))
        return BPETokenizer.from_vocab(vocab, merges, specials, pattern, backend)
    except InteropError:
        raise
    except ValueError as e:
        raise InteropError(f"{source}: model: {e}") from None
