"""The C++ BPE core (``storygpt._bpe``) against the Python reference: training, encoding, round trips,
malformed merges (long inputs, bulk calls, files, decode and GPT-2's vocabulary: test_core_encoder.py).

Oracles: ``storygpt.tokenizers.bpe_reference`` (train, Encoder) and round trips.  Real-text
cases read ``../shared/corpora/english_literature_plus_kjv.txt`` and skip when it is absent;
every other case carries its own text (tests/core/core_cases.py).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from core_cases import PATTERNS, SMALL, TIE_BREAKS, corpus_slice, ref_train, small_text, straddle_text, triples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storygpt import _bpe
from storygpt.tokenizers import bpe_reference as ref

# --------------------------------------------------------------------------
# Training parity
# --------------------------------------------------------------------------


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_train_matches_referencesmall_text(pattern, tie_break):
    expected = ref_train(SMALL, 256 + 220, pattern=pattern, tie_break=tie_break)
    got = _bpe.train(SMALL, vocab_size=256 + 220, pattern=pattern, tie_break=tie_break)
    assert len(expected) >= 200
    assert got == expected


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_train_matches_reference_real_text(pattern, tie_break):
    data = corpus_slice(100_000)
    expected = ref_train(data, 256 + 200, pattern=pattern, tie_break=tie_break)
    got = _bpe.train(data, vocab_size=256 + 200, pattern=pattern, tie_break=tie_break)
    assert len(expected) == 200
    assert got == expected


def test_tie_breaks_differ_somewhere():
    """Both rules are exercised: on this text they pick different merges."""
    a = _bpe.train(SMALL, vocab_size=256 + 200, tie_break="smallest_ids")
    b = _bpe.train(SMALL, vocab_size=256 + 200, tie_break="largest_bytes")
    assert a != b


def test_train_hand_computed():
    # "aaab" x1: pairs (a,a)=2, (a,b)=1 -> (97,97) first; then "aa a b": (256,97)=1, (97,98)=1;
    # tie at count 1 -> smallest ids (97, 98)
    assert _bpe.train(b"aaab", vocab_size=258) == [(97, 97), (97, 98)]
    # largest bytes: candidates b"aa"+b"a" vs b"a"+b"b": b"aa" > b"a"
    assert _bpe.train(b"aaab", vocab_size=258, tie_break="largest_bytes") == [(97, 97), (256, 97)]


def test_same_merges_for_any_thread_count():
    data = SMALL + small_text(seed=1)
    one = _bpe.train(data, vocab_size=256 + 300, num_threads=1)
    for n in (2, 3, 0):
        assert _bpe.train(data, vocab_size=256 + 300, num_threads=n) == one


def test_same_merges_for_any_thread_count_with_specials_and_files(tmp_path):
    docs = [small_text(seed=s, n_words=400) for s in range(6)]
    paths = []
    for i, d in enumerate(docs[3:]):
        p = tmp_path / f"doc{i}.txt"
        p.write_bytes(d)
        paths.append(str(p))
    data = b"<|endoftext|>".join(docs[:3])
    kw = dict(vocab_size=256 + 1 + 150, special_tokens=[b"<|endoftext|>"])
    one = _bpe.train(data, files=paths, num_threads=1, **kw)
    assert _bpe.train(data, files=paths, num_threads=2, **kw) == one
    # oracle: each file is a separate text == joined with a special token
    sep = b"\x00SEP\x00"
    joined = data + sep + sep.join(docs[3:])
    expected = ref.train(joined, 256 + 2 + 150, special_tokens=[b"<|endoftext|>", sep])
    assert one == expected


def test_special_tokens_never_inside_merges():
    # '<', '|', '>' occur only inside the special tokens, so any token holding
    # one of them would contain or cross a special token.
    docs = [small_text(seed=s, n_words=300) for s in range(5)]
    data = b"<|endoftext|>".join(docs) + b"<|pad|><|endoftext|>x"
    specials = [b"<|endoftext|>", b"<|pad|>"]
    got = _bpe.train(data, vocab_size=256 + 2 + 200, special_tokens=specials)
    assert got == ref.train(data, 256 + 2 + 200, special_tokens=specials)
    enc = _bpe.Encoder(triples(got))
    for i in range(len(got)):
        tb = enc.token_bytes(256 + i)
        assert not any(c in tb for c in b"<|>"), (i, tb)
    # without the special tokens the text does produce such merges
    plain = _bpe.train(data, vocab_size=256 + 200)
    enc2 = _bpe.Encoder(triples(plain))
    assert any(b"|" in enc2.token_bytes(256 + i) for i in range(len(plain)))


@pytest.mark.parametrize("pattern", PATTERNS)
def test_chunk_counts_match_reference(pattern):
    data = b"<|endoftext|>".join(small_text(seed=s, n_words=300) for s in range(4)) + straddle_text()
    for threads in (1, 2):
        got = _bpe.chunk_counts(data, pattern, [b"<|endoftext|>"], threads)
        assert got == dict(ref.count_chunks(data, pattern, [b"<|endoftext|>"]))


def test_special_tokens_longest_match_wins():
    # at a position where both start, the longer special token wins
    data = b"xx<ab>yy<ab>c<a" * 40 + b"<a" + b"xy<ab>cxy"
    specials = [b"<ab>", b"<ab>c"]
    got = _bpe.train(data, vocab_size=256 + 2 + 30, special_tokens=specials)
    assert got == ref.train(data, 256 + 2 + 30, special_tokens=specials)


def test_vocab_size_too_small_names_the_numbers():
    with pytest.raises(ValueError, match=r"vocab_size=257 .*2 special tokens.*at least 258"):
        _bpe.train(b"hello", vocab_size=257, special_tokens=[b"<a>", b"<b>"])
    with pytest.raises(ValueError, match=r"vocab_size=100 .*at least 256"):
        _bpe.train(b"hello", vocab_size=100)
    assert _bpe.train(b"hello", vocab_size=256) == []


def test_more_merges_than_text_allows():
    data = b"abcabd abc"
    got = _bpe.train(data, vocab_size=256 + 1000)
    assert got == ref.train(data, 256 + 1000)
    assert 0 < len(got) < 10
    assert _bpe.train(b"", vocab_size=300) == []
    assert _bpe.train(b"a\nb\nc", vocab_size=300) == ref.train(b"a\nb\nc", 300) == []


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
def test_wide_and_narrow_symbols_same_merges(tie_break):
    """Above 65,536 ids the trainer keeps 32-bit symbols instead of 16-bit: same merges, to the last."""
    data = SMALL + b" " + b"ab" * 300  # the run of 600 bytes is a long word
    wide = _bpe.train(data, vocab_size=70_000, tie_break=tie_break)
    assert wide == ref_train(data, 70_000, tie_break=tie_break)
    assert 1000 < len(wide) < 65_536 - 256
    assert _bpe.train(data, vocab_size=65_536, tie_break=tie_break) == wide


def test_min_frequency_stops_early():
    got = _bpe.train(SMALL, vocab_size=256 + 5000, min_frequency=40)
    assert got == ref_train(SMALL, 256 + 5000, min_frequency=40)
    assert 10 < len(got) < 5000
    with pytest.raises(ValueError, match="min_frequency"):
        _bpe.train(SMALL, vocab_size=300, min_frequency=0)


def test_bad_pattern_and_tie_break():
    with pytest.raises(ValueError, match="nope"):
        _bpe.train(b"abc", vocab_size=300, pattern="nope")
    with pytest.raises(ValueError, match="nope"):
        _bpe.train(b"abc", vocab_size=300, tie_break="nope")
    with pytest.raises(ValueError, match="nope"):
        _bpe.Encoder([], pattern="nope")


def test_train_missing_file_names_path(tmp_path):
    missing = tmp_path / "no_such_corpus.txt"
    with pytest.raises(FileNotFoundError, match="no_such_corpus.txt"):
        _bpe.train(files=[str(missing)], vocab_size=300)


def test_train_accepts_str_and_paths(tmp_path):
    p = tmp_path / "t.txt"
    p.write_bytes(SMALL)
    a = _bpe.train(files=[p], vocab_size=300)
    assert a == _bpe.train(SMALL.decode("utf-8"), vocab_size=300) == _bpe.train(SMALL, vocab_size=300)


# --------------------------------------------------------------------------
# Encoding parity
# --------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", PATTERNS)
def test_encode_matches_reference_trained_merges(pattern):
    merges = ref_train(SMALL, 256 + 220, pattern=pattern)
    text = small_text(seed=7, n_words=1500) + "Unseen wörds: zebra-crossing, 99 bottles.".encode()
    enc = _bpe.Encoder(triples(merges), pattern=pattern)
    r = ref.Encoder(triples(merges), pattern=pattern)
    ids = enc.encode(text)
    assert ids.dtype == np.uint32
    assert ids.tolist() == r.encode(text)
    assert enc.vocab_size == 256 + len(merges)


def test_encode_matches_reference_real_text():
    data = corpus_slice(100_000)
    merges = ref_train(data, 256 + 200, pattern="simple", tie_break="smallest_ids")
    text = corpus_slice(30_000, offset=5_000_000)
    enc = _bpe.Encoder(triples(merges))
    assert enc.encode(text).tolist() == ref.Encoder(triples(merges)).encode(text)


def _general_form(merges, seed):
    """Shuffle byte ids and renumber merge outputs; returns (byte_ids, triples, id_map)."""
    rng = random.Random(seed)
    pool = rng.sample(range(5000), 256 + len(merges))
    byte_ids = pool[:256]
    id_map = {b: byte_ids[b] for b in range(256)}
    for i in range(len(merges)):
        id_map[256 + i] = pool[256 + i]
    general = [(id_map[a], id_map[b], id_map[256 + i]) for i, (a, b) in enumerate(merges)]
    return byte_ids, general, id_map


def test_encode_general_form_shuffled_byte_ids_and_new_ids():
    merges = ref_train(SMALL, 256 + 220)
    byte_ids, general, id_map = _general_form(merges, seed=3)
    text = small_text(seed=11, n_words=800)
    enc = _bpe.Encoder(general, byte_ids=byte_ids)
    expected = ref.Encoder(general, byte_ids=byte_ids).encode(text)
    assert enc.encode(text).tolist() == expected
    # and it is the standard encoding, renamed
    standard = _bpe.Encoder(triples(merges)).encode(text).tolist()
    assert expected == [id_map[t] for t in standard]
    assert enc.decode(expected) == text
    assert enc.vocab_size == max(id_map.values()) + 1
    assert enc.token_bytes(byte_ids[ord("a")]) == b"a"


@pytest.mark.parametrize("seed", [0, 1])
def test_encode_explicit_ranks_with_ties(seed):
    merges = ref_train(SMALL, 256 + 220)
    rng = random.Random(seed)
    # ranks with many ties and out of list order
    ranks = [rng.randrange(40) for _ in merges]
    text = small_text(seed=20 + seed, n_words=600) + b" aaaaaaaa abababab the the the"
    enc = _bpe.Encoder(triples(merges), ranks=ranks)
    r = ref.Encoder(triples(merges), ranks=ranks)
    assert enc.encode(text).tolist() == r.encode(text)
    # ties resolved leftmost: (a,b)->X and (b,c)->Y with equal rank on "abc" -> X c
    e2 = _bpe.Encoder([(97, 98, 300), (98, 99, 301)], ranks=[5, 5])
    assert e2.encode(b"abc").tolist() == [300, 99]
    e3 = _bpe.Encoder([(97, 98, 300), (98, 99, 301)], ranks=[6, 5])
    assert e3.encode(b"abc").tolist() == [97, 301]


def test_duplicate_pairs_first_wins_like_reference():
    merges = [(97, 98, 256), (97, 98, 257), (256, 99, 258)]
    enc = _bpe.Encoder(merges)
    r = ref.Encoder(merges)
    for text in (b"abc", b"aab", b"aaaa", b"abcab"):
        assert enc.encode(text).tolist() == r.encode(text)
    assert enc.token_bytes(256) == b"ab"


def test_encoder_rejects_malformed_input():
    with pytest.raises(ValueError, match="256 distinct"):
        _bpe.Encoder([], byte_ids=list(range(255)))
    with pytest.raises(ValueError, match="256 distinct"):
        _bpe.Encoder([], byte_ids=[0] * 256)
    with pytest.raises(ValueError, match=r"merge 1 \(300, 97\) -> 301 uses an id not defined"):
        _bpe.Encoder([(97, 97, 256), (300, 97, 301)])
    with pytest.raises(ValueError, match=r"merge 3 \(97, 97\) -> 256 makes an id that already stands for other bytes"):
        _bpe.Encoder([(97, 98, 256), (97, 98, 257), (256, 99, 258), (97, 97, 256)])
    with pytest.raises(ValueError, match="ranks has 1 entries for 2 merges"):
        _bpe.Encoder([(97, 97, 256), (256, 97, 257)], ranks=[0])


# --------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------

ROUND_TRIP = {
    "story": b"Once upon a time, a little girl named Lily found a shiny red ball in the park.",
    "accents_japanese_emoji": "Café naïve Ærøskøbing — 東京は晴れです 🌸🙂 fin.".encode(),
    "whitespace": b"two  spaces\n\nblank line above\tand a tab  \n  \n",
    "invalid_utf8": b"ok \xff\xfe bad \xc3( half \xe3\x81 end\x80",
    "empty": b"",
}


@pytest.fixture(scope="module")
def trained_merges():
    return ref_train(SMALL, 256 + 220)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("case", sorted(ROUND_TRIP))
def test_round_trip(case, pattern, trained_merges):
    text = ROUND_TRIP[case]
    enc = _bpe.Encoder(triples(trained_merges), pattern=pattern)
    ids = enc.encode(text)
    assert enc.decode(ids) == text
    assert enc.decode(ids.tolist()) == text
    assert ids.tolist() == ref.Encoder(triples(trained_merges), pattern=pattern).encode(text)
    if case == "empty":
        assert ids.shape == (0,)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_hypothesis_round_trip(text, trained_merges):
    enc = _ENC_CACHE.setdefault("small", _bpe.Encoder(triples(trained_merges)))
    data = text.encode("utf-8", errors="surrogatepass")
    assert enc.decode(enc.encode(data)) == data


_ENC_CACHE: dict = {}


@settings(max_examples=40, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab cé\n東.'sl"), max_size=300) | st.text(max_size=120),
    tie_break=st.sampled_from(TIE_BREAKS),
    pattern=st.sampled_from(PATTERNS),
)
def test_hypothesis_train_and_encode_match_reference(text, tie_break, pattern):
    data = text.encode("utf-8", errors="surrogatepass")
    merges = _bpe.train(data, vocab_size=256 + 25, tie_break=tie_break, pattern=pattern)
    assert merges == ref.train(data, 256 + 25, tie_break=tie_break, pattern=pattern)
    enc = _bpe.Encoder(triples(merges), pattern=pattern)
    probe = data + b" " + data[::-1]
    assert enc.encode(probe).tolist() == ref.Encoder(triples(merges), pattern=pattern).encode(probe)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=200))
def test_hypothesis_arbitrary_bytes_round_trip(data, trained_merges):
    enc = _ENC_CACHE.setdefault("small", _bpe.Encoder(triples(trained_merges)))
    ids = enc.encode(data)
    assert enc.decode(ids) == data


# --------------------------------------------------------------------------
# The C++ Encoder and the reference refuse the same malformed merges
# --------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["cpp", "reference"])
def test_encoder_refuses_a_merge_that_redefines_an_id(backend):
    from storygpt import _bpe
    from storygpt.tokenizers import bpe_reference

    Enc = _bpe.Encoder if backend == "cpp" else bpe_reference.Encoder
    with pytest.raises(ValueError, match=r"merge 0 \(97, 98\) -> 5 makes an id that already stands for other bytes"):
        Enc([(97, 98, 5)])
    with pytest.raises(ValueError, match=r"merge 1 \(99, 100\) -> 256"):
        Enc([(97, 98, 256), (99, 100, 256)])
    # several merges may make the same token (rank files): allowed
    enc = Enc([(97, 98, 256), (256, 99, 257), (97, 98, 256)])
    assert list(enc.encode(b"abc")) == [257]


@pytest.mark.parametrize("backend", ["cpp", "reference"])
def test_encoder_ranks_must_match_merges(backend):
    from storygpt import _bpe
    from storygpt.tokenizers import bpe_reference

    Enc = _bpe.Encoder if backend == "cpp" else bpe_reference.Encoder
    with pytest.raises(ValueError, match="ranks has 0 entries for 1 merges"):
        Enc([(97, 98, 256)], ranks=[])
    with pytest.raises(ValueError, match="byte_ids must hold 256 distinct ids"):
        Enc([], byte_ids=list(range(255)))
