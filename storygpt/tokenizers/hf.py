"""Any Hugging Face ``tokenizer.json`` (BPE, WordPiece, Unigram, ...) behind storygpt's interface.

:class:`HFTokenizer` runs the Hugging Face ``tokenizers`` library (an optional package)
and keeps the whole ``tokenizer.json`` in its storygpt file (``"kind": "hf"``), so a
checkpoint carries it and loads on a machine without the original file.  It is what
the SPEC ``hf:PATH`` builds.  (To turn a byte-level BPE ``tokenizer.json`` into
storygpt's own C++ BPE instead, see :func:`storygpt.tokenizers.interop.from_hf`.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from . import io as _io
from .base import EOT, Tokenizer, as_int, check_ids, encode_split, require

#: Names tried, in order, for the padding token.
PAD_NAMES = ("<pad>", "[PAD]", "<|pad|>")


def _unk_token(model: dict) -> str | None:
    """The unknown token of a tokenizer.json model (BPE/WordPiece/WordLevel ``unk_token``,
    Unigram ``unk_id`` into its vocabulary), or None."""
    if model.get("type") == "Unigram":
        i = model.get("unk_id")
        return model["vocab"][i][0] if isinstance(i, int) else None
    return model.get("unk_token") or None


def _check_unk(model: dict, hf) -> None:
    """ValueError when the model names an unknown token that its vocabulary lacks (the
    library then fails on the first word it cannot tokenize, at encode time)."""
    if model.get("type") == "Unigram":
        i = model.get("unk_id")
        n = len(model.get("vocab") or [])
        if i is not None and not (isinstance(i, int) and 0 <= i < n):
            raise ValueError(f"model.unk_id {i!r} is not an index into the {n:,}-entry vocabulary")
        return
    unk = model.get("unk_token")
    if unk and hf.token_to_id(unk) is None:
        raise ValueError(
            f"model.unk_token {unk!r} is not in the vocabulary ({model.get('type')} model): "
            "text with an unknown character could not be encoded"
        )


class HFFileError(ValueError):
    """A file that is not a Hugging Face ``tokenizer.json``; the message names the file.
    (:class:`storygpt.tokenizers.interop.InteropError` is a subclass.)"""


def read_hf_json(path: str | os.PathLike) -> dict:
    """Read a ``tokenizer.json`` file as a dict (the one reader: :class:`HFTokenizer` and
    :func:`storygpt.tokenizers.interop.from_hf` use it).

    Raises:
        FileNotFoundError: no such file (named); IsADirectoryError: a folder (named).
        HFFileError: not valid UTF-8 JSON, or not a JSON object with a ``model`` (file named).
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
        raise HFFileError(f"{path}: corrupt tokenizer.json (not valid JSON): {e}") from None
    if not isinstance(d, dict) or "model" not in d:
        raise HFFileError(f"{path}: not a Hugging Face tokenizer.json (no 'model' object)")
    return d


