"""SuperBPE's vocabulary: byte-level BPE whose later tokens may span words (SPEC ``superbpe:V[:T]``).

Liu, Hayase, Hofmann, Oh, Smith & Choi (2025), "SuperBPE: Space Travel for Language
Models", arXiv:2503.13423.  The exact semantics are those of
:mod:`storygpt.tokenizers.superbpe_reference`; training is
:func:`storygpt.tokenizers.superbpe_train.train_superbpe` (C++: ``_bpe.superbpe_train``),
and encoding is the ordinary BPE encoder on ``"superword"`` chunks, so a SuperBPE
tokenizer is a :class:`BPETokenizer` with ``pattern == "superword"`` plus a record of
how it was trained (the stage rule), kept in its file under ``"superbpe"``.
"""

from __future__ import annotations

import re

import regex

from . import io as _io
from .bpe import BPETokenizer
from .bpe_reference import DEFAULT_PATTERN, PATTERNS
from .superbpe_reference import STAGE2_PATTERN, check_transition, default_transition

#: A chunk boundary of the "superword" pattern that later text cannot move: after a
#: line break followed by something else, or after sentence punctuation followed by
#: something else.
_SUPERWORD_CUT_RX = regex.compile(r"(?r)[\r\n](?=[^\r\n])|[.!?;:](?=[^.!?;:])")
#: The stage-1 patterns the C++ encoder knows (split_stages).
_CPP_PATTERNS = frozenset({"simple", "gpt2", "gpt4", "o200k", "superword"})
#: The special tokens of a tokenizer a SPEC builds (``<pad>``, ``<|endoftext|>``).
SPEC_SPECIALS = 2


def parse_spec_arg(arg: str) -> int | tuple[int, int]:
    """The ARG of ``superbpe:ARG``: ``"V"`` -> ``V``, ``"V:T"`` -> ``(V, T)`` (the registry's ``parse_arg``),
    checked by :func:`check_spec_arg`.

    Raises:
        ValueError: not ``V`` or ``V:T`` in whole numbers, or a bad V or T (one line naming it).
    """
    m = re.fullmatch(r"([0-9]+)(?::([0-9]+))?", arg)
    if m is None or int(m[1]) == 0:
        raise ValueError(f"expected superbpe:V or superbpe:V:T (whole numbers), got {arg!r}")
    return check_spec_arg(int(m[1]) if m[2] is None else (int(m[1]), int(m[2])))


def check_spec_arg(value: int | tuple[int, int]) -> int | tuple[int, int]:
    """``V`` or ``(V, T)`` of a SPEC checked (the registry's ``check_arg``): T (default
    :func:`~storygpt.tokenizers.superbpe_reference.default_transition`) against V for a
    tokenizer with ``<pad>`` and ``<|endoftext|>``.

    Raises:
        ValueError: V too small for the default T (V named), or a bad T.
    """
    vocab, transition = value if isinstance(value, tuple) else (value, None)
    if transition is None and vocab <= 256 + SPEC_SPECIALS:  # the default T would be the floor; name V, not T
        raise ValueError(
            f"V={vocab} is too small: SuperBPE needs the 256 byte tokens, {SPEC_SPECIALS} special tokens "
            f"and at least one merge (V >= {257 + SPEC_SPECIALS})"
        )
    check_transition(
        vocab, default_transition(vocab, SPEC_SPECIALS) if transition is None else transition, SPEC_SPECIALS
    )
    return value


class SuperBPETokenizer(BPETokenizer):
    """A SuperBPE tokenizer: :class:`BPETokenizer` on ``"superword"`` chunks.

    Made by :func:`~storygpt.tokenizers.superbpe_train.train_superbpe` (or loaded from a
    file of kind ``"superbpe"``).  Attributes beyond BPETokenizer's:

    Attributes:
        transition: T, the vocabulary size (bytes + stage-1 merges + special tokens)
            where stage 2 began.
        stage1_pattern: stage 1's pre-tokenization pattern.
        stage1_merges: how many merges stage 1 learned (the first ones).
    """

    kind = "superbpe"
    _cut_rx = _SUPERWORD_CUT_RX
    transition: int = 0
    stage1_pattern: str = DEFAULT_PATTERN
    stage1_merges: int = 0

    def set_stages(self, transition: int, stage1_pattern: str, stage1_merges: int) -> SuperBPETokenizer:
        """Record the stage rule (the trainer and :meth:`from_dict` call it once); returns ``self``."""
        self.transition = int(transition)
        self.stage1_pattern = stage1_pattern
        self.stage1_merges = int(stage1_merges)
        if self.backend == "cpp" and self._merges is not None and self.stage1_pattern in _CPP_PATTERNS:
            # Same ids either way; encodes each clause as its stage-1 pieces through the encoder's
            # chunk cache, then the stage-2 merges (issue 21).  A refusal leaves the plain merge loop.
            self._encoder.split_stages(self._merges[: self.stage1_merges], self.stage1_pattern)
        return self

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["kind"] = self.kind
        d["superbpe"] = {
            "source": "Liu et al. 2025, SuperBPE: Space Travel for Language Models, arXiv:2503.13423",
            "transition": self.transition,
            "stage1_pattern": self.stage1_pattern,
            "stage1_merges": self.stage1_merges,
            "stage2_pattern": STAGE2_PATTERN,
            "stage2_regex": PATTERNS[STAGE2_PATTERN].decode("ascii"),
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
        return tok.set_stages(rule["transition"], rule["stage1_pattern"], rule["stage1_merges"])

    def __repr__(self) -> str:
        return (
            f"SuperBPETokenizer(vocab_size={self.vocab_size}, transition={self.transition}, "
            f"stage1_pattern={self.stage1_pattern!r}, specials={list(self.special_tokens)}, backend={self.backend!r})"
        )
