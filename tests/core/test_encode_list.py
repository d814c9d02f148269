"""The C++ encoder's list output and its per-call caches.

* ``Encoder.encode_list`` (what ``BPETokenizer.encode_ordinary`` uses) gives
  exactly ``Encoder.encode`` as a list, for str and bytes, with tiktoken as the
  oracle for the OpenAI vocabularies;
* the short-chunk cache's arena (chunks of at most 16 bytes with more than 3
  ids) is dropped and refilled when full, and the caches lent to concurrent
  calls never mix results: the identity encoder (no merges, id = byte) makes
  the expected ids the bytes themselves.
"""

import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import needs_cache, needs_cpp

from storygpt import _bpe
from storygpt.tokenizers.interop import from_tiktoken

pytestmark = needs_cpp

MIXED = "Hello, world! Ünïcödé 漢字かな 12345 don't   stop\n\n\tтекст " * 50


def _random_words(count: int, seed: int) -> str:
    """`count` distinct space-led words of 15 random letters: chunks of exactly 16 bytes."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return "".join(" " + "".join(rng.choice(letters) for _ in range(15)) for _ in range(count))


def test_encode_list_equals_encode_for_str_and_bytes():
    enc = _bpe.Encoder([(104, 101, 256), (256, 108, 257), (32, 119, 258)], pattern="gpt2")
    objects = list(range(enc.vocab_size))
    data = MIXED.encode("utf-8")
    expected = enc.encode(data).tolist()
    assert enc.encode_list(data, objects) == expected
    assert enc.encode_list(MIXED, objects) == expected
    assert enc.encode_list(b"", objects) == [] and enc.encode_list("", objects) == []
    assert enc.encode_list("hello", objects) == [257, 108, 111]


def test_encode_list_shares_the_given_int_objects():
    enc = _bpe.Encoder([(97, 98, 256)], pattern="gpt2")
    objects = [1000 + i for i in range(enc.vocab_size)]  # ints above the interpreter's small-int cache
    ids = enc.encode_list(b"ab ab", objects)
    assert ids == [1256, 1032, 1256]
    assert ids[0] is objects[256] and ids[2] is objects[256]


def test_encode_list_bad_input():
    enc = _bpe.Encoder([(97, 98, 256)])
    with pytest.raises(UnicodeEncodeError):
        enc.encode_list("a\ud800b", list(range(257)))
    with pytest.raises(TypeError, match="text must be str or bytes, got int"):
        enc.encode_list(123, list(range(257)))
    with pytest.raises(ValueError, match="id_objects has 256 items for a vocabulary of 257"):
        enc.encode_list(b"ab", list(range(256)))


def test_identity_encoder_refills_the_short_chunk_arena():
    # 80,000 distinct 16-byte chunks of 16 ids each: 1.28 M ids, past the
    # arena's 2**20, so the short-chunk cache is dropped once in each call.
    enc = _bpe.Encoder([], pattern="gpt2")
    data = _random_words(80_000, seed=1).encode("ascii")
    expected = np.frombuffer(data, dtype=np.uint8).astype(np.uint32)
    for _ in range(2):  # the second call gets the pooled, already filled caches
        np.testing.assert_array_equal(enc.encode(data), expected)


def test_concurrent_calls_get_their_own_caches():
    enc = _bpe.Encoder([(97, 98, 256), (256, 99, 257)], pattern="gpt2")
    texts = [_random_words(3000, seed=s).replace("q", "abc").encode("ascii") for s in range(8)]
    expected = [enc.encode(t).tolist() for t in texts]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            assert list(pool.map(lambda t: enc.encode(t).tolist(), texts)) == expected


@needs_cache
@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_encode_ordinary_lists_equal_tiktoken(name):
    import tiktoken

    tok = from_tiktoken(name)
    ref = tiktoken.get_encoding(name)
    for text in (MIXED, "a\ud800b lone surrogate", _random_words(2000, seed=3), ""):
        ids = tok.encode_ordinary(text)
        assert ids == ref.encode_ordinary(text)
        assert all(type(i) is int for i in ids)
