"""The engines of compare.py --jobs / --executor (storygpt.compare.executors) with stand-in jobs: runs at once,
killed runs retried, failed runs named with their log while the rest go on, the slots --jobs makes, and the
one-line refusals (an unreachable Ray address, a Slurm setting submitit rejects).  The real runs through
every engine: tests/compare/test_compare_scale.py."""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

import pytest

from storygpt.compare import executors
from storygpt.compare.executors import Job, LocalEngine, RunFailed, RunKilled, Slot, execute, local_slots


def test_jobs_run_at_once_on_their_slots():
    barrier = threading.Barrier(3, timeout=20)  # passes only when three jobs run at the same time
    seen = []

    def call(slot):
        seen.append(slot)
        barrier.wait()
        return slot.threads

    slots = [Slot(1, None), Slot(1, None), Slot(1, None)]
    jobs = [Job(f"run{i}", Path(f"run{i}.log"), call) for i in range(3)]
    outcomes = execute(LocalEngine(slots), jobs, retries=0, say=print)
    assert sorted(o.job.label for o in outcomes) == ["run0", "run1", "run2"]
    assert all(o.ok and o.result == 1 and o.attempts == 1 for o in outcomes) and len(seen) == 3


def test_ctrl_c_stops_every_running_tool(monkeypatch):
    """A KeyboardInterrupt while jobs run at once sends SIGINT to every tool running (toolrun.stop_all), then
    raises it (the import inside LocalEngine.stop was wrong: the interrupt was an ImportError)."""
    from storygpt.compare import toolrun

    stopped, started = [], threading.Event()
    monkeypatch.setattr(toolrun, "stop_all", lambda signum=2: stopped.append(signum))

    def call(slot):
        started.set()
        return 0

    def interrupted(*a, **k):
        started.wait(5)
        raise KeyboardInterrupt

    engine = LocalEngine([Slot(1, None)])
    monkeypatch.setattr(engine, "next_done", interrupted)
    with pytest.raises(KeyboardInterrupt):
        execute(engine, [Job("run0", Path("run0.log"), call)], retries=0, say=print)
    assert stopped == [2]


def _raise(e: Exception):
    raise e


def test_a_killed_run_is_retried_and_a_failed_run_is_named_while_the_rest_go_on():
    tries = {"killed": 0}
    said = []

    def killed_once(slot):
        tries["killed"] += 1
        if tries["killed"] == 1:
            raise RunKilled("pretrain.py stopped by SIGTERM (exit 130)")
        return "resumed"

    def fails(slot):
        raise RunFailed("pretrain.py failed for bpe:512 (exit 1): boom")

    def always_killed(slot):
        raise RunKilled("preempted")

    jobs = [
        Job("a", Path("logs/a.log"), killed_once),
        Job("b", Path("logs/b.log"), fails),
        Job("c", Path("logs/c.log"), lambda slot: "fine"),
        Job("d", Path("logs/d.log"), always_killed),
        Job("e", Path("logs/e.log"), lambda slot: _raise(RunFailed("bits.py failed (exit 1): x (log: logs/e.log)"))),
    ]
    outcomes = {o.job.label: o for o in execute(LocalEngine([Slot(1)]), jobs, retries=2, say=said.append)}
    assert outcomes["a"].ok and outcomes["a"].attempts == 2 and outcomes["a"].result == "resumed"
    assert (
        not outcomes["b"].ok
        and outcomes["b"].message == "pretrain.py failed for bpe:512 (exit 1): boom (log: logs/b.log)"
    )
    assert outcomes["c"].ok
    assert not outcomes["d"].ok and outcomes["d"].attempts == 3
    assert outcomes["d"].message == "stopped from outside 3 times (preempted) (log: logs/d.log)"
    assert outcomes["e"].message == "bits.py failed (exit 1): x (log: logs/e.log)"  # its log named once
    assert "a: pretrain.py stopped by SIGTERM (exit 130); again from its checkpoint (retry 1/2)" in said


