"""data.py without holding the corpus: streamed documents and split, bounded word counts,
progress bars, --tinystories-dir, token-file checksums, bad input mid-stream, peak memory."""

from __future__ import annotations

import hashlib
import json
import random
import struct
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import run_tool

from storygpt.data import binfile, corpora, streamsplit
from storygpt.data.binfile import HEADER_SIZE, read_tokens
from storygpt.data.docstream import DocumentFile, iter_documents, iter_stories
from storygpt.tokenizers.base import EOT
from storygpt.tokenizers.word_train import WordCounter, train_word_tokenizer

ROOT = Path(__file__).resolve().parents[2]


def data_py(*argv, **kwargs):
    """``python data.py ARGV`` (conftest.run_tool): the finished process."""
    return run_tool("data", *argv, **kwargs)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pinned_corpus_bytes() -> bytes:
    """A deterministic 40-document corpus with the reading rules' corner cases (BOM, CRLF,
    separator lines with white space, blank lines, a literal <|endoftext|> inside a line)."""
    rng = random.Random(12)
    words = ["the", "cat", "sat", "on", "a", "mat", "Tom", "and", "Sue", "ran", "to", "park", "café", "naïve",
             "Привет", "мир", "天地", "don't", "3.14", "1,000", "—", "!", "?", ",", ".", "“quoted”", "(aside)"]  # fmt: skip
    docs = []
    for i in range(40):
        lines = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 14))) for _ in range(rng.randint(1, 6))]
        if i % 7 == 3:
            lines.insert(1, "")  # a blank line inside
        if i % 11 == 5:
            lines.append("he wrote <|endoftext|> inline")
        docs.append("\n".join(lines))
    seps = ["<|endoftext|>", "  <|endoftext|>\t", "<|endoftext|>"]
    text = "\ufeff" + "".join(d + "\n" + seps[i % 3] + "\n" + ("\n" if i % 5 == 0 else "") for i, d in enumerate(docs))
    return text.replace("\n", "\r\n", 200).encode("utf-8")  # CRLF for the first 200 line ends


# sha256 of the files the in-memory data.py (main before streaming, 4f4ad1b) wrote for
# `data.py [--bpe --vocab-size 400 | --vocab-size 120] --train-file pinned.txt --threads 1`;
# token files: the ids after the 64-byte header (the header gained a checksum since). The word files, asked
# for 120 (38 distinct words and specials), are named word-38 since data.py names them by the size they have.
PINNED = {
    "train.txt": "4ae11a7a85d692d649cefe4e54c548bed42a701a2d424ecad7921cd542f0ff2e",
    "valid.txt": "25d102310c975b891999cf0953598baa708c7d47304225ef66ae01c9bc6ab990",
    "tokenizer-bpe-400.json": "46d711ae9abf69ae6890694a6c1fcdf12d31a13a7321ba717e945c2c028d17fe",
    "tokenizer-word-38.json": "6f1da222d90f0d8d369f33e2f4166686cd969426095ded084bea4448a2623d1b",
    "train-bpe-400.bin": "c63317995ef46e1f9020d1accb6c98a072eedece8686d8aa6370e589d8a42d76",
    "valid-bpe-400.bin": "608057017e7d18cd66e14369d55d647277fefcb094fb4b69948e308bef7731d4",
    "train-word-38.bin": "ba4789980cad798c73331c398e9ecb38f4d98f4ff0a03dc968b2ee9d627800af",
    "valid-word-38.bin": "478acd18523e1a2255d3c17610c31aa2afab6808a32c4cd397dc89cecfc5a9f1",
}

TRICKY = [
    b"\xef\xbb\xbfa\r\nb\r<|endoftext|>\r\nc\r\n",
    b"first line\nsecond\n<|endoftext|>\n\n  <|endoftext|>  \n\nthird\n\n<|endoftext|>\n",
    b"<|endoftext|>\nx <|endoftext|> y\n<|endoftext|>",
    "Привет,\nмир\n\t<|endoftext|>\n天地玄黄\r\rend".encode(),
    b"no newline at end",
    b"one\n<|endoftext|>\n<|endoftext|>\n \n<|endoftext|>\ntwo\n\n",
    b"a\r\n\r\n<|endoftext|>\rb\r",
]


