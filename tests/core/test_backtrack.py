"""The backtracking encoder of long chunks (csrc/encode/backtrack.cpp) against the merge loop.

``Encoder.encode_chunk(chunk, method)`` encodes one chunk with a chosen algorithm:
"merge" (the merge loop, checked elsewhere against ``bpe_reference`` and tiktoken)
and "backtrack".  They must give the same ids on long chunks over small alphabets
(runs of spaces, of 'a', 'ab', digits, random letters, mixed Unicode) with
vocabularies trained by storygpt (both tie rules), random merge lists with tied
ranks, and GPT-2's and cl100k's (where ``../shared/tiktoken_cache`` exists, also
against tiktoken).  Vocabularies whose merge trees are not ranked bottom-up must
be refused (and "backtrack" then falls back to the merge loop).
"""

from __future__ import annotations

import random

import pytest
from conftest import CACHE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storygpt import _bpe
from storygpt.tokenizers import bpe_reference as ref
from storygpt.tokenizers import train_bpe
from storygpt.tokenizers.interop import from_tiktoken

ALPHABETS = {
    "spaces": " ",
    "a": "a",
    "ab": "ab",
    "digits": "0123456789",
    "letters": "abcdefghijklmnopqrstuvwxyz",
    "unicode": "aé ё中\U0001f600",
}


