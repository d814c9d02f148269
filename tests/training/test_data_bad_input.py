"""Bad input for data.py and storygpt.data: a one-line error that names the file or flag (no traceback, a
non-zero exit), and nothing half-written (every file is atomic).

Each test is a regression test for a problem found by trying to break storygpt; the comment says what
happened before the fix.  ``tiny_run`` (tests/conftest.py) is a tiny corpus data.py has prepared.  data.py's
main runs in the test's process (conftest.call_tool: exit status, output and warnings as a subprocess shows
them), but for the Ctrl-C test: a real process.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from conftest import call_tool, one_error_line, run_tool

from storygpt.tokenizers import load


def run_data(tiny_run, *extra: str):
    """data.py on ``tiny_run``'s tiny.txt into ROOT/o, quietly, with ``extra``: the finished process (in this one)."""
    return call_tool("data", "--train-file", tiny_run["src"], "--out", tiny_run["root"] / "o", "--quiet", *extra)


def test_data_directory_as_train_file(tiny_run):
    # before: "tmp/x: no such file" for a folder that exists
    done = call_tool("data", "--train-file", tiny_run["root"], "--out", tiny_run["root"] / "o", "--quiet")
    assert done.returncode == 1
    msg = one_error_line(done.stderr, "data.py")
    assert str(tiny_run["root"]) in msg and "is a folder" in msg


def test_data_single_line_document_names_the_file(tiny_run):
    # before: "the corpus is a single document ..." without the file's name
    f = tiny_run["root"] / "oneline.txt"
    f.write_text("just one line\n", encoding="utf-8")
    done = call_tool("data", "--train-file", f, "--out", tiny_run["root"] / "o", "--quiet")
    assert done.returncode == 1
    msg = one_error_line(done.stderr, "data.py")
    assert str(f) in msg and "single document" in msg


@pytest.mark.parametrize(
    "args, named",
    [
        (["--bpe", "--vocab-size", "10000000000000000000000"], "--vocab-size=10,000,000,000,000,000,000,000"),
        (["--bpe", "--vocab-size", str((1 << 26) + 1)], "--vocab-size=67,108,865"),
        (["--tokenizer", "superbpe:67108865:300"], "VOCAB=67,108,865"),
        (["--tokenizer", "word:99999999999"], "VOCAB=99,999,999,999"),
    ],
)
def test_data_huge_vocab_size_is_refused_before_anything_is_written(tiny_run, args, named):
    # before: a pybind11 TypeError traceback that printed the whole training text; then an error
    # from the trainer after train.txt and valid.txt were written
    done = run_data(tiny_run, *args)
    assert done.returncode == 2
    msg = one_error_line(done.stderr, "data.py")
    assert named in msg and "too large: at most 67,108,864 token ids" in msg and len(done.stderr) < 500
    assert not (tiny_run["root"] / "o").exists()


@pytest.mark.parametrize(
    "kind, content, named",
    [
        ("file", '{"kind": "bpe", oops', "corrupt tokenizer file (not valid JSON)"),
        ("hf", "[1, 2]", "tokenizer.json"),
        ("sp", "not a model", "not a SentencePiece model file"),
    ],
)
def test_a_bad_tokenizer_file_is_refused_before_the_corpus_is_written(tiny_run, kind, content, named):
    # before: data.py split the corpus into o/NAME/train.txt and valid.txt, then failed on the file
    if kind == "sp":
        pytest.importorskip("sentencepiece", reason="sentencepiece not installed (pip install .[test])")
    bad = tiny_run["root"] / f"bad-{kind}.bin"
    bad.write_text(content, encoding="utf-8")
    done = run_data(tiny_run, "--tokenizer", f"{kind}:{bad}")
    assert done.returncode == 1
    msg = one_error_line(done.stderr, "data.py")
    assert str(bad) in msg and named in msg
    assert not (tiny_run["root"] / "o").exists()


@pytest.mark.parametrize("value", ["0", "-5"])
def test_data_batch_chars_must_be_positive(tiny_run, value):
    # before: accepted silently
    done = run_data(tiny_run, "--batch-chars", value)
    assert done.returncode == 2
    assert "--batch-chars" in one_error_line(done.stderr, "data.py")


def test_data_ctrl_c_exits_130_without_traceback_or_half_files(tiny_run):
    # before: a KeyboardInterrupt traceback (the files were already atomic)
    out = tiny_run["root"] / "ctrlc"
    # interrupted after training, while encoding (tests/tool_faults.py)
    done = run_tool("data", "--train-file", tiny_run["src"], "--out", out, "--quiet", fault="ctrl_c_while_encoding")
    assert done.returncode == 130
    err = done.stderr
    assert "Traceback" not in err and "interrupted" in err
    names = sorted(p.name for p in (out / "tiny").iterdir())
    # complete files only, no *.tmp, and none of the SPEC's files: the tokenizer file is written last
    assert names == ["train.txt", "valid.txt"]


