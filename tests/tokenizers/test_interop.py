"""Import and export with tiktoken and Hugging Face ``tokenizers`` as oracles (storygpt.tokenizers.interop).

The default suite checks a few hundred documents of each shared corpus; the ``slow`` tests check
every document.  Tests skip with a reason when ``../shared`` or an optional package is absent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import CACHE, SHARED, run_tool

from storygpt.tokenizers import (
    EOT,
    BPETokenizer,
    HFTokenizer,
    InteropError,
    gpt2_bytes_to_unicode,
    merges_from_ranks,
    parse_spec,
    train_bpe,
)
from storygpt.tokenizers.interop import from_gpt2_files, from_hf, from_tiktoken, save_hf, save_tiktoken, to_tiktoken

CORPORA = sorted((SHARED / "corpora").glob("*.txt")) if (SHARED / "corpora").is_dir() else []
PATTERNS = ("simple", "gpt2", "gpt4", "o200k")
SAMPLE_DOCS = 40

needs_corpora = pytest.mark.skipif(not CORPORA, reason=f"shared corpora not found at {SHARED / 'corpora'}")
needs_cache = pytest.mark.skipif(not CACHE.is_dir(), reason=f"tiktoken BPE files not found at {CACHE}")


def docs_of(path: Path, limit: int | None) -> list[str]:
    docs = path.read_text(encoding="utf-8").split("\n<|endoftext|>\n")
    return docs if limit is None else docs[:limit]


def hf_ids(hf, texts):
    return [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]


@pytest.fixture(scope="module")
def trained():
    """One small storygpt BPE per pattern, trained on the three corpora."""
    if not CORPORA:
        pytest.skip(f"shared corpora not found at {SHARED / 'corpora'}")
    text = EOT.join(p.read_text(encoding="utf-8")[:20_000] for p in CORPORA)
    return {p: train_bpe(text, 360, pattern=p, special_tokens=("<pad>", EOT)) for p in PATTERNS}


def check_export_import(tok, tmp_path, limit):
    """save_hf, from_hf, to_tiktoken and save_tiktoken/from_tiktoken give tok's ids; decode identical."""
    tokenizers = pytest.importorskip("tokenizers", reason="Hugging Face tokenizers not installed (pip install .[test])")
    pytest.importorskip("tiktoken", reason="tiktoken not installed (pip install .[test])")
    save_hf(tok, tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    back = from_hf(tmp_path / "tokenizer.json")
    assert back.special_tokens == tok.special_tokens and back.pattern == tok.pattern
    tt = to_tiktoken(tok)
    save_tiktoken(tok, tmp_path / "ranks.tiktoken")
    from_file = from_tiktoken(tmp_path / "ranks.tiktoken", tok.pattern, tok.special_tokens)
    for path in CORPORA:
        docs = docs_of(path, limit)
        want = tok.encode_batch(docs, disallowed_special=())
        assert hf_ids(hf, docs) == want, path.name
        assert back.encode_batch(docs, disallowed_special=()) == want, path.name
        assert tt.encode_ordinary_batch(docs) == want, path.name
        assert from_file.encode_batch(docs, disallowed_special=()) == want, path.name
        for ids in want[:20]:
            assert hf.decode(ids, skip_special_tokens=False) == tok.decode(ids) == tt.decode(ids)
    # special tokens: allowed in storygpt = added tokens in the tokenizers library = allowed in tiktoken
    joined = EOT.join(docs_of(CORPORA[0], 3)) + "<pad>"
    want = tok.encode(joined, allowed_special="all")
    assert want.count(tok.eot_id) == 2 and want[-1] == tok.pad_id
    assert hf.encode(joined, add_special_tokens=False).ids == want
    assert tt.encode(joined, allowed_special="all") == want
    assert hf.decode(want, skip_special_tokens=False) == tok.decode(want) == joined


@needs_corpora
@pytest.mark.parametrize("pattern", PATTERNS)
def test_trained_bpe_export_import_sample(trained, pattern, tmp_path):
    check_export_import(trained[pattern], tmp_path, SAMPLE_DOCS)


@pytest.mark.slow
@needs_corpora
@pytest.mark.parametrize("pattern", PATTERNS)
def test_trained_bpe_export_import_every_document(trained, pattern, tmp_path):
    check_export_import(trained[pattern], tmp_path, None)


def check_tiktoken_vocab(name, tmp_path, limit, export_hf):
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken not installed (pip install .[test])")
    enc = tiktoken.get_encoding(name)
    tok = from_tiktoken(name)
    hf = None
    if export_hf:
        tokenizers = pytest.importorskip("tokenizers", reason="Hugging Face tokenizers not installed")
        save_hf(tok, tmp_path / "tokenizer.json")
        hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for path in CORPORA:
        docs = docs_of(path, limit)
        want = enc.encode_ordinary_batch(docs)
        assert tok.encode_batch(docs, disallowed_special=()) == want, (name, path.name)
        if hf is not None:
            assert hf_ids(hf, docs) == want, (name, path.name)
        for ids in want[:10]:
            assert tok.decode(ids) == enc.decode(ids)


@needs_corpora
@needs_cache
def test_o200k_matches_tiktoken_sample(tmp_path):
    check_tiktoken_vocab("o200k_base", tmp_path, SAMPLE_DOCS, export_hf=False)


@needs_corpora
@needs_cache
def test_gpt2_ranks_export_to_hf_sample(tmp_path):
    check_tiktoken_vocab("gpt2", tmp_path, SAMPLE_DOCS, export_hf=True)


@pytest.mark.slow
@needs_corpora
@needs_cache
@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_tiktoken_vocabularies_every_document_and_hf_export(name, tmp_path):
    check_tiktoken_vocab(name, tmp_path, None, export_hf=True)


@needs_cache
def test_merges_from_ranks_gives_gpt2_vocab_bpe():
    """The merges recovered from GPT-2's ranks are the lines of GPT-2's own vocab.bpe, in order."""
    tiktoken = pytest.importorskip("tiktoken", reason="tiktoken not installed")
    from storygpt.tokenizers.interop_gpt2 import unicode_to_bytes

    ranks = tiktoken.get_encoding("gpt2")._mergeable_ranks
    lines = (CACHE / "6d1cbeee0f20b3d9449abfede4726ed8212e3aee").read_text(encoding="utf-8").splitlines()[1:]
    want = [tuple(unicode_to_bytes(x, "vocab.bpe") for x in line.split(" ")) for line in lines if line]
    assert merges_from_ranks(ranks) == want
    with pytest.raises(ValueError, match=r"token b'abc' \(rank 256\) cannot be built"):
        merges_from_ranks({**{bytes([b]): b for b in range(256)}, b"abc": 256})


@needs_cache
def test_gpt2_files_import_equals_tiktoken_and_hf_roundtrip(tmp_path):
    pytest.importorskip("tiktoken", reason="tiktoken not installed")
    files = from_gpt2_files(
        CACHE / "6c7ea1a7e38e3a7f062df639a5b80947f075ffe6", CACHE / "6d1cbeee0f20b3d9449abfede4726ed8212e3aee"
    )
    assert files.eot_id == 50256 and files.vocab_size == 50257
    text = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of someunknownPlace."
    ranks = from_tiktoken("gpt2")
    assert files.encode(text, "all") == ranks.encode(text, "all")


GPT2_ENCODER = CACHE / "6c7ea1a7e38e3a7f062df639a5b80947f075ffe6"
GPT2_MERGES = CACHE / "6d1cbeee0f20b3d9449abfede4726ed8212e3aee"
#: Published GPT-2 ids (/work/shared/README.md).
GPT2_KNOWN = {
    "Hello, do you like tea? ": [15496, 11, 466, 345, 588, 8887, 30, 220],
    "Akwirw ier": [33901, 86, 343, 86, 220, 959],
    " In the sunlit terraces of someunknownPlace.": [554, 262, 4252, 18250, 8812, 2114, 286, 617, 34680, 27271, 13],
    "This is some text": [1212, 318, 617, 2420],
    "do do": [4598, 466],
}


def gpt2_vocab_and_merges() -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """GPT-2's files as another tool hands them over: id -> bytes (``<|endoftext|>`` included, at 50256) and
    merges as byte pairs, decoded here with GPT-2's byte table (independent of interop's reader)."""
    table = {c: b for b, c in gpt2_bytes_to_unicode().items()}
    raw = lambda token: bytes(table[c] for c in token)  # noqa: E731
    encoder = json.loads(GPT2_ENCODER.read_text(encoding="utf-8"))
    vocab = {i: raw(token) for token, i in encoder.items()}
    lines = GPT2_MERGES.read_text(encoding="utf-8").splitlines()[1:]
    return vocab, [tuple(raw(x) for x in line.split(" ")) for line in lines if line]


@needs_cache
@pytest.mark.parametrize("special_tokens", [None, ()])
def test_foreign_vocab_keeps_an_entry_no_merge_makes_as_an_added_token(special_tokens):
    """Issue 21 item 6: GPT-2's <|endoftext|> (50256), not declared special, stays at its id (encoded only when
    allowed), with a one-line warning; ids are GPT-2's published ones and tiktoken's."""
    vocab, merges = gpt2_vocab_and_merges()
    assert vocab[50256] == b"<|endoftext|>" and len(vocab) == 50257 and len(merges) == 50000
    with pytest.warns(UserWarning, match=r"^1 vocabulary entry made by no merge .*: 50256 \('<\|endoftext\|>'\)$"):
        tok = BPETokenizer.from_vocab(vocab, merges, special_tokens=special_tokens, pattern="gpt2")
    assert tok.vocab_size == 50257 and tok.special_tokens == {EOT: 50256} and tok.eot_id == 50256
    for text, ids in GPT2_KNOWN.items():
        assert tok.encode(text) == ids, text
    assert tok.encode("tea?<|endoftext|>do do", allowed_special="all") == [660, 64, 30, 50256, 4598, 466]
    assert tok.encode_ordinary("<|endoftext|>") == [27, 91, 437, 1659, 5239, 91, 29]
    with pytest.raises(ValueError, match="special token '<\\|endoftext\\|>'"):
        tok.encode("a <|endoftext|>")
    assert tok.decode([50256, 220]) == "<|endoftext|> "
    enc = pytest.importorskip("tiktoken", reason="tiktoken not installed").get_encoding("gpt2")
    text = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of someunknownPlace."
    assert tok.encode(text, allowed_special="all") == enc.encode(text, allowed_special="all")
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)


