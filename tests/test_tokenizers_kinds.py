"""The SPEC registry: built-in kinds, and the worked example of docs/tokenizers.md ("Adding a kind") run as is."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from storygpt.tokenizers import SpecError, build_tokenizer, load, parse_spec, register_kind
from storygpt.tokenizers.spec import kinds

REPO = Path(__file__).resolve().parents[1]


def doc_example() -> str:
    text = (REPO / "docs" / "tokenizers.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- example: custom-kind -->\n```python\n(.*?)```", text, re.S)
    assert m, "docs/tokenizers.md lost its custom-kind example"
    return m.group(1)


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plugin")
    (folder / "mychars_doc.py").write_text(doc_example(), encoding="utf-8")
    sys.path.insert(0, str(folder))
    import mychars_doc  # noqa: F401  (registers the "char" kind)

    yield folder
    sys.path.remove(str(folder))


def test_doc_example_kind_goes_through_data_py_and_loads_back(plugin, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat.\n<|endoftext|>\nthe dog ran. Zorblax!\n<|endoftext|>\na mat\n", encoding="utf-8")
    spec = importlib.util.spec_from_file_location("data_cli_kinds", REPO / "data.py")
    data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(data)
    argv = ["--tokenizer", "char:12", "--train-file", str(corpus), "--out", str(tmp_path), "--quiet"]
    assert data.main([*argv, "--valid-fraction", "0.34"]) == 0
    folder = tmp_path / "c"
    tok = load(folder / "tokenizer-char-12.json")
    assert type(tok).__name__ == "CharTokenizer" and tok.vocab_size == 12
    stats = json.loads((folder / "stats-char-12.json").read_text(encoding="utf-8"))
    assert stats["splits"]["train"]["unk_share"] > 0  # only 10 characters kept
    assert tok.encode("ab<|endoftext|>", allowed_special="all")[-1] == tok.eot_id
    with pytest.raises(ValueError, match="special token '<\\|endoftext\\|>'"):
        tok.encode("ab<|endoftext|>")
    # another process finds the kind through STORYGPT_TOKENIZER_PLUGINS
    env = {**os.environ, "STORYGPT_TOKENIZER_PLUGINS": "mychars_doc", "PYTHONPATH": str(plugin)}
    code = f"from storygpt.tokenizers import load; print(load({str(folder / 'tokenizer-char-12.json')!r}).vocab_size)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "12"


def test_built_in_kinds_and_registry_errors():
    assert set(kinds()) >= {"bpe", "word", "byte", "tiktoken", "hf", "file"}
    byte = build_tokenizer("byte")
    assert byte.encode_ordinary("hé") == [104, 195, 169] and byte.eot_id == 256 and byte.unk_id is None
    assert byte.decode([104, 195, 169, 256]) == "hé<|endoftext|>"
    word = build_tokenizer("word:5", ["a b a c"])
    assert word.vocab_size == 5 and word.unk_id == 1
    with pytest.raises(SpecError, match="unknown tokenizer SPEC 'nope:3'"):
        parse_spec("nope:3")
    with pytest.raises(ValueError, match="already registered"):
        register_kind("bpe", lambda arg, docs, opt: None, arg="vocab", default_vocab=3)
    with pytest.raises(ValueError, match="must be a Tokenizer with a from_spec"):
        register_kind("thing", dict)
