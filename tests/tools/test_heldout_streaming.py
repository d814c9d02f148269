"""The held-out slice, the training word counts and the token files' largest id are read streaming
(issue 46: a gigabyte end to end).

Oracles: the whole-file readers they replace, ``take_characters(read_documents(path), n)``,
``Counter(words_of(all documents))`` and the memmap's ``max()``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from storygpt.data.binfile import iter_ids, max_id, read_tokens, write_tokens
from storygpt.data.corpora import read_documents
from storygpt.eval import charloss
from storygpt.eval.bits import read_characters, take_characters

DOCS = ["First doc\nline two.", "  \n", "Second: naïve café\r\nend", "Thirde\u0301 word_x 42", "last"]


def _write(path, docs, tail: bytes = b""):
    text = "\n<|endoftext|>\n".join(docs) + "\n"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8") + tail)
    return path


@pytest.mark.parametrize("n", [None, 1, 5, 9, 10, 11, 20, 21, 22, 40, 55, 10_000])
def test_read_characters_equals_whole_file_reading(tmp_path, n):
    path = _write(tmp_path / "valid.txt", DOCS)
    assert read_characters(path, n) == take_characters(read_documents(path), n)


def test_read_characters_stops_reading_at_n(tmp_path):
    # a bad byte 2 MiB after the document holding character 50 (past the 1 MiB blocks read so far): the
    # whole-file reader refuses the file, the streaming one never reaches the byte
    big = "word\n" * (1 << 18)
    path = _write(tmp_path / "valid.txt", ["short start", big, "x\n" * (1 << 20)], tail=b"\xff\n")
    with pytest.raises(ValueError, match="not UTF-8"):
        read_documents(path)
    assert read_characters(path, 50) == ["short start", big[:38]]
    with pytest.raises(ValueError, match="not UTF-8"):
        read_characters(path, None)


def test_read_characters_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_characters(tmp_path / "missing.txt", 10)
    (tmp_path / "empty.txt").write_text(" \n")
    with pytest.raises(ValueError, match="the file is empty"):
        read_characters(tmp_path / "empty.txt", 10)
    with pytest.raises(ValueError, match="must be positive"):
        read_characters(_write(tmp_path / "v.txt", DOCS), 0)


def test_count_words_in_pieces_equals_whole_text(monkeypatch):
    docs = [d.replace("\r\n", "\n") for d in DOCS] + ["a\nb c\n\u0301x\nlong" * 7, "ab" * 30]
    oracle = dict(Counter(charloss.words_of(docs)[1]))
    assert charloss.count_words(docs) == oracle
    monkeypatch.setattr(charloss, "_COUNT_PIECE", 3)  # cut at nearly every new line
    assert charloss.count_words(iter(docs)) == oracle
    assert oracle["longa"] == 6 and oracle["long"] == 1 and oracle["word"] == 1  # "_" is not part of a word


@pytest.mark.parametrize("vocab", [300, 70_000])
def test_max_id_in_blocks_equals_numpy_max(tmp_path, vocab):
    ids = np.random.default_rng(vocab).integers(0, vocab, size=1001)
    ids[777] = vocab - 1
    path = tmp_path / "t.bin"
    write_tokens(path, ids, "fp", vocab_size=vocab)
    for block in (6, 7, 64, 1 << 20):  # blocks that end inside an id, and one block for all
        assert max_id(path, block_bytes=block) == vocab - 1 == int(read_tokens(path).max())
    write_tokens(path, ids[:500], "fp", vocab_size=vocab)
    assert max_id(path, block_bytes=8) == int(ids[:500].max())
    write_tokens(path, [], "fp", vocab_size=vocab)
    assert max_id(path) is None


def test_iter_ids_and_token_counts_equal_the_memmap(tmp_path, monkeypatch):
    from storygpt.eval import vocab_health

    ids = np.random.default_rng(1).integers(0, 300, size=1001)
    path = tmp_path / "t.bin"
    write_tokens(path, ids, "fp", vocab_size=300)
    blocks = list(iter_ids(path, block_bytes=64))
    assert [len(b) for b in blocks] == [32] * 31 + [9]
    assert np.array_equal(np.concatenate(blocks), read_tokens(path))
    monkeypatch.setattr(vocab_health, "CHUNK", 100)
    assert np.array_equal(vocab_health.token_counts(path, 300), np.bincount(ids, minlength=300))
    with pytest.raises(ValueError, match="outside the vocabulary of 200"):
        vocab_health.token_counts(path, 200)
