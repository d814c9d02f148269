"""GPT-2's files: the reversible byte <-> printable-character table, and ``encoder.json`` + ``vocab.bpe``.

The table (Radford et al. 2019, GPT-2's ``encoder.py``) is also how Hugging Face's
byte-level BPE spells tokens in ``tokenizer.json`` (:mod:`~storygpt.tokenizers.interop_hf`).
"""

from __future__ import annotations

import json
import os

from .interop_base import BPEParts


def gpt2_bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible table byte -> printable character used by ``encoder.json``/``vocab.bpe``.

    Bytes that are printable Latin-1 characters (``!``..``~``, ``¡``..``¬``,
    ``®``..``ÿ``) map to themselves; the other 68 bytes map, in increasing
    order, to code points 256, 257, ... (Radford et al. 2019, GPT-2's encoder.py).
    """
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table = {b: chr(b) for b in keep}
    n = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + n)
            n += 1
    return dict(sorted(table.items()))


#: the inverse of :func:`gpt2_bytes_to_unicode`, built once (a vocabulary has tens of thousands of tokens)
_GPT2_UNICODE_TO_BYTE = {c: b for b, c in gpt2_bytes_to_unicode().items()}


def unicode_to_bytes(token: str, where: str) -> bytes:
    """The bytes of a token spelled with :func:`gpt2_bytes_to_unicode`.

    Raises:
        ValueError: a character outside the table (``where`` and the token named).
    """
    try:
        return bytes(_GPT2_UNICODE_TO_BYTE[c] for c in token)
    except KeyError as e:
        raise ValueError(f"{where}: token {token!r} has a character outside GPT-2's byte table") from e


def bytes_to_unicode(b: bytes, table: dict[int, str]) -> str:
    """``b`` spelled with ``table`` (:func:`gpt2_bytes_to_unicode`)."""
    return "".join(table[x] for x in b)


def read_gpt2_files(encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike, pattern: str = "gpt2") -> BPEParts:
    """GPT-2's original ``encoder.json`` (token -> id) and ``vocab.bpe`` (merges), from local paths
    (``interop.from_gpt2_files`` makes them a ``BPETokenizer``).

    Both files write bytes through GPT-2's reversible byte <-> printable unicode table
    (:func:`gpt2_bytes_to_unicode`); tokens are mapped back to raw
    bytes here.  Ids come from ``encoder.json`` (so byte ids differ from byte values);
    merge ranks are the line order of ``vocab.bpe``; tokens of ``encoder.json`` that look
    like ``<|...|>`` (``<|endoftext|>``) become special tokens with their ids (any other
    entry no merge makes: an added token, see :meth:`BPETokenizer.from_vocab`).

    Raises:
        FileNotFoundError: a missing file (named).
        ValueError: malformed content (file named); two lines of ``vocab.bpe`` that make the
            same token (both line numbers named).
    """
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
    names: dict[int, str] = {}
    for token, i in encoder.items():
        if int(i) in names:
            raise ValueError(f"{encoder_json}: tokens {names[int(i)]!r} and {token!r} both have id {i}")
        names[int(i)] = token
        if token.startswith("<|") and token.endswith("|>"):
            specials[token] = int(i)
        else:
            vocab[int(i)] = unicode_to_bytes(token, str(encoder_json))
    merges = []
    made_at: dict[bytes, int] = {}  # token bytes -> the line of the merge that makes them
    with open(vocab_bpe, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#version"):
                continue
            parts = line.split(" ")
            if len(parts) != 2:
                raise ValueError(f"{vocab_bpe}:{n}: expected two tokens separated by a space, got {line!r}")
            a, b = (unicode_to_bytes(x, str(vocab_bpe)) for x in parts)
            if a + b in made_at:
                raise ValueError(
                    f"{vocab_bpe}:{n}: merge {line!r} makes {a + b!r}, which line {made_at[a + b]} already makes: "
                    "each token must be made by one merge"
                )
            made_at[a + b] = n
            merges.append((a, b))
    return BPEParts(pattern, specials, vocab=vocab, merges=merges, source=os.fspath(vocab_bpe))
