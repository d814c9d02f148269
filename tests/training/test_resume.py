"""Exact resume: a run stopped at any point and resumed equals one never stopped, bit for bit.

Interrupts are injected with the ``signal_at`` fault of tests/tool_faults.py: the process sends
itself SIGINT/SIGTERM/SIGKILL during a step, during an evaluation or while ckpt.pt is written.
Also: the lock file, a full disk, a malformed stored tokenizer, budgets in FLOPs under load, and (on
``tiny_run``, tests/conftest.py) SIGTERM from outside, kill -9 leftovers, a truncated checkpoint, a moved corpus.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from conftest import BPE300, REPO, TINY_MODEL, one_error_line, run_tool, tiny_argv
from pretrain_runs import TINY_FLAGS, assert_error, make_corpus, refused, trained

from storygpt.checkpoint import read_checkpoint

FLAGS = [*TINY_FLAGS, "--dropout", "0.1", "--max-steps", "12", "--eval-interval", "4"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("resume"))


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """The uninterrupted run."""
    out = tmp_path_factory.mktemp("ref")
    train(corpus, out)
    return out


def train_process(corpus, run_dir, *extra, hook=None, fault=None):
    """``python pretrain.py`` on ``corpus`` into ``run_dir`` with :data:`FLAGS` and ``extra``, the interrupt
    ``hook`` (tests/tool_faults.py ``signal_at:HOOK``) or another ``fault`` of tests/tool_faults.py: the
    finished process."""
    if hook is not None:
        fault = f"signal_at:{hook}"
    return run_tool("pretrain", "--data", corpus, "--run-dir", run_dir, *FLAGS, *extra, fault=fault)


def train(corpus, run_dir, *extra) -> dict:
    """:func:`train_process`, which must succeed: the run's summary.json (pretrain_runs.trained)."""
    return trained("--data", corpus, "--run-dir", run_dir, *FLAGS, *extra)


#: Fields of a metrics row measured by the clock, not by the computation.
TIMED = ("elapsed", "tokens_per_sec", "flops_per_sec")


def without_elapsed(rows):
    return [{k: v for k, v in r.items() if k not in TIMED} for r in rows]


def assert_identical(a: Path, b: Path):
    """Weights, optimizer state, history and metrics.jsonl rows of two runs, bit for bit (times aside)."""
    ca = torch.load(a / "ckpt.pt", weights_only=True)
    cb = torch.load(b / "ckpt.pt", weights_only=True)
    assert ca["model"].keys() == cb["model"].keys()
    for k in ca["model"]:
        assert torch.equal(ca["model"][k], cb["model"][k]), k
    oa, ob = ca["optimizer"]["state"], cb["optimizer"]["state"]
    assert oa.keys() == ob.keys()
    for i in oa:
        for k in oa[i]:
            assert torch.equal(oa[i][k], ob[i][k]), (i, k)
    assert without_elapsed(ca["state"]["history"]) == without_elapsed(cb["state"]["history"])
    for k in ("step", "tokens", "chars", "flops", "best_bpc", "stop_reason"):
        assert ca["state"][k] == cb["state"][k], k
    ra = [json.loads(x) for x in (a / "metrics.jsonl").read_text().splitlines()]
    rb = [json.loads(x) for x in (b / "metrics.jsonl").read_text().splitlines()]
    assert without_elapsed(ra) == without_elapsed(rb)
    assert len(ra) == 12 + 3  # 12 steps, 3 evaluations: no duplicates


@pytest.mark.parametrize(
    "hooks",
    [
        ["step@6:TERM"],  # mid-step, between evaluations (before: the batch RNG was one draw ahead)
        ["step@3:INT", "step@9:INT"],  # Ctrl-C twice in one run's life
        ["eval@8:TERM"],  # during an evaluation (before: that evaluation was lost)
        ["save@4:TERM2"],  # two SIGTERMs while ckpt.pt is written (before: a traceback, no checkpoint)
        ["step@6:TERM,exit@6:TERM"],  # a second SIGTERM on the way out (before: killed, exit -15)
    ],
)
def test_interrupted_and_resumed_equals_uninterrupted(corpus, reference, tmp_path, hooks):
    run_dir = tmp_path / "run"
    for i, hook in enumerate(hooks):
        done = train_process(corpus, run_dir, *(["--resume"] if i else []), hook=hook)
        assert done.returncode == 130, done.stderr
        assert "interrupted: checkpoint written at step" in done.stdout
        assert not (run_dir / "lock").exists()
    step = int(hooks[-1].split("@")[1].split(":")[0])
    assert torch.load(run_dir / "ckpt.pt", weights_only=True)["state"]["step"] == step
    train(corpus, run_dir, "--resume")
    assert_identical(reference, run_dir)


