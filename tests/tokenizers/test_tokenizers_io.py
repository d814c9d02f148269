"""Tokenizer files: lossless token encoding, save/load round trips, clear errors for bad files."""

from __future__ import annotations

import json
import os

import pytest
from conftest import needs_cache  # also points TIKTOKEN_CACHE_DIR at ../shared
from hypothesis import given, settings
from hypothesis import strategies as st

import storygpt.tokenizers as T
from storygpt.tokenizers import EOT, BPETokenizer, TokenizerFileError, WordTokenizer, load, train_bpe
from storygpt.tokenizers.interop import from_tiktoken
from storygpt.tokenizers.io import token_from_json, token_to_json


@pytest.mark.parametrize(
    "b, want",
    [
        (b" the", " the"),
        (b"\n\n", "\n\n"),
        (b"\t \r\n", "\t \r\n"),
        ("é中".encode(), "é中"),
        (b"\xe2\x82", {"hex": "e282"}),  # a cut UTF-8 character
        (b"\x00", {"hex": "00"}),  # control characters are not "plain" text
        (b"\x1b[0m", {"hex": "1b5b306d"}),
        ("\u200b".encode(), {"hex": "e2808b"}),  # zero-width space (format character)
        (b"hex", "hex"),
    ],
)
def test_token_json_encoding(b, want):
    assert token_to_json(b) == want
    assert token_from_json(json.loads(json.dumps(want))) == b


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=12))
def test_token_json_encoding_is_lossless(b):
    assert token_from_json(json.loads(json.dumps(token_to_json(b), ensure_ascii=False))) == b


def test_token_from_json_rejects_garbage():
    for bad in [3, None, {"hex": "zz"}, {"hex": "00", "x": 1}, ["a"]]:
        with pytest.raises(ValueError):
            token_from_json(bad)


def bytes_tokenizer() -> BPETokenizer:
    """A BPE tokenizer whose tokens include spaces, newlines and invalid UTF-8."""
    data = (b"line one\n\nline two\n\n  \xff\xfe\x00\x00 \xe2\x82\xac\xe2\x82 " * 30) + "Ωμέγα ".encode() * 5
    return train_bpe(
        data,
        vocab_size=256 + 30 + 3,
        pattern="simple",
        special_tokens=("<pad>", EOT, "<|sp ace|>\n"),
        backend="reference",
    )


def test_bpe_save_load_round_trip(tmp_path):
    tok = bytes_tokenizer()
    path = tmp_path / "sub" / "tok.json"
    tok.save(path)
    raw = path.read_text(encoding="utf-8")
    d = json.loads(raw)
    assert (d["format"], d["version"], d["kind"], d["pattern"], d["merge_rule"]) == (
        "storygpt-tokenizer",
        1,
        "bpe",
        "simple",
        "merges",
    )
    tokens = [v for _, v in d["vocab"]]
    assert "\n\n" in tokens and any(isinstance(v, str) and " " in v and len(v) > 1 for v in tokens)
    assert {"hex": "ff"} in tokens and any(isinstance(v, dict) and len(v["hex"]) > 2 for v in tokens)
    n = 256 + len(tok.merges)  # the text runs out of pairs before 30 merges
    assert len(tok.merges) >= 20
    assert d["special_tokens"] == {"<pad>": n, EOT: n + 1, "<|sp ace|>\n": n + 2}
    assert os.listdir(path.parent) == ["tok.json"]  # no temp file left behind

    for loaded in [T.load(path, backend="reference"), BPETokenizer.load(path, backend="reference")]:
        assert isinstance(loaded, BPETokenizer)
        assert loaded.to_dict() == tok.to_dict()
        assert loaded.fingerprint() == tok.fingerprint()
        for i in range(tok.vocab_size):
            assert loaded.token_bytes(i) == tok.token_bytes(i)
        text = "line two\n\n  \udcff\x00 €<|sp ace|>\n<|endoftext|>"
        assert loaded.encode(text, "all") == tok.encode(text, "all")
    # checkpoints store to_dict(): plain JSON types only
    assert json.loads(json.dumps(tok.to_dict())) == tok.to_dict()
    assert T.from_dict(tok.to_dict(), backend="reference").fingerprint() == tok.fingerprint()
    # saving again over the old file works and gives the same bytes
    tok.save(path)
    assert path.read_text(encoding="utf-8") == raw


def test_fingerprint_changes_with_content():
    a = BPETokenizer.from_merges([(b"a", b"b")], backend="reference")
    b = BPETokenizer.from_merges([(b"a", b"c")], backend="reference")
    c = BPETokenizer.from_merges([(b"a", b"b")], pattern="gpt2", backend="reference")
    fps = {a.fingerprint(), b.fingerprint(), c.fingerprint()}
    assert len(fps) == 3 and all(len(f) == 64 and int(f, 16) >= 0 for f in fps)


@needs_cache
def test_tiktoken_vocab_save_load(tmp_path):
    import tiktoken

    tok = from_tiktoken("cl100k_base", backend="reference")
    tok.save(tmp_path / "cl100k.json")
    d = json.loads((tmp_path / "cl100k.json").read_text(encoding="utf-8"))
    assert d["merge_rule"] == "ranks" and "merges" not in d and d["pattern"] == "gpt4"
    loaded = T.load(tmp_path / "cl100k.json", backend="reference")
    assert loaded.special_tokens == tok.special_tokens and loaded.vocab_size == 100277
    text = "Hello,\n\n  world <|endoftext|> 12345 Привет"
    assert loaded.encode(text, "all") == tiktoken.get_encoding("cl100k_base").encode(text, allowed_special="all")


