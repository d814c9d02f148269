"""Chunk counts (storygpt.tokenizers.counts, data.py --counts): shards counted apart and merged train the same
merges as the whole text (oracles: train_bpe on the whole text, the Python reference bpe_reference.train)."""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import call_tool, corpus_text, one_error_line

from storygpt.data.docstream import DocumentFile
from storygpt.tokenizers import EOT, bpe_reference, load, train_bpe
from storygpt.tokenizers.counts import (
    ChunkCounts,
    count_shard,
    merge_counts,
    read_counts,
    train_from_counts,
    write_counts,
)

SPECIALS = [b"<pad>", EOT.encode()]
# varied text: letters, digits, punctuation, contractions, runs of spaces and new lines, non-ASCII
SHARDS = [
    "It's the end.\n\n  Of the world's 1234567 ends!! the cat sat; the cat's hat.\n" * 6,
    "Конец света.  Ünïcödé naïve café, 漢字かな 12 345.\nthe dog sat on the log, they'll see\r\n" * 5,
    "we'd   gone  \t\tback, THE END?! 2024-12-04\n" * 7 + EOT + "the cat sat again.\n" * 3,
]
WHOLE = EOT.join(SHARDS)  # chunks never cross a text or a special token: the shards' counts add up


def test_shard_counts_match_the_reference_and_add_up_to_the_whole_text():
    shards = [count_shard(s, "gpt4") for s in SHARDS]
    for text, shard in zip(SHARDS, shards):
        assert shard.counts == dict(bpe_reference.count_chunks(text.encode(), "gpt4", SPECIALS))
    merged = merge_counts(shards)
    assert merged.counts == dict(bpe_reference.count_chunks(WHOLE.encode(), "gpt4", SPECIALS))
    assert merged.total == sum(s.total for s in shards) and merged.pattern == "gpt4"
    assert merge_counts([shards[0]]).counts == shards[0].counts


@pytest.mark.parametrize("pattern", ["gpt4", "gpt2"])
def test_merged_shard_counts_learn_the_merges_of_the_whole_text(pattern):
    merged = merge_counts(count_shard(s, pattern) for s in SHARDS)
    tok = train_from_counts(merged, 340)
    whole = train_bpe(WHOLE, 340, pattern=pattern)  # the C++ trainer on the whole text
    reference = bpe_reference.train(WHOLE.encode(), 340, pattern, SPECIALS)  # the Python reference
    assert tok.merges == whole.merges and [m[:2] for m in tok.merges] == [tuple(p) for p in reference]
    assert len(reference) == 340 - 256 - 2  # enough pairs: the whole vocabulary was learned
    assert tok.encode(WHOLE, allowed_special="all") == whole.encode(WHOLE, allowed_special="all")
    assert tok.pattern == pattern


def test_shards_as_files_and_as_documents(tmp_path):
    paths = []
    for i, text in enumerate(SHARDS):
        paths.append(tmp_path / f"shard{i}.txt")
        paths[-1].write_bytes(text.encode())
    merged = merge_counts(count_shard([p], "gpt4", num_threads=2) for p in paths)
    assert merged.counts == count_shard(paths, "gpt4").counts
    assert train_from_counts(merged, 330).merges == train_bpe(paths, 330, pattern="gpt4").merges
    docs = tmp_path / "train.txt"  # data.py's train.txt: documents separated by <|endoftext|> lines
    docs.write_text(corpus_text(), encoding="utf-8")
    halves = list(DocumentFile(docs))
    half = len(halves) // 2
    by_docs = merge_counts([count_shard(iter(halves[:half]), "gpt4"), count_shard(iter(halves[half:]), "gpt4")])
    assert by_docs.counts == count_shard(iter(halves), "gpt4").counts


@pytest.mark.parametrize("name", ["counts.tsv", "counts.tsv.gz"])
def test_counts_file_round_trip_and_format(tmp_path, name):
    counts = merge_counts(count_shard(s, "gpt4") for s in SHARDS)
    counts.counts[b"\xff\xfe raw"] = 3  # any bytes, UTF-8 or not
    path = tmp_path / name
    write_counts(path, counts)
    assert read_counts(path) == counts
    raw = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
    lines = raw.decode().splitlines()
    header = json.loads(lines[0])
    assert header == {
        "format": "storygpt-chunk-counts",
        "version": 1,
        "pattern": "gpt4",
        "special_tokens": ["<pad>", EOT],
    }
    assert len(lines) == 1 + len(counts.counts)
    assert f"{counts.counts[b'the']}\t{b'the'.hex()}" in lines and "3\tfffe20726177" in lines
    assert [bytes.fromhex(line.split("\t")[1]) for line in lines[1:]] == sorted(counts.counts)


HEADER = json.dumps({"format": "storygpt-chunk-counts", "version": 1, "pattern": "gpt4", "special_tokens": [EOT]})


