"""Tokenizer SPECs: the one string every tool takes to name a tokenizer.

A SPEC is ``KIND`` or ``KIND:ARG``:

========================  ==========================================================
``bpe[:VOCAB]``           storygpt's byte-level BPE, trained on the corpus (default 8192)
``word[:VOCAB]``          storygpt's word-level tokenizer, trained on the corpus (default 10000)
``byte``                  the 256 bytes, no merges
``tiktoken:NAME``         an OpenAI encoding (``gpt2``, ``cl100k_base``, ``o200k_base``, ...)
``hf:PATH``               a Hugging Face ``tokenizer.json``
``file:PATH``             a storygpt tokenizer file (``tokenizer-*.json``)
``superbpe[:V[:T]]``      SuperBPE (superbpe.py): BPE up to T, then tokens across words up to V
========================  ==========================================================

:func:`parse_spec` checks the syntax (it opens no file; a ``tiktoken`` NAME must be an
encoding tiktoken knows, when tiktoken is installed); :attr:`TokenizerSpec.slug`
names the token files and run folders that belong to a SPEC (``train-<slug>.bin``);
:func:`build_tokenizer` makes the tokenizer a SPEC names (training it on the corpus
for ``bpe``/``word``).

More kinds plug in with :func:`register_kind` (one class, one registration; see
docs/tokenizers.md, "Adding a kind").  Command-line tools see kinds registered by the
modules named in the environment variable ``STORYGPT_TOKENIZER_PLUGINS``
(comma-separated module names, imported on first use).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Default vocabulary sizes of the kinds that are trained on the corpus.
DEFAULT_VOCAB = {"bpe": 8192, "word": 10000}
# Built-in kinds whose ARG is a vocabulary size, a name, a path; and the kind that takes no ARG.
TRAINED_KINDS = ("bpe", "word")
NAMED_KINDS = ("tiktoken",)
PATH_KINDS = ("hf", "file")
PLAIN_KINDS = ("byte",)
KINDS = TRAINED_KINDS + PLAIN_KINDS + NAMED_KINDS + PATH_KINDS
#: What the ARG of a kind is: a vocabulary size, a name, a file path, or nothing.
ARG_TYPES = ("vocab", "name", "path", "none")
PLUGINS_ENV = "STORYGPT_TOKENIZER_PLUGINS"


@dataclass(frozen=True)
class BuildOptions:
    """How :func:`build_tokenizer` trains the kinds that learn from the corpus.

    Attributes:
        pattern: BPE pre-tokenization pattern (``simple``, ``gpt2``, ``gpt4``, ``o200k``).
        tie_break: BPE training tie-break (``smallest_ids`` or ``largest_bytes``).
        min_frequency: BPE training stops when the best pair occurs fewer times.
        num_threads: trainer threads (0: all cores).
        train_file: the training documents as a file (``train.txt``), which the BPE
            trainer reads itself for large corpora; ``None``: pass the text.
        progress: show progress bars.
    """

    pattern: str = "gpt4"
    tie_break: str = "smallest_ids"
    min_frequency: int = 1
    num_threads: int = 0
    train_file: str | None = None
    progress: bool = False


@dataclass(frozen=True)
class Kind:
    """A registered tokenizer kind (see :func:`register_kind`)."""

    name: str
    build: Callable  # (arg, train_docs, options) -> Tokenizer
    arg: str
    default_vocab: int | None = None


_KINDS: dict[str, Kind] = {}
_plugins_loaded = False


def register_kind(name: str, cls_or_factory, *, arg: str = "none", default_vocab: int | None = None) -> None:
    """Make ``name`` a tokenizer kind: ``--tokenizer name[:ARG]`` in every tool.

    Args:
        name: the kind (lower case letters, digits, ``_``; also the ``"kind"`` key of its
            tokenizer files when ``cls_or_factory`` is a class).
        cls_or_factory: a :class:`~storygpt.tokenizers.Tokenizer` subclass with a
            classmethod ``from_spec(arg, train_docs, options)`` (it is also registered
            for loading files and checkpoints whose ``"kind"`` is ``name``, through its
            ``from_dict``), or a function ``(arg, train_docs, options) -> Tokenizer``.
            ``arg`` is the SPEC's ARG (a str, or ``None``), ``train_docs`` the training
            documents (list of str), ``options`` a :class:`BuildOptions`.
        arg: what ARG is: ``"vocab"`` (a size; ``default_vocab`` when omitted),
            ``"name"``, ``"path"`` (a file; slugs carry its hash) or ``"none"``.

    Raises:
        ValueError: a bad name or ``arg``, a class without ``from_spec``, or a kind
            registered twice with a different builder.
    """
    from .base import Tokenizer
    from .io import register_file_kind

    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"tokenizer kind name {name!r} must be lower-case letters, digits and _")
    if arg not in ARG_TYPES:
        raise ValueError(f"arg must be one of {ARG_TYPES}, got {arg!r}")
    if arg == "vocab" and default_vocab is None:
        raise ValueError(f"kind {name!r}: arg='vocab' needs a default_vocab")
    if isinstance(cls_or_factory, type):
        if not issubclass(cls_or_factory, Tokenizer) or not hasattr(cls_or_factory, "from_spec"):
            raise ValueError(
                f"kind {name!r}: {cls_or_factory.__name__} must be a Tokenizer with a from_spec classmethod"
            )
        register_file_kind(name, cls_or_factory)
        build = cls_or_factory.from_spec
    elif callable(cls_or_factory):
        build = cls_or_factory
    else:
        raise ValueError(f"kind {name!r}: expected a Tokenizer class or a function, got {cls_or_factory!r}")
    old = _KINDS.get(name)
    if old is not None and old.build != build:
        raise ValueError(f"tokenizer kind {name!r} is already registered")
    _KINDS[name] = Kind(name, build, arg, default_vocab)


def _load_plugins() -> None:
    """Import the modules named by ``STORYGPT_TOKENIZER_PLUGINS`` once (they call register_kind)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise SpecError(f"{PLUGINS_ENV}: cannot import tokenizer plug-in module {module!r}: {e}") from None


