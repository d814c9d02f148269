"""The C++ BPE core (``storygpt._bpe``) against the Python reference.

Oracles: ``storygpt.tokenizers.bpe_reference`` (train, Encoder), hand-computed
encodings of long runs, and round trips.  Real-text cases read
``../shared/corpora/english_literature_plus_kjv.txt`` and skip when it is
absent; every other case carries its own text.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import CACHE, CORPORA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storygpt import _bpe
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


def _small_text(seed: int = 0, n_words: int = 3000) -> bytes:
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


SMALL = _small_text()


def _corpus(n_bytes: int, offset: int = 0) -> bytes:
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


# --------------------------------------------------------------------------
# Training parity
# --------------------------------------------------------------------------


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_train_matches_reference_small_text(pattern, tie_break):
    expected = ref_train(SMALL, 256 + 220, pattern=pattern, tie_break=tie_break)
    got = _bpe.train(SMALL, vocab_size=256 + 220, pattern=pattern, tie_break=tie_break)
    assert len(expected) >= 200
    assert got == expected


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_train_matches_reference_real_text(pattern, tie_break):
    data = _corpus(100_000)
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
    data = SMALL + _small_text(seed=1)
    one = _bpe.train(data, vocab_size=256 + 300, num_threads=1)
    for n in (2, 3, 0):
        assert _bpe.train(data, vocab_size=256 + 300, num_threads=n) == one


def test_same_merges_for_any_thread_count_with_specials_and_files(tmp_path):
    docs = [_small_text(seed=s, n_words=400) for s in range(6)]
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
    docs = [_small_text(seed=s, n_words=300) for s in range(5)]
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
    data = b"<|endoftext|>".join(_small_text(seed=s, n_words=300) for s in range(4)) + _straddle_text()
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
    text = _small_text(seed=7, n_words=1500) + "Unseen wörds: zebra-crossing, 99 bottles.".encode()
    enc = _bpe.Encoder(triples(merges), pattern=pattern)
    r = ref.Encoder(triples(merges), pattern=pattern)
    ids = enc.encode(text)
    assert ids.dtype == np.uint32
    assert ids.tolist() == r.encode(text)
    assert enc.vocab_size == 256 + len(merges)


def test_encode_matches_reference_real_text():
    data = _corpus(100_000)
    merges = ref_train(data, 256 + 200, pattern="simple", tie_break="smallest_ids")
    text = _corpus(30_000, offset=5_000_000)
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
    text = _small_text(seed=11, n_words=800)
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
    text = _small_text(seed=20 + seed, n_words=600) + b" aaaaaaaa abababab the the the"
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
# Long runs: hand-computed encodings, and speed
# --------------------------------------------------------------------------


def _run_merges(byte: int, levels: int, first_id: int):
    """(byte,byte)->t1, (t1,t1)->t2, ...: token k is byte * 2**k."""
    out = [(byte, byte, first_id)]
    for k in range(1, levels):
        out.append((first_id + k - 1, first_id + k - 1, first_id + k))
    return out


def _levels_encoding(n: int, byte: int, levels: int, first_id: int) -> list[int]:
    """Lowest rank first on a run of n equal bytes: every level pairs left to right."""
    seq = [byte] * n
    ids = [byte] + [first_id + k for k in range(levels)]
    for k in range(levels):
        cur, nxt = ids[k], ids[k + 1]
        out, i = [], 0
        while i < len(seq):
            if i + 1 < len(seq) and seq[i] == cur and seq[i + 1] == cur:
                out.append(nxt)
                i += 2
            else:
                out.append(seq[i])
                i += 1
        seq = out
    return seq


def test_levels_oracle_matches_reference():
    merges = _run_merges(97, 10, 256)
    r = ref.Encoder(merges)
    for n in (1, 2, 3, 7, 64, 100, 333):
        assert r.encode(b"a" * n) == _levels_encoding(n, 97, 10, 256)


def _seconds(fn, *args):
    """``(fn(*args), wall-clock seconds it took)``; only ``perf`` tests (left out by default) bound the time."""
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def _long_run_case(byte: int):
    """An Encoder whose merges pair up runs of ``byte`` 16 levels deep, and a run of 100,000 of them."""
    return _bpe.Encoder(_run_merges(byte, 16, 256)), bytes([byte]) * 100_000


@pytest.mark.parametrize("byte", [ord("a"), ord(" ")])
def test_long_runs_encode_right(byte):
    enc, data = _long_run_case(byte)
    ids = enc.encode(data)
    assert ids.tolist() == _levels_encoding(100_000, byte, 16, 256)
    assert enc.decode(ids) == data


@pytest.mark.perf
@pytest.mark.parametrize("byte", [ord("a"), ord(" ")])
def test_long_runs_encode_fast(byte):
    enc, data = _long_run_case(byte)
    _, elapsed = _seconds(enc.encode, data)
    assert elapsed < 1.0, f"100,000 equal bytes took {elapsed:.2f} s"


def _long_mixed_case():
    """Merges trained on SMALL, their Encoder, and one 102,000-byte chunk of a repeated word."""
    merges = ref_train(SMALL, 256 + 220)
    return merges, _bpe.Encoder(triples(merges)), ("thereonceuponLily" * 6000).encode()


def test_long_mixed_chunk_encodes_right():
    merges, enc, word = _long_mixed_case()
    assert enc.decode(enc.encode(word)) == word
    # the same as the reference on a prefix of whole periods
    short = ("thereonceuponLily" * 20).encode()
    assert enc.encode(short).tolist() == ref.Encoder(triples(merges)).encode(short)


@pytest.mark.perf
def test_long_mixed_chunk_encodes_fast():
    _, enc, word = _long_mixed_case()
    _, elapsed = _seconds(enc.encode, word)
    assert elapsed < 1.0, f"a 102,000-byte chunk took {elapsed:.2f} s"


LONG_RUNS = b"a" * 100_000 + b" " + b" " * 100_000 + b"b"


def test_long_runs_train_right():
    merges = _bpe.train(LONG_RUNS, vocab_size=256 + 40)
    assert merges[0] in ((97, 97), (32, 32))
    enc = _bpe.Encoder(triples(merges))
    assert enc.decode(enc.encode(LONG_RUNS)) == LONG_RUNS


@pytest.mark.perf
def test_long_runs_train_fast():
    _, elapsed = _seconds(lambda: _bpe.train(LONG_RUNS, vocab_size=256 + 40))
    assert elapsed < 2.0, f"training on two 100,000-byte runs took {elapsed:.2f} s"


# --------------------------------------------------------------------------
# Bulk calls, threads, files
# --------------------------------------------------------------------------


def test_encode_batch_equals_encode(trained_merges):
    enc = _bpe.Encoder(triples(trained_merges))
    texts = [_small_text(seed=s, n_words=s * 37 % 500) for s in range(40)] + [b"", b"x"]
    for n in (1, 2, 0):
        ids, offsets = enc.encode_batch(texts, num_threads=n)
        assert ids.dtype == np.uint32 and offsets.dtype == np.int64
        assert offsets.shape == (len(texts) + 1,) and offsets[0] == 0 and offsets[-1] == len(ids)
        for k, t in enumerate(texts):
            assert ids[offsets[k] : offsets[k + 1]].tolist() == enc.encode(t).tolist()
    ids, offsets = enc.encode_batch([])
    assert ids.shape == (0,) and offsets.tolist() == [0]
    assert enc.encode_batch(["héllo"])[0].tolist() == enc.encode("héllo".encode()).tolist()  # str: its UTF-8
    with pytest.raises(TypeError, match=r"texts\[0\] must be str or bytes, got bytearray"):
        enc.encode_batch([bytearray(b"neither")])


def test_one_encoder_many_python_threads(trained_merges):
    enc = _bpe.Encoder(triples(trained_merges))
    texts = [_small_text(seed=100 + s, n_words=700) for s in range(16)]
    expected = [ref.Encoder(triples(trained_merges)).encode(t) for t in texts[:3]]
    serial = [_bpe.Encoder(triples(trained_merges)).encode(t).tolist() for t in texts]
    assert serial[:3] == expected

    def work(k):
        t = texts[k % len(texts)]
        if k % 3 == 0:
            ids, off = enc.encode_batch([t, t], num_threads=2)
            return ids[off[0] : off[1]].tolist()
        return enc.encode(t).tolist()

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(work, range(64)))
    for k, got in enumerate(results):
        assert got == serial[k % len(texts)]


def _straddle_text() -> bytes:
    parts = [
        _small_text(seed=5, n_words=300),
        b"x" * 300,
        b" " * 257 + b"\n" * 3 + b"   tail",
        "東京は晴れ".encode() * 30,
        b"they're we've I'll   \n\n  don't ",
        b"\xff\xfe\xe3\x81 broken",
        b"12345678901234567890",
        b"word " * 50 + b"   ",
    ]
    return b"".join(parts) * 2


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("window", [1, 5, 64, 100, 4096])
def test_encode_file_streaming_equals_whole(tmp_path, trained_merges, pattern, window):
    data = _straddle_text()
    p = tmp_path / "f.txt"
    p.write_bytes(data)
    enc = _bpe.Encoder(triples(trained_merges), pattern=pattern)
    whole = enc.encode(data)
    got = enc.encode_file(str(p), window_bytes=window, num_threads=1 if window < 100 else 2)
    assert got.dtype == np.uint32
    assert got.tolist() == whole.tolist()


def test_encode_file_edge_cases(tmp_path, trained_merges):
    enc = _bpe.Encoder(triples(trained_merges))
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert enc.encode_file(empty).shape == (0,)
    big = tmp_path / "big.txt"
    data = _small_text(seed=9, n_words=40_000)
    big.write_bytes(data)
    assert enc.encode_file(big, window_bytes=1 << 16, num_threads=2).tolist() == enc.encode(data).tolist()
    with pytest.raises(FileNotFoundError, match="missing_file.txt"):
        enc.encode_file(str(tmp_path / "missing_file.txt"))


# --------------------------------------------------------------------------
# decode / token_bytes
# --------------------------------------------------------------------------


def test_decode_accepts_lists_and_arrays_and_names_unknown_ids(trained_merges):
    enc = _bpe.Encoder(triples(trained_merges))
    ids = enc.encode(b"hello there")
    assert enc.decode(ids) == enc.decode(ids.astype(np.int64)) == enc.decode(list(map(int, ids)))
    assert enc.decode([]) == b""
    with pytest.raises(ValueError, match="unknown token id 123456"):
        enc.decode([104, 123456])
    with pytest.raises(ValueError, match="unknown token id -1"):
        enc.decode([-1])
    with pytest.raises(ValueError, match=f"unknown token id {2**70}"):
        enc.decode([104, 2**70])
    assert enc.decode(int(t) for t in ids) == b"hello there"  # any iterable, like the reference
    assert enc.decode(ids.astype(np.uint16)) == b"hello there"
    with pytest.raises(ValueError, match="unknown token id 99999"):
        enc.token_bytes(99999)
    for i, (a, b) in enumerate(trained_merges):
        assert enc.token_bytes(256 + i) == enc.token_bytes(a) + enc.token_bytes(b)


# --------------------------------------------------------------------------
# General form on a real vocabulary: GPT-2 (bytes are not numbered by value)
# --------------------------------------------------------------------------

R50K = CACHE / "0ea1e91bbb3a60f729a8dc8f777fd2fc07cd8df4"


def _gpt2_merges():
    """Merges (left, right, new) and byte_ids from GPT-2's mergeable ranks.

    A token's merge is the split that BPE with only lower ranks leaves when run
    on the token's own bytes.
    """
    import base64

    if not R50K.exists():
        pytest.skip(f"GPT-2 ranks not found at {R50K}")
    ranks = {}
    with open(R50K, "rb") as f:
        for line in f:
            tok, r = line.split()
            ranks[base64.b64decode(tok)] = int(r)

    from storygpt.tokenizers import merges_from_ranks

    merges = [(ranks[a], ranks[b], ranks[a + b]) for a, b in merges_from_ranks(ranks)]
    return merges, [ranks[bytes([b])] for b in range(256)]


def test_gpt2_vocabulary_known_answers_and_tiktoken():
    merges, byte_ids = _gpt2_merges()
    assert byte_ids[:3] == [188, 189, 190]  # byte 0 is not token 0 in GPT-2
    enc = _bpe.Encoder(merges, byte_ids=byte_ids)
    assert enc.vocab_size == 50257 - 1  # <|endoftext|> (50256) is not a merge
    # Published GPT-2 ids (shared/README.md); "simple" chunks equal GPT-2's on these strings.
    known = {
        "Hello, do you like tea? ": [15496, 11, 466, 345, 588, 8887, 30, 220],
        "Akwirw ier": [33901, 86, 343, 86, 220, 959],
        " In the sunlit terraces of someunknownPlace.": [554, 262, 4252, 18250, 8812, 2114, 286, 617, 34680, 27271, 13],
        "This is some text": [1212, 318, 617, 2420],
        "do do": [4598, 466],
    }
    for text, ids in known.items():
        assert enc.encode(text.encode()).tolist() == ids
        assert enc.decode(ids) == text.encode()
    # Chunk by chunk against tiktoken's single-piece BPE on real text.
    tiktoken = pytest.importorskip("tiktoken")
    import os

    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(R50K.parent))
    te = tiktoken.get_encoding("gpt2")
    data = _corpus(60_000, offset=2_000_000) + "Ünïcödé 東京 🙂".encode()
    chunks = _bpe.pretokenize(data)
    ids, off = enc.encode_batch(chunks)
    for k, c in enumerate(chunks):
        assert ids[off[k] : off[k + 1]].tolist() == te._encode_single_piece(c), c


@pytest.mark.parametrize("pattern", PATTERNS)
def test_parallel_pretokenization_equals_serial(pattern):
    texts = [
        _small_text(seed=31, n_words=4000),
        _straddle_text() * 8,
        b" " * 5000 + b"x" * 5000 + b"\n" * 3000,  # no common boundary in small overlaps: serial fallback
    ]
    for data in texts:
        expected = np.cumsum([len(c) for c in _bpe.pretokenize(data, pattern)]).tolist()
        for threads, segment in ((2, 64), (3, 500), (2, 4096), (1, 64)):
            got = _bpe._split_chunks_parallel(data, pattern, threads, segment).tolist()
            assert got == expected, (threads, segment)


@pytest.mark.slow
@pytest.mark.parametrize("pattern", PATTERNS)
def test_whole_corpus_threads_and_streaming(tmp_path, pattern):
    """Whole shared corpus: merges identical for 1 and 2 threads (big pieces
    pre-tokenized in parallel), and encode_file == encode == encode_batch."""
    data = _corpus(20_000_000)
    one = _bpe.train(data, vocab_size=256 + 2000, pattern=pattern, num_threads=1)
    assert _bpe.train(data, vocab_size=256 + 2000, pattern=pattern, num_threads=2) == one
    enc = _bpe.Encoder(triples(one), pattern=pattern)
    whole = enc.encode(data)
    assert enc.decode(whole) == data
    assert np.array_equal(enc.encode_file(CORPUS, window_bytes=1 << 20, num_threads=2), whole)
    docs = data.split(b"<|endoftext|>")
    ids, off = enc.encode_batch(docs, num_threads=2)
    assert np.array_equal(ids[off[0] : off[1]], enc.encode(docs[0]))


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
def test_big_piece_streamed_in_windows(threads):
    """A 47 MB text with no special token is counted in several 32 MB windows.
    The corpus ends with a new line and starts with a letter, so three copies
    have exactly three times its chunks: the merges must be the same."""
    data = _corpus(20_000_000)
    assert data.endswith(b"\n") and data[:1].isalpha()
    once = _bpe.train(data, vocab_size=256 + 300, num_threads=threads)
    assert _bpe.train(data * 3, vocab_size=256 + 300, num_threads=threads) == once
    counts = _bpe.chunk_counts(data, num_threads=threads)
    assert counts == ref.count_chunks(data, "simple")
    assert _bpe.chunk_counts(data * 3, num_threads=threads) == {k: 3 * v for k, v in counts.items()}


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
