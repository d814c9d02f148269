"""HFTokenizer on tokenizer.json files the ``tokenizers`` library loads but cannot encode with.

A model whose unknown token is missing from its vocabulary fails only when text holds a
character it cannot tokenize; HFTokenizer refuses such a file at load, naming it, and
turns any encode-time failure of the library into a ValueError naming the source.
"""

from __future__ import annotations

import json
import re

import pytest

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import models, pre_tokenizers  # noqa: E402

from storygpt.tokenizers import EOT, io, registry  # noqa: E402
from storygpt.tokenizers import hf as hf_module  # noqa: E402
from storygpt.tokenizers.hf import HFTokenizer  # noqa: E402


def _json(model) -> dict:
    tok = tokenizers.Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return json.loads(tok.to_str())


def _wordpiece(with_unk: bool) -> dict:
    vocab = {"a": 0, "b": 1, "##b": 2}
    if with_unk:
        vocab["[UNK]"] = 3
    return _json(models.WordPiece(vocab=vocab, unk_token="[UNK]"))


def test_wordpiece_with_its_unk_token_encodes_unknown_characters_as_unk():
    tok = HFTokenizer(_wordpiece(with_unk=True))
    assert tok.encode("ab a z") == [0, 2, 0, 3]
    assert tok.unk_id == 3 and tok.eot_id == 4


@pytest.mark.parametrize(
    "model, unk, kind",
    [
        (lambda: _wordpiece(with_unk=False), "[UNK]", "WordPiece"),
        (lambda: _json(models.BPE(vocab={"a": 0, "b": 1}, merges=[], unk_token="<unk>")), "<unk>", "BPE"),
        (lambda: _json(models.WordLevel(vocab={"a": 0, "b": 1}, unk_token="<unk>")), "<unk>", "WordLevel"),
    ],
)
def test_unk_token_missing_from_the_vocabulary_is_refused_at_load_naming_the_file(tmp_path, model, unk, kind):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(model()))
    with pytest.raises(
        ValueError,
        match=rf"^{path}: model.unk_token '{re.escape(unk)}' is not in the vocabulary \({kind} model\): "
        r"text with an unknown character could not be encoded$",
    ):
        HFTokenizer.from_file(path)


def test_unk_token_missing_is_refused_when_loading_a_storygpt_file_too():
    d = {"format": io.FORMAT_NAME, "version": io.FORMAT_VERSION, "kind": "hf", "tokenizer_json": _wordpiece(False)}
    with pytest.raises(io.TokenizerFileError, match=r"^run/tokenizer.json: malformed hf tokenizer: model.unk_token"):
        registry.from_dict(d, source="run/tokenizer.json")


def test_bpe_without_an_unk_token_still_loads_and_drops_unknown_characters():
    tok = HFTokenizer(_json(models.BPE(vocab={"a": 0, "b": 1}, merges=[])))
    assert tok.encode("ab z") == [0, 1] and tok.unk_id is None and tok.special_tokens == {EOT: 2}


def test_a_library_failure_at_encode_time_is_a_value_error_naming_the_source(monkeypatch):
    # the load-time checks turned off: a tokenizer that only fails on unknown characters
    monkeypatch.setattr(hf_module, "_check_unk", lambda model, hf: None)
    monkeypatch.setattr(HFTokenizer, "PROBE_TEXT", "a b")
    tok = HFTokenizer(_wordpiece(with_unk=False), source="/data/tok.json")
    assert tok.encode("ab a") == [0, 2, 0]
    with pytest.raises(
        ValueError,
        match=r"^/data/tok.json: the tokenizers library cannot encode the text: "
        r"WordPiece error: Missing \[UNK\] token from the vocabulary$",
    ):
        tok.encode("a z")


def test_the_probe_text_catches_what_the_unk_check_does_not(monkeypatch):
    monkeypatch.setattr(hf_module, "_check_unk", lambda model, hf: None)
    with pytest.raises(ValueError, match=r"^the tokenizers library cannot encode a probe text .*Missing \[UNK\] token"):
        HFTokenizer(_wordpiece(with_unk=False))


def test_hf_file_that_is_a_folder_is_named(tmp_path):
    with pytest.raises(IsADirectoryError, match=rf"^{tmp_path}: is a folder, not a tokenizer.json file$"):
        HFTokenizer.from_file(tmp_path)
