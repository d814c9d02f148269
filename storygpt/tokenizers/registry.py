"""The one table of tokenizer kinds: what a SPEC can name and what a file can hold.

Every kind is one :class:`Kind` row made by :func:`register_kind`: its builder
``(arg, train_docs, options) -> Tokenizer`` (``options``: :class:`BuildOptions`), its file
class (:func:`load`, :func:`from_dict` pick it by the file's ``"kind"``), its help line
(:func:`kind_help`), its SPEC usage, ``parse_arg``/``check_arg`` and its Hugging Face export.
spec.py, export/tokenizer.py and the tools' help texts read this table; there is no other list.

A new kind is one ``register_kind`` call (built-ins at the end of this module; plug-ins in
their own module, named in ``STORYGPT_TOKENIZER_PLUGINS``).  How to add one and what a
builder gets: docs/tokenizers.md and docs/design.md.
"""

from __future__ import annotations

import importlib
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import io as _io
from .base import EOT, Tokenizer
from .bpe import BPETokenizer, ByteTokenizer, train_bpe
from .bpe_reference import DEFAULT_PATTERN
from .hf import HFTokenizer
from .hf_trained import build_unigram, build_wordpiece
from .interop import from_tiktoken, to_hf_dict
from .interop_hf import hf_to_hf_dict, word_to_hf_dict
from .spm import SentencePieceTokenizer, build_spm_bpe, build_spm_unigram
from .superbpe import SuperBPETokenizer, check_spec_arg, parse_spec_arg
from .superbpe_train import train_superbpe
from .word import WordTokenizer
from .word_train import train_word_tokenizer

#: What the ARG of a kind is: a vocabulary size, a name, a file path, or nothing.
ARG_TYPES = ("vocab", "name", "path", "none")
PLUGINS_ENV = "STORYGPT_TOKENIZER_PLUGINS"
#: Above this many characters the BPE trainer reads the training file itself (C++)
#: instead of receiving the documents from Python.
TRAIN_FROM_FILE_CHARS = 64 << 20

Progress = Callable[[str, int, int], None]


class SpecError(ValueError):
    """A tokenizer SPEC that cannot be parsed, or a plug-in that cannot be imported; the message names it."""


@dataclass(frozen=True)
class BuildOptions:
    """How the builders train the kinds that learn from the corpus.

    Attributes:
        pattern: BPE pre-tokenization pattern (``simple``, ``gpt2``, ``gpt4``, ``o200k``).
        tie_break: BPE training tie-break (``smallest_ids`` or ``largest_bytes``).
        min_frequency: BPE training stops when the best pair occurs fewer times.
        num_threads: trainer threads (0: chosen from the work size).
        train_file: the training documents as a file (``train.txt``): the BPE trainer
            reads it itself above :data:`TRAIN_FROM_FILE_CHARS` characters, the word
            counter spills next to it; ``None``: neither.
        characters: characters in the training documents, when known.
        progress: ``callback(stage, done, total)`` (e.g. ``storygpt.data.progress.StageBars``):
            stages ``"count text"``/``"count words"`` (bytes of a file, else characters), the BPE trainer's
            ``"count"`` (bytes) and ``"merge"``; ``None``: silent.
    """

    pattern: str = DEFAULT_PATTERN
    tie_break: str = "smallest_ids"
    min_frequency: int = 1
    num_threads: int = 0
    train_file: str | None = None
    characters: int | None = None
    progress: Progress | None = None


@dataclass(frozen=True)
class Kind:
    """A registered tokenizer kind (see :func:`register_kind`): everything the tools know of it."""

    name: str
    build: Callable  # (arg, train_docs, options) -> Tokenizer: makes (trains, reads) what a SPEC names
    arg: str
    default_vocab: int | None = None
    file_class: type | None = None  # loads files whose "kind" is name
    parse_arg: Callable | None = None  # ARG text -> int | (int, ...) for arg="vocab"; ValueError
    check_arg: Callable | None = None  # the value of parse_arg (or a new size) -> itself, checked; ValueError
    help: str = ""  # one line for --help, after the usage
    usage: str = ""  # the SPEC's form: "bpe[:VOCAB]", "tiktoken:NAME", ...
    export: Callable | None = None  # tokenizer -> Hugging Face tokenizer.json dict (None: export.py refuses)

    def help_line(self) -> str:
        """``usage (help; VOCAB N when omitted)``, as the tools' --help lists it."""
        default = f"; VOCAB {self.default_vocab} when omitted" if self.arg == "vocab" else ""
        return f"{self.usage} ({self.help}{default})"


