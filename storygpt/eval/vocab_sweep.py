"""Tokens per 1,000 characters against vocabulary size (``tokens.py --vocab-sweep``), with no model.

Each size of a trained kind is trained on the training text the way ``data.py`` trains it
(:func:`storygpt.data.prepare.train_tokenizer`).  BPE is trained once, at the largest size: the C++
trainer's merges are a deterministic greedy sequence, so the tokenizer of a smaller size is the first
``size - 258`` merges of the largest (256 byte tokens and ``<pad>``, ``<|endoftext|>`` after the merges), which
``tests/tools/test_tokens.py`` checks against training at the smaller size.  The other kinds
(``superbpe``, ``unigram``, ``wordpiece``, ``spm-*``) train once per size.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from storygpt.eval.intrinsic import embedding_parameters, encode_text
from storygpt.tokenizers.spec import SpecError, parse_spec

#: Kinds ``--vocab-sweep`` trains.
SWEEP_KINDS = ("bpe", "superbpe", "unigram", "wordpiece", "spm-unigram", "spm-bpe")


def parse_sizes(text: str) -> list[int]:
    """``"1024,2048"`` -> ``[1024, 2048]``.

    Raises:
        ValueError: not whole numbers separated by commas, or not strictly increasing (named).
    """
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError(
            f"--vocab-sweep {text}: expected vocabulary sizes separated by commas, e.g. 1024,2048"
        ) from None
    if not sizes:
        raise ValueError(f"--vocab-sweep {text!r}: no vocabulary size in it")
    for a, b in zip(sizes, sizes[1:]):
        if b <= a:
            raise ValueError(f"--vocab-sweep {text}: sizes must increase, but {b:,} follows {a:,}")
    return sizes


def check_sizes(spec_text: str, sizes: Sequence[int]) -> None:
    """Every size is one the kind of ``spec_text`` can train (its minimum counts its special tokens).

    Raises:
        SpecError: a kind that is not trained here, or a size below its minimum (named).
    """
    spec = parse_spec(spec_text)
    if spec.kind not in SWEEP_KINDS:
        raise SpecError(f"--vocab-sweep trains {', '.join(SWEEP_KINDS)}, not {spec_text}")
    for v in sizes:
        spec.with_vocab_size(v, "--vocab-sweep")


def bpe_prefix(tokenizer, vocab_size: int):
    """The BPE of ``vocab_size`` made of the first merges of a larger trained ``tokenizer`` (same pattern)."""
    from storygpt.tokenizers.bpe import BPETokenizer

    n_merges = vocab_size - 256 - len(tokenizer.special_tokens)
    merges = tokenizer.merges
    if merges is None or n_merges > len(merges):
        raise ValueError(f"{vocab_size:,} tokens: the trained BPE has {len(merges or ()):,} merges only")
    pairs = [(a, b) for a, b, _ in merges[:n_merges]]
    specials = sorted(tokenizer.special_tokens, key=tokenizer.special_tokens.get)
    return BPETokenizer.from_merges_ids(pairs, specials, tokenizer.pattern)


def sweep(
    spec_text: str,
    sizes: Sequence[int],
    train: Callable[[str], object],
    texts: Sequence,
    n_embd: int,
    tied: bool,
) -> dict:
    """Tokens per 1,000 characters of each text at each size.

    Args:
        spec_text: the SPEC swept (its size is replaced by each of ``sizes``).
        train: ``SPEC string -> tokenizer`` (trained on the training text).
        texts: :class:`storygpt.eval.intrinsic.Text` objects.
        n_embd, tied: the model whose embedding and output layer are counted.

    Returns:
        ``{"spec", "kind", "sizes", "vocab_sizes" (reached), "tokens_per_1k_chars": {text: [...]},
        "embedding_parameters": [...], "train_seconds", "encode_seconds", "prefix" (BPE from one training)}``.
    """
    spec = parse_spec(spec_text)
    t0 = time.perf_counter()
    prefix = spec.kind == "bpe"
    largest = train(str(spec.with_vocab_size(sizes[-1]))) if prefix else None
    train_s = time.perf_counter() - t0
    out = {
        "spec": spec_text,
        "kind": spec.kind,
        "sizes": list(sizes),
        "vocab_sizes": [],
        "tokens_per_1k_chars": {t.name: [] for t in texts},
        "embedding_parameters": [],
        "n_embd": n_embd,
        "tied": tied,
        "prefix": prefix,
    }
    encode_s = 0.0
    for v in sizes:
        t0 = time.perf_counter()
        if prefix:
            tok = largest if v == sizes[-1] else bpe_prefix(largest, min(v, int(largest.vocab_size)))
        else:
            tok = train(str(spec.with_vocab_size(v)))
        train_s += time.perf_counter() - t0
        out["vocab_sizes"].append(int(tok.vocab_size))
        out["embedding_parameters"].append(embedding_parameters(int(tok.vocab_size), n_embd, tied))
        for t in texts:
            enc = encode_text(tok, t)
            encode_s += enc.seconds
            out["tokens_per_1k_chars"][t.name].append(1000 * int(enc.ids.size) / t.chars)
    out["train_seconds"] = train_s
    out["encode_seconds"] = encode_s
    return out