def test_word_save_load_round_trip(tmp_path):
    tok = WordTokenizer.train(["The cat sat.\nThe dog, the cat!", "“Quoted” text"], vocab_size=50)
    tok.save(tmp_path / "w.json")
    d = json.loads((tmp_path / "w.json").read_text(encoding="utf-8"))
    assert (d["kind"], d["version"], d["split"]) == ("word", 1, "words-v1")
    assert d["vocab"][:3] == ["<pad>", "<unk>", EOT]
    loaded = T.load(tmp_path / "w.json")
    assert isinstance(loaded, WordTokenizer) and loaded.tokens == tok.tokens
    assert loaded.fingerprint() == tok.fingerprint() != BPETokenizer.from_merges([], backend="reference").fingerprint()
    with pytest.raises(TokenizerFileError, match="w.json"):
        BPETokenizer.load(tmp_path / "w.json", backend="reference")


# ------------------------------------------------------------------ bad files
@pytest.fixture
def good_dict():
    return BPETokenizer.from_merges([(b"a", b"b")], backend="reference").to_dict()


def _write(path, d):
    path.write_text(json.dumps(d), encoding="utf-8")
    return path


def test_unknown_version(tmp_path, good_dict):
    p = _write(tmp_path / "v9.json", {**good_dict, "version": 9})
    with pytest.raises(TokenizerFileError, match=r"v9\.json.*version 9"):
        T.load(p)


def test_unknown_kind(tmp_path, good_dict):
    p = _write(tmp_path / "kind.json", {**good_dict, "kind": "sentencepiece"})
    with pytest.raises(TokenizerFileError, match=r"kind\.json.*'sentencepiece'"):
        T.load(p)


def test_not_a_tokenizer(tmp_path):
    p = _write(tmp_path / "other.json", {"hello": 1})
    with pytest.raises(TokenizerFileError, match=r"other\.json.*not a storygpt tokenizer"):
        T.load(p)
    p = _write(tmp_path / "list.json", [1, 2])
    with pytest.raises(TokenizerFileError, match=r"list\.json"):
        T.load(p)


def test_corrupt_json(tmp_path, good_dict):
    p = tmp_path / "cut.json"
    p.write_text(json.dumps(good_dict)[:-20], encoding="utf-8")
    with pytest.raises(TokenizerFileError, match=r"cut\.json.*corrupt"):
        T.load(p)
    p.write_bytes(b"\xff\xfe{")
    with pytest.raises(TokenizerFileError, match=r"cut\.json"):
        T.load(p)


def test_malformed_content(tmp_path, good_dict):
    bad_merge = {**good_dict, "merges": [[97, 98, 999]]}
    with pytest.raises(TokenizerFileError, match=r"m1\.json.*999"):
        T.load(_write(tmp_path / "m1.json", bad_merge), backend="reference")
    wrong_bytes = {**good_dict, "vocab": [e if e[0] != 256 else [256, "ac"] for e in good_dict["vocab"]]}
    with pytest.raises(TokenizerFileError, match=r"m2\.json.*merge 0"):
        T.load(_write(tmp_path / "m2.json", wrong_bytes), backend="reference")
    no_vocab = {k: v for k, v in good_dict.items() if k != "vocab"}
    with pytest.raises(TokenizerFileError, match=r"m3\.json.*vocab"):
        T.load(_write(tmp_path / "m3.json", no_vocab), backend="reference")
    bad_word = {"format": "storygpt-tokenizer", "version": 1, "kind": "word", "split": "words-v1", "vocab": ["a", "a"]}
    with pytest.raises(TokenizerFileError, match=r"m4\.json.*twice"):
        T.load(_write(tmp_path / "m4.json", bad_word))


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nothing\.json"):
        T.load(tmp_path / "nothing.json")


def test_tokenizer_load_on_a_folder(tiny_run):
    # before: IsADirectoryError "[Errno 21] Is a directory"
    with pytest.raises(IsADirectoryError, match=rf"^{tiny_run['root']}: is a folder, not a tokenizer file"):
        load(tiny_run["root"])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"kind": [1]}, "the tokenizer kind must be a string, got [1]"),
        ({"kind": {}}, "the tokenizer kind must be a string, got {}"),
        ({"superbpe": [1]}, "malformed superbpe tokenizer"),
        ({"superbpe": None}, "malformed superbpe tokenizer"),
    ],
)
def test_malformed_kind_and_superbpe_fields_are_tokenizer_file_errors(tmp_path, change, message):
    from storygpt.tokenizers.superbpe_train import train_superbpe

    tok = train_superbpe("the cat sat on the mat. the dog sat on the log. " * 20, 300, 280)
    d = {**tok.to_dict(), **change}
    path = tmp_path / "crafted.json"
    path.write_text(json.dumps(d))
    with pytest.raises(TokenizerFileError, match=message.replace("[", r"\[").replace("]", r"\]")) as e:
        load(path)
    assert str(path) in str(e.value)
