"""SuperBPE: byte-level BPE whose later tokens may span words (SPEC ``superbpe:V[:T]``).

Liu, Hayase, Hofmann, Oh, Smith & Choi (2025), "SuperBPE: Space Travel for Language
Models", arXiv:2503.13423.  The exact semantics are those of
:mod:`storygpt.tokenizers.superbpe_reference`; the C++ core (``_bpe.superbpe_train``,
``csrc/superbpe_train.cpp``) learns the same merges, and encoding is the ordinary BPE
encoder on ``"superword"`` chunks, so a SuperBPE tokenizer is a :class:`BPETokenizer`
with ``pattern == "superword"`` plus a record of how it was trained (the stage rule),
kept in its file under ``"superbpe"``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence

import regex

from . import io as _io
from . import superbpe_reference
from .base import EOT
from .bpe import BPETokenizer, _check_backend, _clean_text, _load_cpp, _train_args, default_train_threads
from .superbpe_reference import STAGE2_PATTERN, check_transition, default_transition

#: A chunk boundary of the "superword" pattern that later text cannot move: after a
#: line break followed by something else, or after sentence punctuation followed by
#: something else.
_SUPERWORD_CUT_RX = regex.compile(r"(?r)[\r\n](?=[^\r\n])|[.!?;:](?=[^.!?;:])")


class SuperBPETokenizer(BPETokenizer):
    """A SuperBPE tokenizer: :class:`BPETokenizer` on ``"superword"`` chunks.

    Build one with :meth:`train` (or load a file).  Attributes beyond BPETokenizer's:

    Attributes:
        transition: T, the vocabulary size (bytes + stage-1 merges + special tokens)
            where stage 2 began.
        stage1_pattern: stage 1's pre-tokenization pattern.
        stage1_merges: how many merges stage 1 learned (the first ones).
    """

    kind = "superbpe"
    _cut_rx = _SUPERWORD_CUT_RX
    transition: int = 0
    stage1_pattern: str = "gpt4"
    stage1_merges: int = 0

    @classmethod
    def train(
        cls,
        text_or_files: str | bytes | Sequence[str | os.PathLike],
        vocab_size: int,
        transition: int | None = None,
        pattern: str = "gpt4",
        special_tokens: Sequence[str] = ("<pad>", EOT),
        min_frequency: int = 1,
        tie_break: str = "smallest_ids",
        num_threads: int = 0,
        backend: str = "cpp",
        progress: Callable[[str, int, int], None] | None = None,
    ) -> SuperBPETokenizer:
        """Learn a SuperBPE vocabulary (stage 1 up to ``transition``, stage 2 up to ``vocab_size``).

        Args:
            text_or_files: training text (``str``/``bytes``) or a list of file paths
                (streamed by the C++ trainer, once per stage; the ``reference`` backend
                takes text or one file).
            vocab_size: V, the final vocabulary size (256 bytes + merges + special tokens).
            transition: T, the vocabulary size where stage 2 starts; default
                ``floor(0.9 * V)`` (:func:`superbpe_reference.default_transition`: the
                paper's t = 180k for V = 200k).
            pattern: stage 1's pre-tokenization pattern (not ``"superword"``).
            special_tokens, min_frequency, tie_break, num_threads: as
                :meth:`BPETokenizer.train`.
            backend: ``"cpp"`` or ``"reference"``.
            progress: accepted for the same signature as :meth:`BPETokenizer.train`;
                SuperBPE training reports nothing yet.

        Returns:
            The tokenizer: bytes ``0..255``, merge ``i`` at ``256 + i`` (stage 1's
            first), then the special tokens.

        Raises:
            ValueError: a bad T (``>= V`` or below ``256 + len(special_tokens)``, the
                value named), and whatever :meth:`BPETokenizer.train` raises.
        """
        del progress
        _check_backend(backend)
        if pattern == STAGE2_PATTERN:
            raise ValueError(f"stage 1 pattern must be an ordinary one, not {STAGE2_PATTERN!r}")
        vocab_size, specials, special_bytes, min_frequency, num_threads = _train_args(
            vocab_size, special_tokens, pattern, min_frequency, tie_break, num_threads
        )
        if transition is None:
            transition = default_transition(vocab_size, len(specials))
        check_transition(vocab_size, transition, len(specials))
        data, files = _source(text_or_files)
        work = len(data) if files is None else sum(os.path.getsize(p) for p in files)
        threads = num_threads if num_threads > 0 else default_train_threads(work)
        if backend == "cpp":
            pairs, n_stage1 = _load_cpp().superbpe_train(
                data=data,
                files=files,
                vocab_size=vocab_size,
                transition=transition,
                pattern=pattern,
                special_tokens=special_bytes,
                min_frequency=min_frequency,
                tie_break=tie_break,
                num_threads=threads,
            )
        else:
            if files is not None and len(files) != 1:
                raise ValueError("the reference backend trains on text or one file")
            text = data if files is None else open(files[0], "rb").read()
            pairs, n_stage1 = superbpe_reference.train(
                text, vocab_size, transition, pattern, special_bytes, min_frequency, tie_break
            )
        tok = cls.from_merges_ids(
            [tuple(p) for p in pairs], special_tokens=specials.keys(), pattern=STAGE2_PATTERN, backend=backend
        )
        tok._set_stages(transition, pattern, n_stage1)
        if tok.vocab_size < vocab_size:
            warnings.warn(
                f"SuperBPE training stopped at vocab_size {tok.vocab_size:,} ({len(pairs):,} merges), short of "
                f"the {vocab_size:,} asked: the text ran out of pairs occurring at least {min_frequency} times",
                stacklevel=2,
            )
        return tok

    @classmethod
    def from_spec(cls, arg, train_docs, options) -> SuperBPETokenizer:
        """``superbpe:V[:T]`` trained on the corpus (see :func:`storygpt.tokenizers.spec.register_kind`)."""
        from .spec import TRAIN_FROM_FILE_CHARS

        vocab, _, t = str(arg).partition(":")
        n_chars = sum(len(d) for d in train_docs)
        use_file = options.train_file is not None and n_chars > TRAIN_FROM_FILE_CHARS
        return cls.train(
            [options.train_file] if use_file else EOT.join(train_docs),
            int(vocab),
            int(t) if t else None,
            pattern=options.pattern,
            special_tokens=("<pad>", EOT),
            min_frequency=options.min_frequency,
            tie_break=options.tie_break,
            num_threads=options.num_threads,
        )

    def _set_stages(self, transition: int, stage1_pattern: str, stage1_merges: int) -> None:
        self.transition = int(transition)
        self.stage1_pattern = stage1_pattern
        self.stage1_merges = int(stage1_merges)

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["kind"] = self.kind
        d["superbpe"] = {
            "source": "Liu et al. 2025, SuperBPE: Space Travel for Language Models, arXiv:2503.13423",
            "transition": self.transition,
            "stage1_pattern": self.stage1_pattern,
            "stage1_merges": self.stage1_merges,
            "stage2_pattern": STAGE2_PATTERN,
            "stage2_regex": superbpe_reference.bpe_reference.PATTERNS[STAGE2_PATTERN].decode("ascii"),
        }
        return d

    @classmethod
    def from_dict(cls, d: dict, backend: str = "cpp") -> SuperBPETokenizer:
        """Rebuild from :meth:`to_dict` output.

        Raises:
            TokenizerFileError: wrong format, version or kind; a stage rule that is not this one.
            ValueError, KeyError, TypeError: malformed content.
        """
        kind = _io.check_header(d)
        if kind != cls.kind:
            raise _io.TokenizerFileError(f"expected a {cls.kind!r} tokenizer, got {kind!r}")
        rule = d["superbpe"]
        if d.get("pattern") != STAGE2_PATTERN or rule.get("stage2_pattern") != STAGE2_PATTERN:
            raise _io.TokenizerFileError(
                f"superbpe tokenizer: stage-2 pattern {d.get('pattern')!r} is not {STAGE2_PATTERN!r}"
            )
        tok = super().from_dict({**d, "kind": "bpe"}, backend)
        tok._set_stages(rule["transition"], rule["stage1_pattern"], rule["stage1_merges"])
        return tok

    def __repr__(self) -> str:
        return (
            f"SuperBPETokenizer(vocab_size={self.vocab_size}, transition={self.transition}, "
            f"stage1_pattern={self.stage1_pattern!r}, specials={list(self.special_tokens)}, backend={self.backend!r})"
        )


def _source(text_or_files) -> tuple[bytes | None, list[str] | None]:
    """``(data, None)`` for text, ``(None, paths)`` for a list of files (checked to exist)."""
    if isinstance(text_or_files, os.PathLike):
        raise TypeError(f"text_or_files: pass a list of paths, not one path ({os.fspath(text_or_files)!r})")
    if isinstance(text_or_files, str):
        return _clean_text(text_or_files).encode("utf-8"), None
    if isinstance(text_or_files, (bytes, bytearray)):
        return bytes(text_or_files), None
    files = [os.fspath(p) for p in text_or_files]
    for p in files:
        if os.path.isdir(p):
            raise IsADirectoryError(f"training file {p} is a folder, not a file")
        if not os.path.isfile(p):
            raise FileNotFoundError(f"training file not found: {p}")
    return None, files
