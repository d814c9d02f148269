"""Training from an iterator of texts: the merges of ``train`` on each text, whatever the batching.

``train_bpe(iterable)`` hands the iterable to ``ChunkCounter.add_texts``, which takes the items
itself (str read as UTF-8 in C++), lays a batch of them end to end in one buffer and counts
them.  Oracles: ``bpe_reference`` (``train`` on the texts joined by one more special token,
which keeps chunks from crossing texts; ``count_chunks`` per text) and the C++ ``train`` on the
same joined bytes.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storygpt import _bpe
from storygpt.tokenizers import EOT, train_bpe
from storygpt.tokenizers import bpe_reference as ref
from storygpt.tokenizers.base import clean_text

SEP = "\x00<sep>\x00"
SPECIALS = ["<pad>", EOT]

# Empty texts, no final newline, blank lines, Latin-1, other BMP, astral characters,
# special tokens inside and at the edges of a text, white space only.
TEXTS = [
    "",
    "the cat sat on the mat\n",
    "no newline at the end",
    "",
    "\n\n\n",
    "naïve café, déjà vu — «quotes»\n",
    "東京 and 北京 are cities; 東京!\n",
    "emoji 😀😀 and 𝄞 music\n",
    f"first document{EOT}second document\n",
    f"{EOT}starts with a special token",
    f"ends with a special token<pad>{EOT}",
    "   \t  ",
    "it's we'll they've I'M 12345 1234567\r\n",
    "the cat sat on the mat\n" * 3,
]


def _merges(tok) -> list[tuple[int, int]]:
    return [(a, b) for a, b, _ in tok.merges]


def _joined_merges(texts: list[str], vocab_size: int, pattern: str) -> list[tuple[int, int]]:
    """C++ train on the texts joined by one more special token (the ids of its merges match)."""
    data = SEP.join(texts).encode("utf-8")
    specials = [s.encode() for s in SPECIALS + [SEP]]
    return [tuple(m) for m in _bpe.train(data, vocab_size=vocab_size + 1, pattern=pattern, special_tokens=specials)]


def _reference_merges(texts: list[str], vocab_size: int, pattern: str) -> list[tuple[int, int]]:
    data = SEP.join(texts).encode("utf-8")
    specials = [s.encode() for s in SPECIALS + [SEP]]
    return [tuple(m) for m in ref.train(data, vocab_size + 1, pattern, specials)]


class OnceOnly:
    """An iterable that can be iterated once (a second pass raises); counts the items taken."""

    def __init__(self, items):
        self.items = list(items)
        self.taken = 0
        self.started = False

    def __iter__(self):
        if self.started:
            raise AssertionError("iterated twice")
        self.started = True
        return self._gen()

    def _gen(self):
        for item in self.items:
            self.taken += 1
            yield item


@pytest.mark.parametrize("pattern", ["simple", "gpt2", "gpt4", "o200k"])
def test_iterator_merges_equal_train_on_each_text(pattern):
    texts = TEXTS * 5
    vocab_size = 256 + 60 + len(SPECIALS)
    expected = _reference_merges(texts, vocab_size, pattern)
    assert len(expected) == 60
    assert _joined_merges(texts, vocab_size, pattern) == expected
    once = OnceOnly(texts)
    tok = train_bpe(once, vocab_size, pattern=pattern, special_tokens=SPECIALS)
    assert once.taken == len(texts)
    assert _merges(tok) == expected
    # bytes, bytearray and memoryview items count as their bytes
    kinds = [str.encode, lambda t: bytearray(t.encode()), lambda t: memoryview(t.encode()), lambda t: t]
    mixed = (kinds[i % 4](t) for i, t in enumerate(texts))
    assert _merges(train_bpe(mixed, vocab_size, pattern=pattern, special_tokens=SPECIALS)) == expected


@pytest.mark.parametrize("batch_bytes", [1, 5, 64, 1 << 20])
@pytest.mark.parametrize("threads", [1, 2])
def test_counts_do_not_depend_on_the_batch(batch_bytes, threads):
    texts = TEXTS * 3
    expected: dict[bytes, int] = {}
    for t in texts:
        for chunk, n in ref.count_chunks(t.encode(), "gpt2", [s.encode() for s in SPECIALS]).items():
            expected[chunk] = expected.get(chunk, 0) + n
    counter = _bpe.ChunkCounter("gpt2", [s.encode() for s in SPECIALS], threads)
    done = counter.add_texts(iter(texts), batch_bytes=batch_bytes)
    assert done == sum(len(t.encode()) for t in texts)
    assert counter.counts() == expected


def test_text_longer_than_a_window():
    # A piece over the 1 MiB window is streamed through a buffer of its own, between short texts.
    rng = random.Random(3)
    words = ["alpha", " beta", "  gamma", "\n", "δέλτα", " 42", "!!"]
    long_text = "".join(rng.choice(words) for _ in range(300_000)).encode()
    assert len(long_text) > (1 << 20) + 1000
    texts = [b"short one", long_text, b"", b"another short text\n"]
    expected: dict[bytes, int] = {}
    for t in texts:
        for chunk, n in _bpe.chunk_counts(t, "gpt4").items():
            expected[chunk] = expected.get(chunk, 0) + n
    counter = _bpe.ChunkCounter("gpt4", [], 1)
    counter.add_texts(texts)
    assert counter.counts() == expected


# Text with lone surrogates and surrogate pairs (hypothesis leaves category Cs out by default).
_chars = st.characters(codec=None, categories=None) | st.sampled_from(["\ud83d", "\ude00", "a", " ", "\n", "é"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(_chars, max_size=12), max_size=6))
def test_str_items_read_as_clean_text_utf8(texts):
    # A pair of surrogates is read as its character, a lone surrogate as U+FFFD.
    expected: dict[bytes, int] = {}
    for t in texts:
        for chunk, n in ref.count_chunks(clean_text(t).encode("utf-8"), "simple").items():
            expected[chunk] = expected.get(chunk, 0) + n
    counter = _bpe.ChunkCounter("simple", [], 1)
    counter.add_texts(texts, batch_bytes=7)
    assert counter.counts() == expected


def test_surrogates_by_hand():
    counter = _bpe.ChunkCounter("simple", [], 1)
    counter.add_texts(["a\ud83d\ude00b", "\ud800", "\udc00\ud800x", "ÿ\ud83d"])
    fffd = "\ufffd".encode()
    assert counter.counts() == {
        "a😀b".encode(): 1,
        fffd: 1,
        fffd * 2 + b"x": 1,
        "ÿ".encode() + fffd: 1,
    }


def test_streaming_takes_the_texts_batch_by_batch():
    # Each batch is counted before the next texts are taken: memory is one batch, not the iterable.
    texts = OnceOnly(["abc def\n"] * 1000)  # 8 bytes each
    seen = []
    counter = _bpe.ChunkCounter("simple", [], 1)
    counter.add_texts(texts, batch_bytes=800, progress=lambda stage, done, total: seen.append((done, texts.taken)))
    assert seen == [(800 * k, 100 * k) for k in range(1, 11)]
    assert counter.counts() == {b"abc": 1000, b" def": 1000, b"\n": 1000}


def test_empty_iterable_and_progress():
    calls = []
    counter = _bpe.ChunkCounter("simple", [], 1)
    assert counter.add_texts(iter([]), progress=lambda *a: calls.append(a)) == 0
    assert calls == [("count", 0, 0)] and counter.counts() == {}


def test_bad_item_and_failing_iterator_are_raised():
    with pytest.raises(TypeError, match=r"^train_bpe texts: item 3 is NoneType, not str or bytes$"):
        train_bpe(iter(["a", b"b", bytearray(b"c"), None]), 300)
    counter = _bpe.ChunkCounter("simple", [], 1)
    with pytest.raises(TypeError, match=r"^texts: item 0 is int, not str or bytes$"):
        counter.add_texts([1])

    def failing():
        yield "abc"
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        train_bpe(failing(), 300)


def test_non_contiguous_memoryview_is_read_as_its_bytes():
    view = memoryview(b"aXbXcX ab")[::2]  # b"abc b", not contiguous
    counter = _bpe.ChunkCounter("simple", [], 1)
    counter.add_texts([view])
    assert counter.counts() == {b"abc": 1, b" b": 1}