def test_declared_special_in_foreign_vocab_gives_no_warning(recwarn):
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"ab", 257: b"<s>", 258: b"\xff\xfe"}
    tok = BPETokenizer.from_vocab({k: v for k, v in vocab.items() if k != 258}, [(b"a", b"b")], ["<s>"])
    assert tok.special_tokens == {"<s>": 257} and not recwarn.list
    with pytest.raises(ValueError, match=r"vocab entry 258 \(token b'\\xff\\xfe'\) is not produced by any merge"):
        BPETokenizer.from_vocab(vocab, [(b"a", b"b")], ["<s>"])  # not text: cannot be an added token
    with pytest.raises(ValueError, match=r"vocab entry 258 \(token b'abs'\) is not produced by any merge"):
        BPETokenizer.from_vocab(vocab | {258: b"abs"}, [(b"a", b"b")], ["<s>"])  # ab + s: a merge missing


def test_two_merges_making_the_same_bytes_are_refused_naming_both():
    merges = [(b"a", b"b"), (b"b", b"c"), (b"ab", b"c"), (b"a", b"bc")]
    with pytest.raises(ValueError, match=r"^merges 2 \(b'ab', b'c'\) and 3 \(b'a', b'bc'\) both make b'abc'"):
        BPETokenizer.from_merges(merges)