def _text(rng: random.Random, alphabet: str, n_chars: int) -> bytes:
    """n_chars characters of `alphabet`, as UTF-8: uniform, or runs, or a short period repeated."""
    mode = rng.randrange(3)
    if mode == 0:
        s = "".join(rng.choice(alphabet) for _ in range(n_chars))
    elif mode == 1:
        s = ""
        while len(s) < n_chars:
            s += rng.choice(alphabet) * rng.randint(1, 40)
    else:
        period = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
        s = period * (n_chars // len(period) + 1)
    return s[:n_chars].encode("utf-8")


def _training_text() -> str:
    rng = random.Random(7)
    parts = []
    for alphabet in ALPHABETS.values():
        for _ in range(40):
            parts.append(_text(rng, alphabet, rng.randint(1, 200)).decode("utf-8"))
    return "\n".join(parts)


@pytest.fixture(scope="module", params=["smallest_ids", "largest_bytes"])
def trained(request):
    """The C++ encoder of a 600-token vocabulary trained by storygpt on runs and random text."""
    tok = train_bpe(_training_text(), 600, pattern="simple", special_tokens=[], tie_break=request.param)
    return tok._encoder


def _assert_same(enc, chunk: bytes):
    merge = enc.encode_chunk(chunk, "merge").tolist()
    assert enc.encode_chunk(chunk, "backtrack").tolist() == merge, chunk[:40]
    assert enc.decode(merge) == chunk


def test_trained_vocabularies_are_accepted(trained):
    assert trained.backtrack_refusal == ""


@pytest.mark.parametrize("alphabet", ALPHABETS)
def test_trained_long_chunks(trained, alphabet):
    rng = random.Random(alphabet)
    for n in (1, 2, 5, 65, 300, 3000, 20_000):
        _assert_same(trained, _text(rng, ALPHABETS[alphabet], n))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_trained_chunks_hypothesis(trained, data):
    alphabet = data.draw(st.sampled_from(sorted(ALPHABETS.values())))
    chunk = data.draw(st.text(alphabet=alphabet, min_size=1, max_size=400)).encode("utf-8")
    _assert_same(trained, chunk)


def _level_merges(rng: random.Random, n_merges: int, alphabet: bytes):
    """Random merges whose ranks rise from parts to whole but tie often across unrelated merges."""
    ids, rank_of = list(alphabet), dict.fromkeys(alphabet, -1)
    merges, ranks = [], []
    for k in range(n_merges):
        a, b = rng.choice(ids), rng.choice(ids)
        new = 256 + k
        rank = max(rank_of[a], rank_of[b]) + 1 + rng.randrange(2)
        merges.append((a, b, new))
        ranks.append(rank)
        ids.append(new)
        rank_of[new] = rank
    return merges, ranks


@pytest.mark.parametrize("seed", range(10))
def test_tied_ranks_match_reference(seed):
    """Ties across unrelated merges, and tokens that their own bytes never give back."""
    rng = random.Random(seed)
    merges, ranks = _level_merges(rng, rng.choice([10, 40, 120]), b"abc")
    ours = _bpe.Encoder(merges, ranks=ranks)
    theirs = ref.Encoder(merges, ranks=ranks)
    assert ours.backtrack_refusal == ""
    for _ in range(6):
        chunk = _text(rng, "abc", rng.choice([3, 65, 200, 700]))
        expected = theirs.encode(chunk)
        assert ours.encode_chunk(chunk, "backtrack").tolist() == expected, (seed, chunk)
        assert ours.encode_chunk(chunk, "merge").tolist() == expected


def test_unreachable_tokens():
    """'aaa' made twice: (aa, a) gives it, (a, aa) makes a token that no text ever gives."""
    merges = [(97, 97, 256), (256, 97, 257), (97, 256, 258), (257, 256, 259), (256, 257, 260)]
    ours, theirs = _bpe.Encoder(merges), ref.Encoder(merges)
    assert ours.backtrack_refusal == ""
    for n in range(1, 80):
        assert ours.encode_chunk(b"a" * n, "backtrack").tolist() == theirs.encode(b"a" * n), n


def test_tokens_made_by_several_merges():
    """Rank-file style: 'abc' from (ab, c) and from (a, bc) at one rank; the merge loop decides which tree."""
    a, b, c = b"abc"
    merges = [(a, b, 256), (b, c, 257), (256, c, 258), (a, 257, 258), (258, 258, 259), (257, 256, 260)]
    rng = random.Random(1)
    for ranks in ([0, 1, 2, 2, 3, 4], [1, 0, 2, 2, 3, 4]):
        ours, theirs = _bpe.Encoder(merges, ranks=ranks), ref.Encoder(merges, ranks=ranks)
        assert ours.backtrack_refusal == ""
        for _ in range(30):
            chunk = _text(rng, "abc", rng.choice([2, 7, 70, 300]))
            assert ours.encode_chunk(chunk, "backtrack").tolist() == theirs.encode(chunk), (ranks, chunk)


def test_refused_when_a_merge_ranks_below_its_parts():
    """(a,b)->ab at rank 1 below (ab,c)->abc at rank 0: merging can create lower ranks; refused."""
    merges = [(97, 98, 256), (256, 99, 257)]
    enc = _bpe.Encoder(merges, ranks=[1, 0])
    assert "rank" in enc.backtrack_refusal and "257" in enc.backtrack_refusal
    chunk = b"abcab" * 30
    assert enc.encode_chunk(chunk, "backtrack").tolist() == ref.Encoder(merges, ranks=[1, 0]).encode(chunk)
    # the same through the general path (an id made by two merges): abc = (ab, c) at rank 0 below ab's 1
    merges = [(97, 98, 256), (98, 99, 257), (256, 99, 258), (97, 257, 258)]
    enc = _bpe.Encoder(merges, ranks=[1, 2, 0, 0])
    assert "258" in enc.backtrack_refusal
    assert enc.encode_chunk(chunk, "backtrack").tolist() == ref.Encoder(merges, ranks=[1, 2, 0, 0]).encode(chunk)


def test_bad_method():
    with pytest.raises(ValueError, match="method must be"):
        _bpe.Encoder([]).encode_chunk(b"ab", "fast")


@pytest.fixture(scope="module", params=["gpt2", "cl100k_base"])
def openai(request):
    tiktoken = pytest.importorskip("tiktoken")
    if not CACHE.is_dir():
        pytest.skip(f"tiktoken cache not found at {CACHE}")
    return from_tiktoken(request.param), tiktoken.get_encoding(request.param)


def test_openai_long_chunks(openai):
    ours, theirs = openai
    enc = ours._encoder
    assert enc.backtrack_refusal == ""
    rng = random.Random(11)
    for alphabet in ALPHABETS.values():
        for n in (65, 1000, 5000):
            chunk = _text(rng, alphabet, n)
            _assert_same(enc, chunk)
    for text in (
        " " * 100_000,
        "a" * 100_000,
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(30_000)),
    ):
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text[:10]


@pytest.mark.slow
@pytest.mark.parametrize("tie_break", ["smallest_ids", "largest_bytes"])
def test_fuzz_trained(tie_break):
    rng = random.Random(tie_break)
    for vocab_size in (300, 1000, 3000):
        tok = train_bpe(_training_text(), vocab_size, pattern="simple", special_tokens=[], tie_break=tie_break)
        for _ in range(1500):
            alphabet = rng.choice(list(ALPHABETS.values()))
            _assert_same(tok._encoder, _text(rng, alphabet, rng.randint(1, 5000)))


@pytest.mark.slow
def test_fuzz_tied_ranks():
    rng = random.Random(2)
    for seed in range(300):
        merges, ranks = _level_merges(rng, rng.choice([30, 100, 300]), b"abcd")
        ours, theirs = _bpe.Encoder(merges, ranks=ranks), ref.Encoder(merges, ranks=ranks)
        for _ in range(10):
            chunk = _text(rng, "abcd", rng.choice([10, 65, 300, 1000]))
            assert ours.encode_chunk(chunk, "backtrack").tolist() == theirs.encode(chunk), (seed, chunk)


