"""Tokenizer SPECs: the one string every tool takes to name a tokenizer.

A SPEC is ``KIND`` or ``KIND:ARG``:

========================  ==========================================================
``bpe[:VOCAB]``           storygpt's byte-level BPE, trained on the corpus (default 8192)
``word[:VOCAB]``          storygpt's word-level tokenizer, trained on the corpus (default 10000)
``byte``                  the 256 bytes, no merges
``tiktoken:NAME``         an OpenAI encoding (``gpt2``, ``cl100k_base``, ``o200k_base``, ...)
``hf:PATH``               a Hugging Face ``tokenizer.json``
``file:PATH``             a storygpt tokenizer file (``tokenizer-*.json``)
========================  ==========================================================

:func:`parse_spec` checks the syntax only (it opens no file); :attr:`TokenizerSpec.slug`
names the token files and run folders that belong to a SPEC (``train-<slug>.bin``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

# Default vocabulary sizes of the kinds that are trained on the corpus.
DEFAULT_VOCAB = {"bpe": 8192, "word": 10000}
# Kinds whose ARG is a vocabulary size, a name, a path; and the kind that takes no ARG.
TRAINED_KINDS = ("bpe", "word")
NAMED_KINDS = ("tiktoken",)
PATH_KINDS = ("hf", "file")
PLAIN_KINDS = ("byte",)
KINDS = TRAINED_KINDS + PLAIN_KINDS + NAMED_KINDS + PATH_KINDS

_NAME_RX = re.compile(r"^[A-Za-z0-9_.\-]+$")


class SpecError(ValueError):
    """A tokenizer SPEC that cannot be parsed; the message names the SPEC."""


@dataclass(frozen=True)
class TokenizerSpec:
    """A parsed tokenizer SPEC.

    Attributes:
        kind: one of :data:`KINDS`.
        arg: the vocabulary size (``bpe``, ``word``; always filled in), the encoding name
            (``tiktoken``), the file path (``hf``, ``file``), or ``None`` (``byte``).
    """

    kind: str
    arg: str | None = None

    def __str__(self) -> str:
        return self.kind if self.arg is None else f"{self.kind}:{self.arg}"

    @property
    def vocab_size(self) -> int | None:
        """The vocabulary size asked for (``bpe``/``word``), else ``None``."""
        return int(self.arg) if self.kind in TRAINED_KINDS else None

    @property
    def is_trained(self) -> bool:
        """True when the tokenizer is learned from the corpus by data.py."""
        return self.kind in TRAINED_KINDS

    @property
    def path(self) -> Path | None:
        """The file of an ``hf:``/``file:`` SPEC, else ``None``."""
        return Path(self.arg) if self.kind in PATH_KINDS else None

    @property
    def slug(self) -> str:
        """A file-name-safe name: ``bpe-8192``, ``word-10000``, ``byte``, ``tiktoken-gpt2``,
        ``hf-STEM-HASH8`` (HASH8: the first 8 hex digits of the file's sha256, so that two
        different ``tokenizer.json`` files never share token files).

        Raises:
            FileNotFoundError: an ``hf:``/``file:`` SPEC whose file does not exist.
        """
        if self.kind in TRAINED_KINDS or self.kind in NAMED_KINDS:
            return f"{self.kind}-{self.arg}"
        if self.kind in PLAIN_KINDS:
            return self.kind
        path = Path(self.arg)
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:8]
        except FileNotFoundError:
            raise FileNotFoundError(f"tokenizer SPEC {self}: no such file: {path}") from None
        except IsADirectoryError:
            raise SpecError(f"tokenizer SPEC {self}: {path} is a folder, not a file") from None
        stem = re.sub(r"[^A-Za-z0-9_.\-]+", "_", path.stem) or "tokenizer"
        return f"{self.kind}-{stem}-{digest}"


def parse_spec(text: str) -> TokenizerSpec:
    """Parse a SPEC such as ``bpe:512``, ``word``, ``byte``, ``tiktoken:gpt2``, ``hf:PATH``.

    Vocabulary sizes are filled in with their defaults (``bpe`` -> ``bpe:8192``), so two
    SPECs that mean the same tokenizer compare equal.

    Raises:
        SpecError: an unknown kind, a missing or malformed ARG, an ARG given to ``byte``;
            the message quotes the SPEC and lists the kinds.
    """
    if not isinstance(text, str):
        raise SpecError(f"tokenizer SPEC must be a string, got {type(text).__name__}")
    kind, sep, arg = text.strip().partition(":")
    kind = kind.lower()
    usage = "expected one of bpe[:VOCAB], word[:VOCAB], byte, tiktoken:NAME, hf:PATH, file:PATH"
    if kind not in KINDS:
        raise SpecError(f"unknown tokenizer SPEC {text!r}: {usage}")
    if kind in TRAINED_KINDS:
        if not sep:
            return TokenizerSpec(kind, str(DEFAULT_VOCAB[kind]))
        if not re.fullmatch(r"[0-9]+", arg):
            raise SpecError(f"tokenizer SPEC {text!r}: VOCAB must be a positive whole number, got {arg!r}")
        return TokenizerSpec(kind, str(int(arg)))
    if kind in PLAIN_KINDS:
        if sep:
            raise SpecError(f"tokenizer SPEC {text!r}: {kind} takes no argument")
        return TokenizerSpec(kind)
    if not arg:
        what = "NAME" if kind in NAMED_KINDS else "PATH"
        raise SpecError(f"tokenizer SPEC {text!r}: {kind} needs a {what} ({kind}:{what})")
    if kind in NAMED_KINDS and not _NAME_RX.match(arg):
        raise SpecError(f"tokenizer SPEC {text!r}: {arg!r} is not an encoding name")
    return TokenizerSpec(kind, arg)