def test_gpt2_merges_file_making_the_same_bytes_twice_is_refused_with_both_lines(tmp_path):
    table = gpt2_bytes_to_unicode()
    encoder = {table[b]: b for b in range(256)} | {"ab": 256, "bc": 257, "abc": 258}
    write_json(tmp_path / "encoder.json", encoder)
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\na b\nb c\nab c\na bc\n", encoding="utf-8")
    with pytest.raises(ValueError) as e:
        from_gpt2_files(tmp_path / "encoder.json", tmp_path / "vocab.bpe")
    assert str(e.value) == (
        f"{tmp_path / 'vocab.bpe'}:5: merge 'a bc' makes b'abc', which line 4 already makes: "
        "each token must be made by one merge"
    )


# ------------------------------------------------------------------------------------ bad input
def write_json(path: Path, d) -> Path:
    path.write_text(json.dumps(d), encoding="utf-8")
    return path


@pytest.fixture
def small_hf(tmp_path):
    tok = train_bpe("the cat sat on the mat, the end " * 20, 280, pattern="gpt4")
    save_hf(tok, tmp_path / "tokenizer.json")
    return json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda d: d.update(normalizer={"type": "NFKC"}), "normalizer: 'NFKC' is not supported"),
        (lambda d: d["model"].update(type="WordPiece"), "model type: 'WordPiece' is not supported"),
        (
            lambda d: d["pre_tokenizer"]["pretokenizers"][0]["pattern"].update(Regex=r"\w+"),
            "pre_tokenizer: Split pattern",
        ),
        (lambda d: d.update(pre_tokenizer={"type": "Whitespace"}), "pre_tokenizer: type 'Whitespace'"),
        (lambda d: d["model"].update(byte_fallback=True), "model.byte_fallback: true is not supported"),
        (lambda d: d.update(decoder={"type": "WordPiece"}), "decoder: 'WordPiece' is not supported"),
        (lambda d: d["added_tokens"][0].update(lstrip=True), "added token '<pad>': lstrip=true"),
        (lambda d: d["model"]["merges"].append(["zz", "q"]), "model: merge"),
    ],
)
def test_unsupported_tokenizer_json_names_the_component(small_hf, tmp_path, change, words):
    change(small_hf)
    path = write_json(tmp_path / "bad.json", small_hf)
    with pytest.raises(InteropError) as e:
        from_hf(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(path)) and words in msg, msg


