"""Chunks longer than 64 bytes (backtracking, or the run-queue loop where the ranks forbid it) against two oracles.

* ``bpe_reference.Encoder`` with general-form merges: random merges over a
  3-letter alphabet with random ranks that tie often and do not follow the
  merge order (so merging can create a pair of *lower* rank than the one just
  merged, and many pairs share the lowest rank: leftmost first).
* tiktoken's GPT-2 encoder on long runs and long random words (skipped when
  tiktoken or ``../shared/tiktoken_cache`` is missing).

Every text here is letters only, so with the "simple" pattern (and GPT-2's for
the tiktoken cases) each text is a single chunk.
"""

from __future__ import annotations

import os
import random

import pytest
from conftest import CACHE

from storygpt import _bpe
from storygpt.tokenizers import bpe_reference as ref
from storygpt.tokenizers.interop import from_tiktoken


def _random_merges(rng: random.Random, n_merges: int, alphabet: bytes):
    ids = list(alphabet)
    merges, ranks = [], []
    for k in range(n_merges):
        a, b = rng.choice(ids), rng.choice(ids)
        new = 256 + k
        merges.append((a, b, new))
        ranks.append(rng.randrange(n_merges // 3 + 1))  # ties and out-of-order ranks
        ids.append(new)
    return merges, ranks


@pytest.mark.parametrize("seed", range(12))
def test_long_chunks_match_reference_with_random_ranks(seed):
    rng = random.Random(seed)
    alphabet = b"abc"
    merges, ranks = _random_merges(rng, rng.choice([5, 20, 60]), alphabet)
    use_ranks = ranks if seed % 3 else None  # also the default ranks (merge order)
    ours = _bpe.Encoder(merges, pattern="simple", ranks=use_ranks)
    theirs = ref.Encoder(merges, pattern="simple", ranks=use_ranks)
    for _ in range(4):
        n = rng.choice([65, 66, 100, 257, 600])
        if rng.random() < 0.3:  # long runs of one letter, or a short period repeated
            period = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 3)))
            text = (period * n)[:n]
        else:
            text = bytes(rng.choice(alphabet) for _ in range(n))
        assert ref.pretokenize(text, "simple") == [text]
        assert ours.encode(text).tolist() == theirs.encode(text), (seed, text)


def test_long_level_runs_match_reference():
    """(a,a)->A, (A,A)->B, ...: every level is pending when the one below finishes."""
    merges = [(97, 97, 256)] + [(256 + k, 256 + k, 257 + k) for k in range(8)]
    ours, theirs = _bpe.Encoder(merges), ref.Encoder(merges)
    for n in (65, 127, 128, 129, 511, 1000):
        text = b"a" * n
        assert ours.encode(text).tolist() == theirs.encode(text), n


@pytest.fixture(scope="module")
def gpt2():
    tiktoken = pytest.importorskip("tiktoken")
    if not CACHE.is_dir():
        pytest.skip(f"tiktoken cache not found at {CACHE}")
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(CACHE))

    return from_tiktoken("gpt2"), tiktoken.get_encoding("gpt2")


def test_long_chunks_match_tiktoken(gpt2):
    ours, theirs = gpt2
    rng = random.Random(3)
    texts = ["a" * n for n in (65, 1000, 4097, 100_000)]
    texts += ["".join(rng.choice("etaoinshrdlu") for _ in range(n)) for n in (70, 3000, 50_000)]
    texts += ["thereonceuponLily" * 3000, "ё" * 20_000]
    for t in texts:
        assert ours.encode_ordinary(t) == theirs.encode_ordinary(t), (len(t), t[:20])
