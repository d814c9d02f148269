"""Plain-Python reference for SuperBPE training: what the C++ core's ``superbpe_train`` computes.

SuperBPE (Liu et al. 2025, arXiv:2503.13423; reference implementation github.com/PythonNut/superbpe):
stage 1 is ordinary BPE (:func:`bpe_reference.train`) until ``transition`` tokens; stage 2 re-chunks
the text with the ``"superword"`` pattern (white space is no boundary), starts each chunk from its
stage-1 tokens and continues the merge loop (:func:`bpe_reference.continue_merges`) to ``vocab_size``.
Encoding is ordinary BPE inside ``"superword"`` chunks, as a stock ``tokenizers`` BPE with a
``Split`` on that pattern computes it.

Details and measurements: docs/tokenizers.md and docs/bpe_core.md.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import bpe_reference

#: The stage-2 pre-tokenization pattern (a name in :data:`bpe_reference.PATTERNS`).
STAGE2_PATTERN = "superword"

#: Default transition point as a share of the vocabulary: the paper's recommended
#: setting is t = 180k for a 200k vocabulary (its main 8B model), i.e. 90%.
DEFAULT_TRANSITION_SHARE = 0.9


def default_transition(vocab_size: int, n_specials: int = 0) -> int:
    """The default transition vocabulary size: ``floor(0.9 * vocab_size)``, at least ``256 + n_specials``."""
    return max(vocab_size * 9 // 10, 256 + n_specials)


def check_transition(vocab_size: int, transition: int, n_specials: int) -> None:
    """Raise ValueError (one line, naming the value) unless ``256 + n_specials <= transition < vocab_size``."""
    if not isinstance(transition, int) or isinstance(transition, bool):
        raise ValueError(f"transition T={transition!r} must be an integer")
    if transition >= vocab_size:
        raise ValueError(f"transition T={transition} must be below the vocabulary size V={vocab_size}")
    if transition < 256 + n_specials:
        raise ValueError(
            f"transition T={transition} must hold the 256 byte tokens and {n_specials} special tokens "
            f"(at least {256 + n_specials})"
        )


def train(
    data: bytes | str,
    vocab_size: int,
    transition: int | None = None,
    pattern: str = bpe_reference.CORE_DEFAULT_PATTERN,
    special_tokens: Iterable[bytes | str] = (),
    min_frequency: int = 1,
    tie_break: str = "smallest_ids",
) -> tuple[list[tuple[int, int]], int]:
    """Learn SuperBPE merges from ``data``.

    Args:
        data: training text (``str`` is encoded as UTF-8).
        vocab_size: the final vocabulary size V (256 bytes + merges + special tokens).
        transition: the vocabulary size T where stage 2 starts (default
            :func:`default_transition`).
        pattern: stage 1's pre-tokenization pattern.
        special_tokens, min_frequency, tie_break: as in :func:`bpe_reference.train`
            (both stages).

    Returns:
        ``(merges, n_stage1)``: all merges in the order learned (``merges[i]`` makes id
        ``256 + i``) and how many of them stage 1 learned.

    Raises:
        ValueError: a bad ``transition`` (named), and whatever
            :func:`bpe_reference.train` raises.
    """
    specials = [s.encode("utf-8") if isinstance(s, str) else bytes(s) for s in special_tokens]
    if transition is None:
        transition = default_transition(vocab_size, len(specials))
    check_transition(vocab_size, transition, len(specials))
    if isinstance(data, str):
        data = data.encode("utf-8")
    stage1 = bpe_reference.train(data, transition, pattern, specials, min_frequency, tie_break)
    encoder = bpe_reference.encoder_from_merges(stage1)
    words = {
        tuple(encoder.encode_chunk(chunk)): count
        for chunk, count in bpe_reference.count_chunks(data, STAGE2_PATTERN, specials).items()
    }
    n_more = vocab_size - 256 - len(specials) - len(stage1)
    merges = bpe_reference.continue_merges(words, stage1, n_more, min_frequency, tie_break)
    return merges, len(stage1)
