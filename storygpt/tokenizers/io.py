"""Tokenizer files: the JSON format (header, token bytes, readable dump, canonical JSON).

This module imports no tokenizer class: loading a file as the right class is the registry's
(:func:`storygpt.tokenizers.registry.load`).  Every tokenizer is one UTF-8 JSON file
``{"format": "storygpt-tokenizer", "version": 1, "kind": ..., ...}``.  Token bytes are a plain
JSON string when readable UTF-8, else ``{"hex": "..."}`` (:func:`token_to_json`,
:func:`token_from_json`): lossless for every byte string.

The format, the rule for readable tokens and the fingerprint: docs/tokenizers.md.
"""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path
from typing import Any

#: The value of the ``"format"`` key of every tokenizer file.
FORMAT_NAME = "storygpt-tokenizer"
#: The file format version this code writes and the only one it reads.
FORMAT_VERSION = 1

_PLAIN_CONTROL = {"\t", "\n", "\r"}


def _is_plain_text(s: str) -> bool:
    for ch in s:
        if ch in _PLAIN_CONTROL:
            continue
        if unicodedata.category(ch)[0] == "C":  # Cc, Cf, Cs, Co, Cn
            return False
    return True


def token_to_json(b: bytes) -> str | dict[str, str]:
    """Encode token bytes for a tokenizer file: a string, or ``{"hex": ...}``."""
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return {"hex": b.hex()}
    if _is_plain_text(s):
        return s
    return {"hex": b.hex()}


def token_from_json(v: Any) -> bytes:
    """Inverse of :func:`token_to_json`.

    Raises:
        ValueError: ``v`` is neither a string nor ``{"hex": <hex string>}``.
    """
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, dict) and set(v) == {"hex"} and isinstance(v["hex"], str):
        try:
            return bytes.fromhex(v["hex"])
        except ValueError:
            raise ValueError(f"bad hex token {v!r}") from None
    raise ValueError(f"bad token entry {v!r}: expected a string or {{'hex': '...'}}")


def canonical_json(d: dict) -> bytes:
    """The canonical serialisation used by fingerprints (sorted keys, no spaces, UTF-8)."""
    return json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def dumps_readable(d: dict) -> str:
    """``d`` as JSON with one top-level key per line and one list item per line (a final new line).

    Short lists (merges, ``[id, token]`` pairs) stay on one line each, so that tokenizer files are
    readable and diff well.
    """
    lines = ["{"]
    keys = list(d)
    for k_i, k in enumerate(keys):
        v = d[k]
        sep = "," if k_i < len(keys) - 1 else ""
        key = json.dumps(k, ensure_ascii=False)
        if isinstance(v, list) and v:
            lines.append(f"  {key}: [")
            for i, item in enumerate(v):
                comma = "," if i < len(v) - 1 else ""
                lines.append("    " + json.dumps(item, ensure_ascii=False) + comma)
            lines.append("  ]" + sep)
        elif isinstance(v, dict) and v:
            lines.append(f"  {key}: {{")
            items = list(v.items())
            for i, (kk, vv) in enumerate(items):
                comma = "," if i < len(items) - 1 else ""
                lines.append(
                    "    " + json.dumps(kk, ensure_ascii=False) + ": " + json.dumps(vv, ensure_ascii=False) + comma
                )
            lines.append("  }" + sep)
        else:
            lines.append(f"  {key}: " + json.dumps(v, ensure_ascii=False) + sep)
    lines.append("}")
    return "\n".join(lines) + "\n"


class TokenizerFileError(ValueError):
    """A tokenizer file or dict is malformed (the message names the file when known)."""


def check_header(d: Any, source: str = "tokenizer dict") -> str:
    """Check ``format`` and ``version`` of a tokenizer dict; return its ``kind`` (a str; whether it is
    a known kind is the registry's question, :func:`storygpt.tokenizers.registry.from_dict`).

    Raises:
        TokenizerFileError: not a dict, wrong format name, unknown version.
    """
    if not isinstance(d, dict):
        raise TokenizerFileError(f"{source}: expected a JSON object, got {type(d).__name__}")
    if d.get("format") != FORMAT_NAME:
        raise TokenizerFileError(
            f"{source}: not a storygpt tokenizer (format={d.get('format')!r}, expected {FORMAT_NAME!r})"
        )
    version = d.get("version")
    if version != FORMAT_VERSION:
        raise TokenizerFileError(
            f"{source}: unsupported tokenizer file version {version!r} (this storygpt reads version {FORMAT_VERSION})"
        )
    kind = d.get("kind")
    if not isinstance(kind, str):
        raise TokenizerFileError(f"{source}: the tokenizer kind must be a string, got {kind!r}")
    return kind


def call_from_dict(cls, d: dict, source: str, **kwargs):
    """``cls.from_dict(d, **kwargs)``, its content errors as TokenizerFileError naming ``source``."""
    try:
        return cls.from_dict(d, **kwargs)
    except TokenizerFileError:
        raise
    except KeyError as e:
        raise TokenizerFileError(f"{source}: malformed {d.get('kind')} tokenizer: no {e} entry") from e
    except (TypeError, ValueError, IndexError, AttributeError) as e:
        raise TokenizerFileError(f"{source}: malformed {d.get('kind')} tokenizer: {e}") from e


def read_json(path: str | os.PathLike) -> dict:
    """Read a tokenizer JSON file.

    Raises:
        FileNotFoundError: no such file (the message names it).
        TokenizerFileError: not valid UTF-8 JSON (the message names the file).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"tokenizer file not found: {path}") from None
    except IsADirectoryError:
        raise IsADirectoryError(f"{path}: is a folder, not a tokenizer file") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TokenizerFileError(f"{path}: corrupt tokenizer file (not valid JSON): {e}") from e