def test_slots_from_the_machine(monkeypatch):
    monkeypatch.setattr(executors, "usable_cores", lambda: 4)
    slots, lines = local_slots(None, 10, "cpu", None, gpus=0)
    assert slots == [Slot(1, "cpu")] * 4
    assert lines == ["jobs: 4 runs at once (4 CPU cores, 1 thread each; chosen from the machine; --jobs N to change)"]
    slots, lines = local_slots(2, 10, None, None, gpus=0)
    assert slots == [Slot(2, None)] * 2 and "2 threads each; given" in lines[-1]
    slots, _ = local_slots(None, 10, None, 2, gpus=0)
    assert slots == [Slot(2, None)] * 2
    slots, lines = local_slots(None, 9, "auto", None, gpus=4)
    assert [s.device for s in slots] == ["cuda:0", "cuda:1", "cuda:2", "cuda:3"] and "one per GPU (4 GPUs)" in lines[-1]
    slots, lines = local_slots(2, 10, "cpu", 4, gpus=0)  # 2 runs of 4 threads would not fit in 4 cores
    assert slots == [Slot(2, "cpu")] * 2 and lines[0] == "threads per run: 2, not 4: 2 runs share 4 cores"
    slots, lines = local_slots(8, 3, "cpu", None, gpus=0)
    assert len(slots) == 3 and lines[0] == "--jobs 8: only 3 runs to train: 3 at once"
    with pytest.raises(ValueError, match="--jobs 0: give 1 or more"):
        local_slots(0, 3, "cpu", None, gpus=0)


def test_an_unreachable_ray_address_is_one_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens once closed
    with pytest.raises(RunFailed, match=rf"--ray-address 127.0.0.1:{port}: cannot reach it \(Connection refused\)"):
        executors.check_ray_address(f"127.0.0.1:{port}")
    with pytest.raises(RunFailed, match="expected HOST:PORT"):
        executors.check_ray_address("headnode")


def test_a_slurm_setting_submitit_rejects_is_one_line(tmp_path):
    pytest.importorskip("submitit")
    options = executors.SlurmOptions(
        partition="gpu", params=executors.parse_slurm_params(["partitio=x"]), cluster="local"
    )
    with pytest.raises(RunFailed, match="submitit refused the settings: Unknown argument 'partitio'"):
        executors.SlurmEngine(tmp_path / "slurm", options, Path.cwd())
    with pytest.raises(RunFailed, match="--slurm-param 'mem': expected KEY=VALUE"):
        executors.parse_slurm_params(["mem"])
    assert executors.parse_slurm_params(["mem_gb=8", "qos=high"]) == {"mem_gb": 8, "qos": "high"}


def _fails_in_the_job(slot):
    raise RunFailed(f"bits.py failed for byte (exit 1): no checkpoint (threads {slot.threads})")


def _killed_in_the_job(slot):
    raise RunKilled("pretrain.py stopped by SIGTERM (exit 130)")


def test_submitit_local_jobs_report_failures_and_kills(tmp_path):
    pytest.importorskip("submitit")
    cloudpickle = pytest.importorskip("cloudpickle")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the job process cannot import this module
    options = executors.SlurmOptions(time_minutes=5, cpus=1, cluster="local")
    engine = executors.SlurmEngine(tmp_path / "slurm", options, Path(executors.__file__).parents[2])
    jobs = [Job("f", tmp_path / "f.log", _fails_in_the_job), Job("k", tmp_path / "k.log", _killed_in_the_job)]
    outcomes = {o.job.label: o for o in execute(engine, jobs, retries=1, say=print)}
    assert (
        outcomes["f"].message
        == f"bits.py failed for byte (exit 1): no checkpoint (threads 1) (log: {tmp_path / 'f.log'})"
    )
    assert outcomes["k"].attempts == 2 and "stopped from outside 2 times" in outcomes["k"].message
