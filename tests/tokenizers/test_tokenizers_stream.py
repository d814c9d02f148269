"""encode_iterable: lazy, bounded-memory encoding that equals encode() on the joined text.

Pre-tokenization chunks of the gpt2/gpt4 patterns can span new lines, and a
special token can straddle two pieces of the input, so cutting the stream at
the wrong place would change the ids.  Checked on real files (all three
patterns, with tiny buffers to force many cuts) and on adversarial random
splits (hypothesis).
"""

from __future__ import annotations

import os
import pathlib

import pytest
from conftest import CACHE, CORPORA, HAVE_CPP, HAVE_TIKTOKEN, needs_cache, needs_corpora
from hypothesis import given, settings
from hypothesis import strategies as st

from storygpt.tokenizers import EOT, BPETokenizer, WordTokenizer, train_bpe
from storygpt.tokenizers.interop import from_tiktoken

_TOKS: dict = {}


def trained(pattern: str) -> BPETokenizer:
    if pattern not in _TOKS:
        text = "It's  the end.\n\n  Of the\tworld's 1234567 ends!!\r\n" * 20 + "Конец света.\n" * 10 + "  \n \n" * 5
        _TOKS[pattern] = train_bpe(
            text,
            vocab_size=256 + 60 + 4,
            pattern=pattern,
            special_tokens=("<pad>", EOT, "<|e|>\n<|f|>", "<|sp ace|>"),
            backend="reference",
        )
    return _TOKS[pattern]


def tiktoken_vocab(name: str) -> BPETokenizer:
    if name not in _TOKS:
        _TOKS[name] = from_tiktoken(name, backend="cpp" if HAVE_CPP else "reference")
    return _TOKS[name]


@pytest.fixture(scope="module")
def real_file(tmp_path_factory) -> pathlib.Path:
    """~150 KB of real text from the three corpora (whole lines), with document separators."""
    if not CORPORA.is_dir():
        pytest.skip(f"shared corpora not found at {CORPORA}")
    parts = []
    for name in ["english_literature_plus_kjv.txt", "russian_fortunes.txt", "chinese_fortunes.txt"]:
        with open(CORPORA / name, "rb") as f:
            f.seek(os.path.getsize(CORPORA / name) // 3)
            f.readline()  # skip to a line start
            data = f.read(80_000)
        parts.append(data[: data.rindex(b"\n") + 1].decode("utf-8"))
    path = tmp_path_factory.mktemp("stream") / "sample.txt"
    path.write_text("".join(parts), encoding="utf-8", newline="")
    return path


@pytest.mark.parametrize("source", ["simple", "gpt2", "gpt4", "gpt2-vocab", "cl100k-vocab"])
def test_encode_iterable_on_real_file(real_file, source):
    if source.endswith("-vocab"):
        if not CACHE.is_dir() or not HAVE_TIKTOKEN:
            pytest.skip(f"OpenAI BPE files not found at {CACHE}, or tiktoken not installed")
        tok = tiktoken_vocab({"gpt2-vocab": "gpt2", "cl100k-vocab": "cl100k_base"}[source])
    else:
        tok = trained(source)
    text = real_file.read_bytes().decode("utf-8")
    want = tok.encode(text, "all")
    assert EOT in text and tok.eot_id in want
    with open(real_file, encoding="utf-8", newline="") as f:
        got = list(tok.encode_iterable(f, "all", buffer_chars=3000))
    assert got == want
    with open(real_file, encoding="utf-8", newline="") as f:  # default buffer: one cut at most
        assert list(tok.encode_iterable(f, "all")) == want
    assert list(tok.encode_iterable(iter(text), "all", buffer_chars=5000)) == want  # one character at a time


@pytest.mark.skipif(not HAVE_CPP, reason="storygpt._bpe (C++ Encoder) not built or not landed yet")
@needs_corpora
@needs_cache
@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_encode_iterable_whole_corpus_cpp(name):
    tok = from_tiktoken(name, backend="cpp")
    path = CORPORA / "russian_fortunes.txt"
    text = path.read_bytes().decode("utf-8")
    with open(path, encoding="utf-8", newline="") as f:
        assert list(tok.encode_iterable(f, "all", buffer_chars=100_000)) == tok.encode(text, "all")


_ALPHABET = [
    "a",
    "B",
    "1",
    "2",
    "'s",
    "'",
    ".",
    "!",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "é",
    "中",
    "\u00a0",
    EOT,
    "<|e|>\n<|f|>",
    "<|",
    "e|>",
    "\n<|f",
    "|>",
    "<|sp ace|>",
    "<|sp",
    " ace|>",
    "\ud83d",
    "\ude00",
]  # a surrogate pair split across pieces still makes one character


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(_ALPHABET), max_size=60),
    cuts=st.lists(st.integers(0, 400), max_size=12),
    buffer=st.integers(1, 12),
    pattern=st.sampled_from(["simple", "gpt2", "gpt4"]),
)
def test_encode_iterable_adversarial_splits(pieces, cuts, buffer, pattern):
    tok = trained(pattern)
    text = "".join(pieces)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    lines = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    for allowed in ["all", set()]:
        assert list(tok.encode_iterable(lines, allowed, buffer, disallowed_special=())) == tok.encode(
            text, allowed_special=allowed, disallowed_special=()
        )