_KINDS: dict[str, Kind] = {}
_plugins_loaded = False


def register_kind(
    name: str,
    cls_or_factory,
    *,
    arg: str = "none",
    default_vocab: int | None = None,
    file_class: type | None = None,
    parse_arg: Callable[[str], int | tuple[int, ...]] | None = None,
    check_arg: Callable | None = None,
    help: str | None = None,
    usage: str | None = None,
    export: Callable | None = None,
) -> None:
    """Make ``name`` a tokenizer kind: ``--tokenizer name[:ARG]`` in every tool, its help line in
    their ``--help``, its files and checkpoints loadable, and (with ``export``) export.py's.

    Args:
        name: the kind (lower case letters, digits, ``_``; also the ``"kind"`` key of its
            tokenizer files when it has a file class).
        cls_or_factory: a :class:`~storygpt.tokenizers.Tokenizer` subclass with a
            classmethod ``from_spec(arg, train_docs, options)`` (it is also the file
            class), or a builder function ``(arg, train_docs, options) -> Tokenizer``
            (module docstring: what they get).
        arg: what ARG is: ``"vocab"`` (a size; ``default_vocab`` when omitted),
            ``"name"``, ``"path"`` (a file; slugs carry its hash) or ``"none"``.
        default_vocab: the vocabulary size of ``name`` without ``:VOCAB``.
        file_class: the class that loads files of this kind, for a builder function.
        parse_arg: for ``arg="vocab"`` kinds whose ARG says more than a size: ARG text ->
            the vocabulary size, or a tuple of ints whose first is the vocabulary size
            (``superbpe:V:T``); ValueError (one line) for a bad ARG.
        check_arg: with ``parse_arg``: that value (or one whose size ``--vocab-size`` changed)
            -> itself, checked; ValueError (one line).
        help: what the kind is, one short phrase for the tools' ``--help`` (default: "a NAME
            tokenizer (plug-in)").
        usage: the SPEC's form in help texts (default from ``arg``: ``name[:VOCAB]``,
            ``name:NAME``, ``name:PATH``, ``name``).
        export: ``tokenizer -> dict``: the Hugging Face ``tokenizer.json`` that gives the same
            ids, for the kind's file class (:mod:`storygpt.export.tokenizer`); raises
            ``InteropError`` for one it cannot write.  ``None``: export.py refuses the kind.

    Raises:
        ValueError: a bad name or ``arg``, a class without ``from_spec``, or a kind
            registered twice with a different builder.
    """
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", name):
        raise ValueError(f"tokenizer kind name {name!r} must be lower-case letters, digits, _ and -")
    if arg not in ARG_TYPES:
        raise ValueError(f"arg must be one of {ARG_TYPES}, got {arg!r}")
    if arg == "vocab" and default_vocab is None:
        raise ValueError(f"kind {name!r}: arg='vocab' needs a default_vocab")
    if isinstance(cls_or_factory, type):
        if not issubclass(cls_or_factory, Tokenizer) or not hasattr(cls_or_factory, "from_spec"):
            raise ValueError(
                f"kind {name!r}: {cls_or_factory.__name__} must be a Tokenizer with a from_spec classmethod"
            )
        build, file_class = cls_or_factory.from_spec, cls_or_factory
    elif callable(cls_or_factory):
        build = cls_or_factory
    else:
        raise ValueError(f"kind {name!r}: expected a Tokenizer class or a function, got {cls_or_factory!r}")
    old = _KINDS.get(name)
    if old is not None and old.build != build:
        raise ValueError(f"tokenizer kind {name!r} is already registered")
    forms = {"vocab": f"{name}[:VOCAB]", "name": f"{name}:NAME", "path": f"{name}:PATH", "none": name}
    help = help if help is not None else f"a {name} tokenizer (plug-in)"
    _KINDS[name] = Kind(
        name, build, arg, default_vocab, file_class, parse_arg, check_arg, help, usage or forms[arg], export
    )


