"""OpenAI's tiktoken: encoding names and ``.tiktoken`` rank files in, ``tiktoken.Encoding`` and rank files out.

Source: the ``.tiktoken`` format and ``tiktoken.Encoding`` (github.com/openai/tiktoken).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from storygpt.atomic import write_text
from storygpt.cli import first_line

from .base import EOT, require
from .interop_base import TEXT_PATTERNS, BPEParts, InteropError, ids_by_bytes, merges_from_ranks


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
    tiktoken = require("tiktoken", "a tiktoken:NAME tokenizer")
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


def get_encoding(name: str):
    """``tiktoken.get_encoding(name)`` (the name checked first), its download failure as one line.

    Raises:
        ImportError: tiktoken is not installed.
        InteropError: an unknown name (the known ones listed); OpenAI's files neither cached nor downloadable
            (the reason's first line, whether ``TIKTOKEN_CACHE_DIR`` is set).
    """
    tiktoken = require("tiktoken", f"tiktoken:{name}")
    name = check_tiktoken_name(name)
    try:
        return tiktoken.get_encoding(name)
    except Exception as e:  # requests' / urllib3's connection errors, a bad cache file, ...
        if isinstance(e, (ValueError, KeyError)) and "Unknown encoding" in str(e):
            raise
        cache = os.environ.get("TIKTOKEN_CACHE_DIR")
        where = f"TIKTOKEN_CACHE_DIR={cache} does not hold them" if cache else "TIKTOKEN_CACHE_DIR is not set"
        raise InteropError(
            f"tiktoken:{name} needs OpenAI's BPE files, downloaded on first use, and the download failed "
            f"({type(e).__name__}: {first_line(e)}); {where} (docs/tokenizers.md: using tiktoken offline)"
        ) from None


def read_tiktoken(
    name_or_path: str | os.PathLike,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | Sequence[str] | None = None,
) -> BPEParts:
    """OpenAI's vocabularies, read through ``tiktoken``'s own loader and cache
    (``interop.from_tiktoken`` makes them a ``BPETokenizer``).

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
        The ranks (a ``BPETokenizer`` with merge rule ``"ranks"`` once built).

    Raises:
        ImportError: tiktoken is not installed.
        InteropError: an unknown encoding name (the known ones listed); the encoding's
            split pattern is not one storygpt implements; a rank file that is malformed,
            empty, repeats a rank or token, or lacks single bytes (file named).
        FileNotFoundError: a path that does not exist; IsADirectoryError: a folder.
    """
    require("tiktoken", "importing a tiktoken vocabulary (tiktoken:NAME, interop.from_tiktoken)")
    s = os.fspath(name_or_path)
    if is_rank_file_path(s):
        ranks = read_rank_file(s)
        specials = special_tokens if special_tokens is not None else {EOT: len(ranks)}
        return BPEParts(pattern or "gpt2", specials, ranks=ranks, source=s, error=InteropError)
    enc = get_encoding(s)
    name = enc.name
    specials = special_tokens if special_tokens is not None else dict(enc._special_tokens)
    if pattern is None:
        names = [n for n, p in TEXT_PATTERNS.items() if p == enc._pat_str]
        if not names:
            raise InteropError(
                f"tiktoken encoding {s!r} uses a split pattern storygpt does not implement: {enc._pat_str!r}"
            )
        pattern = names[0]
    return BPEParts(pattern, specials, ranks=enc._mergeable_ranks, source=f"tiktoken:{name}", error=InteropError)


def ranks_of(tok) -> dict[bytes, int]:
    """Token bytes -> id of a BPETokenizer whose merges follow the rank rule exactly.

    Raises:
        InteropError: two ids with the same bytes, or a merge that the rank rule would
            not make (the tokenizer's merges differ from :func:`merges_from_ranks`).
    """
    vocab = tok.vocab
    ranks = ids_by_bytes(vocab, "a rank file holds one id per token")
    if tok.merges is None:
        return ranks
    made = {vocab[new]: (vocab[a], vocab[b]) for a, b, new in tok.merges}
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
    tiktoken = require("tiktoken", "writing a tokenizer for tiktoken (interop.to_tiktoken)")
    ranks = ranks_of(tok)
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
    ranks = ranks_of(tok)
    lines = [f"{base64.b64encode(b).decode('ascii')} {r}\n" for b, r in sorted(ranks.items(), key=lambda kv: kv[1])]
    write_text(path, "".join(lines))
    side = Path(os.fspath(path) + ".json")
    write_text(side, json.dumps(tiktoken_params(tok), ensure_ascii=False, indent=1) + "\n")
    return side
