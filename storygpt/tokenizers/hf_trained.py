"""``unigram:V`` and ``wordpiece:V``: Unigram and WordPiece vocabularies trained by Hugging Face ``tokenizers``.

The library's own trainers (``UnigramTrainer``, Kudo 2018; ``WordPieceTrainer``, Schuster &
Nakajima 2012) with a lossless setup: byte-level pre-tokenization with all 256 byte characters in
the alphabet; WordPiece gets the missing continuation forms added after training, with prefix
``U+2581`` removed by a ``Replace`` decoder.  The trainers are not deterministic (ties), so the
trained tokenizer is stored whole in an :class:`~storygpt.tokenizers.hf.HFTokenizer` file
(``"kind": "hf"``) and a checkpoint's ids never change.  Specials: ``<unk>`` 0, ``<pad>`` 1,
``<|endoftext|>`` 2.

The algorithms and the setup's reasons: docs/tokenizers.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from .base import EOT, require
from .hf import HFTokenizer

SPECIALS = ("<unk>", "<pad>", EOT)
#: Marks a WordPiece continuation piece; no byte-level character is U+2581.
CONTINUATION = "\u2581"
#: Smallest vocabularies: the specials and the 256 byte characters (Unigram), and also
#: their 256 continuation forms (WordPiece).
MIN_VOCAB = {"unigram": len(SPECIALS) + 256, "wordpiece": len(SPECIALS) + 512}


def _check_vocab(kind: str, vocab_size: int) -> None:
    if vocab_size < MIN_VOCAB[kind]:
        raise ValueError(
            f"{kind}:{vocab_size}: the vocabulary size must be at least {MIN_VOCAB[kind]} "
            f"({len(SPECIALS)} special tokens and the byte alphabet)"
        )


def _byte_level(tok, tokenizers) -> list[str]:
    """Set byte-level pre-tokenization on ``tok``; the 256-character alphabet."""
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    return tokenizers.pre_tokenizers.ByteLevel.alphabet()


def train_unigram_json(docs: Iterable[str], vocab_size: int) -> dict:
    """Train a byte-level Unigram model with ``tokenizers.trainers.UnigramTrainer``.

    Args:
        docs: training documents (str), read once.
        vocab_size: the vocabulary size asked of the trainer (it may stop below it).

    Returns:
        the ``tokenizer.json`` as a dict.

    Raises:
        ImportError: ``tokenizers`` missing (named).  ValueError: ``vocab_size`` below
            :data:`MIN_VOCAB` (named).
    """
    _check_vocab("unigram", vocab_size)
    tk = require("tokenizers", "the unigram: tokenizer")
    tok = tk.Tokenizer(tk.models.Unigram())
    alphabet = _byte_level(tok, tk)
    tok.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.UnigramTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIALS),
        unk_token="<unk>",
        initial_alphabet=alphabet,
        show_progress=False,
    )
    tok.train_from_iterator(docs, trainer)
    d = json.loads(tok.to_str())
    # the trainer's order (and scores, by up to ~0.02) of equal pieces varies run to run:
    # ids by piece after the specials, so the ids depend only on the pieces chosen
    vocab = d["model"]["vocab"]
    head, rest = vocab[: len(SPECIALS)], vocab[len(SPECIALS) :]
    assert [p for p, _ in head] == list(SPECIALS), head
    d["model"]["vocab"] = head + sorted(rest)
    return d


def _train_wordpiece_once(tk, docs: Iterable[str], vocab_size: int) -> dict:
    tok = tk.Tokenizer(tk.models.WordPiece(unk_token="<unk>", continuing_subword_prefix=CONTINUATION))
    alphabet = _byte_level(tok, tk)
    tok.decoder = tk.decoders.Sequence([tk.decoders.Replace(CONTINUATION, ""), tk.decoders.ByteLevel()])
    trainer = tk.trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIALS),
        initial_alphabet=alphabet,
        continuing_subword_prefix=CONTINUATION,
        show_progress=False,
    )
    tok.train_from_iterator(docs, trainer)
    d = json.loads(tok.to_str())
    d["model"]["max_input_chars_per_word"] = 1 << 30  # no word is too long to cover
    return d


def train_wordpiece_json(docs: Iterable[str], vocab_size: int) -> dict:
    """Train a byte-level WordPiece model with ``tokenizers.trainers.WordPieceTrainer``,
    then add the continuation forms of the 256 byte characters the trainer left out
    (module docstring), training again smaller when they would not fit.

    Args:
        docs: training documents (str); a list or anything iterable more than once.
        vocab_size: the most tokens the result has.

    Returns:
        the ``tokenizer.json`` as a dict (at most ``vocab_size`` tokens).

    Raises:
        ImportError: ``tokenizers`` missing (named).  ValueError: ``vocab_size`` below
            :data:`MIN_VOCAB` (named).
    """
    _check_vocab("wordpiece", vocab_size)
    tk = require("tokenizers", "the wordpiece: tokenizer")
    alphabet = tk.pre_tokenizers.ByteLevel.alphabet()
    ask = vocab_size
    while True:
        d = _train_wordpiece_once(tk, docs, ask)
        vocab = d["model"]["vocab"]
        missing = sorted(CONTINUATION + c for c in alphabet if CONTINUATION + c not in vocab)
        over = len(vocab) + len(missing) - vocab_size
        if over <= 0:
            break
        ask -= over
    for piece in missing:
        vocab[piece] = len(vocab)
    return d


def build_unigram(vocab_size: int, docs: Iterable[str], options) -> HFTokenizer:
    """``unigram:V`` (builder: see :func:`storygpt.tokenizers.registry.register_kind`)."""
    return HFTokenizer(train_unigram_json(docs, vocab_size), source=f"unigram:{vocab_size}")


def build_wordpiece(vocab_size: int, docs: Iterable[str], options) -> HFTokenizer:
    """``wordpiece:V`` (builder: see :func:`storygpt.tokenizers.registry.register_kind`)."""
    return HFTokenizer(train_wordpiece_json(docs, vocab_size), source=f"wordpiece:{vocab_size}")