def kind_help() -> str:
    """Every kind's help line, joined: the text of the tools' ``--tokenizer SPEC`` help (the kinds
    registered so far when a plug-in cannot be imported: parsing the SPEC then says so)."""
    try:
        table = kinds()
    except SpecError:
        table = dict(_KINDS)
    return ", ".join(k.help_line() for k in table.values())


def exportable_kinds() -> list[str]:
    """The kinds export.py writes as a ``tokenizer.json`` (those registered with ``export``)."""
    return [k.name for k in kinds().values() if k.export is not None]


def _load_plugins() -> None:
    """Import the modules named by ``STORYGPT_TOKENIZER_PLUGINS`` once (they call register_kind)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            importlib.import_module(module)
        except ImportError as e:  # raised again by the next call (kind_help() passes it on to parse_spec)
            raise SpecError(f"{PLUGINS_ENV}: cannot import tokenizer plug-in module {module!r}: {e}") from None
    _plugins_loaded = True


def kinds() -> dict[str, Kind]:
    """Every registered kind (built-in ones first), plug-ins loaded."""
    _load_plugins()
    return dict(_KINDS)


def default_vocab(kind: str) -> int | None:
    """The vocabulary size of a built-in or already registered ``kind`` without ``:VOCAB``
    (plug-ins not loaded: for help texts)."""
    return _KINDS[kind].default_vocab


def from_dict(d: dict, source: str = "tokenizer dict", **kwargs) -> Tokenizer:
    """Build the right tokenizer class from a dict made by ``to_dict()`` (a file, a checkpoint).

    Args:
        d: the dict (plain JSON types).
        source: a name for error messages (the file path when loading a file).
        **kwargs: passed to the class's ``from_dict`` (e.g. ``backend="reference"`` for BPE).

    Raises:
        TokenizerFileError: bad format name, version, kind or content (message names ``source``).
    """
    kind = _io.check_header(d, source)
    classes = {k.name: k.file_class for k in kinds().values() if k.file_class is not None}
    if kind not in classes:
        raise _io.TokenizerFileError(f"{source}: unknown tokenizer kind {kind!r} (expected one of {sorted(classes)})")
    return _io.call_from_dict(classes[kind], d, source, **kwargs)


def load(path: str | os.PathLike, **kwargs) -> Tokenizer:
    """Load a tokenizer file written by ``save``; the class is chosen from the file's ``"kind"``.

    Args:
        path: the JSON file.
        **kwargs: passed on to the class (e.g. ``backend="reference"`` for BPE).

    Raises:
        FileNotFoundError: missing file.
        TokenizerFileError: corrupt JSON, unknown version or kind, malformed content;
            the message names the file.
    """
    return from_dict(_io.read_json(path), source=str(path), **kwargs)


# ----------------------------------------------------------------------------- built-in kinds
def _reported(docs: Iterable[str], opt: BuildOptions, stage: str) -> Iterator[str]:
    """The documents, reporting progress to ``opt.progress`` as ``stage``: the bytes read of a
    ``DocumentFile`` (anything with ``iter(on_bytes)`` and ``size``), else the characters."""
    progress = opt.progress
    if progress is None:
        yield from docs
    elif hasattr(docs, "iter") and hasattr(docs, "size"):
        done = 0

        def on_bytes(n: int) -> None:
            nonlocal done
            done += n
            progress(stage, done, docs.size)

        yield from docs.iter(on_bytes)
    else:
        done = 0
        for d in docs:
            yield d
            done += len(d)
            progress(stage, done, opt.characters or 0)


def _build_bpe(vocab_size: int, docs: Iterable[str], opt: BuildOptions) -> BPETokenizer:
    """BPE without holding the documents: the C++ trainer reads ``opt.train_file`` itself above
    :data:`TRAIN_FROM_FILE_CHARS` characters, else the documents stream through the counter
    (the same merges as training on them joined by ``<|endoftext|>``: no merge crosses it)."""
    kw = dict(
        pattern=opt.pattern,
        special_tokens=("<pad>", EOT),
        min_frequency=opt.min_frequency,
        tie_break=opt.tie_break,
        num_threads=opt.num_threads,
    )
    characters = opt.characters
    if characters is None:
        characters = sum(len(d) for d in docs) if isinstance(docs, Sequence) else 0
    if opt.train_file is not None and characters > TRAIN_FROM_FILE_CHARS:
        return train_bpe([opt.train_file], vocab_size, progress=opt.progress, **kw)
    progress = opt.progress
    merges_only = None if progress is None else (lambda s, d, t: None if s == "count" else progress(s, d, t))
    return train_bpe(_reported(docs, opt, "count text"), vocab_size, progress=merges_only, **kw)


def _build_superbpe(arg: int | tuple[int, int], docs: Iterable[str], opt: BuildOptions) -> SuperBPETokenizer:
    """SuperBPE (``superbpe:V[:T]``) on the documents joined by ``<|endoftext|>``, or on
    ``opt.train_file`` (read by the C++ trainer) above :data:`TRAIN_FROM_FILE_CHARS` characters."""
    vocab_size, transition = arg if isinstance(arg, tuple) else (arg, None)
    characters = opt.characters if opt.characters is not None else sum(len(d) for d in docs)
    if opt.train_file is not None and characters > TRAIN_FROM_FILE_CHARS:
        source = [opt.train_file]
    else:
        source = EOT.join(_reported(docs, opt, "count text"))
    kw = dict(pattern=opt.pattern, min_frequency=opt.min_frequency, tie_break=opt.tie_break)
    return train_superbpe(
        source, vocab_size, transition, special_tokens=("<pad>", EOT), num_threads=opt.num_threads, **kw
    )


def _build_word(vocab_size: int, docs: Iterable[str], opt: BuildOptions) -> WordTokenizer:
    """The word-level vocabulary, counted in bounded memory (spilled next to ``opt.train_file``)."""
    spill = Path(opt.train_file).parent if opt.train_file is not None else Path(tempfile.gettempdir())
    return train_word_tokenizer(_reported(docs, opt, "count words"), vocab_size, spill)


register_kind(
    "bpe",
    _build_bpe,
    arg="vocab",
    default_vocab=8192,
    file_class=BPETokenizer,
    help="storygpt's byte-level BPE, trained here",
    export=to_hf_dict,
)
register_kind(
    "superbpe",
    _build_superbpe,
    arg="vocab",
    default_vocab=8192,
    file_class=SuperBPETokenizer,
    parse_arg=parse_spec_arg,
    check_arg=check_spec_arg,
    help="SuperBPE, trained here: BPE up to T, then tokens across words up to VOCAB",
    usage="superbpe[:VOCAB[:T]]",
    export=to_hf_dict,
)
register_kind(
    "word",
    _build_word,
    arg="vocab",
    default_vocab=10000,
    file_class=WordTokenizer,
    help="word-level, trained here; lossy",
    export=word_to_hf_dict,
)
register_kind("byte", lambda arg, docs, opt: ByteTokenizer(), help="the 256 bytes, no merges")
register_kind(
    "tiktoken",
    lambda arg, docs, opt: from_tiktoken(arg),
    arg="name",
    help="an OpenAI encoding: gpt2, cl100k_base, o200k_base, ...; needs tiktoken",
)
register_kind(
    "hf", HFTokenizer, arg="path", help="any Hugging Face tokenizer.json; needs tokenizers", export=hf_to_hf_dict
)
register_kind("file", lambda arg, docs, opt: load(arg), arg="path", help="a storygpt tokenizer file")
register_kind(
    "unigram", build_unigram, arg="vocab", default_vocab=8192, help="Unigram, trained by Hugging Face tokenizers"
)
register_kind(
    "wordpiece", build_wordpiece, arg="vocab", default_vocab=8192, help="WordPiece, trained by Hugging Face tokenizers"
)
register_kind("sp", SentencePieceTokenizer, arg="path", help="a SentencePiece .model; needs sentencepiece")
register_kind(
    "spm-unigram", build_spm_unigram, arg="vocab", default_vocab=8192, help="Unigram, trained by sentencepiece"
)
register_kind("spm-bpe", build_spm_bpe, arg="vocab", default_vocab=8192, help="BPE, trained by sentencepiece")