@pytest.mark.parametrize("raw", TRICKY)
@pytest.mark.parametrize("block", [1, 2, 3, 7, 1 << 20])
def test_iter_documents_equals_read_documents_at_every_block_size(tmp_path, raw, block):
    p = tmp_path / "t.txt"
    p.write_bytes(raw)
    consumed = []
    assert list(iter_documents(p, consumed.append, block_bytes=block)) == corpora.read_documents(p)
    assert sum(consumed) == len(raw)


def test_iter_documents_concrete_and_pinned_corpus(tmp_path):
    p = tmp_path / "t.txt"
    p.write_bytes(TRICKY[0])
    assert list(iter_documents(p, block_bytes=3)) == ["a\nb", "c"]
    p.write_bytes(pinned_corpus_bytes())
    docs = list(iter_documents(p, block_bytes=100))
    assert len(docs) == 40 and docs == corpora.read_documents(p)
    assert docs[5].endswith("he wrote <|endoftext|> inline")


def test_iter_documents_errors_match_read_documents(tmp_path):
    cases = {
        "empty.txt": (b"", "empty.txt: the file is empty"),
        "blank.txt": (b" \n\n\t\n", "blank.txt: the file is empty"),
        "sep.txt": (b"<|endoftext|>\n\n<|endoftext|>\n", "sep.txt: no documents found"),
        "bom.txt": (b"\xef\xbb\xbf\n", "bom.txt: no documents found"),
    }
    for name, (raw, msg) in cases.items():
        (tmp_path / name).write_bytes(raw)
        with pytest.raises(ValueError, match=msg):
            corpora.read_documents(tmp_path / name)
        with pytest.raises(ValueError, match=msg):
            list(iter_documents(tmp_path / name, block_bytes=2))
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"line one\n" * 50 + b"na\xefve\n")  # the bad byte far beyond the first block
    with pytest.raises(ValueError, match=r"latin1.txt: not UTF-8 text: .* at byte offset 452 \(invalid"):
        list(iter_documents(bad, block_bytes=16))
    with pytest.raises(FileNotFoundError, match="nope.txt: no such file"):
        list(iter_documents(tmp_path / "nope.txt"))
    with pytest.raises(FileNotFoundError, match="is a folder, not a text file"):
        list(iter_documents(tmp_path))


def test_iter_stories_equals_the_line_by_line_parser(tmp_path):
    p = tmp_path / "TinyStoriesV2-GPT4-valid.txt"
    p.write_bytes(
        b"\xef\xbb\xbfOnce upon a time, there was a cat.\nThe cat was happy.\n<|endoftext|>\n"
        b"Tom had a red ball. \xe2\x80\x9cLook!\xe2\x80\x9d he said.\r\n<|endoftext|>\n\n<|endoftext|>\n"
        b"Sue liked the sun.<|endoftext|>The end came.\n"
    )
    want = corpora.read_tinystories(p)
    assert want[1] == "Tom had a red ball. \u201cLook!\u201d he said." and len(want) == 4
    for block in (1, 5, 1 << 20):
        assert list(iter_stories(p, block_bytes=block)) == want
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"line one\n<|endoftext|>\nab\x80\n")
    with pytest.raises(ValueError, match=r"bad.txt: not UTF-8 .*byte offset 25\b"):
        list(iter_stories(bad, block_bytes=4))


# ---------------------------------------------------------------- the split, streamed


def _docs_file(tmp_path, docs, name="c.txt") -> DocumentFile:
    corpora.write_documents(tmp_path / name, docs)
    return DocumentFile(tmp_path / name)


def _streamed_split(docs_file, fraction):
    plan = streamsplit.plan_split(docs_file, fraction)
    train = [d for s, d in streamsplit.iter_split(docs_file, plan) if s == "train"]
    valid = [d for s, d in streamsplit.iter_split(docs_file, plan) if s == "valid"]
    return train, valid