def kinds() -> dict[str, Kind]:
    """Every registered kind (built-in ones first), plug-ins loaded."""
    _load_plugins()
    return dict(_KINDS)


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
    def arg_type(self) -> str:
        """``"vocab"``, ``"name"``, ``"path"`` or ``"none"`` (see :func:`register_kind`)."""
        return kinds()[self.kind].arg

    @property
    def vocab_size(self) -> int | None:
        """The vocabulary size asked for (``bpe``/``word`` and other trained kinds), else ``None``."""
        return int(self.arg.partition(":")[0]) if self.arg_type == "vocab" else None

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
            return f"{self.kind}-{self.arg.replace(':', '-')}"
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
        usage = "expected one of bpe[:VOCAB], word[:VOCAB], byte, tiktoken:NAME, hf:PATH, file:PATH"
        extra = [k for k in known if k not in KINDS]
        if extra:
            usage += " or a registered kind: " + ", ".join(sorted(extra))
        raise SpecError(f"unknown tokenizer SPEC {text!r}: {usage}")
    info = known[kind]
    if info.arg == "vocab":
        if not sep:
            return TokenizerSpec(kind, str(info.default_vocab))
        if kind == "superbpe":
            return _superbpe_spec(text, arg)
        if not re.fullmatch(r"[0-9]+", arg) or int(arg) == 0:
            raise SpecError(f"tokenizer SPEC {text!r}: VOCAB must be a positive whole number, got {arg!r}")
        return TokenizerSpec(kind, str(int(arg)))
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


def _check_tiktoken_arg(text: str, arg: str) -> None:
    """SpecError when tiktoken is installed and ``arg`` is neither a rank file nor an
    encoding it knows (:func:`storygpt.tokenizers.interop.check_tiktoken_name`); without
    tiktoken the build reports the missing package instead."""
    from . import interop

    if interop.is_rank_file_path(arg):
        return
    try:
        interop.check_tiktoken_name(arg)
    except ImportError:
        return
    except interop.InteropError as e:
        raise SpecError(f"tokenizer SPEC {text!r}: {e}") from None


