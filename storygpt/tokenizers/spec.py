"""Tokenizer SPECs: the one string every tool takes to name a tokenizer.

A SPEC is ``KIND`` or ``KIND:ARG`` with KIND a kind of :mod:`storygpt.tokenizers.registry`
(``bpe[:VOCAB]``, ``byte``, ``tiktoken:NAME``, ``hf:PATH``, ...).  :func:`parse_spec` checks the
syntax (no file opened); :attr:`TokenizerSpec.slug` names its token files and run folders;
:func:`build_tokenizer` calls the kind's builder; :func:`check_vocab_size` is the one size check.
The kinds: docs/tokenizers.md.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from . import interop
from .bpe_vocab import MAX_VOCAB_SIZE
from .registry import BuildOptions, SpecError, kinds

__all__ = ["BuildOptions", "SpecError", "TokenizerSpec", "build_tokenizer", "check_vocab_size", "parse_spec"]


_NAME_RX = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class TokenizerSpec:
    """A parsed tokenizer SPEC.

    Attributes:
        kind: a registered kind (:func:`storygpt.tokenizers.registry.kinds`).
        arg: the vocabulary size as an ``int`` (``bpe``, ``word`` and other trained kinds;
            always filled in), or a tuple of ints whose first is the vocabulary size
            (``superbpe:V:T``, from the kind's ``parse_arg``), the encoding name (``tiktoken``), the file path (``hf``,
            ``file``), or ``None`` (``byte``).
    """

    kind: str
    arg: int | tuple[int, ...] | str | None = None

    def __str__(self) -> str:
        return self.kind if self.arg is None else f"{self.kind}:{self._arg_text(':')}"

    def _arg_text(self, sep: str) -> str:
        return sep.join(map(str, self.arg)) if isinstance(self.arg, tuple) else str(self.arg)

    @property
    def arg_type(self) -> str:
        """``"vocab"``, ``"name"``, ``"path"`` or ``"none"`` (see :func:`register_kind`)."""
        return kinds()[self.kind].arg

    @property
    def vocab_size(self) -> int | None:
        """The vocabulary size asked for (``bpe``/``word`` and other trained kinds), else ``None``."""
        if self.arg_type != "vocab":
            return None
        return self.arg[0] if isinstance(self.arg, tuple) else self.arg

    def with_vocab_size(self, vocab_size: int, flag: str = "--vocab-size") -> TokenizerSpec:
        """This SPEC with another vocabulary size (``flag``, named in the errors; a tuple ARG's other parts back
        to their defaults, as ``superbpe:V``).

        Raises:
            SpecError: a kind that takes no vocabulary size; a size that is not a positive
                integer, too large, or refused by the kind's ``check_arg`` (named).
        """
        if not self.is_trained:
            raise SpecError(f"{flag} applies to bpe and word and the other kinds trained here, not to {self}")
        vocab_size = _check_min_vocab(self.kind, check_vocab_size(vocab_size, flag), flag)
        arg, check = vocab_size, kinds()[self.kind].check_arg
        if check is not None:
            try:
                arg = check(arg)
            except ValueError as e:
                raise SpecError(f"{flag} {vocab_size} for {self.kind}: {e}") from None
        return replace(self, arg=arg)

    @property
    def is_trained(self) -> bool:
        """True when the tokenizer is learned from the corpus by data.py."""
        return self.arg_type == "vocab"

    @property
    def path(self) -> Path | None:
        """The file of an ``hf:``/``file:`` SPEC, else ``None``."""
        return Path(self.arg) if self.arg_type == "path" else None

    @property
    def slug(self) -> str:
        """A file-name-safe name: ``bpe-8192``, ``word-10000``, ``byte``, ``tiktoken-gpt2``,
        ``hf-STEM-HASH8`` (HASH8: the first 8 hex digits of the file's sha256, so that two
        different ``tokenizer.json`` files never share token files).

        Raises:
            FileNotFoundError: an ``hf:``/``file:`` SPEC whose file does not exist.
        """
        if self.arg_type in ("vocab", "name"):
            return f"{self.kind}-{self._arg_text('-')}"
        if self.arg_type == "none":
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
            the message quotes the SPEC and lists the kinds.  ``tiktoken:NAME`` with an
            encoding tiktoken does not know (when tiktoken is installed): the message
            lists the known ones.
    """
    if not isinstance(text, str):
        raise SpecError(f"tokenizer SPEC must be a string, got {type(text).__name__}")
    kind, sep, arg = text.strip().partition(":")
    kind = kind.lower()
    known = kinds()
    if kind not in known:
        usage = ", ".join(k.usage for k in known.values())
        raise SpecError(f"unknown tokenizer SPEC {text!r}: expected one of {usage}")
    info = known[kind]
    if info.arg == "vocab":
        if not sep:
            return TokenizerSpec(kind, info.default_vocab)
        if info.parse_arg is not None:
            return TokenizerSpec(kind, _parsed_arg(text, info, arg))
        if not re.fullmatch(r"[0-9]+", arg):
            raise SpecError(f"tokenizer SPEC {text!r}: VOCAB must be a positive whole number, got {arg!r}")
        what = f"tokenizer SPEC {text!r}: VOCAB"
        return TokenizerSpec(kind, _check_min_vocab(kind, check_vocab_size(int(arg), what), what))
    if info.arg == "none":
        if sep:
            raise SpecError(f"tokenizer SPEC {text!r}: {kind} takes no argument")
        return TokenizerSpec(kind)
    if not arg:
        what = "NAME" if info.arg == "name" else "PATH"
        raise SpecError(f"tokenizer SPEC {text!r}: {kind} needs a {what} ({kind}:{what})")
    if info.arg == "name" and not _NAME_RX.match(arg):
        raise SpecError(f"tokenizer SPEC {text!r}: {arg!r} is not an encoding name")
    if kind == "tiktoken":
        _check_tiktoken_arg(text, arg)
    return TokenizerSpec(kind, arg)


