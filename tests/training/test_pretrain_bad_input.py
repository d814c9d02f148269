"""pretrain.py on bad input: one-line errors naming the flag, file or value.

They use ``tiny_run`` (tests/conftest.py): a corpus data.py prepared and a 2-step run on it; each
comment says what happened before the fix.  pretrain.py's main runs in the test's process (conftest.call_tool),
but for test_pretrain_refuses_bad_seed_and_learning_rates: real processes, the command line end to end."""

from __future__ import annotations

import re
import struct
import zlib

import pytest
import torch
from conftest import BPE300, TINY_MODEL, call_tool, one_error_line, run_tools, tiny_argv
from pretrain_runs import (
    assert_error,
    dry_run,
    refused,
    trained,
)

from storygpt import runtime

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


# ------------------------------------------------------------ bad input (one-line errors)
def run_pretrain(tiny_run, *extra):
    """``python pretrain.py`` on ``tiny_run``'s corpus into ROOT/ck2 with ``extra``: the finished process (its
    main run in this process, conftest.call_tool)."""
    return call_tool(
        "pretrain", "--data", tiny_run["corpus"], "--out-dir", tiny_run["root"] / "ck2", *TINY_MODEL, *extra
    )


def pretrain_runs(tiny_run, argvs):
    """:func:`run_pretrain` for each argument list: the finished processes."""
    return [run_pretrain(tiny_run, *argv) for argv in argvs]


def test_pretrain_non_finite_floats(tiny_run):
    # before: tracebacks from torch.optim (lr nan) or tqdm (minutes nan/inf)
    cases = [("--lr", "nan"), ("--minutes", "nan"), ("--minutes", "inf"), ("--min-lr", "inf"), ("--grad-clip", "nan")]
    argvs = [[*BPE300, flag, value, "--max-steps", "1"] for flag, value in cases]
    for (flag, _), done in zip(cases, pretrain_runs(tiny_run, argvs)):
        assert done.returncode == 2
        msg = one_error_line(done.stderr, "pretrain.py")
        assert flag in msg and "finite" in msg


@pytest.mark.parametrize(
    "flag,value,words",
    [("--rope-theta", "0", "--rope-theta must be > 0"), ("--dropout", "1", "--dropout must be below 1")],
)
def test_pretrain_model_flags_refused_as_usage_errors(tiny_run, flag, value, words):
    # before: exit 1 after the data was read, 'GPTConfig.rope_theta must be positive ... (check --n-layer/...)'
    done = run_pretrain(tiny_run, *BPE300, flag, value, "--max-steps", "1", "--run-name", "refused")
    assert done.returncode == 2, done.stderr
    assert words in one_error_line(done.stderr, "pretrain.py")
    assert not (tiny_run["root"] / "ck2" / "tiny" / "refused").exists()


@pytest.mark.parametrize(
    "device,words", [("banana", "not a device name"), ("cuda:99", r"(CUDA is not available|only \d+ CUDA)")]
)
def test_pretrain_bad_device(tiny_run, device, words):
    # before: RuntimeError / AttributeError tracebacks from torch
    if device.startswith("cuda") and torch.cuda.is_available() and torch.cuda.device_count() > 99:
        pytest.skip("a machine with 100 GPUs")
    done = run_pretrain(tiny_run, *BPE300, "--device", device, "--max-steps", "1")
    assert done.returncode != 0
    assert_error(rf"^pretrain.py: error: --device '{device}'.*{words}", done.stderr)


def test_pretrain_run_name_must_be_a_plain_name(tiny_run):
    # before: --run-name ../../etc wrote checkpoints outside --out-dir
    names = ["../escape", "a/b", "..", ""]
    for done in pretrain_runs(tiny_run, [[*BPE300, "--run-name", name, "--max-steps", "1"] for name in names]):
        assert done.returncode != 0
        assert_error(r"^pretrain.py: error: --run-name .*plain folder name", done.stderr)
    assert not (tiny_run["root"] / "escape").exists()


def test_pretrain_data_folder_missing_or_a_file(tiny_run):
    # before: "<file>/tokenizer-bpe.json not found" for a --data that is not a folder at all
    for bad, what in ((tiny_run["root"] / "nope", "no such folder"), (tiny_run["corpus"] / "train.txt", "is a file")):
        assert_error(rf"^pretrain.py: error: --data {bad}: {what}", refused(*tiny_argv(bad, tiny_run["root"] / "ck2")))


@pytest.mark.parametrize(
    "argv, command",
    [
        ([], "python data.py --tokenizer word:10000"),
        (["--bpe"], "python data.py --bpe"),
        (["--tokenizer", "bpe:512"], "python data.py --tokenizer bpe:512"),
        (["--data", "data/tinystories", "--tokenizer", "byte"], "python data.py --corpus tinystories --tokenizer byte"),
        (["--data", "corpora/mine", "--bpe"], "python data.py --train-file FILE --name mine --out corpora --bpe"),
    ],
)
def test_pretrain_before_data_says_which_data_command_to_run(tmp_path, argv, command):
    # before: "--data data/shakespeare: no such folder (give the corpus folder data.py wrote, e.g.
    # data/shakespeare)", the missing folder itself; and an empty checkpoints/shakespeare/ was left behind
    err = refused(*argv, "--minutes", "1", cwd=tmp_path)
    data = argv[argv.index("--data") + 1] if "--data" in argv else "data/shakespeare"
    assert_error(rf"^pretrain.py: error: --data {data}: no such folder; run `{re.escape(command)}` first", err)
    assert list(tmp_path.iterdir()) == []


