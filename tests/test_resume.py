"""Exact resume: a run stopped at any point and resumed equals one never stopped, bit for bit.

Interrupts are injected with STORYGPT_TEST_HOOK (storygpt.train.InterruptHooks): the process sends
itself SIGINT/SIGTERM/SIGKILL mid-step, during an evaluation or while ckpt.pt is written.
Also: the lock file, a full disk, a malformed stored tokenizer, budgets in FLOPs under load.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from test_pretrain import REPO, TINY_FLAGS, make_corpus

import pretrain  # noqa: E402  (test_pretrain put the repository on sys.path)
from storygpt import train as T  # noqa: E402
from storygpt.atomic import atomic_write  # noqa: E402

FLAGS = [*TINY_FLAGS, "--dropout", "0.1", "--max-steps", "12", "--eval-interval", "4"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("resume"))


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """The uninterrupted run."""
    out = tmp_path_factory.mktemp("ref")
    pretrain.main(["--data", str(corpus), "--run-dir", str(out), *FLAGS])
    return out


def train(corpus, run_dir, *extra, hook=None, monkeypatch=None):
    if hook is not None:
        monkeypatch.setenv("STORYGPT_TEST_HOOK", hook)
    try:
        return pretrain.main(["--data", str(corpus), "--run-dir", str(run_dir), *FLAGS, *extra])
    finally:
        if monkeypatch is not None:
            monkeypatch.delenv("STORYGPT_TEST_HOOK", raising=False)


def without_elapsed(rows):
    return [{k: v for k, v in r.items() if k != "elapsed"} for r in rows]


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
    ],
)
def test_interrupted_and_resumed_equals_uninterrupted(corpus, reference, tmp_path, monkeypatch, hooks):
    run_dir = tmp_path / "run"
    for i, hook in enumerate(hooks):
        with pytest.raises(SystemExit) as e:
            train(corpus, run_dir, *(["--resume"] if i else []), hook=hook, monkeypatch=monkeypatch)
        assert e.value.code == 130
        assert not (run_dir / "lock").exists()
    step = int(hooks[-1].split("@")[1].split(":")[0])
    assert torch.load(run_dir / "ckpt.pt", weights_only=True)["state"]["step"] == step
    train(corpus, run_dir, "--resume")
    assert_identical(reference, run_dir)


def test_sigkill_anywhere_then_resume_equals_uninterrupted(corpus, reference, tmp_path):
    """kill -9 while ckpt.pt of step 8 is being written: the step-4 checkpoint is kept, the stale lock and
    metrics rows past step 4 are dropped on resume."""
    run_dir = tmp_path / "run"
    cmd = [sys.executable, str(REPO / "pretrain.py"), "--data", str(corpus), "--run-dir", str(run_dir), *FLAGS]
    env = {**os.environ, "STORYGPT_TEST_HOOK": "save@8:KILL", "OMP_NUM_THREADS": "1"}
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
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
        with pytest.raises(SystemExit, match=rf"^pretrain.py: error: .*run is being written by process {holder.pid}"):
            train(corpus, run_dir)
    finally:
        holder.kill()
        holder.wait()
    assert not (run_dir / "ckpt.pt").exists()
    # the holder is dead now: its lock is stale and taken over
    assert train(corpus, run_dir, "--max-steps", "2")["steps"] == 2
    assert not (run_dir / "lock").exists()


def test_full_disk_keeps_the_previous_checkpoint(corpus, tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "run"
    real = T.save_checkpoint

    def full_disk_at_step_8(path, ckpt, during_write=None):
        if ckpt.get("state", {}).get("step") == 8:
            with atomic_write(path, "wb") as f:
                f.write(b"PK\x03\x04 part of it")
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, ckpt, during_write)

    monkeypatch.setattr(T, "save_checkpoint", full_disk_at_step_8)
    with pytest.raises(SystemExit) as e:
        train(corpus, run_dir)
    msg = str(e.value.code)
    assert msg.startswith("pretrain.py: error: cannot write ") and "ckpt.pt: No space left on device" in msg
    assert msg.endswith("the previous checkpoint is kept") and "\n" not in msg
    assert torch.load(run_dir / "ckpt.pt", weights_only=True)["state"]["step"] == 4
    assert not list(run_dir.glob(".*.tmp")) and not (run_dir / "lock").exists()


def test_malformed_stored_tokenizer_on_resume(corpus, tmp_path):
    from storygpt.checkpoint import read_checkpoint, save_checkpoint

    run_dir = tmp_path / "run"
    train(corpus, run_dir, "--max-steps", "2")
    ckpt = read_checkpoint(run_dir / "ckpt.pt")
    ckpt["tokenizer"] = {**ckpt["tokenizer"], "kind": "nonsense"}
    save_checkpoint(run_dir / "ckpt.pt", ckpt)
    before = (run_dir / "ckpt.pt").read_bytes()
    with pytest.raises(SystemExit) as e:
        train(corpus, run_dir, "--resume")
    msg = str(e.value.code)
    assert msg.startswith(f"pretrain.py: error: --resume: {run_dir / 'ckpt.pt'}: bad tokenizer stored in it")
    assert msg.endswith("the checkpoint is kept unchanged") and "\n" not in msg
    assert (run_dir / "ckpt.pt").read_bytes() == before


def test_equal_flops_budgets_give_identical_metrics_under_load(corpus, tmp_path):
    """The budget is counted in FLOPs, not time: a busy machine changes nothing but the times."""
    flags = ["--max-steps", "1000", "--budget-flops", "9e7", "--eval-interval", "5"]  # about 9 steps
    quiet = train(corpus, tmp_path / "a", *flags)
    stop = threading.Event()

    def burn():  # another process's worth of load on this machine
        x = torch.randn(256, 256)
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
