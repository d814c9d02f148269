"""Vocabularies from elsewhere that hold one token twice (issue 36 item 12): two ids with the same bytes,
one id made by two merges, two merges making the same bytes, two tokens with one id or rank.  Every
constructor and ``load()`` refuses them in one line naming both ids or merges (before: ``from_merges_ids``
and ``load()`` built them, and ``encode("abc")`` could only ever give one of the two ids)."""

from __future__ import annotations

import json
import re

import pytest

from storygpt.checkpoint import tokenizer_from_dict
from storygpt.tokenizers import EOT, BPETokenizer, interop, load

BACKENDS = ["cpp", "reference"]


def abc_file(tmp_path, extra_vocab, extra_merges):
    """A tokenizer file: merges a+b -> 256, b+c -> 257, ab+c -> 258, plus the entries given."""
    d = BPETokenizer.from_merges([(b"a", b"b"), (b"b", b"c"), (b"ab", b"c")], special_tokens={EOT: 300}).to_dict()
    d["vocab"] += extra_vocab
    d["merges"] += extra_merges
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    return path, d


@pytest.mark.parametrize("backend", BACKENDS)
def test_from_merges_ids_refuses_two_merges_that_make_the_same_bytes(backend):
    with pytest.raises(ValueError, match=r"^merges 0 \(97, 98\) and 2 \(97, 98\) both make b'ab': ") as e:
        BPETokenizer.from_merges_ids([(97, 98), (256, 99), (97, 98)], backend=backend)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=r"^merges 2 \(256, 99\) and 3 \(97, 257\) both make b'abc'"):
        BPETokenizer.from_merges_ids([(97, 98), (98, 99), (256, 99), (97, 257)], backend=backend)
    # from_merges refused this before; it still does, in the same words
    with pytest.raises(ValueError, match=r"^merges 0 \(b'a', b'b'\) and 1 \(b'a', b'b'\) both make b'ab'"):
        BPETokenizer.from_merges([(b"a", b"b"), (b"a", b"b")], backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_load_refuses_a_file_with_two_ids_for_the_same_bytes(tmp_path, backend):
    # id 259 = a + bc = b"abc", the bytes of 258: encode("abc") gave [258] and 259 was never produced
    path, d = abc_file(tmp_path, [[259, "abc"]], [[97, 257, 259]])
    expected = r"token ids 258 and 259 both have the bytes b'abc': each token must appear once$"
    for read in (lambda: load(path, backend=backend), lambda: BPETokenizer.load(path, backend=backend)):
        with pytest.raises(ValueError, match="^" + re.escape(f"{path}: ") + ".*" + expected) as e:
            read()
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=expected):
        tokenizer_from_dict(d)  # a checkpoint's tokenizer


@pytest.mark.parametrize("backend", BACKENDS)
def test_load_refuses_a_file_with_one_id_made_by_two_merges(tmp_path, backend):
    path, _ = abc_file(tmp_path, [], [[97, 257, 258]])
    where = re.escape(f"{path}: malformed bpe tokenizer: ")
    with pytest.raises(
        ValueError, match=rf"^{where}merges 2 \(256, 99, 258\) and 3 \(97, 257, 258\) both make token 258 "
    ):
        load(path, backend=backend)


def test_the_class_itself_refuses_both_forms():
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"ab", 257: b"ab"}
    with pytest.raises(ValueError, match=r"^token ids 256 and 257 both have the bytes b'ab'"):
        BPETokenizer(vocab, [(97, 98, 256), (97, 98, 257)], {EOT: 258})
    with pytest.raises(ValueError, match=r"^merge_rule 'ranks' needs distinct tokens; b'ab' has ids 256 and 257$"):
        BPETokenizer(vocab, None, {EOT: 258}, merge_rule="ranks")  # refused before too
    with pytest.raises(ValueError, match=r"^token ids 256 and 257 both have the bytes b'ab'"):
        BPETokenizer.from_vocab(vocab, [(b"a", b"b")])


def test_from_ranks_refuses_two_tokens_with_one_rank():
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"cd": 256}
    with pytest.raises(ValueError, match=r"^tokens b'ab' and b'cd' both have rank 256$"):
        BPETokenizer.from_ranks(ranks)


def test_the_importers_refuse_two_tokens_with_one_id(tmp_path):
    tok = BPETokenizer.from_merges([(b"a", b"b")], special_tokens=[EOT])
    h = interop.to_hf_dict(tok)
    h["model"]["vocab"]["xyz"] = 256  # beside "ab", id 256
    (tmp_path / "tokenizer.json").write_text(json.dumps(h), encoding="utf-8")
    with pytest.raises(interop.InteropError, match=r"model: tokens 'ab' and 'xyz' both have id 256$"):
        interop.from_hf(tmp_path / "tokenizer.json")

    table = interop.gpt2_bytes_to_unicode()
    encoder = {table[b]: b for b in range(256)} | {"ab": 256, "ba": 256}
    (tmp_path / "encoder.json").write_text(json.dumps(encoder), encoding="utf-8")
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\na b\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"encoder.json: tokens 'ab' and 'ba' both have id 256$"):
        interop.from_gpt2_files(tmp_path / "encoder.json", tmp_path / "vocab.bpe")