@pytest.mark.parametrize(
    "text, error",
    [
        ("", r"c.tsv:1: not a counts file"),
        ("count\tchunk\n", r"c.tsv:1: not a counts file"),
        (HEADER.replace("gpt4", "gpt5") + "\n1\t61\n", r"c.tsv:1: unknown pre-tokenization pattern 'gpt5'"),
        (HEADER.replace(": 1,", ": 2,") + "\n1\t61\n", r"c.tsv:1: counts format version 2"),
        (HEADER + "\n1\t61\n0\t62\n", r"c.tsv:3: expected COUNT<TAB>HEX"),
        (HEADER + "\n1 61\n", r"c.tsv:2: expected COUNT<TAB>HEX"),
        (HEADER + "\n1\t6\n", r"c.tsv:2: expected COUNT<TAB>HEX"),
        (HEADER + "\n1\t6A\n", r"c.tsv:2: expected COUNT<TAB>HEX"),
        (HEADER + "\n1\t61\n2\t61\n", r"c.tsv:3: chunk b'a' is listed twice"),
        (HEADER + "\n", r"c.tsv: no chunks"),
        (HEADER + f"\n{2**62}\t616263\n", r"c.tsv: .*pair counts could exceed"),
    ],
)
def test_bad_counts_files_are_named_with_their_line(tmp_path, text, error):
    path = tmp_path / "c.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=error):
        read_counts(path)


def test_bad_arguments():
    with pytest.raises(ValueError, match="shard 1 was cut with pattern 'gpt2'.*shard 0 with 'gpt4'"):
        merge_counts([count_shard("a b", "gpt4"), count_shard("a b", "gpt2")])
    with pytest.raises(ValueError, match="no shards"):
        merge_counts([])
    with pytest.raises(ValueError, match="unknown pre-tokenization pattern 'superword'"):
        count_shard("a b", "superword")
    with pytest.raises(ValueError, match="num_threads"):
        count_shard("a b", "gpt4", num_threads=0)
    with pytest.raises(TypeError, match="item 1 is int"):
        count_shard(iter(["a", 3]), "gpt4")
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        count_shard(["missing.txt"], "gpt4")
    assert ChunkCounts({b"ab": 2}, "gpt4").total == 2


# ------------------------------------------------------------------ data.py --counts
def test_data_py_counts_trains_what_data_py_trains_from_the_text(tiny_run, tmp_path):
    docs = list(DocumentFile(tiny_run["corpus"] / "train.txt"))
    half = len(docs) // 2
    counts = merge_counts(count_shard(iter(part), "gpt4") for part in (docs[:half], docs[half:]))
    write_counts(tmp_path / "counts.tsv.gz", counts)
    out = tmp_path / "o"
    common = ["--train-file", tiny_run["src"], "--out", out, "--quiet", "--threads", "1", "--bpe"]
    done = call_tool("data", *common, "--vocab-size", "300", "--counts", tmp_path / "counts.tsv.gz")
    assert done.returncode == 0, done.stderr
    mine, theirs = load(out / "tiny" / "tokenizer-bpe-300.json"), load(tiny_run["corpus"] / "tokenizer-bpe-300.json")
    assert mine.merges == theirs.merges and len(mine.merges) > 20
    for split in ("train", "valid"):
        name = f"{split}-bpe-300.bin"
        assert (out / "tiny" / name).read_bytes() == (tiny_run["corpus"] / name).read_bytes()


def test_data_py_counts_bad_input_writes_nothing(tiny_run, tmp_path):
    good = tmp_path / "counts.tsv"
    write_counts(good, count_shard("the cat sat on the mat", "gpt4"))
    bad = tmp_path / "bad.tsv"
    bad.write_text(HEADER + "\nx\t61\n", encoding="utf-8")
    out = tmp_path / "o"
    base = ["--train-file", tiny_run["src"], "--out", out, "--quiet"]
    cases = [
        (["--tokenizer", "word", "--counts", good], 2, "--counts trains bpe[:VOCAB] only, not --tokenizer word"),
        (["--bpe", "--counts", bad], 1, f"{bad}:2: expected COUNT<TAB>HEX"),
        (["--bpe", "--counts", good, "--pattern", "gpt2"], 1, "counted with --pattern gpt4, not gpt2"),
        (["--bpe", "--counts", tmp_path / "none.tsv"], 1, f"counts file not found: {tmp_path / 'none.tsv'}"),
        (["--bpe", "--counts", tmp_path], 1, "is a folder, not a file"),
    ]
    for argv, status, message in cases:
        done = call_tool("data", *base, *argv)
        assert done.returncode == status, done.stderr
        assert message in one_error_line(done.stderr, "data.py")
        assert not out.exists()


def test_module_docstring_example_runs(tmp_path, monkeypatch):
    # before: its write_counts(..., pattern="gpt4") was a TypeError (the pattern travels in the counts)
    import warnings

    from storygpt.tokenizers import counts as module

    example = module.__doc__.split("::\n", 1)[1].split("\n\n", 1)[0]
    shard_paths = []
    for i in range(2):
        shard_paths.append(tmp_path / f"shard{i}.txt")
        shard_paths[-1].write_text(corpus_text(3 + i), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    scope = {**vars(module), "shard_paths": shard_paths}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # 8192 is more than these shards hold
        exec(compile("\n".join(line.split("#")[0].strip() for line in example.splitlines()), "example", "exec"), scope)
    assert scope["tok"].merges and (tmp_path / "counts.tsv.gz").is_file()
