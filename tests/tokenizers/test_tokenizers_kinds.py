"""The SPEC registry: built-in kinds, and the worked example of docs/tokenizers.md ("Adding a kind") run as is."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO

from storygpt.tokenizers import SpecError, build_tokenizer, load, parse_spec, register_kind
from storygpt.tokenizers.spec import kinds


def doc_example() -> str:
    text = (REPO / "docs" / "tokenizers.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- example: custom-kind -->\n```python\n(.*?)```", text, re.S)
    assert m, "docs/tokenizers.md lost its custom-kind example"
    return m.group(1)


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory) -> dict[str, str]:
    """The environment of a process that plugs the doc example in, as a user would: the module's folder on
    PYTHONPATH, its name in STORYGPT_TOKENIZER_PLUGINS (this process's registry is left alone)."""
    folder = tmp_path_factory.mktemp("plugin")
    (folder / "mychars_doc.py").write_text(doc_example(), encoding="utf-8")
    return {**os.environ, "STORYGPT_TOKENIZER_PLUGINS": "mychars_doc", "PYTHONPATH": str(folder)}


CHECK_CHAR_TOKENIZER = """
import sys
from storygpt.tokenizers import load
tok = load(sys.argv[1])
print(type(tok).__name__, tok.vocab_size, tok.encode("ab<|endoftext|>", allowed_special="all")[-1] == tok.eot_id)
try:
    tok.encode("ab<|endoftext|>")
except ValueError as e:
    print(e)
"""


def test_doc_example_kind_goes_through_data_py_and_loads_back(plugin_env, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat.\n<|endoftext|>\nthe dog ran. Zorblax!\n<|endoftext|>\na mat\n", encoding="utf-8")
    argv = ["--tokenizer", "char:12", "--train-file", str(corpus), "--out", str(tmp_path), "--quiet"]
    data = subprocess.run(
        [sys.executable, str(REPO / "data.py"), *argv, "--valid-fraction", "0.34"],
        env=plugin_env,
        capture_output=True,
        text=True,
    )
    assert data.returncode == 0, data.stderr
    folder = tmp_path / "c"
    stats = json.loads((folder / "stats-char-12.json").read_text(encoding="utf-8"))
    assert stats["splits"]["train"]["unk_share"] > 0  # only 10 characters kept
    # another process finds the kind through STORYGPT_TOKENIZER_PLUGINS and loads the file back
    code = [sys.executable, "-c", CHECK_CHAR_TOKENIZER, str(folder / "tokenizer-char-12.json")]
    out = subprocess.run(code, env=plugin_env, capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "CharTokenizer 12 True"
    assert re.search("special token '<\\|endoftext\\|>'", out[1]), out


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


# ---------------------------------------------------------------- every kind: text must be str (``tiny_run``: tests/conftest.py)
@pytest.mark.parametrize("kind", ["bpe", "word"])
@pytest.mark.parametrize("bad", [b"abc", None, 5])
def test_encode_non_text_is_a_type_error(tiny_run, kind, bad):
    # before: AttributeError: 'bytes' object has no attribute 'encode'
    tok = load(tiny_run["corpus"] / f"tokenizer-{ {'bpe': 'bpe-300', 'word': tiny_run['word']}[kind] }.json")
    for call in (tok.encode, tok.encode_ordinary, lambda x: tok.encode_batch(["ok", x])):
        with pytest.raises(TypeError, match=rf"text must be a str, got {type(bad).__name__}"):
            call(bad)


@pytest.mark.parametrize("kind", ["bpe", "word"])
def test_encode_batch_of_a_single_string(tiny_run, kind):
    # before: encode_batch("abc") encoded three one-character texts, silently
    tok = load(tiny_run["corpus"] / f"tokenizer-{ {'bpe': 'bpe-300', 'word': tiny_run['word']}[kind] }.json")
    for call in (tok.encode_batch, tok.encode_batch_numpy):
        with pytest.raises(TypeError, match="texts must be a list of str, got a single str"):
            call("abc")
    assert tok.encode_batch(["abc"]) == [tok.encode("abc")]
