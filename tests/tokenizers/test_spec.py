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


def test_lower_bounds_are_the_trainers():
    # The bound parse_spec checks (issue 36 item 6) is each trainer's own: one below it is refused by both,
    # the bound itself is accepted by the SPEC and passes the trainer's check.
    from storygpt.tokenizers import hf_trained
    from storygpt.tokenizers.bpe_reference import train as reference_bpe
    from storygpt.tokenizers.word import WordTokenizer

    trainer_checks = {
        "bpe": lambda n: reference_bpe("ab ab", n, special_tokens=("<pad>", "<|endoftext|>")),
        "word": lambda n: WordTokenizer.train(["a b"], n),
        "unigram": lambda n: hf_trained._check_vocab("unigram", n),
        "wordpiece": lambda n: hf_trained._check_vocab("wordpiece", n),
    }
    for kind, low in [("bpe", 258), ("word", 3), ("unigram", 259), ("wordpiece", 515), ("spm-unigram", 260)]:
        assert parse_spec(f"{kind}:{low}").vocab_size == low
        assert parse_spec(kind).with_vocab_size(low).vocab_size == low
        with pytest.raises(SpecError, match=f"VOCAB={low - 1} is too small: {kind} needs .*at least {low}"):
            parse_spec(f"{kind}:{low - 1}")
        with pytest.raises(SpecError, match=f"--vocab-size={low - 1} is too small"):
            parse_spec(kind).with_vocab_size(low - 1)
        if kind in trainer_checks:
            trainer_checks[kind](low)
            with pytest.raises(ValueError, match="too small|at least"):
                trainer_checks[kind](low - 1)