def test_corrupt_tokenizer_json(tmp_path):
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"model": ', encoding="utf-8")
    with pytest.raises(InteropError, match=rf"^{re.escape(str(bad))}: corrupt tokenizer.json"):
        from_hf(bad)
    write_json(bad, {"x": 1})
    with pytest.raises(InteropError, match="not a Hugging Face tokenizer.json"):
        from_hf(bad)
    pytest.importorskip("tokenizers", reason="Hugging Face tokenizers not installed")
    write_json(bad, {"version": "1.0", "model": {"type": "Nope"}})
    with pytest.raises(ValueError, match=rf"^{re.escape(str(bad))}: the tokenizers library cannot read"):
        HFTokenizer.from_file(bad)


def test_two_ids_with_the_same_bytes_are_refused_before_any_export():
    """Issue 36 item 12: such a vocabulary was built (and only the export refused it); now the
    constructor refuses it, naming both ids, so no exporter ever sees one."""
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"ab", 257: b"ab"}
    with pytest.raises(
        ValueError, match=r"^merges 0 \(97, 98, 256\) and 1 \(97, 98, 257\)|^token ids 256 and 257 both"
    ):
        BPETokenizer(vocab, [(97, 98, 256), (97, 98, 257)], {EOT: 258})


def test_special_token_in_text_is_an_error_unless_allowed():
    tok = train_bpe("hello world " * 10, 270, special_tokens=("<pad>", EOT))
    with pytest.raises(ValueError, match=r"^text contains the special token '<\|endoftext\|>': pass allowed_special"):
        tok.encode("a <|endoftext|> b")
    assert tok.encode("a <|endoftext|> b", allowed_special={EOT})[1:2] != []
    assert tok.encode("a <|endoftext|> b", disallowed_special=()) == tok.encode_ordinary("a <|endoftext|> b")
    assert tok.eot_id in tok.encode("a <|endoftext|> b", allowed_special="all")
    with pytest.raises(ValueError, match="<pad>"):  # the first one found is named
        tok.encode("x <pad> y <|endoftext|>", allowed_special=set())
    with pytest.raises(ValueError, match="not special tokens of this tokenizer: \\['<nope>'\\]"):
        tok.encode("x", allowed_special={"<nope>"})


