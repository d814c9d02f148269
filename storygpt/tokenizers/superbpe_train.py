"""SuperBPE training: :func:`train_superbpe` (stage 1 ordinary BPE up to T, stage 2 on
``"superword"`` chunks up to V), beside :func:`~storygpt.tokenizers.bpe_train.train_bpe`
and checked by the same :func:`~storygpt.tokenizers.bpe_train.check_train_args`.

Liu et al. (2025), arXiv:2503.13423; semantics: :mod:`storygpt.tokenizers.superbpe_reference`;
C++: ``_bpe.superbpe_train`` (``csrc/train/superbpe_train.cpp``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence

from . import superbpe_reference
from .base import EOT, clean_text
from .bpe_reference import DEFAULT_PATTERN
from .bpe_train import check_train_args, check_train_files
from .bpe_vocab import load_cpp
from .superbpe import SuperBPETokenizer
from .superbpe_reference import STAGE2_PATTERN, check_transition, default_transition


def train_superbpe(
    source: str | bytes | Sequence[str | os.PathLike],
    vocab_size: int,
    transition: int | None = None,
    pattern: str = DEFAULT_PATTERN,
    special_tokens: Sequence[str] = ("<pad>", EOT),
    min_frequency: int = 1,
    tie_break: str = "smallest_ids",
    num_threads: int = 0,
    backend: str = "cpp",
    progress: Callable[[str, int, int], None] | None = None,
) -> SuperBPETokenizer:
    """Learn a SuperBPE vocabulary (stage 1 up to ``transition``, stage 2 up to ``vocab_size``).

    Args:
        source: training text (``str``: lone surrogates become U+FFFD; ``bytes``) or a
            list of file paths (streamed by the C++ trainer, once per stage; the
            ``reference`` backend takes text or one file).
        vocab_size: V, the final vocabulary size (256 bytes + merges + special tokens).
        transition: T, the vocabulary size where stage 2 starts; default
            ``floor(0.9 * V)`` (:func:`superbpe_reference.default_transition`: the
            paper's t = 180k for V = 200k).
        pattern: stage 1's pre-tokenization pattern (not ``"superword"``).
        special_tokens, min_frequency, tie_break, num_threads, backend: as
            :func:`~storygpt.tokenizers.bpe_train.train_bpe`.
        progress: accepted for the same signature as ``train_bpe``; SuperBPE training
            reports nothing yet.

    Returns:
        A :class:`SuperBPETokenizer`: bytes ``0..255``, merge ``i`` at ``256 + i``
        (stage 1's first), then the special tokens.

    Raises:
        ValueError: a bad T (``>= V`` or below ``256 + len(special_tokens)``, the value
            named), a ``"superword"`` stage-1 pattern, and whatever
            :func:`~storygpt.tokenizers.bpe_train.check_train_args` raises.
        FileNotFoundError, IsADirectoryError: a listed file (named).
    """
    del progress
    args = check_train_args(vocab_size, special_tokens, pattern, min_frequency, tie_break, num_threads, backend)
    if pattern == STAGE2_PATTERN:
        raise ValueError(f"stage 1 pattern must be an ordinary one, not {STAGE2_PATTERN!r}")
    if transition is None:
        transition = default_transition(args.vocab_size, len(args.specials))
    check_transition(args.vocab_size, transition, len(args.specials))
    data, files = _source(source)
    if backend == "cpp":
        work = len(data) if files is None else sum(os.path.getsize(p) for p in files)
        pairs, n_stage1 = load_cpp().superbpe_train(
            data=data,
            files=files,
            vocab_size=args.vocab_size,
            transition=transition,
            pattern=pattern,
            special_tokens=args.special_bytes,
            min_frequency=args.min_frequency,
            tie_break=tie_break,
            num_threads=args.threads(work),
        )
    else:
        if files is not None and len(files) != 1:
            raise ValueError("the reference backend trains on text or one file")
        if files is not None:
            with open(files[0], "rb") as f:
                data = f.read()
        pairs, n_stage1 = superbpe_reference.train(
            data, args.vocab_size, transition, pattern, args.special_bytes, args.min_frequency, tie_break
        )
    tok = SuperBPETokenizer.from_merges_ids(
        [tuple(p) for p in pairs], special_tokens=args.specials.keys(), pattern=STAGE2_PATTERN, backend=backend
    )
    tok.set_stages(transition, pattern, n_stage1)
    if tok.vocab_size < args.vocab_size:
        warnings.warn(
            f"SuperBPE training stopped at vocab_size {tok.vocab_size:,} ({len(pairs):,} merges), short of "
            f"the {args.vocab_size:,} asked: the text ran out of pairs occurring at least "
            f"min_frequency={args.min_frequency} times",
            stacklevel=2,
        )
    return tok


def _source(source) -> tuple[bytes | None, list[str] | None]:
    """``(data, None)`` for text, ``(None, paths)`` for a list of files (checked to exist)."""
    if isinstance(source, os.PathLike):
        raise TypeError(f"source: pass a list of paths, not one path ({os.fspath(source)!r})")
    if isinstance(source, str):
        return clean_text(source).encode("utf-8"), None
    if isinstance(source, (bytes, bytearray)):
        return bytes(source), None
    return None, check_train_files(source)
