"""Bad input to BPE training, loading and importing: one-line errors naming the item or file.

Regression tests for int64 overflow in chunk counts, vocabularies whose entries no merge
makes, malformed ``.tiktoken`` rank files and unknown tiktoken names, training argument
checks shared by both backends, and folders given where a file is expected.
"""

from __future__ import annotations

import base64
import json
import re
import warnings
from pathlib import Path

import pytest
from conftest import HAVE_TIKTOKEN, needs_cache, one_error_line, run_tool

from storygpt.checkpoint import tokenizer_from_dict
from storygpt.tokenizers import BPETokenizer, io, spec, train_bpe
from storygpt.tokenizers.interop import InteropError, check_tiktoken_name, from_hf, from_tiktoken, to_hf_dict

needs_tiktoken = pytest.mark.skipif(not HAVE_TIKTOKEN, reason="tiktoken is not installed")
BACKENDS = ["cpp", "reference"]
I64_MAX = (1 << 63) - 1


# ------------------------------------------------------------------------ counts overflow
@pytest.mark.parametrize(
    "counts",
    [
        {"hello": 2**62, "hellp": 2**62, "hellq": 2**62},  # 'he' alone would count 3 * 2**62
        {"ab": 2**62, "cd": 2**62 - 1, "xab": 2**62},
    ],
)
def test_train_from_counts_refuses_counts_whose_pair_counts_could_overflow(counts):
    with pytest.raises(ValueError, match=r"^train_bpe counts: counts too large: pair counts could exceed 2\*\*63-1 "):
        train_bpe(counts, 262)


@pytest.mark.parametrize(
    "counts, chunk",
    [({"hello": 2**63}, "'hello'"), ({"a": 2**62, b"a": 2**62}, "b'a'"), ({"x": 10**30}, "'x'")],
)
def test_train_from_counts_refuses_a_count_of_2_to_the_63_naming_the_chunk(counts, chunk):
    with pytest.raises(ValueError, match=rf"^train_bpe counts: the count of chunk {chunk} must be below 2\*\*63, got "):
        train_bpe(counts, 262)


def test_train_from_counts_at_the_int64_bound_learns_the_right_merges():
    # the bound is exactly 2**63 - 1: accepted, and 'ab' (count 2**63 - 1) is merged first
    tok = train_bpe({"ab": I64_MAX, "c": 5}, 257, special_tokens=[])
    assert tok.merges == [(97, 98, 256)]
    # large counts below the bound keep their order: 'ab' (2 * 2**61) > 'x'+'ab' (2**61) > 'cd' (2**61 - 1)
    tok = train_bpe({"ab": 2**61, "cd": 2**61 - 1, "xab": 2**61}, 259, special_tokens=[])
    assert tok.merges == [(97, 98, 256), (120, 256, 257), (99, 100, 258)]


# ------------------------------------------------------------------ vocab entries no merge makes
@pytest.fixture(scope="module")
def trained():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return train_bpe("the cat sat on the mat with the hat " * 30, 300, pattern="gpt4")


CUT_MSG = r"vocab entry 266 \(token b'ith'\) is not produced by any merge and is not a byte or special token"


def test_trained_tokenizer_token_266_is_the_11th_merge(trained):
    assert trained.token_bytes(266) == b"ith" and trained.merges[10][2] == 266


def test_a_tokenizer_file_with_cut_merges_is_refused_at_load(trained, tmp_path):
    d = trained.to_dict()
    d["merges"] = d["merges"][:10]  # the vocab still lists every token
    with pytest.raises(ValueError, match="^" + CUT_MSG + "$"):
        BPETokenizer.from_dict(d)
    path = tmp_path / "tokenizer-bpe-300.json"
    path.write_text(json.dumps(d))
    with pytest.raises(io.TokenizerFileError, match=rf"^{path}: malformed bpe tokenizer: {CUT_MSG}$"):
        BPETokenizer.load(path)
    with pytest.raises(io.TokenizerFileError, match=CUT_MSG):
        tokenizer_from_dict(d)  # a checkpoint's tokenizer dict


