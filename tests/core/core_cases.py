"""What the tests of the C++ BPE core share: the texts (a small one they carry, slices of the shared
corpus), the patterns and tie-breaks, and the Python reference's merges (cached per process)."""

from __future__ import annotations

import random

import pytest
from conftest import CORPORA

from storygpt.tokenizers import bpe_reference as ref

CORPUS = CORPORA / "english_literature_plus_kjv.txt"
PATTERNS = ["simple", "gpt2", "gpt4"]
TIE_BREAKS = ["smallest_ids", "largest_bytes"]


# A small text the tests carry themselves: prose with punctuation, numbers,
# contractions, repeated words, non-ASCII letters, runs of white space.
_WORDS = (
    "the a once upon time there was little girl named Lily she loved to play in park with her "
    "friend Tom they're we'll I'd don't it's café naïve résumé Москва 東京 ☀️ 12 345 6789 "
    "happy sad big small red blue dog cat ran jumped said hello goodbye"
).split()


def small_text(seed: int = 0, n_words: int = 3000) -> bytes:
    rng = random.Random(seed)
    out = []
    syllables = ["ka", "lo", "mi", "ren", "sto", "ry", "bel", "qu", "ox", "zan", "pé", "ü", "th", "ing"]
    for _ in range(n_words):
        if rng.random() < 0.3:  # invented words give the trainer plenty of pairs
            w = "".join(rng.choice(syllables) for _ in range(rng.randint(1, 4)))
        else:
            w = rng.choice(_WORDS)
        out.append(w)
        r = rng.random()
        if r < 0.08:
            out.append(rng.choice([".", ",", "!", "?", ";", "...", "--"]))
        if r < 0.03:
            out.append(rng.choice(["\n", "\n\n", "  ", "\t", "   \n"]))
        out.append(" ")
    return "".join(out).encode("utf-8")


SMALL = small_text()


def corpus_slice(n_bytes: int, offset: int = 0) -> bytes:
    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    with open(CORPUS, "rb") as f:
        f.seek(offset)
        return f.read(n_bytes)


_REF_CACHE: dict = {}


def ref_train(data: bytes, vocab_size: int, **kw) -> list[tuple[int, int]]:
    key = (hash(data), len(data), vocab_size, tuple(sorted(kw.items(), key=str)))
    if key not in _REF_CACHE:
        _REF_CACHE[key] = ref.train(data, vocab_size, **kw)
    return _REF_CACHE[key]


def triples(merges):
    return [(a, b, 256 + i) for i, (a, b) in enumerate(merges)]


def straddle_text() -> bytes:
    """Text whose chunks straddle the windows of streamed and parallel pre-tokenization."""
    parts = [
        small_text(seed=5, n_words=300),
        b"x" * 300,
        b" " * 257 + b"\n" * 3 + b"   tail",
        "東京は晴れ".encode() * 30,
        b"they're we've I'll   \n\n  don't ",
        b"\xff\xfe\xe3\x81 broken",
        b"12345678901234567890",
        b"word " * 50 + b"   ",
    ]
    return b"".join(parts) * 2