@settings(max_examples=100, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(_ALPHABET), max_size=60),
    cuts=st.lists(st.integers(0, 400), max_size=12),
    buffer=st.integers(1, 12),
)
def test_word_encode_iterable_adversarial_splits(pieces, cuts, buffer):
    tok = WordTokenizer.train(["a B 1 's . ! é 中 <|"], vocab_size=12)
    text = "".join(pieces)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    lines = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    assert list(tok.encode_iterable(lines, "all", buffer_chars=buffer)) == tok.encode(text, "all")


def test_encode_iterable_is_lazy():
    tok = trained("gpt2")
    consumed = []

    def lines():
        for i in range(10_000):
            consumed.append(i)
            yield f"Line number {i} of the story.\n"

    it = tok.encode_iterable(lines(), "all", buffer_chars=1000)
    first = next(it)
    assert first == tok.encode("Line", "all")[0]
    assert len(consumed) < 100  # it did not read the whole input first


def test_word_encode_iterable_on_real_file(real_file):
    text = real_file.read_bytes().decode("utf-8")
    tok = WordTokenizer.train([text], vocab_size=2000)
    with open(real_file, encoding="utf-8", newline="") as f:
        assert list(tok.encode_iterable(f, "all", buffer_chars=1000)) == tok.encode(text, "all")


def test_surrogate_pair_split_between_lines():
    tok = trained("gpt2")
    lines = ["ab \ud83d", "\ude00 cd e"]
    want = tok.encode("".join(lines), "all")
    assert want == tok.encode("ab 😀 cd e", "all")
    assert list(tok.encode_iterable(lines, "all", buffer_chars=1)) == want
    assert list(WordTokenizer.train(["ab"], 10).encode_iterable(lines, "all", buffer_chars=1)) == WordTokenizer.train(
        ["ab"], 10
    ).encode("ab 😀 cd e")


@pytest.mark.parametrize(
    "lines, buffer_chars, message",
    [
        (["abc", None], 1 << 20, "encode_iterable: line 1 is NoneType, not str"),
        ([b"abc"], 1 << 20, "encode_iterable: line 0 is bytes, not str"),
        (["abc"], "abc", "encode_iterable: buffer_chars must be a number of characters, got 'abc'"),
        (["abc"], float("nan"), "encode_iterable: buffer_chars must be a number of characters, got nan"),
    ],
)
def test_encode_iterable_bad_input_names_it(lines, buffer_chars, message):
    # before: "object of type 'NoneType' has no len()", "'<' not supported between instances of 'int' and 'str'"
    with pytest.raises(TypeError) as e:
        list(trained("gpt2").encode_iterable(lines, buffer_chars=buffer_chars))
    assert str(e.value) == message