@pytest.mark.parametrize("n,fraction", [(2, 0.1), (3, 0.5), (42, 0.1), (97, 0.25), (500, 0.05)])
def test_streamed_split_equals_split_documents(tmp_path, n, fraction):
    rng = random.Random(n)
    docs = [f"doc {i}: " + " ".join(rng.choice("abcdefg") for _ in range(rng.randint(1, 9))) for i in range(n)]
    assert _streamed_split(_docs_file(tmp_path, docs), fraction) == corpora.split_documents(docs, fraction)


def test_streamed_split_ties_on_the_kept_key_bytes_are_resolved_exactly(tmp_path, monkeypatch):
    """With one byte of key kept, many documents tie at the cut: the extra pass must pick as
    split_documents (full sha256 keys) does."""
    monkeypatch.setattr(streamsplit, "KEY_BYTES", 1)
    docs = [f"document {i}" for i in range(600)]  # 60 held out among 256 possible first bytes
    assert _streamed_split(_docs_file(tmp_path, docs), 0.1) == corpora.split_documents(docs, 0.1)


def test_streamed_split_single_document_and_errors(tmp_path):
    lines = [f"line {i:02d}" for i in range(20)]
    f = _docs_file(tmp_path, ["\n".join(lines)])
    assert _streamed_split(f, 0.1) == (["\n".join(lines[:18])], ["\n".join(lines[18:])])
    with pytest.raises(ValueError, match=r"one.txt: the corpus is a single document with fewer than two"):
        streamsplit.plan_split(_docs_file(tmp_path, ["just one line"], "one.txt"), 0.1)
    with pytest.raises(ValueError, match="valid_fraction must be in"):
        streamsplit.plan_split(f, 0.0)
    # the file changes between the two passes: an error naming it, not a wrong split
    g = _docs_file(tmp_path, [f"d{i}" for i in range(10)], "g.txt")
    plan = streamsplit.plan_split(g, 0.2)
    corpora.write_documents(g.path, [f"d{i}" for i in range(11)])
    with pytest.raises(ValueError, match=r"g.txt: the file changed while it was being read \(11 documents now, 10"):
        list(streamsplit.iter_split(g, plan))


# ---------------------------------------------------------------- word counts in bounded memory


def test_word_counter_with_spills_equals_word_tokenizer_train(tmp_path):
    from storygpt.tokenizers.word import WordTokenizer

    docs = _pinned_docs(tmp_path)
    docs.append("zeta zeta alpha <|endoftext|> <pad> <unk> beta")  # specials are never counted as words
    for vocab in (3, 10, 30, 1000):
        want = WordTokenizer.train(docs, vocab).tokens
        for max_entries in (1, 7, 10**6):
            assert train_word_tokenizer(docs, vocab, tmp_path, max_entries).tokens == want
    with WordCounter(tmp_path, max_entries=5) as c:
        for d in docs:
            c.add(d)
        assert len(c.runs) > 3 and all(p.exists() for p in c.runs)
        runs = list(c.runs)
        totals = dict(c.totals())
    assert not any(p.exists() for p in runs)  # removed on close
    assert totals == Counter(t for d in docs for t in WordTokenizer.split(d, "all"))
    assert totals["zeta"] == 2 and totals[EOT] == 5  # 4 inline in the pinned documents, counted, never kept


def _pinned_docs(tmp_path) -> list[str]:
    p = tmp_path / "pinned-src.txt"
    p.write_bytes(pinned_corpus_bytes())
    return corpora.read_documents(p)


# ---------------------------------------------------------------- data.py, streamed, gives the same files


def test_streaming_data_py_writes_the_same_files_as_the_in_memory_one(tmp_path):
    src = tmp_path / "pinned.txt"
    src.write_bytes(pinned_corpus_bytes())
    out = tmp_path / "out"
    base = ["--train-file", str(src), "--out", str(out), "--quiet", "--threads", "1"]
    done = data_py(*base, "--bpe", "--vocab-size", "400")
    assert done.returncode == 0, done.stderr
    assert "data.py: warning: BPE training stopped at vocab_size 370" in done.stderr
    assert data_py(*base, "--vocab-size", "120").returncode == 0
    folder = out / "pinned"
    for name, digest in PINNED.items():
        raw = (folder / name).read_bytes()
        assert _sha(raw[HEADER_SIZE:] if name.endswith(".bin") else raw) == digest, name
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]  # no temporary files left


