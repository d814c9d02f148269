"""Bad input for the command-line tools and the Python API: a clear error that names the file, token or
argument (no traceback, a non-zero exit), and nothing lost (atomic files, resumable runs).

Each test is a regression test for a problem found by trying to break storygpt; the comment says what
happened before the fix.
"""

from __future__ import annotations

import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import bits  # noqa: E402
import data as data_cli  # noqa: E402
import pretrain  # noqa: E402
import sample  # noqa: E402
from storygpt import runtime  # noqa: E402
from storygpt.checkpoint import CheckpointError, load_checkpoint, read_checkpoint  # noqa: E402
from storygpt.runtime import resolve_device  # noqa: E402
from storygpt.tokenizers import BPETokenizer, WordTokenizer, load  # noqa: E402

WORDS = (
    "the cat sat on a mat and the dog ran to the log while a bird sang in the old tree "
    "near the river where children played all day long"
).split()
BPE = ["--tokenizer", "bpe:300"]  # the work fixture's BPE files
TINY = [
    "--n-layer",
    "1",
    "--n-head",
    "2",
    "--n-embd",
    "16",
    "--block-size",
    "16",
    "--batch-size",
    "4",
    "--eval-windows",
    "2",
    "--eval-interval",
    "2",
    "--no-progress",
    "--threads",
    "1",
]


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def corpus_text(n_docs: int = 12) -> str:
    rng = np.random.default_rng(0)
    docs = []
    for d in range(n_docs):
        lines = [" ".join(rng.choice(WORDS, 12)) + "." for _ in range(8)]
        docs.append(f"Story {d}.\n" + "\n".join(lines))
    return "\n<|endoftext|>\n".join(docs) + "\n"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A corpus written by data.py (bpe and word) and a tiny checkpoint trained by pretrain.py."""
    root = tmp_path_factory.mktemp("bad")
    src = root / "tiny.txt"
    src.write_text(corpus_text(), encoding="utf-8")
    assert (
        data_cli.main(
            [
                "--train-file",
                str(src),
                "--out",
                str(root / "data"),
                "--quiet",
                "--bpe",
                "--vocab-size",
                "300",
                "--threads",
                "1",
            ]
        )
        == 0
    )
    assert (
        data_cli.main(
            ["--train-file", str(src), "--out", str(root / "data"), "--quiet", "--vocab-size", "60", "--threads", "1"]
        )
        == 0
    )
    corpus = root / "data" / "tiny"
    pretrain.main(["--data", str(corpus), *BPE, "--out-dir", str(root / "ck"), "--max-steps", "2", *TINY])
    return {"root": root, "src": src, "corpus": corpus, "ckpt": root / "ck" / "tiny" / "learned-bpe-300" / "ckpt.pt"}


def one_error_line(err: str, tool: str) -> str:
    """The stderr of a failed run: one ``tool: error: ...`` line, no traceback."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith(f"{tool}: error: ")]
    assert len(lines) == 1, err
    return lines[0]


# ------------------------------------------------------------------------------------------ data.py
def test_data_directory_as_train_file(work, capsys):
    # before: "tmp/x: no such file" for a folder that exists
    assert data_cli.main(["--train-file", str(work["root"]), "--out", str(work["root"] / "o"), "--quiet"]) == 1
    msg = one_error_line(capsys.readouterr().err, "data.py")
    assert str(work["root"]) in msg and "is a folder" in msg


def test_data_single_line_document_names_the_file(work, capsys):
    # before: "the corpus is a single document ..." without the file's name
    f = work["root"] / "oneline.txt"
    f.write_text("just one line\n", encoding="utf-8")
    assert data_cli.main(["--train-file", str(f), "--out", str(work["root"] / "o"), "--quiet"]) == 1
    msg = one_error_line(capsys.readouterr().err, "data.py")
    assert str(f) in msg and "single document" in msg