def test_from_vocab_keeps_the_id_of_a_special_already_in_the_vocabulary():
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"ab", 257: EOT.encode()}
    tok = BPETokenizer.from_vocab(vocab, [(b"a", b"b")], special_tokens=(EOT,))
    assert tok.eot_id == 257 and tok.vocab_size == 258
    with pytest.raises(ValueError, match=r"merges 0 \(b'a', b'bc'\) and 1 \(b'ab', b'c'\) both make token 259"):
        BPETokenizer.from_vocab(
            vocab | {258: b"bc", 259: b"abc"}, [(b"a", b"bc"), (b"ab", b"c"), (b"b", b"c")], special_tokens=(EOT,)
        )


def test_a_huge_id_is_refused_before_any_allocation(tmp_path):
    d = train_bpe("the cat " * 10, 262).to_dict()
    d["special_tokens"]["<|endoftext|>"] = (1 << 26) - 1
    path = write_json(tmp_path / "t.json", d)
    from storygpt.tokenizers import TokenizerFileError, load

    with pytest.raises(TokenizerFileError, match=rf"^{re.escape(str(path))}: .*token id 67108863 is far beyond"):
        load(path)


def test_short_training_warns_with_the_size_reached():
    with pytest.warns(UserWarning, match=r"stopped at vocab_size 26\d .* short of the 1,000 asked"):
        train_bpe("abcabc abd", 1000)


def test_unknown_spec_and_missing_files_are_one_line_errors(tmp_path):
    for argv, words in [
        (["--tokenizer", "bpf:3"], "unknown tokenizer SPEC 'bpf:3'"),
        (["--tokenizer", f"hf:{tmp_path / 'nope.json'}"], "no such file"),
        (["--tokenizer", "byte", "--vocab-size", "300"], "--vocab-size applies to bpe and word"),
        (["--bpe", "--tokenizer", "word"], "either --bpe or --tokenizer"),
        (["--min-frequency", "0"], "--min-frequency must be >= 1, got 0"),
    ]:
        done = run_tool("data", *argv, "--out", tmp_path)
        assert done.returncode == 2
        err = done.stderr.strip()
        assert err.startswith("data.py: error: ") and "\n" not in err and words in err, err
    assert parse_spec("tiktoken:o200k_base").slug == "tiktoken-o200k_base"


def test_tiktoken_download_failure_is_one_error_naming_the_cache(monkeypatch, tmp_path):
    # before: requests' multi-line HTTPSConnectionPool error, cut mid-word by compare.py
    tiktoken = pytest.importorskip("tiktoken")

    def offline(name):
        raise ConnectionError("HTTPSConnectionPool(host='openaipublic.blob.core.windows.net', port=443)\nmore")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(InteropError) as e:
        from_tiktoken("gpt2")
    assert str(e.value) == (
        "tiktoken:gpt2 needs OpenAI's BPE files, downloaded on first use, and the download failed "
        "(ConnectionError: HTTPSConnectionPool(host='openaipublic.blob.core.windows.net', port=443)); "
        f"TIKTOKEN_CACHE_DIR={tmp_path} does not hold them (docs/tokenizers.md: using tiktoken offline)"
    )