def test_a_second_id_for_a_byte_is_refused_naming_the_byte_id():
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"a"}
    with pytest.raises(ValueError, match=r"^vocab entry 256 \(token b'a'\) is not produced .*; byte 0x61 is id 97$"):
        BPETokenizer(vocab, [], {"<|endoftext|>": 257})


def test_from_hf_with_fewer_merges_than_vocab_is_refused_naming_the_file(trained, tmp_path):
    h = to_hf_dict(trained)
    h["model"]["merges"] = h["model"]["merges"][:10]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(h))
    with pytest.raises(InteropError, match=rf"^{path}: model: {CUT_MSG}$"):
        from_hf(path)


def test_from_hf_of_a_folder_names_it(tmp_path):
    with pytest.raises(IsADirectoryError, match=rf"^{tmp_path}: is a folder, not a tokenizer.json file$"):
        from_hf(tmp_path)


# ------------------------------------------------------------------------------- tiktoken
def _rank_file(path: Path, tokens: list[tuple[bytes, int]]) -> Path:
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in tokens))
    return path


@pytest.mark.parametrize(
    "text, message",
    [
        ("", r": empty .tiktoken rank file \(no tokens\)$"),
        ("YQ== 0\nnot base64!! 1\n", r":2: not a .tiktoken rank file \(base64 token and rank per line\)"),
    ],
)
def test_from_tiktoken_names_an_empty_or_malformed_file(tmp_path, text, message):
    path = tmp_path / "bad.tiktoken"
    path.write_text(text)
    with pytest.raises(InteropError, match=rf"^{re.escape(str(path))}{message}"):
        from_tiktoken(path)


def test_from_tiktoken_of_a_folder_says_it_is_a_folder(tmp_path):
    with pytest.raises(IsADirectoryError, match=rf"^{tmp_path}: is a folder, not a .tiktoken rank file$"):
        from_tiktoken(tmp_path)


def test_from_tiktoken_names_a_repeated_rank_and_its_lines(tmp_path):
    tokens = [(bytes([b]), b) for b in range(256)]
    tokens[254] = (b"\xfe", 255)  # lines 255 and 256 both have rank 255
    path = _rank_file(tmp_path / "dup.tiktoken", tokens)
    with pytest.raises(InteropError, match=rf"^{path}: rank 255 appears twice, lines 255 and 256$"):
        from_tiktoken(path)


def test_from_tiktoken_names_a_repeated_token_and_its_lines(tmp_path):
    tokens = [(bytes([b]), b) for b in range(256)] + [(b"ab", 256), (b"ab", 257)]
    path = _rank_file(tmp_path / "dup.tiktoken", tokens)
    with pytest.raises(InteropError, match=rf"^{path}: token b'ab' appears twice, lines 257 and 258$"):
        from_tiktoken(path)


def test_from_tiktoken_a_valid_small_rank_file_still_loads(tmp_path):
    tokens = [(bytes([b]), b) for b in range(256)] + [(b"ab", 256)]
    tok = from_tiktoken(_rank_file(tmp_path / "ok.tiktoken", tokens))
    assert tok.encode("abab") == [256, 256] and tok.vocab_size == 258


@needs_tiktoken
@pytest.mark.parametrize("name", ["", "nope"])
def test_from_tiktoken_unknown_name_lists_the_known_ones(name):
    with pytest.raises(InteropError, match=rf"^unknown tiktoken encoding '{name}'; known: .*\bcl100k_base\b.*\bgpt2\b"):
        from_tiktoken(name)


@needs_tiktoken
def test_tiktoken_name_check_is_shared_by_the_spec_parser():
    assert check_tiktoken_name("gpt2") == "gpt2"
    with pytest.raises(
        spec.SpecError, match=r"^tokenizer SPEC 'tiktoken:nope': unknown tiktoken encoding 'nope'; known: "
    ):
        spec.parse_spec("tiktoken:nope")
    with pytest.raises(spec.SpecError, match=r"unknown tiktoken encoding 'nope'"):
        spec.build_tokenizer("tiktoken:nope")
    assert spec.parse_spec("tiktoken:cl100k_base").arg == "cl100k_base"  # no file read for a known name