def test_data_refuses_a_new_split_under_the_other_kinds_token_files(tiny_run, tmp_path):
    # before: `data.py --bpe` then `data.py --valid-fraction 0.3` rewrote train.txt/valid.txt silently, so the
    # bpe token files encoded other documents than valid.txt held (bits.py measured them on training text)
    out = ["--train-file", str(tiny_run["src"]), "--out", str(tmp_path), "--quiet", "--threads", "1"]
    assert call_tool("data", *out, "--bpe", "--vocab-size", "280").returncode == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "tiny").iterdir()}
    done = call_tool("data", *out, "--vocab-size", "50", "--valid-fraction", "0.3")
    assert done.returncode == 1
    msg = one_error_line(done.stderr, "data.py")
    assert "train.txt: this run splits the corpus differently" in msg and "train-bpe-280.bin" in msg
    assert {p.name: p.read_bytes() for p in (tmp_path / "tiny").iterdir()} == before  # nothing touched
    assert call_tool("data", *out, "--vocab-size", "50").returncode == 0  # the same split: fine
    assert call_tool("data", *out, "--bpe", "--vocab-size", "290", "--valid-fraction", "0.3").returncode == 1


@pytest.mark.parametrize("ids", [np.array([1.5, 2.0]), np.array(["a"]), [1.0, 2.0]])
def test_write_tokens_rejects_non_integer_ids(tiny_run, tmp_path, ids):
    # before: floats were truncated silently (1.5 -> 1); strings gave a numpy UFuncTypeError
    from storygpt.data import write_tokens

    tok = load(tiny_run["corpus"] / "tokenizer-bpe-300.json")
    target = tmp_path / "t.bin"
    with pytest.raises(ValueError, match=rf"^{target}: token ids must be integers"):
        write_tokens(target, ids, tok)
    assert list(tmp_path.iterdir()) == []  # no file, no temporary left behind


def test_read_tokens_with_the_other_kinds_tokenizer(tiny_run):
    from storygpt.data import read_tokens

    word = load(tiny_run["corpus"] / f"tokenizer-{tiny_run['word']}.json")
    with pytest.raises(ValueError, match=rf"^{tiny_run['corpus']}/train-bpe-300.bin: written by another tokenizer"):
        read_tokens(tiny_run["corpus"] / "train-bpe-300.bin", word)


def test_write_tokens_to_a_folder_or_failing_rename_leaves_no_temporary(tiny_run, tmp_path, monkeypatch):
    # before: os.replace failed inside close() and the "NAME.XXXX.tmp" file stayed beside the destination
    from storygpt.data import binfile, write_tokens

    tok = load(tiny_run["corpus"] / "tokenizer-bpe-300.json")
    target = tmp_path / "sub"
    target.mkdir()
    with pytest.raises(IsADirectoryError, match=rf"^{target}: is a folder"):
        write_tokens(target, np.array([1, 2]), tok)

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(binfile.os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_tokens(tmp_path / "t.bin", np.array([1, 2]), tok)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--tokenizer", "bpe:600", "--vocab-size", "700"], "--tokenizer bpe:600 names a vocabulary size already"),
        (["--name", ""], "--name must not be empty (it is the corpus folder under --out)"),
    ],
)
def test_data_conflicting_or_empty_arguments(tmp_path, argv, message):
    # before: --vocab-size silently won over the SPEC's size; an empty --name fell back to the corpus name
    done = call_tool("data", *argv, "--out", tmp_path)
    assert done.returncode == 2
    assert message in one_error_line(done.stderr, "data.py")
    assert not any(tmp_path.iterdir())


def test_data_paths_of_the_wrong_kind_say_so(tmp_path):
    # before: "--sdist DIR: no such file" and "[Errno 20] Not a directory: 'FILE/downloads'"
    (tmp_path / "afile").write_text("x")
    done = call_tool("data", "--sdist", tmp_path, "--out", tmp_path / "o")
    assert done.returncode == 1
    assert one_error_line(done.stderr, "data.py") == f"data.py: error: {tmp_path}: is a folder, not a file"
    done = call_tool("data", "--out", tmp_path / "afile")
    assert done.returncode == 1
    msg = f"data.py: error: --out {tmp_path / 'afile'}: is a file, not a folder"
    assert one_error_line(done.stderr, "data.py") == msg


def test_data_warns_when_asked_for_more_words_than_the_text_has(tiny_run, tmp_path):
    # before: word:99999999999 wrote files named word-99999999999 with a much smaller vocabulary, silently
    argv = ["--train-file", str(tiny_run["src"]), "--out", str(tmp_path), "--quiet", "--tokenizer", "word:100000"]
    done = call_tool("data", *argv)
    assert done.returncode == 0, done.stderr
    warning = r"^data.py: warning: --tokenizer word:100000: the training text has only \d+ distinct words"
    assert len(re.findall(warning, done.stderr, re.MULTILINE)) == 1, done.stderr
    assert "short of the 100,000 asked" in done.stderr and done.stderr.count("distinct words") == 1