@pytest.mark.slow
def test_fuzz_openai(openai):
    ours, theirs = openai
    rng = random.Random(5)
    for _ in range(2000):
        alphabet = rng.choice(list(ALPHABETS.values()))
        chunk = _text(rng, alphabet, rng.randint(60, 20_000))
        _assert_same(ours._encoder, chunk)
        text = chunk.decode("utf-8")
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)


@st.composite
def _small_vocabularies(draw):
    """Random merges over 'ab' or 'abc' (pairs made again, ids made by two splits), ranks none/rising/random."""
    alphabet = draw(st.sampled_from([b"ab", b"abc"]))
    ids, by_bytes, bytes_of = list(alphabet), {}, {c: bytes([c]) for c in alphabet}
    merges, ranks, level = [], [], dict.fromkeys(alphabet, -1)
    mode = draw(st.sampled_from(["none", "rising", "random"]))
    for _ in range(draw(st.integers(1, 40))):
        a, b = draw(st.sampled_from(ids)), draw(st.sampled_from(ids))
        joined = bytes_of[a] + bytes_of[b]
        if joined in by_bytes and draw(st.booleans()):
            new = by_bytes[joined]  # the same bytes again: one id made by two merges
        else:
            new = 256 + len(bytes_of) - len(alphabet)
            ids.append(new)
            bytes_of[new] = joined
            by_bytes.setdefault(joined, new)
        rank = max(level[a], level[b]) + draw(st.integers(1, 2)) if mode != "random" else draw(st.integers(0, 40))
        level[new] = max(level.get(new, -1), rank)
        merges.append((a, b, new))
        ranks.append(rank)
    return merges, (None if mode == "none" else ranks), alphabet.decode()


@settings(max_examples=200, deadline=None)
@given(vocab=_small_vocabularies(), data=st.data())
def test_random_small_vocabularies_hypothesis(vocab, data):
    """The backtracking encoder, the merge loop and the reference agree on random small vocabularies."""
    merges, ranks, alphabet = vocab
    ours, theirs = _bpe.Encoder(merges, ranks=ranks), ref.Encoder(merges, ranks=ranks)
    for _ in range(3):
        chunk = data.draw(st.text(alphabet=alphabet, min_size=1, max_size=300)).encode()
        expected = theirs.encode(chunk)
        assert ours.encode_chunk(chunk, "backtrack").tolist() == expected
        assert ours.encode_chunk(chunk, "merge").tolist() == expected


def test_long_token_made_twice():
    """b a^4096 made by (b, a^4096) and (ba, a^4095): once a merge loop per token (quadratic), now by its trees."""
    merges, ids, n = [], {1: 97}, 1
    while n < 4096:
        merges.append((ids[n], ids[n], 256 + len(merges)))
        n *= 2
        ids[n] = merges[-1][2]
    left, length, part = ids[2048], 2048, 1024
    while part:
        merges.append((left, ids[part], 256 + len(merges)))
        left, length, part = merges[-1][2], length + part, part // 2
    assert length == 4095
    ba, top = 256 + len(merges), 257 + len(merges)
    merges += [(98, 97, ba), (98, ids[4096], top), (ba, left, top)]
    ours, theirs = _bpe.Encoder(merges), ref.Encoder(merges)
    assert ours.backtrack_refusal == ""
    for chunk in (b"b" + b"a" * 4096, b"ab" * 100 + b"b" + b"a" * 5000, b"ba" * 300):
        expected = theirs.encode(chunk)
        assert ours.encode_chunk(chunk, "backtrack").tolist() == expected
        assert ours.encode_chunk(chunk, "merge").tolist() == expected
    assert ours.encode_chunk(b"b" + b"a" * 4096, "backtrack").tolist() == [top]


def test_ids_far_beyond_the_merges_are_refused():
    """The tables are sized by the largest id: it must stay within 256 + merges + 2**16."""
    with pytest.raises(ValueError, match=r"merge 0 \(97, 98\) -> 5000000: new id 5000000 is out of range \[0, 65792\]"):
        _bpe.Encoder([(97, 98, 5_000_000)])
    with pytest.raises(ValueError, match=r"byte id 1099511627776 is out of range"):
        _bpe.Encoder([], byte_ids=[1 << 40] + list(range(1, 256)))
    assert _bpe.Encoder([(97, 98, 256 + 1 + (1 << 16) - 1)]).vocab_size == 256 + (1 << 16) + 1