# ---------------------------------------------------------------- checksums


def test_checksum_detects_a_flipped_id_inside_the_vocabulary(tmp_path):
    fp = hashlib.sha256(b"tok").hexdigest()
    ids = np.arange(1000, dtype=np.int64) % 300
    path = tmp_path / "train-x.bin"
    binfile.write_tokens(path, ids, fp, vocab_size=300)
    raw = bytearray(path.read_bytes())
    version, code, count = struct.unpack("<IIQ", raw[8:24])
    (crc,) = struct.unpack("<I", raw[56:60])
    assert (version, code, count) == (2, 2, 1000) and crc == zlib.crc32(ids.astype("<u2").tobytes())
    assert read_tokens(path, fp).tolist() == ids.tolist()
    raw[HEADER_SIZE + 2 * 500] ^= 0x01  # id 200 at position 500 becomes 201: still a valid id
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"train-x.bin: checksum mismatch \(crc32 of the ids [0-9a-f]{8}, header"):
        read_tokens(path, fp)
    assert int(read_tokens(path, fp, verify=False)[500]) == 201  # verify=False reads it anyway
    with pytest.raises(ValueError, match="checksum mismatch"):
        binfile.verify_checksum(path)


def test_version_1_token_files_ask_for_data_py_again(tmp_path):
    fp = hashlib.sha256(b"tok").hexdigest()
    path = tmp_path / "old.bin"
    binfile.write_tokens(path, [1, 2, 3], fp, vocab_size=300)
    raw = bytearray(path.read_bytes())
    raw[8:12] = struct.pack("<I", 1)
    raw[56:64] = b"\0" * 8  # version 1: reserved, no checksum
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"old.bin: unsupported token file version 1 .*run data.py again"):
        read_tokens(path)


def test_pretrain_refuses_a_corrupt_token_file_naming_it(tmp_path):
    from storygpt.tokenizers.spec import parse_spec
    from storygpt.train.inputs import RunError, load_data

    src = tmp_path / "pinned.txt"
    src.write_bytes(pinned_corpus_bytes())
    assert data_py("--train-file", src, "--out", tmp_path, "--quiet", "--vocab-size", "120").returncode == 0
    folder = tmp_path / "pinned"
    path = folder / "train-word-38.bin"
    raw = bytearray(path.read_bytes())
    raw[HEADER_SIZE + 2 * 10] ^= 0x02
    path.write_bytes(bytes(raw))
    with pytest.raises(RunError, match=r"train-word-38.bin: checksum mismatch"):
        load_data(folder, parse_spec("word:120"), 8)


# ---------------------------------------------------------------- progress bars


