"""Tokenizer SPEC parsing (storygpt.tokenizers.spec)."""

import pytest

from storygpt.tokenizers.spec import SpecError, TokenizerSpec, parse_spec


@pytest.mark.parametrize(
    "text, kind, arg, slug",
    [
        ("bpe", "bpe", 8192, "bpe-8192"),
        ("bpe:512", "bpe", 512, "bpe-512"),
        ("BPE:0512", "bpe", 512, "bpe-512"),
        ("word", "word", 10000, "word-10000"),
        ("word:300", "word", 300, "word-300"),
        ("byte", "byte", None, "byte"),
        ("tiktoken:gpt2", "tiktoken", "gpt2", "tiktoken-gpt2"),
        ("tiktoken:o200k_base", "tiktoken", "o200k_base", "tiktoken-o200k_base"),
    ],
)
def test_parse(text, kind, arg, slug):
    spec = parse_spec(text)
    assert spec == TokenizerSpec(kind, arg)
    assert spec.slug == slug
    assert parse_spec(str(spec)) == spec


def test_defaults_compare_equal():
    assert parse_spec("bpe") == parse_spec("bpe:8192")
    assert parse_spec("bpe").vocab_size == 8192
    assert parse_spec("byte").vocab_size is None


def test_path_slug_depends_on_content(tmp_path):
    a, b = tmp_path / "a" / "tokenizer.json", tmp_path / "b" / "tokenizer.json"
    a.parent.mkdir()
    b.parent.mkdir()
    a.write_text('{"x": 1}')
    b.write_text('{"x": 2}')
    sa, sb = parse_spec(f"hf:{a}").slug, parse_spec(f"hf:{b}").slug
    assert sa.startswith("hf-tokenizer-") and len(sa) == len("hf-tokenizer-") + 8
    assert sa != sb
    assert parse_spec(f"file:{a}").slug == "file" + sa[2:]


@pytest.mark.parametrize(
    "text, words",
    [
        ("bpf", "unknown tokenizer SPEC 'bpf'"),
        ("bpe:abc", "VOCAB must be a positive whole number"),
        ("bpe:", "VOCAB must be a positive whole number"),
        ("byte:3", "byte takes no argument"),
        ("tiktoken", "tiktoken needs a NAME"),
        ("hf:", "hf needs a PATH"),
        ("tiktoken:../x", "is not an encoding name"),
    ],
)
def test_bad_specs(text, words):
    with pytest.raises(SpecError, match=words.replace("(", r"\(")):
        parse_spec(text)


def test_missing_file_slug(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        _ = parse_spec(f"hf:{tmp_path / 'nope.json'}").slug