def build_tokenizer(spec, train_docs: Sequence[str] = (), options: BuildOptions | None = None):
    """The tokenizer a SPEC names: trained on ``train_docs`` (``bpe``, ``word``), made
    (``byte``), or read (``tiktoken:NAME``, ``hf:PATH``, ``file:PATH``).

    Args:
        spec: a :class:`TokenizerSpec` or SPEC string.
        train_docs: the training documents (only the trained kinds use them).
        options: training options (default :class:`BuildOptions`).

    Returns:
        A :class:`~storygpt.tokenizers.Tokenizer` with an ``<|endoftext|>`` special token.

    Raises:
        SpecError: a bad SPEC; FileNotFoundError: a missing file; ImportError: an optional
        package (tiktoken, tokenizers) that is not installed; ValueError: bad content.
    """
    spec = parse_spec(spec) if isinstance(spec, str) else spec
    tok = kinds()[spec.kind].build(spec.arg, list(train_docs), options or BuildOptions())
    if tok.eot_id is None:
        raise ValueError(f"tokenizer SPEC {spec}: the tokenizer has no <|endoftext|> special token")
    return tok


# ----------------------------------------------------------------------------- built-in kinds
def _build_bpe(arg, docs, opt: BuildOptions):
    from .base import EOT
    from .bpe import BPETokenizer

    n_chars = sum(len(d) for d in docs)
    source = [opt.train_file] if opt.train_file is not None and n_chars > TRAIN_FROM_FILE_CHARS else EOT.join(docs)
    return BPETokenizer.train(
        source,
        int(arg),
        pattern=opt.pattern,
        special_tokens=("<pad>", EOT),
        min_frequency=opt.min_frequency,
        tie_break=opt.tie_break,
        num_threads=opt.num_threads,
    )


def _build_word(arg, docs, opt: BuildOptions):
    from .word import WordTokenizer

    return WordTokenizer.train(docs, int(arg), show_progress=opt.progress)


def _build_byte(arg, docs, opt: BuildOptions):
    from .bpe import ByteTokenizer

    return ByteTokenizer()


def _build_tiktoken(arg, docs, opt: BuildOptions):
    from .interop import from_tiktoken

    return from_tiktoken(arg)


def _build_hf(arg, docs, opt: BuildOptions):
    from .hf import HFTokenizer

    return HFTokenizer.from_file(arg)


def _build_file(arg, docs, opt: BuildOptions):
    from .io import load

    return load(arg)


#: Above this many characters the BPE trainer reads the training file itself (C++)
#: instead of receiving the text from Python.
TRAIN_FROM_FILE_CHARS = 64 << 20

register_kind("bpe", _build_bpe, arg="vocab", default_vocab=DEFAULT_VOCAB["bpe"])
register_kind("word", _build_word, arg="vocab", default_vocab=DEFAULT_VOCAB["word"])
register_kind("byte", _build_byte)
register_kind("tiktoken", _build_tiktoken, arg="name")
register_kind("hf", _build_hf, arg="path")
register_kind("file", _build_file, arg="path")


# ----------------------------------------------------------------------------- superbpe (issue 21)
# The one hook of SuperBPE into the kind tables: the kind with its file kind, and its
# ARG V[:T] (checked here, before data.py writes anything).
def _superbpe_spec(text: str, arg: str) -> TokenizerSpec:
    from .superbpe_reference import check_transition, default_transition

    m = re.fullmatch(r"([0-9]+)(?::([0-9]+))?", arg)
    if m is None or int(m[1]) == 0:
        raise SpecError(f"tokenizer SPEC {text!r}: expected superbpe:V or superbpe:V:T (whole numbers), got {arg!r}")
    vocab = int(m[1])
    t = default_transition(vocab, 2) if m[2] is None else int(m[2])
    try:
        check_transition(vocab, t, 2)  # the SPEC's tokenizers hold <pad> and <|endoftext|>
    except ValueError as e:
        raise SpecError(f"tokenizer SPEC {text!r}: {e}") from None
    return TokenizerSpec("superbpe", str(vocab) if m[2] is None else f"{vocab}:{t}")


def _register_superbpe() -> None:
    from .superbpe import SuperBPETokenizer

    register_kind("superbpe", SuperBPETokenizer, arg="vocab", default_vocab=DEFAULT_VOCAB["bpe"])


_register_superbpe()