def _parsed_arg(text: str, info, arg: str):
    """A kind's own ARG parser (``register_kind(parse_arg=...)``), its ValueError as a SpecError quoting ``text``."""
    if info.parse_arg is None:
        return int(arg)
    try:
        value = info.parse_arg(arg)
    except ValueError as e:
        raise SpecError(f"tokenizer SPEC {text!r}: {e}") from None
    check_vocab_size(value[0] if isinstance(value, tuple) else value, f"tokenizer SPEC {text!r}: VOCAB")
    return value


def check_vocab_size(vocab_size: int, what: str) -> int:
    """The one check of a requested vocabulary size on its way from a tool to a trainer:
    a positive ``int`` no larger than :data:`~storygpt.tokenizers.bpe.MAX_VOCAB_SIZE` (so a
    tool refuses it before writing anything; each trainer still checks its own lower bound).

    Raises:
        SpecError: not a positive integer, or above ``MAX_VOCAB_SIZE`` (``what`` names it).
    """
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
        raise SpecError(f"{what} must be a positive whole number, got {vocab_size!r}")
    if vocab_size > MAX_VOCAB_SIZE:
        raise SpecError(f"{what}={vocab_size:,} is too large: at most {MAX_VOCAB_SIZE:,} token ids")
    return vocab_size


def _check_min_vocab(kind: str, vocab_size: int, what: str) -> int:
    """The trainer's lower bound of a built-in trained kind, checked when the SPEC is read (so that data.py
    refuses ``bpe:100`` before it writes anything); the bound counts the kind's special tokens.

    Raises:
        SpecError: ``vocab_size`` below the bound (``what`` names it); other kinds are left to their trainer.
    """
    from .hf_trained import MIN_VOCAB as HF_MIN
    from .hf_trained import SPECIALS as HF_SPECIALS
    from .spm import MIN_VOCAB as SPM_MIN
    from .superbpe import SPEC_SPECIALS  # <pad> and <|endoftext|>: the specials of every BPE a SPEC builds
    from .word import SPECIALS as WORD_SPECIALS

    n_hf = len(HF_SPECIALS)
    bounds = {
        "bpe": (256 + SPEC_SPECIALS, f"the 256 byte tokens and {SPEC_SPECIALS} special tokens"),
        "word": (len(WORD_SPECIALS), f"the {len(WORD_SPECIALS)} special tokens"),
        "unigram": (HF_MIN["unigram"], f"{n_hf} special tokens and the 256 byte characters"),
        "wordpiece": (HF_MIN["wordpiece"], f"{n_hf} special tokens and the 256 byte characters, twice"),
        "spm-unigram": (SPM_MIN, "3 special tokens, 256 byte pieces and one more"),
        "spm-bpe": (SPM_MIN, "3 special tokens, 256 byte pieces and one more"),
    }
    if kind in bounds and vocab_size < bounds[kind][0]:
        low, holds = bounds[kind]
        raise SpecError(f"{what}={vocab_size:,} is too small: {kind} needs {holds} (at least {low:,})")
    return vocab_size


def _check_tiktoken_arg(text: str, arg: str) -> None:
    """SpecError when tiktoken is installed and ``arg`` is neither a rank file nor an
    encoding it knows (:func:`storygpt.tokenizers.interop.check_tiktoken_name`); without
    tiktoken the build reports the missing package instead."""
    if interop.is_rank_file_path(arg):
        return
    try:
        interop.check_tiktoken_name(arg)
    except ImportError:
        return
    except interop.InteropError as e:
        raise SpecError(f"tokenizer SPEC {text!r}: {e}") from None


def build_tokenizer(spec, train_docs: Iterable[str] = (), options: BuildOptions | None = None):
    """The tokenizer a SPEC names: trained on ``train_docs`` (``bpe``, ``word``), made
    (``byte``), or read (``tiktoken:NAME``, ``hf:PATH``, ``file:PATH``), by the builder the
    registry holds for its kind (:mod:`storygpt.tokenizers.registry`).

    Args:
        spec: a :class:`TokenizerSpec` or SPEC string.
        train_docs: the training documents, read as often as needed (a list, or a
            ``DocumentFile``); only the trained kinds use them.
        options: training options (default :class:`BuildOptions`).

    Returns:
        A :class:`~storygpt.tokenizers.Tokenizer` with an ``<|endoftext|>`` special token.

    Raises:
        SpecError: a bad SPEC; FileNotFoundError: a missing file; ImportError: an optional
        package (tiktoken, tokenizers) that is not installed; ValueError: bad content.
    """
    spec = parse_spec(spec) if isinstance(spec, str) else spec
    tok = kinds()[spec.kind].build(spec.arg, train_docs, options or BuildOptions())
    if tok.eot_id is None:
        raise ValueError(f"tokenizer SPEC {spec}: the tokenizer has no <|endoftext|> special token")
    return tok