def test_a_refused_run_leaves_no_empty_run_folders(tiny_run, tmp_path):
    # before: the run folder was removed but not checkpoints/CORPUS/ made for it
    out = tmp_path / "checkpoints"
    refused(*tiny_argv(tiny_run["corpus"], out, "--n-head", "5", "--max-steps", "1"))
    assert not out.exists()
    (out / "keep").mkdir(parents=True)
    refused(*tiny_argv(tiny_run["corpus"], out, "--n-head", "5", "--max-steps", "1"))
    assert [p.name for p in out.iterdir()] == ["keep"]


def test_pretrain_folder_with_only_word_files_suggests_dropping_bpe(tiny_run, tmp_path):
    # before: only "run data.py --bpe", not that the folder holds the word-level files
    d = tmp_path / "wordonly"
    d.mkdir()
    word = tiny_run["word"]  # word-41: data.py --vocab-size 60 on a text of 41 distinct words and specials
    for name in (f"tokenizer-{word}.json", f"train-{word}.bin", f"valid-{word}.bin"):
        (d / name).write_bytes((tiny_run["corpus"] / name).read_bytes())
    err = refused(*tiny_argv(d, tmp_path / "ck"))
    assert_error(rf"tokenizer-bpe-300.json not found; .* holds the token files of: {word} \(pass --tokenizer", err)


@pytest.mark.parametrize("sub", ["", "a/b"])
def test_pretrain_out_dir_under_a_file(tiny_run, sub):
    # before: NotADirectoryError traceback from mkdir, after the data was loaded and the model built
    bad = tiny_run["src"] / sub if sub else tiny_run["src"]
    err = refused(*tiny_argv(tiny_run["corpus"], bad, "--max-steps", "1"))
    assert_error(rf"^pretrain.py: error: cannot create the run folder {bad}/.*: {tiny_run['src']} is a file", err)


def test_pretrain_negative_weight_decay(tiny_run):
    # before: accepted (AdamW with weight decay -1 pushes the weights away from zero)
    done = run_pretrain(tiny_run, *BPE300, "--weight-decay", "-1", "--max-steps", "1")
    assert done.returncode != 0
    assert "--weight-decay must be >= 0" in one_error_line(done.stderr, "pretrain.py")


def test_pretrain_too_many_threads_are_capped(tiny_run, tmp_path):
    # before: --threads 100000 killed the process with a segfault (OpenMP could not start the threads)
    m = trained(*tiny_argv(tiny_run["corpus"], tmp_path, "--max-steps", "1", "--threads", "100000"))
    assert m["steps"] == 1
    cores = runtime.usable_cores()  # the process ran on this many threads
    assert f"--threads 100000 is more than the {cores} cores this process may use; using {cores}" in m["stdout"]


def test_pretrain_token_file_with_ids_outside_the_vocabulary(tiny_run, tmp_path):
    # before: "IndexError: index out of range in self" from the embedding, mid-training
    d = tmp_path / "corrupt"
    d.mkdir()
    for name in ("tokenizer-bpe-300.json", "train-bpe-300.bin", "valid-bpe-300.bin", "train.txt", "valid.txt"):
        (d / name).write_bytes((tiny_run["corpus"] / name).read_bytes())
    raw = bytearray((d / "train-bpe-300.bin").read_bytes())
    raw[-20:] = b"\xff" * 20  # uint16 ids 65535 at the last 10 positions
    (d / "train-bpe-300.bin").write_bytes(bytes(raw))
    n = (len(raw) - 64) // 2
    argv = tiny_argv(d, tmp_path / "ck", "--max-steps", "1")
    # the payload checksum (binfile format 2) catches the corruption first
    assert_error(rf"^pretrain.py: error: {d}/train-bpe-300.bin: checksum mismatch", refused(*argv))
    # ids written out of range with a matching checksum (a writer bug, not a flipped bit): the range check
    raw[56:60] = struct.pack("<I", zlib.crc32(bytes(raw[64:])))
    (d / "train-bpe-300.bin").write_bytes(bytes(raw))
    assert_error(
        rf"^pretrain.py: error: {d}/train-bpe-300.bin: token id 65535 at position "
        rf"{n - 10:,} is outside the vocabulary \(vocab_size 300\)",
        refused(*argv),
    )


def test_pretrain_refuses_bad_seed_and_learning_rates():
    # before: numpy's and torch's tracebacks for the seeds; a schedule that rose at the end for --min-lr
    cases = [
        (["--seed", "-1"], "--seed must be in 0 .. 9223372036854775807, got -1"),
        (["--seed", str(10**23)], f"--seed must be in 0 .. 9223372036854775807, got {10**23}"),
        (["--recipe", "gpt2", "--min-lr", "1"], "--min-lr 1.0 is above --lr 0.003 (the peak learning rate)"),
    ]
    for (argv, message), done in zip(cases, run_tools("pretrain", [c[0] for c in cases])):
        assert done.returncode != 0
        assert done.stderr.strip().splitlines()[-1] == f"pretrain.py: error: {message}", argv


def test_a_low_lr_lowers_the_default_min_lr():
    assert dry_run("--recipe", "gpt2", "--lr", "1e-4")["min_lr"] == 1e-4
    args = dry_run()
    assert (args["lr"], args["min_lr"], args["minutes"]) == (3e-3, 3e-4, 10.0)
    assert (args["recipe"], args["optimizer"], args["norm"]) == ("modern", "muon", "rmsnorm")  # the default
    assert dry_run("--max-steps", "5")["minutes"] is None


def test_pretrain_errors_carry_the_tool_name(tiny_run):
    # before: "error: ..." without the tool's name
    assert_error(
        r"^pretrain.py: error: .*already exists", refused(*tiny_argv(tiny_run["corpus"], tiny_run["root"] / "ck"))
    )