def _random_words_corpus(path: Path, n_docs: int = 120) -> None:
    rng = random.Random(5)
    vocab = ["".join(rng.choice("abcdefghijklmnoprstuvwy") for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    docs = [" ".join(rng.choice(vocab) for _ in range(150)) for _ in range(n_docs)]
    corpora.write_documents(path, docs)


@pytest.mark.parametrize("kind", ["bpe", "word"])
def test_every_stage_shows_a_byte_progress_bar(tmp_path, kind):
    src = tmp_path / "words.txt"
    _random_words_corpus(src)
    vocab = "900" if kind == "bpe" else "500"
    args = ["--train-file", str(src), "--out", str(tmp_path), "--threads", "1", "--vocab-size", vocab]
    made = tmp_path / "bars.jsonl"  # the bars data.py made (tests/tool_faults.py)
    done = data_py(*([*args, "--bpe"] if kind == "bpe" else args), fault=f"record_progress_bars:{made}")
    assert done.returncode == 0, done.stderr
    bars = {b["desc"]: b for b in map(json.loads, made.read_text().splitlines())}
    folder = tmp_path / "words"
    sizes = {n: (folder / n).stat().st_size for n in ("train.txt", "valid.txt")}
    count = "count chunks train.txt" if kind == "bpe" else "count words train.txt"
    want = {
        "read words.txt": src.stat().st_size,
        "split words": src.stat().st_size,
        count: sizes["train.txt"],
        "encode train.txt": sizes["train.txt"],
        "encode valid.txt": sizes["valid.txt"],
    }
    for desc, total in want.items():
        b = bars[desc]
        assert (b["unit"], b["total"], b["n"], b["disable"]) == ("B", total, total, False), desc
    if kind == "bpe":  # the trainer's own callback: merges, reported every 256
        merges = bars["learn merges train.txt"]
        assert merges["unit"] == "merge" and merges["total"] == 900 - 258 and merges["n"] >= 512
    done = data_py(*args, "--quiet", "--name", "q", fault=f"record_progress_bars:{made}")
    assert done.returncode == 0, done.stderr
    quiet = [json.loads(line) for line in made.read_text().splitlines()]
    assert quiet and all(b["disable"] for b in quiet)  # --quiet: bars that print nothing


# ---------------------------------------------------------------- --tinystories-dir


def test_tinystories_dir_uses_the_local_copy(tmp_path):
    local = tmp_path / "ts"
    local.mkdir()
    train = ["Once upon a time, a cat sat.", "Tom had a red ball.\nHe was happy.", "Sue ran to the park."]
    valid = ["The dog slept.", "A bird sang."]
    (local / "TinyStoriesV2-GPT4-train.txt").write_text(
        "".join(s + "\n<|endoftext|>\n" for s in train), encoding="utf-8"
    )
    (local / "TinyStoriesV2-GPT4-valid.txt").write_text(
        "<|endoftext|>".join(valid) + "\n", encoding="utf-8"
    )  # the separator inside a line also separates
    out = tmp_path / "out"
    cap = data_py("--tinystories-dir", local, "--out", out, "--quiet", "--vocab-size", "40")
    assert cap.returncode == 0, cap.stderr
    folder = out / "tinystories"
    assert corpora.read_documents(folder / "train.txt") == train
    assert corpora.read_documents(folder / "valid.txt") == valid
    assert not (out / "downloads").exists()  # no download, no cache
    assert "TinyStoriesV2-GPT4-train.txt" in cap.stdout
    (local / "TinyStoriesV2-GPT4-valid.txt").unlink()
    done = data_py("--tinystories-dir", local, "--out", out, "--quiet")
    assert done.returncode == 1
    err = done.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("data.py: error: --tinystories-dir ")
    assert "no TinyStoriesV2-GPT4-valid.txt in it" in err[0]
    assert data_py("--tinystories-dir", local, "--train-file", "x.txt", "--quiet").returncode == 2


# ---------------------------------------------------------------- bad input mid-stream


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("fail_on_open", [1, 2])  # the split pass, the writing pass
def test_unreadable_file_mid_stream_leaves_nothing(tmp_path, fail_on_open):
    src = tmp_path / "src.txt"
    src.write_bytes(pinned_corpus_bytes())
    out = tmp_path / "out"
    args = ["--train-file", str(src), "--out", str(out), "--quiet", "--vocab-size", "120"]
    assert data_py(*args).returncode == 0  # a complete earlier run
    before = {p.name: p.read_bytes() for p in (out / "src").iterdir()}
    done = data_py(*args, fault=f"read_fails_on_open:{fail_on_open}")  # tests/tool_faults.py
    assert done.returncode == 1
    msg = _one_error(done.stderr)
    assert msg == f"data.py: error: {src}: read failed at byte offset 640: Input/output error"
    assert {p.name: p.read_bytes() for p in (out / "src").iterdir()} == before  # untouched, no temporary files


def test_non_utf8_mid_stream_names_the_file_and_leaves_nothing(tmp_path):
    src = tmp_path / "bad.txt"
    good = b"a fine line of text\n<|endoftext|>\n" * 40_000  # 1.4 MB: the bad byte is in the second block
    src.write_bytes(good + b"caf\xe9\n")
    out = tmp_path / "out"
    done = data_py("--bpe", "--train-file", src, "--out", out, "--quiet")
    assert done.returncode == 1
    msg = _one_error(done.stderr)
    assert msg.startswith(f"data.py: error: {src}: not UTF-8 text: invalid byte sequence")
    assert f"at byte offset {len(good) + 3} " in msg
    assert not out.exists() or not any(out.rglob("*"))


def test_bad_valid_file_found_while_writing_leaves_nothing(tmp_path):
    """With --valid-file nothing is read before the writing pass; a bad byte there drops both files."""
    train, valid = tmp_path / "t.txt", tmp_path / "v.txt"
    corpora.write_documents(train, ["one story here", "and another one"])
    valid.write_bytes(b"fine\n<|endoftext|>\n\xff\n")
    out = tmp_path / "out"
    done = data_py("--train-file", train, "--valid-file", valid, "--out", out, "--quiet")
    assert done.returncode == 1
    assert "v.txt: not UTF-8 text" in _one_error(done.stderr)
    assert sorted(p.name for p in (out / "t").iterdir()) == []


# ---------------------------------------------------------------- peak memory (slow)

_PEAK = """
import resource, subprocess, sys
rc = subprocess.call([sys.executable, *sys.argv[1:]])
print("PEAK_KB", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "RC", rc)
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["bpe", "word"])
def test_peak_memory_on_a_200_mb_corpus_is_bounded(tmp_path_factory, kind):
    """data.py on a generated 200 MB corpus (benchmarks/make_big_corpus.py): peak resident memory
    stays far below the corpus (the in-memory version held it 2-3 times over)."""
    big = tmp_path_factory.getbasetemp() / "big200.txt"
    if not big.exists():
        subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "make_big_corpus.py"), str(big), "--megabytes", "200"],
            check=True,
            capture_output=True,
        )
    out = tmp_path_factory.mktemp("peak")
    argv = ["--train-file", str(big), "--out", str(out), "--quiet"] + (["--bpe"] if kind == "bpe" else [])
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK, str(ROOT / "data.py"), *argv], capture_output=True, text=True, timeout=1800
    )
    line = [x for x in proc.stdout.splitlines() if x.startswith("PEAK_KB")]
    assert line and line[0].endswith("RC 0"), proc.stderr[-2000:]
    peak_mb = int(line[0].split()[1]) / 1024
    assert peak_mb < 400, f"peak RSS {peak_mb:.0f} MB"
    folder = out / "big200"
    n_valid = sum(1 for _ in DocumentFile(folder / "valid.txt"))
    assert n_valid == round(0.1 * (n_valid + sum(1 for _ in DocumentFile(folder / "train.txt"))))


# ---------------------------------------------------------------- the round-trip checker


def test_verify_checks_token_files_against_the_documents(tmp_path, capsys):
    from storygpt.data import verify

    src = tmp_path / "pinned.txt"
    src.write_bytes(pinned_corpus_bytes())
    base = ["--train-file", str(src), "--out", str(tmp_path), "--quiet", "--threads", "1"]
    assert data_py(*base, "--bpe", "--vocab-size", "300").returncode == 0
    assert data_py(*base, "--vocab-size", "120").returncode == 0
    folder = tmp_path / "pinned"
    bpe = verify.check_split(folder, "bpe-300", "train")
    assert bpe == {"documents": 36, "checked": 36, "tokens": read_tokens(folder / "train-bpe-300.bin").size,
                   "lossless": True}  # fmt: skip
    assert verify.check_split(folder, "word-38", "valid")["lossless"] is False
    assert verify.main([str(folder), "word-38", "--quiet"]) == 0
    assert "valid: " in capsys.readouterr().out
    # documents swapped in the text file: caught, the document named
    docs = corpora.read_documents(folder / "valid.txt")
    corpora.write_documents(folder / "valid.txt", [docs[1], docs[0], *docs[2:]])
    with pytest.raises(ValueError, match=r"valid-bpe-300.bin: document 0 of valid.txt does not match its ids"):
        verify.check_split(folder, "bpe-300", "valid")
    corpora.write_documents(folder / "valid.txt", docs[:-1])
    assert verify.main([str(folder), "bpe-300", "--quiet"]) == 1
    assert "4 documents in the ids, 3 in valid.txt" in capsys.readouterr().err