@pytest.mark.parametrize("value", ["10000000000000000000000", str((1 << 26) + 1)])
def test_data_huge_bpe_vocab_size(work, capsys, value):
    # before: a pybind11 TypeError traceback that printed the whole training text
    assert (
        data_cli.main(
            [
                "--train-file",
                str(work["src"]),
                "--out",
                str(work["root"] / "o"),
                "--quiet",
                "--bpe",
                "--vocab-size",
                value,
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    msg = one_error_line(err, "data.py")
    assert "vocab_size" in msg and "too large" in msg and len(err) < 500


@pytest.mark.parametrize("value", ["0", "-5"])
def test_data_batch_chars_must_be_positive(work, capsys, value):
    # before: accepted silently
    assert (
        data_cli.main(
            ["--train-file", str(work["src"]), "--out", str(work["root"] / "o"), "--quiet", "--batch-chars", value]
        )
        == 2
    )
    assert "--batch-chars" in one_error_line(capsys.readouterr().err, "data.py")


def test_data_ctrl_c_exits_130_without_traceback_or_half_files(work, capsys, monkeypatch):
    # before: a KeyboardInterrupt traceback (the files were already atomic)
    out = work["root"] / "ctrlc"
    real = data_cli.prepare

    def interrupted(kind, corpus, out_dir, *a, **kw):
        from storygpt.data import prepare as prep

        def boom(*a, **kw):
            raise KeyboardInterrupt

        monkeypatch.setattr(prep, "encode_documents", boom)  # interrupted after the tokenizer is written
        return real(kind, corpus, out_dir, *a, **kw)

    monkeypatch.setattr(data_cli, "prepare", interrupted)
    assert data_cli.main(["--train-file", str(work["src"]), "--out", str(out), "--quiet"]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and "interrupted" in err
    names = sorted(p.name for p in (out / "tiny").iterdir())
    assert names == ["tokenizer-word-10000.json", "train.txt", "valid.txt"]  # complete files only, no *.tmp


def test_data_refuses_a_new_split_under_the_other_kinds_token_files(work, tmp_path, capsys):
    # before: `data.py --bpe` then `data.py --valid-fraction 0.3` rewrote train.txt/valid.txt silently, so the
    # bpe token files encoded other documents than valid.txt held (bits.py measured them on training text)
    out = ["--train-file", str(work["src"]), "--out", str(tmp_path), "--quiet", "--threads", "1"]
    assert data_cli.main([*out, "--bpe", "--vocab-size", "280"]) == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "tiny").iterdir()}
    assert data_cli.main([*out, "--vocab-size", "50", "--valid-fraction", "0.3"]) == 1
    msg = one_error_line(capsys.readouterr().err, "data.py")
    assert "train.txt: this run splits the corpus differently" in msg and "train-bpe-280.bin" in msg
    assert {p.name: p.read_bytes() for p in (tmp_path / "tiny").iterdir()} == before  # nothing touched
    assert data_cli.main([*out, "--vocab-size", "50"]) == 0  # the same split: fine
    assert data_cli.main([*out, "--bpe", "--vocab-size", "290", "--valid-fraction", "0.3"]) == 1


# -------------------------------------------------------------------------------------- pretrain.py
def run_pretrain(work, *extra):
    return pretrain.main(["--data", str(work["corpus"]), "--out-dir", str(work["root"] / "ck2"), *TINY, *extra])


@pytest.mark.parametrize(
    "flag,value",
    [("--lr", "nan"), ("--minutes", "nan"), ("--minutes", "inf"), ("--min-lr", "inf"), ("--grad-clip", "nan")],
)
def test_pretrain_non_finite_floats(work, capsys, flag, value):
    # before: tracebacks from torch.optim (lr nan) or tqdm (minutes nan/inf)
    with pytest.raises(SystemExit) as e:
        run_pretrain(work, *BPE, flag, value, "--max-steps", "1")
    assert e.value.code == 2
    msg = one_error_line(capsys.readouterr().err, "pretrain.py")
    assert flag in msg and "finite" in msg


@pytest.mark.parametrize(
    "device,words", [("banana", "not a device name"), ("cuda:99", r"(CUDA is not available|only \d+ CUDA)")]
)
def test_pretrain_bad_device(work, device, words):
    # before: RuntimeError / AttributeError tracebacks from torch
    if device.startswith("cuda") and torch.cuda.is_available() and torch.cuda.device_count() > 99:
        pytest.skip("a machine with 100 GPUs")
    with pytest.raises(SystemExit, match=rf"^pretrain.py: error: --device '{device}'.*{words}"):
        run_pretrain(work, *BPE, "--device", device, "--max-steps", "1")


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", ""])
def test_pretrain_run_name_must_be_a_plain_name(work, name):
    # before: --run-name ../../etc wrote checkpoints outside --out-dir
    with pytest.raises(SystemExit, match=r"^pretrain.py: error: --run-name .*plain folder name"):
        run_pretrain(work, *BPE, "--run-name", name, "--max-steps", "1")
    assert not (work["root"] / "escape").exists()


def test_pretrain_data_folder_missing_or_a_file(work):
    # before: "<file>/tokenizer-bpe.json not found" for a --data that is not a folder at all
    for bad in (work["root"] / "nope", work["corpus"] / "train.txt"):
        with pytest.raises(SystemExit, match=rf"^pretrain.py: error: --data {bad}: no such folder"):
            pretrain.main(["--data", str(bad), *BPE, "--out-dir", str(work["root"] / "ck2"), *TINY])


def test_pretrain_folder_with_only_word_files_suggests_dropping_bpe(work, tmp_path):
    # before: only "run data.py --bpe", not that the folder holds the word-level files
    d = tmp_path / "wordonly"
    d.mkdir()
    for name in ("tokenizer-word-60.json", "train-word-60.bin", "valid-word-60.bin"):
        (d / name).write_bytes((work["corpus"] / name).read_bytes())
    with pytest.raises(
        SystemExit, match=r"tokenizer-bpe-300.json not found; .* holds the token files of: word-60 \(pass --tokenizer"
    ):
        pretrain.main(["--data", str(d), *BPE, "--out-dir", str(tmp_path / "ck"), *TINY])


@pytest.mark.parametrize("sub", ["", "a/b"])
def test_pretrain_out_dir_under_a_file(work, sub):
    # before: NotADirectoryError traceback from mkdir, after the data was loaded and the model built
    bad = work["src"] / sub if sub else work["src"]
    with pytest.raises(
        SystemExit, match=rf"^pretrain.py: error: cannot create the run folder {bad}/.*: {work['src']} is a file"
    ):
        pretrain.main(["--data", str(work["corpus"]), *BPE, "--out-dir", str(bad), *TINY, "--max-steps", "1"])


def test_pretrain_negative_weight_decay(work, capsys):
    # before: accepted (AdamW with weight decay -1 pushes the weights away from zero)
    with pytest.raises(SystemExit):
        run_pretrain(work, *BPE, "--weight-decay", "-1", "--max-steps", "1")
    assert "--weight-decay must be >= 0" in one_error_line(capsys.readouterr().err, "pretrain.py")


def test_pretrain_too_many_threads_are_capped(work, tmp_path, capsys):
    # before: --threads 100000 killed the process with a segfault (OpenMP could not start the threads)
    m = pretrain.main(
        [
            "--data",
            str(work["corpus"]),
            *BPE,
            "--out-dir",
            str(tmp_path),
            *TINY,
            "--max-steps",
            "1",
            "--threads",
            "100000",
        ]
    )
    assert m["steps"] == 1
    assert "--threads 100000 is more than the" in capsys.readouterr().out
    assert torch.get_num_threads() == runtime.usable_cores()
    torch.set_num_threads(1)


def test_bits_ctrl_c(work, capsys, monkeypatch):
    # before: a KeyboardInterrupt traceback
    def boom(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr("storygpt.evaluate.evaluate_bits", boom)
    assert bits.main([str(work["ckpt"]), "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and "bits.py: interrupted" in err


def test_pretrain_token_file_with_ids_outside_the_vocabulary(work, tmp_path):
    # before: "IndexError: index out of range in self" from the embedding, mid-training
    d = tmp_path / "corrupt"
    d.mkdir()
    for name in ("tokenizer-bpe-300.json", "train-bpe-300.bin", "valid-bpe-300.bin", "train.txt", "valid.txt"):
        (d / name).write_bytes((work["corpus"] / name).read_bytes())
    raw = bytearray((d / "train-bpe-300.bin").read_bytes())
    raw[-20:] = b"\xff" * 20  # uint16 ids 65535 at the last 10 positions
    (d / "train-bpe-300.bin").write_bytes(bytes(raw))
    n = (len(raw) - 64) // 2
    args = ["--data", str(d), *BPE, "--out-dir", str(tmp_path / "ck"), *TINY, "--max-steps", "1"]
    # the payload checksum (binfile format 2) catches the corruption first
    with pytest.raises(SystemExit, match=rf"^pretrain.py: error: {d}/train-bpe-300.bin: checksum mismatch"):
        pretrain.main(args)
    # ids written out of range with a matching checksum (a writer bug, not a flipped bit): the range check
    raw[56:60] = struct.pack("<I", zlib.crc32(bytes(raw[64:])))
    (d / "train-bpe-300.bin").write_bytes(bytes(raw))
    with pytest.raises(
        SystemExit,
        match=rf"^pretrain.py: error: {d}/train-bpe-300.bin: token id 65535 at position "
        rf"{n - 10:,} is outside the vocabulary \(vocab_size 300\)",
    ):
        pretrain.main(["--data", str(d), *BPE, "--out-dir", str(tmp_path / "ck"), *TINY, "--max-steps", "1"])


def test_pretrain_resume_after_the_corpus_folder_moved(work, tmp_path):
    # before: "--data <old place>: no such folder" even with --data naming the new place: the run was stuck
    old, new = tmp_path / "old" / "tiny", tmp_path / "new" / "tiny"
    old.mkdir(parents=True)
    for name in ("tokenizer-bpe-300.json", "train-bpe-300.bin", "valid-bpe-300.bin", "train.txt", "valid.txt"):
        (old / name).write_bytes((work["corpus"] / name).read_bytes())
    out = tmp_path / "ck"
    pretrain.main(["--data", str(old), *BPE, "--out-dir", str(out), *TINY, "--max-steps", "2"])
    new.parent.mkdir()
    old.rename(new)
    with pytest.raises(
        SystemExit,
        match=rf"^pretrain.py: error: --resume: the corpus folder {old} .* is gone; "
        "pass --data",
    ):
        pretrain.main([*BPE, "--run-dir", str(out / "tiny" / "learned-bpe-300"), *TINY, "--max-steps", "4", "--resume"])
    m = pretrain.main(["--data", str(new), *BPE, "--out-dir", str(out), *TINY, "--max-steps", "4", "--resume"])
    assert m["steps"] == 4
    ckpt = read_checkpoint(out / "tiny" / "learned-bpe-300" / "ckpt.pt")
    assert ckpt["data"] == "../../../new/tiny" and ckpt["data_abs"] == str(new.resolve())


def test_pretrain_errors_carry_the_tool_name(work):
    # before: "error: ..." without the tool's name
    with pytest.raises(SystemExit, match=r"^pretrain.py: error: .*already exists"):
        pretrain.main(["--data", str(work["corpus"]), *BPE, "--out-dir", str(work["root"] / "ck"), *TINY])


def test_pretrain_kill9_leftovers_removed_and_run_resumes(work, tmp_path):
    # a kill -9 during save_checkpoint leaves ".ckpt.pt.XXXX.tmp" beside the last whole ckpt.pt
    out = tmp_path / "ck"
    pretrain.main(["--data", str(work["corpus"]), *BPE, "--out-dir", str(out), *TINY, "--max-steps", "2"])
    run_dir = out / "tiny" / "learned-bpe-300"
    stale = run_dir / ".summary.json.abcd1234.tmp"
    stale.write_bytes(b"{")
    stale_new = run_dir / ".ckpt.pt.efgh5678.tmp"
    stale_new.write_bytes(b"PK\x03\x04 half a checkpoint")
    assert read_checkpoint(run_dir / "ckpt.pt")["state"]["step"] == 2  # the last good checkpoint is readable
    m = pretrain.main(
        ["--data", str(work["corpus"]), *BPE, "--out-dir", str(out), *TINY, "--max-steps", "4", "--resume"]
    )
    assert m["steps"] == 4 and read_checkpoint(run_dir / "ckpt.pt")["state"]["step"] == 4
    assert not stale.exists() and not stale_new.exists()  # before: left behind for ever


def test_pretrain_sigterm_writes_a_checkpoint_and_resumes(work, tmp_path):
    # before: SIGTERM (kill, timeout, preemption) ended the run at once: the steps since the last evaluation were lost
    import os
    import signal
    import subprocess
    import time

    out = tmp_path / "ck"
    ckpt = out / "tiny" / "learned-bpe-300" / "ckpt.pt"
    cmd = [
        sys.executable,
        str(REPO / "pretrain.py"),
        "--data",
        str(work["corpus"]),
        *BPE,
        "--out-dir",
        str(out),
        *TINY,
        "--eval-interval",
        "5",
        "--minutes",
        "2",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not ckpt.exists() and proc.poll() is None and time.time() < deadline:  # training has begun
            time.sleep(0.1)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted: checkpoint written at step" in rest
    step = read_checkpoint(out / "tiny" / "learned-bpe-300" / "ckpt.pt")["state"]["step"]
    assert step > 0
    m = pretrain.main(
        ["--data", str(work["corpus"]), *BPE, "--out-dir", str(out), *TINY, "--max-steps", str(step + 1), "--resume"]
    )
    assert m["steps"] == step + 1


def test_pretrain_resume_from_truncated_checkpoint_keeps_it(work, tmp_path):
    out = tmp_path / "ck"
    pretrain.main(["--data", str(work["corpus"]), *BPE, "--out-dir", str(out), *TINY, "--max-steps", "2"])
    ck = out / "tiny" / "learned-bpe-300" / "ckpt.pt"
    raw = ck.read_bytes()
    ck.write_bytes(raw[: len(raw) // 3])
    with pytest.raises(SystemExit, match=rf"^pretrain.py: error: --resume: {ck}: cannot read checkpoint"):
        pretrain.main(["--data", str(work["corpus"]), *BPE, "--out-dir", str(out), *TINY, "--resume"])
    assert ck.stat().st_size == len(raw) // 3 and (out / "tiny" / "learned-bpe-300" / "best.pt").is_file()


# ----------------------------------------------------------------------------- sample.py / bits.py
@pytest.mark.parametrize(
    "flag,value", [("--temperature", "nan"), ("--temperature", "inf"), ("--seed", str(2**70)), ("--device", "banana")]
)
def test_sample_bad_flags(work, capsys, flag, value):
    # before: tracebacks (multinomial on nan probabilities; seed overflow); for --device a misleading
    # "cannot read checkpoint (corrupt or truncated file?)"
    assert (
        sample.main(
            [str(work["ckpt"]), flag, value, "--max-new-tokens", "2", "--seed", "1"]
            if flag != "--seed"
            else [str(work["ckpt"]), flag, value, "--max-new-tokens", "2"]
        )
        == 2
    )
    msg = one_error_line(capsys.readouterr().err, "sample.py")
    assert flag in msg and "corrupt" not in msg


def test_bits_bad_device(work, capsys):
    # before: a RuntimeError traceback from model.to("banana")
    assert bits.main([str(work["ckpt"]), "--device", "banana", "--no-progress"]) == 2
    assert "--device 'banana'" in one_error_line(capsys.readouterr().err, "bits.py")


def test_bits_same_checkpoint_twice_is_measured_once(work, capsys):
    # before: AttributeError: 'NoneType' object has no attribute 'to'
    alias = work["ckpt"].parent / ".." / work["ckpt"].parent.name / "ckpt.pt"
    assert bits.main([str(work["ckpt"]), str(alias), "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["results"]) == 1 and out["results"][0]["bits_per_character"] > 0


@pytest.mark.parametrize("tool", [bits, sample])
def test_text_file_given_as_checkpoint(work, capsys, tool):
    # before: "cannot read checkpoint (corrupt or truncated file?): UnpicklingError: Weights only load
    # failed ... Re-running torch.load with weights_only set to False" (advice not to follow)
    assert tool.main([str(work["src"])]) == 2
    msg = one_error_line(capsys.readouterr().err, Path(tool.__file__).name)
    assert str(work["src"]) in msg and "not a checkpoint file" in msg and "weights_only" not in msg


# ------------------------------------------------------------------------------------------ Python API
def test_load_checkpoint_on_a_text_file(work):
    with pytest.raises(CheckpointError, match=r"not a checkpoint file"):
        load_checkpoint(work["src"])


def test_tokenizer_load_on_a_folder(work):
    # before: IsADirectoryError "[Errno 21] Is a directory"
    with pytest.raises(IsADirectoryError, match=rf"^{work['root']}: is a folder, not a tokenizer file"):
        load(work["root"])


@pytest.mark.parametrize(
    "vocab_size,exc,words",
    [
        (300.5, TypeError, "vocab_size must be an integer"),
        ("300", TypeError, "vocab_size must be an integer"),
        (10**30, ValueError, "too large"),
        ((1 << 26) + 1, ValueError, "too large"),
    ],
)
def test_bpe_train_vocab_size_type_and_range(vocab_size, exc, words):
    # before: pybind11 "incompatible function arguments" TypeError that quoted all the training text
    with pytest.raises(exc, match=words) as e:
        BPETokenizer.train("hello world " * 100, vocab_size)
    assert len(str(e.value)) < 200


def test_bpe_train_largest_vocab_size_is_accepted():
    tok = BPETokenizer.train("hello world", 1 << 26)  # ends early: few distinct pairs
    assert tok.decode(tok.encode("hello world")) == "hello world"


def test_word_train_vocab_size_must_be_an_integer():
    # before: "slice indices must be integers or None or have an __index__ method"
    with pytest.raises(TypeError, match=r"vocab_size must be an integer, got 10.5"):
        WordTokenizer.train(["hello world"], 10.5)
    assert WordTokenizer.train(["hello world"], np.int64(10)).vocab_size == 5


@pytest.mark.parametrize("bad", [1.5, 2.0, "3", True])
def test_word_decode_rejects_non_integer_ids(bad):
    # before: decode([1.5]) returned "<unk>" (int(1.5) == 1), where BPE raises ValueError
    tok = WordTokenizer.train(["hello world"], 10)
    with pytest.raises(ValueError, match="token id must be an integer"):
        tok.decode([bad])
    with pytest.raises(ValueError, match="token id must be an integer"):
        tok.id_to_token(bad)
    assert tok.decode(np.array([3, 4])) == tok.decode([3, 4])


def test_resolve_device():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") in ("cpu", "cuda", "mps")
    with pytest.raises(ValueError, match=r"--device 'banana': not a device name"):
        resolve_device("banana")
    with pytest.raises(ValueError, match=r"--device 'meta': unsupported device type"):
        resolve_device("meta")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"--device 'cuda': CUDA is not available"):
            resolve_device("cuda")


@pytest.mark.parametrize("kind", ["bpe", "word"])
@pytest.mark.parametrize("bad", [b"abc", None, 5])
def test_encode_non_text_is_a_type_error(work, kind, bad):
    # before: AttributeError: 'bytes' object has no attribute 'encode'
    tok = load(work["corpus"] / f"tokenizer-{ {'bpe': 'bpe-300', 'word': 'word-60'}[kind] }.json")
    for call in (tok.encode, tok.encode_ordinary, lambda x: tok.encode_batch(["ok", x])):
        with pytest.raises(TypeError, match=rf"text must be a str, got {type(bad).__name__}"):
            call(bad)


def test_bits_text_is_a_folder(work, capsys):
    # before: "--text file not found" for a folder that exists
    assert bits.main([str(work["ckpt"]), "--text", str(work["root"]), "--no-progress"]) == 2
    assert "is a folder" in one_error_line(capsys.readouterr().err, "bits.py")


@pytest.mark.parametrize("ids", [np.array([1.5, 2.0]), np.array(["a"]), [1.0, 2.0]])
def test_write_tokens_rejects_non_integer_ids(work, tmp_path, ids):
    # before: floats were truncated silently (1.5 -> 1); strings gave a numpy UFuncTypeError
    from storygpt.data import write_tokens

    tok = load(work["corpus"] / "tokenizer-bpe-300.json")
    target = tmp_path / "t.bin"
    with pytest.raises(ValueError, match=rf"^{target}: token ids must be integers"):
        write_tokens(target, ids, tok)
    assert list(tmp_path.iterdir()) == []  # no file, no temporary left behind


@pytest.mark.parametrize("kind", ["bpe", "word"])
def test_encode_batch_of_a_single_string(work, kind):
    # before: encode_batch("abc") encoded three one-character texts, silently
    tok = load(work["corpus"] / f"tokenizer-{ {'bpe': 'bpe-300', 'word': 'word-60'}[kind] }.json")
    for call in (tok.encode_batch, tok.encode_batch_numpy):
        with pytest.raises(TypeError, match="texts must be a list of str, got a single str"):
            call("abc")
    assert tok.encode_batch(["abc"]) == [tok.encode("abc")]


def test_load_checkpoint_bad_device_is_not_blamed_on_the_file(work):
    # before: CheckpointError "cannot read checkpoint (corrupt or truncated file?)" for device="banana"
    with pytest.raises(ValueError, match=r"^device 'banana': not a device name") as e:
        load_checkpoint(work["ckpt"], device="banana")
    assert not isinstance(e.value, CheckpointError)
    model, tok, _ = load_checkpoint(work["ckpt"], device="cpu")
    assert next(model.parameters()).device.type == "cpu" and tok.kind == "bpe"


@pytest.mark.parametrize("temperature", [float("nan"), float("inf"), -1.0])
def test_model_stream_temperature(work, temperature):
    # before: nan / inf reached torch.multinomial: "probability tensor contains either inf, nan or element < 0"
    model, _, _ = load_checkpoint(work["ckpt"])
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0"):
        list(model.stream(torch.zeros(1, 2, dtype=torch.long), 2, temperature=temperature))


# ---------------------------------------------------------------- checks that already held (kept as regressions)
def test_overlapping_special_tokens_longest_match_both_backends():
    text = "hello <|a|> world <|a"
    toks = [BPETokenizer.train(text, 300, special_tokens=["<|a", "<|a|>"], backend=b) for b in ("cpp", "reference")]
    for tok in toks:
        a, ab = tok.encode("<|a", "all"), tok.encode("<|a|>", "all")
        assert len(a) == len(ab) == 1 and a != ab
        assert tok.encode("x<|a|>y<|a", "all") == [tok.encode("x")[0], ab[0], tok.encode("y")[0], a[0]]
    assert toks[0].to_dict() == toks[1].to_dict()


@pytest.mark.parametrize("specials,words", [([""], "non-empty"), (["<|a|>", "<|a|>"], "given twice")])
def test_bad_special_tokens(specials, words):
    with pytest.raises(ValueError, match=words):
        BPETokenizer.train("hello world", 300, special_tokens=specials)


def test_read_tokens_with_the_other_kinds_tokenizer(work):
    from storygpt.data import read_tokens

    word = load(work["corpus"] / "tokenizer-word-60.json")
    with pytest.raises(ValueError, match=rf"^{work['corpus']}/train-bpe-300.bin: written by another tokenizer"):
        read_tokens(work["corpus"] / "train-bpe-300.bin", word)


def test_cpp_train_missing_file_names_it(tmp_path):
    from storygpt import _bpe

    with pytest.raises(FileNotFoundError, match="nope.txt"):
        _bpe.train(files=[str(tmp_path / "nope.txt")], vocab_size=300)
    with pytest.raises(FileNotFoundError, match=r"training file not found: .*nope.txt"):
        BPETokenizer.train([tmp_path / "nope.txt"], 300)


@pytest.mark.parametrize(
    "edit,words",
    [
        (lambda d: d["merges"][0].__setitem__(2, 5), r"merge 0: token 5 = b'\\x05' is not"),  # new id = a byte's id
        (lambda d: d["merges"][1].__setitem__(2, d["merges"][0][2]), "merge 1: token"),  # two merges, one id
        (lambda d: d["merges"].__setitem__(0, [297, 296, 256]), "merge 0"),  # refers to later ids
    ],
)
def test_tokenizer_file_with_malformed_merges(work, tmp_path, edit, words):
    # the C++ Encoder itself accepts the first two (reported); the Python layer checks every merge's bytes
    d = json.loads((work["corpus"] / "tokenizer-bpe-300.json").read_text(encoding="utf-8"))
    edit(d)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{f}: malformed bpe tokenizer: {words}"):
        load(f)


def test_write_tokens_to_a_folder_or_failing_rename_leaves_no_temporary(work, tmp_path, monkeypatch):
    # before: os.replace failed inside close() and the "NAME.XXXX.tmp" file stayed beside the destination
    from storygpt.data import binfile, write_tokens

    tok = load(work["corpus"] / "tokenizer-bpe-300.json")
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


# --- the C++ Encoder and the reference refuse the same malformed merges --------------------
@pytest.mark.parametrize("backend", ["cpp", "reference"])
def test_encoder_refuses_a_merge_that_redefines_an_id(backend):
    from storygpt import _bpe
    from storygpt.tokenizers import bpe_reference

    Enc = _bpe.Encoder if backend == "cpp" else bpe_reference.Encoder
    with pytest.raises(ValueError, match=r"merge 0 \(97, 98\) -> 5 makes an id that already stands for other bytes"):
        Enc([(97, 98, 5)])
    with pytest.raises(ValueError, match=r"merge 1 \(99, 100\) -> 256"):
        Enc([(97, 98, 256), (99, 100, 256)])
    # several merges may make the same token (rank files): allowed
    enc = Enc([(97, 98, 256), (256, 99, 257), (97, 98, 256)])
    assert list(enc.encode(b"abc")) == [257]


@pytest.mark.parametrize("backend", ["cpp", "reference"])
def test_encoder_ranks_must_match_merges(backend):
    from storygpt import _bpe
    from storygpt.tokenizers import bpe_reference

    Enc = _bpe.Encoder if backend == "cpp" else bpe_reference.Encoder
    with pytest.raises(ValueError, match="ranks has 0 entries for 1 merges"):
        Enc([(97, 98, 256)], ranks=[])
    with pytest.raises(ValueError, match="byte_ids must hold 256 distinct ids"):
        Enc([], byte_ids=list(range(255)))
