"""Batch encoding: the core's encode_batch / encode_batch_lists and BPETokenizer's batch methods.

Oracles: the core's single-text ``encode`` (itself checked against the reference
and tiktoken elsewhere) and tiktoken's ``encode_ordinary_batch``.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from conftest import CORPORA, needs_cache, needs_corpora, needs_cpp

from storygpt.tokenizers import train_bpe
from storygpt.tokenizers.interop import from_tiktoken

pytestmark = needs_cpp


def _texts(seed: int, n: int) -> list[str]:
    """n texts of 0-6,000 characters: English-like words, accents, CJK, digits, spaces, newlines."""
    rng = random.Random(seed)
    words = ["the", "story", "of", "a", "naïve", "café", "你好", "世界", "1234", "  ", "\n\n", "don't", "ok!"]
    out = []
    for _ in range(n):
        k = rng.choice([0, 1, 5, 200, 1000])
        out.append(" ".join(rng.choice(words) for _ in range(k)))
    return out


@pytest.fixture(scope="module")
def gpt2():
    return from_tiktoken("gpt2")


@pytest.fixture(scope="module")
def batch():
    """About 0.8 MB: many groups per thread, one text bigger than a group, empty texts."""
    texts = _texts(1, 400)
    texts.insert(123, " ".join(_texts(2, 150)))  # ~180 kB: handed out first
    return texts


@needs_cache
@pytest.mark.parametrize("threads", [1, 2, 3, 0])
def test_core_batch_calls_equal_encode(gpt2, batch, threads):
    enc = gpt2._encoder
    want = [enc.encode(t.encode("utf-8")).tolist() for t in batch]
    assert sum(map(len, want)) > 100_000 and [] in want
    ids, offsets = enc.encode_batch(batch, threads)
    assert ids.dtype == np.uint32 and offsets.dtype == np.int64 and offsets.shape == (len(batch) + 1,)
    assert [ids[offsets[k] : offsets[k + 1]].tolist() for k in range(len(batch))] == want
    id_objects = list(range(gpt2.vocab_size))
    lists = enc.encode_batch_lists(batch, id_objects, threads)
    assert lists == want
    # the lists hold the given objects, not new ints
    assert all(x is id_objects[x] for row in lists[:20] for x in row)
    # bytes items: the same ids
    assert enc.encode_batch_lists([t.encode("utf-8") for t in batch[:50]], id_objects, threads) == want[:50]


@needs_cache
def test_core_batch_known_ids(gpt2):
    # GPT-2 ids of "Hello world" and " café" (tiktoken: [15496, 995], [40304])
    enc = gpt2._encoder
    assert enc.encode_batch_lists(["Hello world", " café", ""], list(range(gpt2.vocab_size)), 2) == [
        [15496, 995],
        [40304],
        [],
    ]
    ids, offsets = enc.encode_batch(["Hello world", b" caf\xc3\xa9"], 2)
    assert ids.tolist() == [15496, 995, 40304] and offsets.tolist() == [0, 2, 3]


@needs_cache
def test_core_batch_errors(gpt2):
    enc = gpt2._encoder
    id_objects = list(range(gpt2.vocab_size))
    for call in (lambda t: enc.encode_batch(t, 2), lambda t: enc.encode_batch_lists(t, id_objects, 2)):
        with pytest.raises(TypeError, match=r"texts\[1\] must be str or bytes, got int"):
            call(["ok", 5])
        with pytest.raises(UnicodeEncodeError):
            call(["ok", "lone \ud800 surrogate"])
    with pytest.raises(ValueError, match="id_objects has 10 items for a vocabulary of 50256"):
        enc.encode_batch_lists(["ok"], id_objects[:10], 1)
    assert enc.encode_batch_lists([], id_objects, 2) == []


@needs_cache
@needs_corpora
def test_tokenizer_batch_equals_tiktoken(gpt2):
    import tiktoken

    text = (CORPORA / "russian_fortunes.txt").read_text(encoding="utf-8")[:400_000]
    docs = [d for part in text.split("<|endoftext|>") for d in part.split("\n\n")]
    want = tiktoken.get_encoding("gpt2").encode_ordinary_batch(docs, num_threads=2)
    for threads in (1, 2):
        assert gpt2.encode_batch(docs, num_threads=threads) == want
        ids, offsets = gpt2.encode_batch_numpy(docs, num_threads=threads)
        assert offsets[-1] == len(ids) == sum(map(len, want))
        assert ids[offsets[7] : offsets[8]].tolist() == want[7]


@pytest.mark.parametrize("backend", ["cpp", "reference"])
def test_tokenizer_batch_specials_and_surrogates(backend):
    tok = train_bpe("\n".join(_texts(3, 20)), 300, special_tokens=["<|endoftext|>"], backend=backend)
    eot = tok.special_tokens["<|endoftext|>"]
    texts = ["a café<|endoftext|>the story", "lone \ud800 surrogate", "", "<|endoftext|>"] + _texts(4, 30)
    want = [tok.encode(t, allowed_special="all") for t in texts]
    assert want[3] == [eot] and eot in want[0]
    assert want[1] == tok.encode("lone \ufffd surrogate")
    for threads in (1, 2):
        assert tok.encode_batch(texts, threads, allowed_special="all") == want
        assert tok.encode_batch(tuple(texts[1:]), threads, disallowed_special=()) == [
            tok.encode_ordinary(t) for t in texts[1:]
        ]
        ids, offsets = tok.encode_batch_numpy(texts, threads, allowed_special="all")
        assert [ids[offsets[k] : offsets[k + 1]].tolist() for k in range(len(texts))] == want
        with pytest.raises(ValueError, match=re.escape("special token '<|endoftext|>'")):
            tok.encode_batch(texts, threads)
        with pytest.raises(TypeError, match="text must be a str, got bytes"):
            tok.encode_batch_numpy(["ok", b"no"], threads)