@needs_tiktoken
def test_data_py_with_an_unknown_tiktoken_name_fails_in_one_line_before_any_work(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("one doc\n\nanother doc\n", encoding="utf-8")
    out = tmp_path / "out"
    argv = ["--train-file", str(train), "--out", str(out), "--tokenizer", "tiktoken:nope", "--quiet"]
    done = run_tool("data", *argv)
    assert done.returncode != 0
    msg = one_error_line(done.stderr, "data.py")
    assert msg.startswith("data.py: error: tokenizer SPEC 'tiktoken:nope': unknown tiktoken encoding 'nope'; known: ")
    assert not out.exists()


@needs_cache
def test_from_tiktoken_known_name_still_loads():
    tok = from_tiktoken("gpt2")
    assert tok.vocab_size == 50257 and tok.encode("hello world") == [31373, 995]


# ---------------------------------------------------------------------- training arguments
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(pattern=None), ValueError, r"^unknown pre-tokenization pattern None; expected one of \['gpt2', "),
        (dict(pattern="gpt5"), ValueError, r"^unknown pre-tokenization pattern 'gpt5'"),
        (dict(min_frequency=1.5), ValueError, r"^min_frequency must be an integer, got 1.5 \(float\)$"),
        (dict(min_frequency=0), ValueError, r"^min_frequency must be a positive integer, got 0$"),
        (dict(special_tokens="<|endoftext|>"), TypeError, r"^special_tokens must be a list of str, got str$"),
        (dict(special_tokens=b"<eot>"), TypeError, r"^special_tokens must be a list of str, got bytes$"),
        (dict(special_tokens=[5]), TypeError, r"^special_tokens item 0 must be a str, got int \(5\)$"),
        (dict(special_tokens=["<a>", None]), TypeError, r"^special_tokens item 1 must be a str, got NoneType"),
        (dict(num_threads=-1), ValueError, r"^num_threads must be >= 0 \(0: chosen from the work size\), got -1$"),
        (dict(num_threads=1.0), ValueError, r"^num_threads must be an integer, got 1.0 \(float\)$"),
        (dict(tie_break="random"), ValueError, r"^unknown tie_break 'random'; expected one of "),
    ],
)
def test_train_arguments_are_checked_in_python_for_both_backends(backend, kwargs, error, message):
    for train in (
        lambda: train_bpe("hello hello", 262, backend=backend, **kwargs),
        lambda: train_bpe(iter(["hello", "hello"]), 262, backend=backend, **kwargs),
    ):
        with pytest.raises(error, match=message):
            train()


def test_train_from_counts_checks_its_arguments_too():
    with pytest.raises(ValueError, match=r"^min_frequency must be an integer, got 1.5"):
        train_bpe({"ab": 2}, 260, min_frequency=1.5)
    with pytest.raises(TypeError, match=r"^special_tokens must be a list of str, got str$"):
        train_bpe({"ab": 2}, 260, special_tokens="<eot>")


@pytest.mark.parametrize("backend", BACKENDS)
def test_train_on_a_folder_says_it_is_a_folder(backend, tmp_path):
    with pytest.raises(IsADirectoryError, match=rf"^training file {tmp_path} is a folder, not a file$"):
        train_bpe([str(tmp_path)], 262, backend=backend)
    with pytest.raises(TypeError, match=r"^source: pass a list of paths, not one path"):
        train_bpe(tmp_path, 262, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_utf8_bytes_and_files_are_trained_on_as_bytes(backend, tmp_path):
    data = b"\xff\xfe\xff\xfe abc \xff\xfe"
    path = tmp_path / "latin.bin"
    path.write_bytes(data)
    for source in (data, [path]):
        tok = train_bpe(source, 258, pattern="gpt4", special_tokens=[], backend=backend)
        assert tok.merges == [(255, 254, 256), (32, 97, 257)]
        assert tok.decode_bytes(tok._encode_bytes(data)) == data