def test_a_word_vocabulary_smaller_than_asked_names_its_files_by_its_size(tmp_path):
    # before: `data.py --tokenizer word --vocab-size 50000` on 3,000 distinct words wrote tokenizer-word-50000.json
    from itertools import islice, product
    from string import ascii_lowercase

    from storygpt.compare.settings import token_files, vocab_size_of
    from storygpt.tokenizers.spec import parse_spec
    from storygpt.train.inputs import load_data

    words = ["".join(w) for w in islice(product(ascii_lowercase, repeat=3), 2997)]  # + 3 specials: 3,000
    docs = [" ".join(words[i : i + 100]) for i in range(0, len(words), 100)]
    (tmp_path / "made.txt").write_text("\n<|endoftext|>\n".join(docs) + "\n", encoding="utf-8")
    (tmp_path / "held.txt").write_text("aaa aab zzz\n", encoding="utf-8")
    argv = ["--train-file", tmp_path / "made.txt", "--valid-file", tmp_path / "held.txt", "--out", tmp_path / "o"]
    done = call_tool("data", *argv, "--quiet", "--tokenizer", "word", "--vocab-size", "50000")
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "o" / "made"
    named = sorted(p.name for p in folder.iterdir() if "word" in p.name)
    assert named == ["stats-word-3000.json", "tokenizer-word-3000.json", "train-word-3000.bin", "valid-word-3000.bin"]
    assert load(folder / "tokenizer-word-3000.json").vocab_size == 3000
    stats = json.loads((folder / "stats-word-3000.json").read_text())
    assert (stats["slug"], stats["slug_requested"], stats["vocab_size"], stats["vocab_size_requested"]) == (
        "word-3000",
        "word-50000",
        3000,
        50000,
    )
    (line,) = [ln for ln in done.stderr.splitlines() if "distinct words" in ln]
    assert line == (
        "data.py: warning: --tokenizer word:50000: the training text has only 3,000 distinct words and specials, "
        "short of the 50,000 asked: its files are named word-3000 (tokenizer-word-3000.json; "
        "pretrain.py --tokenizer word:50000 or word:3000 finds them)"
    )
    # what was asked for finds them: pretrain.py's loading, compare.py's checks
    tok, train = load_data(folder, parse_spec("word:50000"), block_size=8)
    assert tok.vocab_size == 3000 and len(train) == 2997 + len(docs) - 1
    assert [p.name for p in token_files(folder, "word-50000")][-1] == "tokenizer-word-3000.json"
    assert vocab_size_of(folder, "word-50000") == 3000


def test_data_warns_when_the_held_out_file_is_the_training_file(tiny_run, tmp_path):
    src = str(tiny_run["src"])
    argv = ["--train-file", src, "--valid-file", src, "--out", str(tmp_path), "--quiet", "--tokenizer", "word:20"]
    done = call_tool("data", *argv)
    assert done.returncode == 0, done.stderr
    warning = rf"^data.py: warning: --valid-file {re.escape(src)} is the --train-file: the held-out figures will"
    assert re.search(warning, done.stderr, re.MULTILINE), done.stderr


@pytest.mark.parametrize(
    "args, named, low",
    [
        (["--tokenizer", "bpe:100"], "VOCAB=100", 258),
        (["--bpe", "--vocab-size", "257"], "--vocab-size=257", 258),
        (["--tokenizer", "word:1"], "VOCAB=1", 3),
        (["--tokenizer", "word", "--vocab-size", "2"], "--vocab-size=2", 3),
        (["--tokenizer", "unigram:258"], "VOCAB=258", 259),
        (["--tokenizer", "wordpiece:514"], "VOCAB=514", 515),
        (["--tokenizer", "spm-unigram:259"], "VOCAB=259", 260),
        (["--tokenizer", "spm-bpe:5"], "VOCAB=5", 260),
    ],
)
def test_data_small_vocab_size_is_refused_before_anything_is_written(tiny_run, tmp_path, args, named, low):
    # before: bpe:100 and word:1 wrote OUT/NAME/train.txt and valid.txt, then the trainer refused
    out = tmp_path / "o"
    done = call_tool("data", "--train-file", tiny_run["src"], "--out", out, "--quiet", *args)
    assert done.returncode == 2
    msg = one_error_line(done.stderr, "data.py")
    assert named in msg and "is too small" in msg and f"(at least {low})" in msg
    assert not out.exists()


def test_offline_tinystories_leaves_no_empty_download_folder(tmp_path, monkeypatch):
    # before: data/downloads/tinystories/ stayed behind, empty, after the download failed
    import urllib.error
    import urllib.request

    def offline(*a, **k):
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    (tmp_path / "data").mkdir()
    done = call_tool("data", "--corpus", "tinystories", "--tokenizer", "byte", "--quiet", cwd=tmp_path)
    assert done.returncode == 1
    msg = one_error_line(done.stderr, "data.py")
    assert "cannot download" in msg and "network is unreachable" in msg
    assert list(tmp_path.rglob("*")) == [tmp_path / "data"]
