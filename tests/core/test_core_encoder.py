"""The C++ BPE core (``storygpt._bpe``) on long inputs and in bulk: long runs (hand-computed encodings,
and speed), batches, threads, streamed files, decode, GPT-2's vocabulary (bytes not numbered by value),
parallel pre-tokenization (training and encoding parity with the reference: test_bpe_core.py).

Oracles: hand-computed encodings of long runs, ``storygpt.tokenizers.bpe_reference``, tiktoken's
GPT-2 ranks, and round trips.  Real-text cases read the shared corpus and skip when it is absent.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import CACHE
from core_cases import CORPUS, PATTERNS, SMALL, corpus_slice, ref_train, small_text, straddle_text, triples

from storygpt import _bpe
from storygpt.tokenizers import bpe_reference as ref


@pytest.fixture(scope="module")
def trained_merges():
    return ref_train(SMALL, 256 + 220)


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
    texts = [small_text(seed=s, n_words=s * 37 % 500) for s in range(40)] + [b"", b"x"]
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
    texts = [small_text(seed=100 + s, n_words=700) for s in range(16)]
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


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("window", [1, 5, 64, 100, 4096])
def test_encode_file_streaming_equals_whole(tmp_path, trained_merges, pattern, window):
    data = straddle_text()
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
    data = small_text(seed=9, n_words=40_000)
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
    data = corpus_slice(60_000, offset=2_000_000) + "Ünïcödé 東京 🙂".encode()
    chunks = _bpe.pretokenize(data)
    ids, off = enc.encode_batch(chunks)
    for k, c in enumerate(chunks):
        assert ids[off[k] : off[k + 1]].tolist() == te._encode_single_piece(c), c


@pytest.mark.parametrize("pattern", PATTERNS)
def test_parallel_pretokenization_equals_serial(pattern):
    texts = [
        small_text(seed=31, n_words=4000),
        straddle_text() * 8,
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
    data = corpus_slice(20_000_000)
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
    data = corpus_slice(20_000_000)
    assert data.endswith(b"\n") and data[:1].isalpha()
    once = _bpe.train(data, vocab_size=256 + 300, num_threads=threads)
    assert _bpe.train(data * 3, vocab_size=256 + 300, num_threads=threads) == once
    counts = _bpe.chunk_counts(data, num_threads=threads)
    assert counts == ref.count_chunks(data, "simple")
    assert _bpe.chunk_counts(data * 3, num_threads=threads) == {k: 3 * v for k, v in counts.items()}