def test_sigkill_anywhere_then_resume_equals_uninterrupted(corpus, reference, tmp_path):
    """kill -9 while ckpt.pt of step 8 is being written: the step-4 checkpoint is kept, the stale lock and
    metrics rows past step 4 are dropped on resume."""
    run_dir = tmp_path / "run"
    p = train_process(corpus, run_dir, hook="save@8:KILL")
    assert p.returncode == -9, p.stderr[-2000:]
    assert (run_dir / "lock").exists() and list(run_dir.glob(".ckpt.pt.*.tmp"))
    assert torch.load(run_dir / "ckpt.pt", weights_only=True)["state"]["step"] == 4
    rows = (run_dir / "metrics.jsonl").read_text().splitlines()
    last = json.loads(rows[-1])
    assert (last["kind"], last["step"]) == ("eval", 8)  # rows past the checkpoint, dropped on resume
    train(corpus, run_dir, "--resume")
    assert_identical(reference, run_dir)
    assert not list(run_dir.glob(".*.tmp")) and not (run_dir / "lock").exists()


def test_lock_refuses_a_second_writer_and_recovers_from_a_stale_one(corpus, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (run_dir / "lock").write_text(f"{holder.pid} {os.uname().nodename}\n")
        assert_error(
            rf"^pretrain.py: error: .*run is being written by process {holder.pid}",
            refused("--data", corpus, "--run-dir", run_dir, *FLAGS),
        )
    finally:
        holder.kill()
        holder.wait()
    assert not (run_dir / "ckpt.pt").exists()
    # the holder is dead now: its lock is stale and taken over
    assert train(corpus, run_dir, "--max-steps", "2")["steps"] == 2
    assert not (run_dir / "lock").exists()


def test_read_only_run_folder_is_one_error(corpus, tmp_path):
    # before: a PermissionError traceback from acquire_lock (the tests run as root, so the folder's
    # mode cannot refuse the write: os.open refuses it instead, tests/tool_faults.py)
    done = train_process(corpus, tmp_path / "run", "--max-steps", "2", fault="read_only_lock")
    assert done.returncode != 0
    assert_error(
        r"^pretrain.py: error: cannot write in the run folder .*run \(lock file .*lock\): Permission denied$",
        done.stderr,
    )


def test_full_disk_keeps_the_previous_checkpoint(corpus, tmp_path):
    run_dir = tmp_path / "run"
    done = train_process(corpus, run_dir, fault="full_disk_at_step:8")  # tests/tool_faults.py
    assert done.returncode != 0
    msg = one_error_line(done.stderr, "pretrain.py")
    assert msg.startswith("pretrain.py: error: cannot write ") and "ckpt.pt: No space left on device" in msg
    assert msg.endswith("the previous checkpoint is kept") and "\n" not in msg
    assert torch.load(run_dir / "ckpt.pt", weights_only=True)["state"]["step"] == 4
    assert not list(run_dir.glob(".*.tmp")) and not (run_dir / "lock").exists()


def test_malformed_stored_tokenizer_on_resume(corpus, tmp_path):
    from storygpt.checkpoint import save_checkpoint

    run_dir = tmp_path / "run"
    train(corpus, run_dir, "--max-steps", "2")
    ckpt = read_checkpoint(run_dir / "ckpt.pt")
    ckpt["tokenizer"] = {**ckpt["tokenizer"], "kind": "nonsense"}
    save_checkpoint(run_dir / "ckpt.pt", ckpt)
    before = (run_dir / "ckpt.pt").read_bytes()
    done = train_process(corpus, run_dir, "--resume")
    assert done.returncode != 0
    msg = one_error_line(done.stderr, "pretrain.py")
    assert msg.startswith(f"pretrain.py: error: --resume: {run_dir / 'ckpt.pt'}: bad tokenizer stored in it")
    assert msg.endswith("the checkpoint is kept unchanged") and "\n" not in msg
    assert (run_dir / "ckpt.pt").read_bytes() == before


def test_equal_flops_budgets_give_identical_metrics_under_load(corpus, tmp_path):
    """The budget is counted in FLOPs, not time: a busy machine changes nothing but the times."""
    flags = ["--max-steps", "1000", "--budget-flops", "9e7", "--eval-interval", "5"]  # about 9 steps
    quiet = train(corpus, tmp_path / "a", *flags)
    stop = threading.Event()

    def burn():  # another process's worth of load on this machine
        x = torch.randn(256, 256, generator=torch.Generator().manual_seed(0))  # not the global RNG the run seeds
        while not stop.is_set():
            x = (x @ x).tanh()

    burners = [threading.Thread(target=burn) for _ in range(2)]
    for b in burners:
        b.start()
    try:
        busy = train(corpus, tmp_path / "b", *flags)
    finally:
        stop.set()
        for b in burners:
            b.join()
    assert quiet["stop_reason"] == busy["stop_reason"] == "flops"
    assert quiet["steps"] == busy["steps"] and quiet["flops"] == busy["flops"] >= 9e7
    a = [json.loads(x) for x in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert without_elapsed(a) == without_elapsed(b) and len(a) > quiet["steps"]


def test_pretrain_resume_after_the_corpus_folder_moved(tiny_run, tmp_path):
    # before: "--data <old place>: no such folder" even with --data naming the new place: the run was stuck
    old, new = tmp_path / "old" / "tiny", tmp_path / "new" / "tiny"
    old.mkdir(parents=True)
    for name in ("tokenizer-bpe-300.json", "train-bpe-300.bin", "valid-bpe-300.bin", "train.txt", "valid.txt"):
        (old / name).write_bytes((tiny_run["corpus"] / name).read_bytes())
    out = tmp_path / "ck"
    trained(*tiny_argv(old, out, "--max-steps", "2"))
    new.parent.mkdir()
    old.rename(new)
    err = refused(*BPE300, "--run-dir", out / "tiny" / "learned-bpe-300", *TINY_MODEL, "--max-steps", "4", "--resume")
    assert_error(rf"^pretrain.py: error: --resume: the corpus folder {old} .* is gone; pass --data", err)
    m = trained(*tiny_argv(new, out, "--max-steps", "4", "--resume"))
    assert m["steps"] == 4
    ckpt = read_checkpoint(out / "tiny" / "learned-bpe-300" / "ckpt.pt")
    assert ckpt["data"] == "../../../new/tiny" and ckpt["data_abs"] == str(new.resolve())


def test_pretrain_kill9_leftovers_removed_and_run_resumes(tiny_run, tmp_path):
    # a kill -9 during save_checkpoint leaves ".ckpt.pt.XXXX.tmp" beside the last whole ckpt.pt
    out = tmp_path / "ck"
    trained(*tiny_argv(tiny_run["corpus"], out, "--max-steps", "2"))
    run_dir = out / "tiny" / "learned-bpe-300"
    stale = run_dir / ".summary.json.abcd1234.tmp"
    stale.write_bytes(b"{")
    stale_new = run_dir / ".ckpt.pt.efgh5678.tmp"
    stale_new.write_bytes(b"PK\x03\x04 half a checkpoint")
    assert read_checkpoint(run_dir / "ckpt.pt")["state"]["step"] == 2  # the last good checkpoint is readable
    m = trained(*tiny_argv(tiny_run["corpus"], out, "--max-steps", "4", "--resume"))
    assert m["steps"] == 4 and read_checkpoint(run_dir / "ckpt.pt")["state"]["step"] == 4
    assert not stale.exists() and not stale_new.exists()  # before: left behind for ever


def test_pretrain_sigterm_writes_a_checkpoint_and_resumes(tiny_run, tmp_path):
    # before: SIGTERM (kill, timeout, preemption) ended the run at once: the steps since the last evaluation were lost
    out = tmp_path / "ck"
    ckpt = out / "tiny" / "learned-bpe-300" / "ckpt.pt"
    cmd = [sys.executable, str(REPO / "pretrain.py"), *tiny_argv(tiny_run["corpus"], out, "--eval-interval", "5")]
    cmd += ["--minutes", "2"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
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
    m = trained(*tiny_argv(tiny_run["corpus"], out, "--max-steps", str(step + 1), "--resume"))
    assert m["steps"] == step + 1


def test_pretrain_resume_from_truncated_checkpoint_keeps_it(tiny_run, tmp_path):
    out = tmp_path / "ck"
    trained(*tiny_argv(tiny_run["corpus"], out, "--max-steps", "2"))
    ck = out / "tiny" / "learned-bpe-300" / "ckpt.pt"
    raw = ck.read_bytes()
    ck.write_bytes(raw[: len(raw) // 3])
    err = refused(*tiny_argv(tiny_run["corpus"], out, "--resume"))
    assert_error(rf"^pretrain.py: error: --resume: {ck}: cannot read checkpoint", err)
    assert ck.stat().st_size == len(raw) // 3 and (out / "tiny" / "learned-bpe-300" / "best.pt").is_file()
