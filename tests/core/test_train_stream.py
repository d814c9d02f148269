"""Streaming BPE training: iterators, chunk counts, files in windows, long chunks, progress, bad input.

Oracle: ``storygpt.tokenizers.bpe_reference`` (``train`` on the whole text,
``count_chunks``).  Texts given one by one are the reference's text joined by
one more special token, which keeps chunks from crossing texts.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import CORPORA
from hypothesis import given, settings
from hypothesis import strategies as st

from storygpt import _bpe
from storygpt.tokenizers import EOT, BPETokenizer, train_bpe
from storygpt.tokenizers import bpe_reference as ref

PATTERNS = ["simple", "gpt2", "gpt4"]
TIE_BREAKS = ["smallest_ids", "largest_bytes"]
SEP = b"\x00<sep>\x00"


def _texts(seed: int, n: int = 12) -> list[bytes]:
    rng = random.Random(seed)
    words = ["the", "cat", "sat", " on", "mat", "it's", "we'll", "naïve", "東京", "42", "7", "\n", "  ", "\t", "!", "?"]
    out = []
    for _ in range(n):
        k = rng.randint(0, 60)
        out.append(" ".join(rng.choice(words) for _ in range(k)).encode("utf-8"))
    return out


def _reference_merges(texts: list[bytes], vocab_size: int, pattern: str, tie_break: str, specials=()):
    """Merges of bpe_reference.train on the texts as separate texts (joined by one more special token)."""
    return ref.train(SEP.join(texts), vocab_size + 1, pattern, list(specials) + [SEP], 1, tie_break)


def _merges(tok: BPETokenizer) -> list[tuple[int, int]]:
    return [(a, b) for a, b, _ in tok.merges]


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("tie_break", TIE_BREAKS)
def test_iterator_equals_reference(pattern, tie_break):
    texts = _texts(1)
    tok = train_bpe(
        (t.decode("utf-8") if i % 2 else t for i, t in enumerate(texts)),
        256 + 80 + 2,
        pattern=pattern,
        tie_break=tie_break,
    )
    assert _merges(tok) == _reference_merges(texts, 256 + 80, pattern, tie_break)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("tie_break", TIE_BREAKS)
def test_counts_equal_whole_text(pattern, tie_break):
    text = b"".join(_texts(2))
    counts = ref.count_chunks(text, pattern)
    tok = train_bpe(counts, 256 + 80, pattern=pattern, special_tokens=(), tie_break=tie_break)
    assert _merges(tok) == ref.train(text, 256 + 80, pattern, (), 1, tie_break)


def test_counts_str_and_bytes_keys_add_up():
    a = train_bpe({"ab": 2, b"ab": 3, "cd": 4}, 258, special_tokens=())
    b = train_bpe({b"ab": 5, b"cd": 4}, 258, special_tokens=())
    assert _merges(a) == _merges(b) == [(97, 98), (99, 100)]


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("window", [1, 7, 64, 100, 4096])
def test_file_windows_count_like_whole_text(tmp_path, pattern, window):
    # Windows far smaller than chunks and special tokens: every chunk and every
    # "<|endoftext|>" straddles some window boundary and must be counted once.
    text = (EOT.encode().join(_texts(3, 8)) + b"   \n" + EOT.encode() + b"x").replace(b"cat", b"cat" * 40)
    path = tmp_path / "corpus.txt"
    path.write_bytes(text)
    for threads in (1, 2):
        counter = _bpe.ChunkCounter(pattern, [EOT.encode()], threads)
        counter.add_file(path, window_bytes=window)
        assert counter.counts() == dict(ref.count_chunks(text, pattern, [EOT.encode()]))


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(st.sampled_from(list("ab '\n\t1é") + ["<s>", "<", "s>", "'s", "<s>x"]), max_size=120),
    window=st.integers(1, 40),
    pattern=st.sampled_from(PATTERNS),
)
def test_file_windows_hypothesis(tmp_path_factory, parts, window, pattern):
    path = tmp_path_factory.mktemp("w") / "t.txt"
    data = "".join(parts).encode("utf-8")
    path.write_bytes(data)
    counter = _bpe.ChunkCounter(pattern, [b"<s>", b"<s>x"], 1)
    counter.add_file(path, window_bytes=window)
    assert counter.counts() == dict(ref.count_chunks(data, pattern, [b"<s>", b"<s>x"]))


@pytest.mark.parametrize("threads", [1, 3])
def test_counter_keeps_every_key_apart(threads):
    # Keys of 0-40 bytes around the 16-byte inline limit, zero bytes that
    # pad short keys (b"a" vs b"a\x00"), one shared 17-byte prefix with
    # different tails, and 20,000 random keys (the table grows many times);
    # added twice, so the counts add up.  Oracle: a dict.
    rng = random.Random(11)
    keys = [b"", b"\x00", b"\x00\x00", b"a", b"a\x00", b"\x00a", b"x" * 16, b"x" * 15 + b"\x00", b"x" * 17]
    keys += [bytes([b]) * n for b in (0, 97, 255) for n in range(1, 41)]
    keys += [b"p" * 17 + bytes([t]) for t in range(50)] + [b"p" * 24 + bytes([t]) * 9 for t in range(50)]
    keys += [rng.randbytes(rng.randint(1, 40)) for _ in range(20000)]
    keys = list(dict.fromkeys(keys))  # distinct, in order
    counts = {k: rng.randint(1, 1 << 40) for k in keys}
    counter = _bpe.ChunkCounter("simple", [], threads)
    counter.add_counts(counts)
    counter.add_counts({k: 3 for k in keys[:100]})
    expected = dict(counts)
    for k in keys[:100]:
        expected[k] += 3
    assert counter.counts() == expected


def test_chunk_counts_at_the_end_of_short_texts():
    # Chunks that end within 16 bytes of the end of the text are read
    # without looking past it; texts of every length up to 40 bytes.
    rng = random.Random(12)
    for n in range(41):
        data = bytes(rng.choice(b"ab c'1\n\xc3\xa9") for _ in range(n))
        for threads in (1, 2):
            assert _bpe.chunk_counts(data, "gpt2", [], threads) == dict(ref.count_chunks(data, "gpt2"))


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
def test_overlapping_merges_match_reference(tie_break):
    # Words of two letters where the merged pair overlaps itself ("aaa",
    # "abab"): the trainer moves counts only of the pairs next to a merged
    # occurrence; the reference recounts every pair.
    rng = random.Random(13)
    words = [bytes(rng.choice(b"ab") for _ in range(rng.randint(2, 30))) for _ in range(400)]
    words += [b"a" * n for n in range(2, 40)] + [b"ab" * n for n in range(1, 20)]
    data = b" ".join(words)
    got = _bpe.train(data, vocab_size=256 + 120, pattern="simple", tie_break=tie_break)
    assert got == ref.train(data, 256 + 120, "simple", (), 1, tie_break)


def test_files_iterator_counts_and_text_give_the_same_tokenizer(tmp_path):
    texts = _texts(4)
    paths = []
    for i, t in enumerate(texts):
        paths.append(tmp_path / f"{i}.txt")
        paths[-1].write_bytes(t)
    from_files = train_bpe(paths, 256 + 60 + 2, pattern="gpt2")
    from_iter = train_bpe(iter(texts), 256 + 60 + 2, pattern="gpt2")
    assert _merges(from_files) == _merges(from_iter) == _reference_merges(texts, 256 + 60, "gpt2", "smallest_ids")


@pytest.mark.parametrize("tie_break", TIE_BREAKS)
def test_long_chunks_match_reference(tie_break):
    # Chunks of hundreds to thousands of bytes take the trainer's LongWord
    # path (pair positions indexed); runs of one byte test overlapping pairs.
    rng = random.Random(5)
    parts = []
    for i in range(10):
        alphabet = b"ab" if i % 2 else b"ACGT"
        parts.append(bytes(rng.choice(alphabet) for _ in range(rng.choice([300, 900, 2000]))))
        parts.append(b" " * rng.choice([1, 300]))
    data = b"".join(parts) + b"a" * 700 + b" " + b"ab" * 400
    for pattern in ("simple", "gpt2"):
        got = _bpe.train(data, vocab_size=256 + 70, pattern=pattern, tie_break=tie_break)
        assert got == ref.train(data, 256 + 70, pattern, (), 1, tie_break)


def test_one_huge_chunk_trains():
    # 2 M random ACGT: one chunk; timed in benchmarks/train_long_chunk.py, checked here.
    rng = random.Random(0)
    data = bytes(rng.choice(b"ACGT") for _ in range(200_000))
    merges = _bpe.train(data, vocab_size=256 + 64)
    assert len(merges) == 64
    prefix = data[:3000]
    assert _bpe.train(prefix, vocab_size=256 + 30) == ref.train(prefix, 256 + 30)


def test_progress_reports_counting_and_merges(tmp_path):
    text = b"".join(_texts(6, 40)) * 20
    path = tmp_path / "t.txt"
    path.write_bytes(text)
    calls = []
    train_bpe([path], 256 + 300, progress=lambda *a: calls.append(a))
    counts = [c for c in calls if c[0] == "count"]
    merges = [c for c in calls if c[0] == "merge"]
    assert counts and counts[-1] == ("count", len(text), len(text))
    assert [c[1] for c in counts] == sorted(c[1] for c in counts)
    assert merges and merges[-1][2] == 298 and merges[-1][1] <= 298  # vocab 556 = 256 bytes + 298 merges + 2 specials
    calls.clear()
    train_bpe(iter([text]), 256 + 20, progress=lambda *a: calls.append(a))
    assert ("count", len(text), 0) in calls and calls[-1][0] == "merge"


def test_progress_exception_ends_training():
    def stop(stage, done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_bpe(b"abab" * 1000, 300, progress=stop)


def test_bad_items_name_the_item():
    with pytest.raises(TypeError, match=r"^train_bpe texts: item 2 is int, not str or bytes$"):
        train_bpe(iter(["a", b"b", 3]), 300)
    with pytest.raises(TypeError, match="pass a list of paths, not one path"):
        train_bpe(Path("abc"), 300)
    for bad in (0, -1, 1.5, True, "3"):
        with pytest.raises(ValueError, match=r"the count of chunk 'ab' must be a positive integer, got"):
            train_bpe({"ab": bad}, 300)
    with pytest.raises(TypeError, match=r"chunk 5 is int, not str or bytes"):
        train_bpe({5: 1}, 300)


def test_unreadable_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        train_bpe([tmp_path / "missing.txt"], 300)
    folder = tmp_path / "a_folder"
    folder.mkdir()
    counter = _bpe.ChunkCounter()
    with pytest.raises(OSError, match="a_folder"):
        counter.add_file(folder)


def test_two_threads_same_merges_as_one(tmp_path):
    text = b"\n".join(_texts(7, 200)) * 30
    path = tmp_path / "t.txt"
    path.write_bytes(text)
    one = _bpe.train(files=[path], vocab_size=256 + 200, pattern="gpt4", num_threads=1)
    two = _bpe.train(files=[path], vocab_size=256 + 200, pattern="gpt4", num_threads=2)
    assert one == two


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc/self/status")
def _peak_growth(path: Path, vocab_size: int, **kw) -> int:
    """Bytes by which training on `path` raises a fresh process's peak resident memory."""
    code = textwrap.dedent(
        f"""
        from storygpt import _bpe
        def peak():  # VmHWM: this process's own high-water mark (ru_maxrss keeps pytest's across exec)
            status = open("/proc/self/status").read()
            return int(status.split("VmHWM:")[1].split()[0]) * 1024
        before = peak()
        _bpe.train(files=[{str(path)!r}], vocab_size={vocab_size}, pattern="gpt2", **{kw!r})
        print(peak() - before)
        """
    )
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def test_peak_memory_is_bounded_by_distinct_chunks_not_the_file(tmp_path):
    # Files of 6 and 24 MB with the same ~100 distinct chunks: if the file were
    # read whole, the peak would grow with its size; streamed, it holds the
    # distinct chunks plus one window whatever the size.
    rng = random.Random(8)
    pool = _texts(9, 50)
    lines = [b" ".join(rng.choice(pool) for _ in range(4)) + b"\n" for _ in range(2000)]
    growth = {}
    for mb in (6, 24):
        path = tmp_path / f"{mb}.txt"
        with open(path, "wb") as f:
            while f.tell() < mb * 1_000_000:
                rng.shuffle(lines)
                f.write(b"".join(lines))
        growth[mb] = _peak_growth(path, 2048, num_threads=2)
    print({mb: f"{g / 1e6:.1f} MB" for mb, g in growth.items()})
    assert growth[24] < 16e6, f"peak grew by {growth[24] / 1e6:.1f} MB on 24 MB with ~100 distinct chunks"
    assert abs(growth[24] - growth[6]) < 4e6, f"peak growth depends on the file size: {growth}"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc/self/status")
def test_peak_memory_on_a_200_mb_varied_corpus(tmp_path):
    # benchmarks/make_big_corpus.py's 200 MB corpus (shuffled lines of the
    # shared corpora, letter-rotated copies: ~1.6 M distinct chunks).  Reading
    # it whole would add its 200 MB alone; streaming keeps the distinct chunks
    # and the pair statistics only.
    shared = CORPORA
    if not (shared / "english_literature_plus_kjv.txt").exists():
        pytest.skip("the shared corpora (../shared/corpora) are not here")
    path = tmp_path / "big.txt"
    repo = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, str(repo / "benchmarks" / "make_big_corpus.py"), str(path), "--megabytes", "200"], check=True
    )
    grown = _peak_growth(path, 32768, special_tokens=[b"<|endoftext|>"])
    # Measured: 364 MB before the trainer's pair lists were made compact
    # (WordList, freed when their pair is gone); Hugging Face's peak on the
    # same file is in docs/performance.md.
    assert grown < 400e6, f"peak grew by {grown / 1e6:.0f} MB training on a 200 MB file"
