"""BPETokenizer: known answers, tiktoken parity, special tokens, training, other vocabularies.

Oracles: GPT-2's published ids, ``tiktoken`` itself, and the plain-Python
reference ``storygpt.tokenizers.bpe_reference``.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from conftest import CACHE, CORPORA, HAVE_CPP, needs_cache, needs_corpora, needs_cpp
from hypothesis import given, settings
from hypothesis import strategies as st

from storygpt.tokenizers import EOT, BPETokenizer, bpe_reference, load, train_bpe
from storygpt.tokenizers.interop import from_gpt2_files, from_tiktoken

CORPUS_FILES = ["english_literature_plus_kjv.txt", "russian_fortunes.txt", "chinese_fortunes.txt"]
GPT2_ENCODER_JSON = CACHE / "6c7ea1a7e38e3a7f062df639a5b80947f075ffe6"
GPT2_VOCAB_BPE = CACHE / "6d1cbeee0f20b3d9449abfede4726ed8212e3aee"
BACKENDS = ["reference", pytest.param("cpp", marks=needs_cpp)]

GPT2_KNOWN = [
    ("Hello, do you like tea? ", [15496, 11, 466, 345, 588, 8887, 30, 220]),
    ("Akwirw ier", [33901, 86, 343, 86, 220, 959]),
    ("This is some text", [1212, 318, 617, 2420]),
    ("do do", [4598, 466]),
    (" In the sunlit terraces of someunknownPlace.", [554, 262, 4252, 18250, 8812, 2114, 286, 617, 34680, 27271, 13]),
]

_CACHE_TOK: dict = {}


def tiktoken_tok(name: str, backend: str) -> BPETokenizer:
    key = (name, backend)
    if key not in _CACHE_TOK:
        _CACHE_TOK[key] = from_tiktoken(name, backend=backend)
    return _CACHE_TOK[key]


def documents(name: str) -> list[str]:
    text = (CORPORA / name).read_bytes().decode("utf-8")
    return [d for d in text.split("\n<|endoftext|>\n") if d]


def sample_docs(name: str, max_chars: int, seed: int = 0) -> list[str]:
    """A deterministic sample of whole documents (long ones cut into 2,000-char pieces)."""
    docs = documents(name)
    rng = random.Random(seed)
    rng.shuffle(docs)
    out, total = [], 0
    for d in docs:
        if len(d) > 4000:
            start = rng.randrange(len(d) - 2000)
            d = d[start : start + 2000]
        out.append(d)
        total += len(d)
        if total >= max_chars:
            break
    return out


# --------------------------------------------------------------- known answers
@needs_cache
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("source", ["gpt2", "r50k_base", "gpt2_files"])
def test_gpt2_known_answers(source, backend):
    if source == "gpt2_files":
        tok = from_gpt2_files(GPT2_ENCODER_JSON, GPT2_VOCAB_BPE, backend=backend)
        assert tok.merge_rule == "merges" and len(tok.merges) == 50000
    else:
        tok = tiktoken_tok(source, backend)
        assert tok.merge_rule == "ranks"
    assert tok.pattern == "gpt2"
    assert tok.vocab_size == len(tok) == 50257
    assert tok.eot_id == 50256 and tok.pad_id is None and tok.unk_id is None
    for text, ids in GPT2_KNOWN:
        assert tok.encode(text, "all") == ids, text
        assert tok.decode(ids) == text
    assert tok.encode("<|endoftext|>", "all") == [50256]
    assert tok.id_to_token(15496) == "Hello" and tok.id_to_token(220) == " "


@needs_cache
def test_gpt2_files_byte_ids_differ_from_byte_values():
    tok = from_gpt2_files(GPT2_ENCODER_JSON, GPT2_VOCAB_BPE, backend="reference")
    assert tok.byte_ids[ord("!")] == 0 and tok.byte_ids[ord(" ")] == 220
    assert tok.token_bytes(220) == b" " and tok.token_bytes(0) == b"!"
    assert tok.encode("\x00", "all") == [tok.byte_ids[0]] == [188]


@needs_cache
@pytest.mark.parametrize("backend", BACKENDS)
def test_cl100k_against_tiktoken_and_specials(backend):
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")
    tok = tiktoken_tok("cl100k_base", backend)
    assert tok.pattern == "gpt4"
    assert tok.special_tokens == enc._special_tokens
    assert tok.vocab_size == enc.n_vocab == 100277
    assert tok.eot_id == 100257
    texts = [
        "Hello world",
        "I'M HERE, it's   12345678 apples\n\n\tok",
        "  leading and trailing  \n",
        "x<|endoftext|><|fim_prefix|>y<|endofprompt|>",
        "日本語のテキスト。",
        "Привет, мир!\r\n",
        "'ll 've 're 'S",
        "emoji 🤖🤖 and \u00a0nbsp",
    ]
    for t in texts:
        assert tok.encode(t, "all") == enc.encode(t, allowed_special="all"), t
        assert tok.encode_ordinary(t) == enc.encode_ordinary(t), t
        assert tok.decode(tok.encode(t, "all")) == t
    assert tok.encode("hi", "all") == [6151]  # a known cl100k id


# ------------------------------------------------------------- tiktoken parity
def _parity(name: str, backend: str, docs: list[str]) -> None:
    import tiktoken

    enc = tiktoken.get_encoding(name)
    tok = tiktoken_tok(name, backend)
    want = enc.encode_ordinary_batch(docs, num_threads=2)
    got = tok.encode_batch(docs, allowed_special="all")
    for d, g, w in zip(docs, got, want):
        if g != w:
            assert g == w, f"first differing document: {d[:200]!r}"
    for d, w in zip(docs[:50], want[:50]):
        assert tok.encode(d, "all") == w


@needs_cache
@needs_corpora
@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
@pytest.mark.parametrize("corpus", CORPUS_FILES)
def test_tiktoken_parity_sample_reference(name, corpus):
    _parity(name, "reference", sample_docs(corpus, 40_000))


@needs_cache
@needs_corpora
@needs_cpp
@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
@pytest.mark.parametrize("corpus", CORPUS_FILES)
def test_tiktoken_parity_full_cpp(name, corpus):
    _parity(name, "cpp", documents(corpus))


@needs_cache
@needs_corpora
@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
@pytest.mark.parametrize("corpus", CORPUS_FILES)
def test_tiktoken_parity_full_reference(name, corpus):
    _parity(name, "reference", documents(corpus))


@needs_cache
@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_every_rank_token_encodes_to_itself(name):
    """tiktoken looks a whole chunk up first; the all-splits merges must reach the same token."""
    tok = tiktoken_tok(name, "reference")
    enc = tok._encoder
    n = 0
    for i in range(tok.vocab_size):
        if i in tok.special_tokens.values() or tok._id_bytes[i] is None:
            continue
        assert enc.encode_chunk(tok.token_bytes(i)) == [i]
        n += 1
    assert n == {"gpt2": 50256, "cl100k_base": 100256}[name]


# --------------------------------------------------------------- special tokens
_SMALL: dict = {}


def small_trained(backend: str, pattern: str = "simple", specials=("<pad>", EOT, "<|end|>")) -> BPETokenizer:
    key = (backend, pattern, specials)
    if key not in _SMALL:
        _SMALL[key] = _small_trained(backend, pattern, specials)
    return _SMALL[key]


def _small_trained(backend: str, pattern: str, specials) -> BPETokenizer:
    text = "the theme of the other thesis: there, then, they thought. " * 20 + "Сказка о рыбаке и рыбке.\n" * 5
    return train_bpe(
        text, vocab_size=256 + 40 + len(specials), pattern=pattern, special_tokens=specials, backend=backend
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_special_tokens_are_atomic(backend):
    tok = small_trained(backend)
    eot, end, pad = tok.special_tokens[EOT], tok.special_tokens["<|end|>"], tok.pad_id
    assert (pad, eot, end) == (296, 297, 298) and tok.vocab_size == 299
    o = tok.encode_ordinary
    assert tok.encode(EOT + EOT, "all") == [eot, eot]  # adjacent
    assert tok.encode(EOT + "the" + EOT, "all") == [eot] + o("the") + [eot]  # at the very start and end
    assert tok.encode("the" + EOT + "me", "all") == o("the") + [eot] + o("me")  # inside a word
    assert tok.encode(" " + EOT + " ", "all") == o(" ") + [eot] + o(" ")
    # overlapping specials: the longest match wins
    assert tok.encode("<|endoftext|>", "all") == [eot]
    assert tok.encode("<|end|>oftext|>", "all") == [end] + o("oftext|>")
    assert tok.encode("<|end<|endoftext|>", "all") == o("<|end") + [eot]
    assert tok.encode("<pad><|end|><pad>", "all") == [pad, end, pad]
    # plain-text mode
    text = "a<|endoftext|>b<|end|>"
    plain = tok.encode(text, allowed_special=set(), disallowed_special=())
    assert (
        plain
        == tok.encode_ordinary(text)
        == bpe_reference.encoder_from_merges([m[:2] for m in tok.merges]).encode(text.encode())
    )
    assert not set(plain) & {eot, end, pad}
    assert tok.encode(text, allowed_special={"<|end|>"}, disallowed_special=()) == o("a<|endoftext|>b") + [end]
    assert tok.decode(tok.encode(text, "all")) == text
    with pytest.raises(ValueError, match="<nope>"):
        tok.encode("x", allowed_special={"<nope>"})


@pytest.mark.parametrize("backend", BACKENDS)
def test_overlapping_specials_longest_wins(backend):
    tok = BPETokenizer.from_merges([], special_tokens=["ab", "abc", "bcd"], backend=backend)
    ab, abc, bcd = 256, 257, 258
    assert tok.encode("abcd", "all") == [abc, ord("d")]
    assert tok.encode("abd", "all") == [ab, ord("d")]
    assert tok.encode("xbcd", "all") == [ord("x"), bcd]
    assert tok.encode("ababc", "all") == [ab, abc]


@needs_cache
def test_specials_match_tiktoken_allowed_sets():
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base")
    tok = tiktoken_tok("cl100k_base", "reference")
    t = "<|fim_prefix|>def f():<|fim_suffix|>\n<|endoftext|><|endoftext|>"
    for allowed in ["all", set(), {"<|endoftext|>"}, {"<|fim_prefix|>", "<|fim_suffix|>"}]:
        assert tok.encode(t, allowed, ()) == enc.encode(t, allowed_special=allowed, disallowed_special=())
        if allowed != "all":  # tiktoken's default: a special token that is not allowed is an error
            with pytest.raises(ValueError, match="special token '<|"):
                tok.encode(t, allowed_special=allowed)


@needs_cache
@pytest.mark.parametrize("backend", BACKENDS)
def test_lone_surrogates_become_replacement_char(backend):
    import tiktoken

    enc = tiktoken.get_encoding("gpt2")
    tok = tiktoken_tok("gpt2", backend)
    for t in ["a\ud800b", "\udcff", "x\ud83d\ude00y".encode("utf-16", "surrogatepass").decode("utf-16"), "\ud83d"]:
        assert tok.encode(t, "all") == enc.encode(t), repr(t)
    assert tok.encode("a\ud800b", "all") == tok.encode("a\ufffdb", "all")


@needs_cache
@pytest.mark.parametrize("backend", BACKENDS)
def test_decode_joins_bytes_before_utf8(backend):
    tok = tiktoken_tok("gpt2", backend)
    text = "中文 и русский 🤖<|endoftext|>x<|endoftext|>"
    ids = tok.encode(text, "all")
    assert any("\ufffd" in tok.decode([i]) for i in ids)  # some tokens hold part of a character
    assert tok.decode(ids) == text
    assert tok.decode_bytes(ids) == text.encode("utf-8")
    assert tok.decode(np.array(ids, dtype=np.uint32)) == text
    cut = tok.encode("中文 и русский 🤖", "all")[:-1]  # the emoji's last byte is missing
    assert tok.decode(cut).endswith("\ufffd") and tok.decode(cut)[:-1] == "中文 и русский "
    with pytest.raises(ValueError, match="unknown token id 50257"):
        tok.decode([1, 50257])
    with pytest.raises(ValueError, match="unknown token id -1"):
        tok.decode([-1])
    assert tok.decode([]) == "" and tok.decode_bytes(iter([50256, 220])) == b"<|endoftext|> "


# ---------------------------------------------------------------------- training
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pattern", ["simple", "gpt2", "gpt4"])
def test_train_matches_reference(backend, pattern):
    text = "low lower lowest newer newest wider, \n\nwidest 123 4567!! <|endoftext|> low low" * 3
    tok = train_bpe(text, vocab_size=280, pattern=pattern, backend=backend)
    want = bpe_reference.train(text.encode(), 280, pattern, [b"<pad>", EOT.encode()])
    assert [m[:2] for m in tok.merges] == [tuple(m) for m in want]
    assert [m[2] for m in tok.merges] == list(range(256, 256 + len(want)))
    n = 256 + len(want)
    assert tok.special_tokens == {"<pad>": n, EOT: n + 1} and tok.vocab_size == n + 2
    assert [tok.token_bytes(b) for b in range(256)] == [bytes([b]) for b in range(256)]
    ref = bpe_reference.encoder_from_merges(want, pattern)
    probe = "the lowest newest widest 12345\n low"
    assert tok.encode_ordinary(probe) == ref.encode(probe.encode())
    assert tok.encode(text, "all") == tok.encode_batch([text], allowed_special="all")[0]
    assert tok.decode(tok.encode(text, "all")) == text


@pytest.mark.parametrize("backend", BACKENDS)
def test_train_min_frequency_and_tie_break(backend):
    text = "aaab abab bcbc cdcd dede xyxy " * 3 + "qq zz"
    for kw in [
        dict(min_frequency=6),
        dict(tie_break="largest_bytes"),
        dict(min_frequency=4, tie_break="largest_bytes"),
    ]:
        tok = train_bpe(text, vocab_size=300, special_tokens=[EOT], backend=backend, **kw)
        want = bpe_reference.train(text, 300, "simple", [EOT.encode()], **kw)
        assert [m[:2] for m in tok.merges] == [tuple(m) for m in want], kw
    assert len(train_bpe(text, vocab_size=300, min_frequency=6, backend=backend).merges) < 20


@pytest.mark.parametrize("backend", BACKENDS)
def test_train_on_files_keeps_texts_apart(tmp_path, backend):
    a, b = "hello hello help", "lo there there"
    (tmp_path / "a.txt").write_text(a)
    (tmp_path / "b.txt").write_text(b)
    tok = train_bpe([tmp_path / "a.txt", str(tmp_path / "b.txt")], vocab_size=270, backend=backend)
    # oracle: the texts joined by a registered special token (chunks never cross it)
    want = bpe_reference.train((a + EOT + b).encode(), 270, "simple", [b"<pad>", EOT.encode()])
    assert [m[:2] for m in tok.merges] == [tuple(m) for m in want]
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        train_bpe([tmp_path / "missing.txt"], vocab_size=270, backend=backend)


_TEXT_ALPHABET = st.sampled_from(
    [
        "the",
        " the",
        "me",
        " ",
        "  ",
        "\n",
        "\n\n",
        "\t",
        "1",
        "2024",
        "'s",
        "'",
        ".",
        "!?",
        "é",
        "中",
        "🤖",
        "\u00a0",
        "\r\n",
        "<|endoftext|>",
        "<pad>",
        "<|end|>",
        "<|",
        "\ud800",
        "Сказка",
    ]
)


@settings(max_examples=100, deadline=None)
@given(pieces=st.lists(_TEXT_ALPHABET, max_size=40), pattern=st.sampled_from(["simple", "gpt2", "gpt4"]))
def test_round_trip_and_backends_agree(pieces, pattern):
    text = "".join(pieces)
    clean = text.replace("\ud800", "\ufffd")
    toks = [small_trained("reference", pattern)] + ([small_trained("cpp", pattern)] if HAVE_CPP else [])
    for tok in toks:
        ids = tok.encode(text, "all")
        assert tok.decode(ids) == clean
        assert tok.encode_ordinary(text) == bpe_reference.encoder_from_merges(
            [m[:2] for m in tok.merges], pattern
        ).encode(clean.encode())
        assert tok.encode_batch([text, clean], allowed_special="all") == [ids, ids]
    if len(toks) == 2:
        assert toks[0].encode(text, "all") == toks[1].encode(text, "all")
        assert toks[0].to_dict() == toks[1].to_dict()


def test_train_bad_vocab_size():
    with pytest.raises(ValueError, match="vocab_size"):
        train_bpe("abc", vocab_size=200, backend="reference")


# ------------------------------------------------------------ other vocabularies
@pytest.mark.parametrize("backend", BACKENDS)
def test_from_merges_and_from_vocab_keep_ids(backend):
    tok = small_trained(backend)
    as_bytes = [(tok.token_bytes(a), tok.token_bytes(b)) for a, b, _ in tok.merges]
    again = BPETokenizer.from_merges(as_bytes, ("<pad>", EOT, "<|end|>"), tok.pattern, backend=backend)
    assert again.to_dict() == tok.to_dict()
    # the same vocabulary under shuffled ids
    rng = random.Random(0)
    perm = list(range(tok.vocab_size))
    rng.shuffle(perm)
    vocab = {perm[i]: tok.token_bytes(i) for i in range(256 + len(tok.merges))}
    specials = {s: perm[i] for s, i in tok.special_tokens.items()}
    other = BPETokenizer.from_vocab(vocab, as_bytes, special_tokens=specials, pattern=tok.pattern, backend=backend)
    text = "then the theme <|end|> Сказка рыбке.\n"
    assert other.encode(text, "all") == [perm[i] for i in tok.encode(text, "all")]
    assert other.decode(other.encode(text, "all")) == text
    with pytest.raises(ValueError, match="not in the vocabulary"):
        BPETokenizer.from_vocab(vocab, [(b"q", b"z")], backend=backend)
    with pytest.raises(ValueError, match="earlier merge"):
        BPETokenizer.from_merges([(b"ab", b"c")], backend=backend)


@needs_cache
def test_from_tiktoken_path(tmp_path):

    path = CACHE / "0ea1e91bbb3a60f729a8dc8f777fd2fc07cd8df4"
    link = tmp_path / "r50k_base.tiktoken"
    link.write_bytes(path.read_bytes())
    tok = from_tiktoken(link, backend="reference")
    assert tok.eot_id == 50256 and tok.pattern == "gpt2"
    assert tok.encode("Hello, do you like tea? ", "all") == GPT2_KNOWN[0][1]
    with pytest.raises(FileNotFoundError, match="nothere.tiktoken"):
        from_tiktoken(tmp_path / "nothere.tiktoken", backend="reference")
    with pytest.raises(ValueError, match="unknown pre-tokenization pattern 'nope'"):
        from_tiktoken(link, pattern="nope", backend="reference")


def test_bad_arguments():
    with pytest.raises(ValueError, match="pattern"):
        BPETokenizer.from_merges([], pattern="nope", backend="reference")
    with pytest.raises(ValueError, match="backend"):
        BPETokenizer.from_merges([], backend="rust")
    with pytest.raises(ValueError, match="single-byte"):
        BPETokenizer({0: b"a"}, [], {}, backend="reference")


# ---------------------------------------------------------------- bad input: one-line errors
@pytest.mark.parametrize(
    "vocab_size,exc,words",
    [
        (300.5, TypeError, "vocab_size must be an integer"),
        ("300", TypeError, "vocab_size must be an integer"),
        (10**30, ValueError, "too large"),
        ((1 << 26) + 1, ValueError, "too large"),
    ],
)
def test_bpe_train_vocab_size_type_and_range(vocab_size, exc, words):
    # before: pybind11 "incompatible function arguments" TypeError that quoted all the training text
    with pytest.raises(exc, match=words) as e:
        train_bpe("hello world " * 100, vocab_size)
    assert len(str(e.value)) < 200


def test_bpe_train_largest_vocab_size_is_accepted():
    tok = train_bpe("hello world", 1 << 26)  # ends early: few distinct pairs
    assert tok.decode(tok.encode("hello world")) == "hello world"


def test_overlapping_special_tokens_longest_match_both_backends():
    text = "hello <|a|> world <|a"
    toks = [train_bpe(text, 300, special_tokens=["<|a", "<|a|>"], backend=b) for b in ("cpp", "reference")]
    for tok in toks:
        a, ab = tok.encode("<|a", "all"), tok.encode("<|a|>", "all")
        assert len(a) == len(ab) == 1 and a != ab
        assert tok.encode("x<|a|>y<|a", "all") == [tok.encode("x")[0], ab[0], tok.encode("y")[0], a[0]]
    assert toks[0].to_dict() == toks[1].to_dict()


@pytest.mark.parametrize("specials,words", [([""], "non-empty"), (["<|a|>", "<|a|>"], "given twice")])
def test_bad_special_tokens(specials, words):
    with pytest.raises(ValueError, match=words):
        train_bpe("hello world", 300, special_tokens=specials)


def test_cpp_train_missing_file_names_it(tmp_path):
    from storygpt import _bpe

    with pytest.raises(FileNotFoundError, match="nope.txt"):
        _bpe.train(files=[str(tmp_path / "nope.txt")], vocab_size=300)
    with pytest.raises(FileNotFoundError, match=r"training file not found: .*nope.txt"):
        train_bpe([tmp_path / "nope.txt"], 300)


@pytest.mark.parametrize(
    "edit,words",
    [
        (lambda d: d["merges"][0].__setitem__(2, 5), r"merge 0: token 5 = b'\\x05' is not"),  # new id = a byte's id
        (lambda d: d["merges"][1].__setitem__(2, d["merges"][0][2]), "merge 1: token"),  # two merges, one id
        (lambda d: d["merges"].__setitem__(0, [297, 296, 256]), "merge 0"),  # refers to later ids
    ],
)
def test_tokenizer_file_with_malformed_merges(tiny_run, tmp_path, edit, words):
    # the C++ Encoder itself accepts the first two (reported); the Python layer checks every merge's bytes
    d = json.loads((tiny_run["corpus"] / "tokenizer-bpe-300.json").read_text(encoding="utf-8"))
    edit(d)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{f}: malformed bpe tokenizer: {words}"):
        load(f)