class HFTokenizer(Tokenizer):
    """A Hugging Face ``tokenizers.Tokenizer`` as a storygpt tokenizer.

    Encoding never adds the post-processor's tokens (``add_special_tokens=False``: no
    ``[CLS]``/``[SEP]``); special tokens in text follow tiktoken's rules (the
    tokenizer.json's added tokens marked ``special`` are storygpt's special tokens).
    A tokenizer.json without ``<|endoftext|>`` gets it as one more added special token
    at the next free id (data.py puts it between documents).  Decoding is the
    library's ``decode(ids, skip_special_tokens=False)``: lossy when the tokenizer
    normalizes (lower-cases, strips accents) or maps text to its unknown token, which
    bits.py reports as round-trip failures and unknown share.

    Args:
        tokenizer_json: the ``tokenizer.json`` content as a dict.
        source: a name for error messages at encode time (the file path).

    Raises:
        ImportError: the ``tokenizers`` package is missing.
        ValueError: a tokenizer.json the library refuses (its message); an unknown
            token (``model.unk_token``/``unk_id``) missing from the vocabulary, or a
            probe text the library cannot encode (it would fail on real text later).
    """

    kind = "hf"

    #: Encoded once at load: letters, digits, punctuation, a character no vocabulary
    #: holds (U+10FFFD, private use) and an emoji, so a tokenizer that cannot encode
    #: unknown text fails at load, not in the middle of a corpus.
    PROBE_TEXT = "Probe 123, text.\n\U0010fffd \u2603\U0001f600 end"

    def __init__(self, tokenizer_json: dict, source: str = "tokenizer.json"):
        tokenizers = require("tokenizers", "an hf: tokenizer")
        try:
            hf = tokenizers.Tokenizer.from_str(json.dumps(tokenizer_json))
        except Exception as e:  # the library raises plain Exception
            raise ValueError(f"the tokenizers library cannot read this tokenizer.json: {e}") from None
        if hf.token_to_id(EOT) is None:
            hf.add_special_tokens([tokenizers.AddedToken(EOT, special=True, normalized=False)])
            tokenizer_json = json.loads(hf.to_str())
        hf.encode_special_tokens = True  # storygpt splits out the allowed specials itself
        self._hf = hf
        self._json = tokenizer_json
        self._source = source
        _check_unk(tokenizer_json.get("model") or {}, hf)
        try:
            hf.encode(self.PROBE_TEXT, add_special_tokens=False)
        except Exception as e:  # the library raises plain Exception
            raise ValueError(f"the tokenizers library cannot encode a probe text {self.PROBE_TEXT!r}: {e}") from None
        self._special = {
            t["content"]: t["id"] for t in tokenizer_json.get("added_tokens") or [] if t.get("special", False)
        }
        self._special[EOT] = hf.token_to_id(EOT)
        unk = _unk_token(tokenizer_json.get("model") or {})
        self._unk = hf.token_to_id(unk) if unk is not None else None
        self._pad = next((hf.token_to_id(p) for p in PAD_NAMES if hf.token_to_id(p) is not None), None)
        self._vocab_size = hf.get_vocab_size(with_added_tokens=True)
        too_big = [i for i in self._special.values() if i >= self._vocab_size]
        if too_big:
            raise ValueError(f"special token id {too_big[0]} is not below the vocabulary size {self._vocab_size}")

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> HFTokenizer:
        """Read a ``tokenizer.json`` file.

        Raises:
            FileNotFoundError, IsADirectoryError, HFFileError (corrupt JSON), ValueError
            (refused by the library, or an unknown token missing from the vocabulary);
            every message names the file.
        """
        d = read_hf_json(path)
        try:
            return cls(d, source=os.fspath(path))
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None

    @classmethod
    def from_spec(cls, arg, train_docs, options) -> HFTokenizer:
        """``hf:PATH`` (see :func:`storygpt.tokenizers.registry.register_kind`)."""
        return cls.from_file(arg)

    @property
    def model_type(self) -> str:
        """The tokenizer.json model type (``"BPE"``, ``"WordPiece"``, ``"Unigram"``, ...)."""
        return str((self._json.get("model") or {}).get("type"))

    def id_to_token(self, token_id: int) -> str:
        t = as_int(token_id, "token id", ValueError)
        s = self._hf.id_to_token(t) if 0 <= t < self._vocab_size else None
        if s is None:
            raise ValueError(f"unknown token id {t} (vocab_size {self._vocab_size})")
        return s

    # ---------------------------------------------------------------------- encode
    def encode(self, text: str, allowed_special=frozenset(), disallowed_special="all") -> list[int]:
        """Encode with the library (no post-processor tokens); specials as :meth:`Tokenizer.encode`."""
        return self.encode_batch([text], 0, allowed_special, disallowed_special)[0]

    def encode_batch(
        self, texts: Sequence[str], num_threads: int = 0, allowed_special=frozenset(), disallowed_special="all"
    ) -> list[list[int]]:
        """Encode several texts (the library's own parallel batch; ``num_threads`` is not used).

        Raises:
            ValueError: a disallowed special token in a text (named); the library fails
                to encode (its message, with the tokenizer's source named).
        """

        def plain_ids(plain: list[str]) -> list[list[int]]:
            try:
                return [e.ids for e in self._hf.encode_batch(plain, add_special_tokens=False)]
            except Exception as e:  # the library raises plain Exception
                raise ValueError(f"{self._source}: the tokenizers library cannot encode the text: {e}") from None

        return encode_split(texts, self._special, allowed_special, disallowed_special, plain_ids)

    def _safe_cut_for(self, specials):
        """Never cut: normalizers and pre-tokenizers of a tokenizer.json may look at the
        start of the text (Metaspace), so :meth:`encode_iterable` holds the whole text."""
        return lambda text: 0

    # ---------------------------------------------------------------------- decode
    def decode(self, ids: Iterable[int]) -> str:
        """The library's decode, special tokens kept.

        Raises:
            ValueError: an unknown id (named).
        """
        return self._hf.decode(check_ids(ids, self._vocab_size), skip_special_tokens=False)

    # --------------------------------------------------------------------- storage
    def to_dict(self) -> dict:
        return {
            "format": _io.FORMAT_NAME,
            "version": _io.FORMAT_VERSION,
            "kind": "hf",
            "model_type": self.model_type,
            "tokenizer_json": self._json,
        }

    @classmethod
    def from_dict(cls, d: dict, **kwargs) -> HFTokenizer:
        """Rebuild from :meth:`to_dict` output (extra keyword arguments are ignored).

        Raises:
            TokenizerFileError: wrong header; ValueError: a tokenizer.json the library refuses.
        """
        kind = _io.check_header(d)
        if kind != "hf":
            raise _io.TokenizerFileError(f"expected an 'hf' tokenizer, got {kind!r}")
        if not isinstance(d.get("tokenizer_json"), dict):
            raise ValueError("tokenizer_json must be the tokenizer.json object")
        return cls(d["tokenizer_json"], source=f"hf tokenizer ({(d['tokenizer_json'].get('model') or {}).get('type')})")

    def __repr__(self) -> str:
        return f"HFTokenizer(model={self.model_type}, vocab_size={self.vocab_size})"
