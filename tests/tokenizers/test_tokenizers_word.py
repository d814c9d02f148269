"""WordTokenizer: splitting, vocabulary choice, unknown rate, decode rules (exact strings)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import CORPORA, needs_corpora

from storygpt.tokenizers import EOT, Tokenizer, WordTokenizer


def test_split_words_and_punctuation_runs():
    text = '"Don\'t go (now)!" she said--3.14 times, 1,000 ways.\n\n  John’s well-known 中文。<|endoftext|>x'
    assert WordTokenizer.split(text, "all") == [
        '"',
        "Don't",
        "go",
        "(",
        "now",
        ')!"',
        "she",
        "said",
        "--",
        "3.14",
        "times",
        ",",
        "1,000",
        "ways",
        ".",
        "John’s",
        "well",
        "-",
        "known",
        "中",
        "文",
        "。",
        EOT,
        "x",
    ]
    assert WordTokenizer.split("a<|endoftext|>b", allowed_special=set()) == ["a", "<|", "endoftext", "|>", "b"]
    assert WordTokenizer.split(".<|endoftext|>.", "all") == [".", EOT, "."]


def test_train_vocabulary_order_and_size():
    tok = WordTokenizer.train(["the cat sat on the mat.", "The mat!"], vocab_size=6)
    # counts: the 2, mat 2, then 1 each: ! . The cat on sat (code-point order breaks ties)
    assert tok.tokens == ["<pad>", "<unk>", EOT, "mat", "the", "!"]
    assert (tok.pad_id, tok.unk_id, tok.eot_id) == (0, 1, 2)
    assert tok.vocab_size == len(tok) == 6
    assert isinstance(tok, Tokenizer) and tok.kind == "word"
    big = WordTokenizer.train("a b c", vocab_size=100)
    assert big.vocab_size == 6  # fewer distinct tokens than asked for
    assert WordTokenizer.train(iter(["b a", "a"]), 4).tokens == WordTokenizer.train(["a a b"], 4).tokens
    with pytest.raises(ValueError, match="vocab_size=2"):
        WordTokenizer.train("a", vocab_size=2)


def test_unknown_words_and_rate():
    tok = WordTokenizer.train(["the cat sat on the mat."], vocab_size=5)  # the, .
    the, dot, unk = tok.token_to_id("the"), tok.token_to_id("."), tok.unk_id
    assert tok.encode("the dog sat.", "all") == [the, unk, unk, dot]
    assert tok.unknown_rate("the dog sat.") == 0.5
    assert tok.unknown_rate("") == 0.0
    assert tok.decode(tok.encode("The dog sat.", "all")) == "<unk> <unk> <unk>."


def test_endoftext_is_special():
    tok = WordTokenizer.train(["a b"], vocab_size=10)
    a, b, eot = tok.token_to_id("a"), tok.token_to_id("b"), tok.eot_id
    assert tok.encode("a<|endoftext|>b", "all") == [a, eot, b]
    assert tok.encode("<|endoftext|><|endoftext|>", "all") == [eot, eot]
    assert tok.encode("a<|endoftext|>b", allowed_special=set(), disallowed_special=()) == [a, 1, 1, 1, b]
    assert tok.encode_ordinary("<|endoftext|>") == [1, 1, 1]


@pytest.mark.parametrize(
    "text, want",
    [
        ('"Hi," he said. "Don\'t go (now)!"', '"Hi," he said. "Don\'t go (now)!"'),
        ("Hello ,world !How are you ?", "Hello, world! How are you?"),
        ("In our heart's table,--heart too capable", "In our heart's table,--heart too capable"),
        ("'Twas brillig, and the slithy toves", "'Twas brillig, and the slithy toves"),
        ("A well-known fact: 3.14 is π; 1,000 > 10.", "A well-known fact: 3.14 is π; 1,000 > 10."),
        ("“Curly,” she said; ‘single’ [brackets] {braces}…", "“Curly,” she said; ‘single’ [brackets] {braces}…"),
        ("and / or 50 %", "and/or 50%"),
        ("one\n\ntwo   three<|endoftext|>Next doc.", "one two three\n<|endoftext|>\nNext doc."),
        ("中文，好。", "中文，好。"),
    ],
)
def test_decode_rules(text, want):
    tok = WordTokenizer.train([text], vocab_size=1000)
    assert tok.decode(tok.encode(text, "all")) == want


def test_decode_unknown_id():
    tok = WordTokenizer.train(["a"], vocab_size=10)
    with pytest.raises(ValueError, match="unknown token id 99"):
        tok.decode([3, 99])
    assert tok.id_to_token(3) == "a"


def test_encode_batch_and_numpy():
    tok = WordTokenizer.train(["a b c. d"], vocab_size=10)
    texts = ["a b", "", "c. d<|endoftext|>"]
    assert tok.encode_batch(texts, allowed_special="all") == [tok.encode(t, "all") for t in texts]
    ids, offsets = tok.encode_batch_numpy(texts, allowed_special="all")
    assert offsets.tolist() == [0, 2, 2, 6] and ids.dtype.name == "uint32"
    assert ids.tolist() == sum((tok.encode(t, "all") for t in texts), [])


@needs_corpora
def test_unknown_rate_on_real_text():
    """10,000 words learned from half of the English corpus cover most of the other half."""
    text = (CORPORA / "english_literature_plus_kjv.txt").read_bytes().decode("utf-8")
    docs = text.split("\n<|endoftext|>\n")
    train, held = docs[1:40:2], docs[0:40:2]
    tok = WordTokenizer.train(train, vocab_size=10_000)
    assert tok.vocab_size == 10_000
    assert tok.tokens[3:8] == [",", ".", "the", "I", "and"]
    rate = tok.unknown_rate("\n".join(held))
    assert 0.03 < rate < 0.10, rate
    assert tok.unknown_rate("\n".join(train)) < rate


def test_word_train_vocab_size_must_be_an_integer():
    # before: "slice indices must be integers or None or have an __index__ method"
    with pytest.raises(TypeError, match=r"vocab_size must be an integer, got 10.5"):
        WordTokenizer.train(["hello world"], 10.5)
    assert WordTokenizer.train(["hello world"], np.int64(10)).vocab_size == 5


@pytest.mark.parametrize("bad", [1.5, 2.0, "3", True])
def test_word_decode_rejects_non_integer_ids(bad):
    # before: decode([1.5]) returned "<unk>" (int(1.5) == 1), where BPE300 raises ValueError
    tok = WordTokenizer.train(["hello world"], 10)
    with pytest.raises(ValueError, match="token id must be an integer"):
        tok.decode([bad])
    with pytest.raises(ValueError, match="token id must be an integer"):
        tok.id_to_token(bad)
    assert tok.decode(np.array([3, 4])) == tok.decode([3, 4])
