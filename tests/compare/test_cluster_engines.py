"""compare.py --executor ray and --executor slurm through the real engines (a local Ray; submitit's local
executor), fast: compare.py's own run jobs are submitted, retried and collected, and only the tools are
stand-ins (tests/remote_stand_in.py: the fake files of tests/fake_runs.py, written by the Ray worker or the
submitit job process).  The figures are those of --jobs 1; a failed run is named with its log and the sweep
exits 1; a run whose process dies is submitted again and continues with --resume.  Real tiny trainings through
both engines: the slow tests of tests/compare/test_compare_scale.py.

One local Ray serves the module (started by the engine itself, as compare.py starts it; compare.py's own
``ray.init`` then joins it and its ``ray.shutdown`` is held back until the module ends).  ``RAY_ADDRESS=local``
makes it a Ray of its own under pytest-xdist (each worker process starts its own; none joins another's).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import remote_stand_in
from conftest import REPO, call_tool
from test_compare_scale import BASE, figures, stand_in

from storygpt.compare import executors, toolrun
from storygpt.compare import run as compare_run

TESTS = str(REPO / "tests")
TINY = "one two three\n<|endoftext|>\nfour five six\n<|endoftext|>\nseven eight\n"  # test_compare_scale's
REPORT = Path("reports") / "tiny-flops1e11"
LOG = REPORT / "logs" / "rope-bpe-512-flops1e11-s1337.log"


@pytest.fixture
def cwd(tmp_path):
    (tmp_path / "tiny.txt").write_text(TINY)
    (tmp_path / "plan").mkdir()
    return tmp_path


def use_stand_ins(monkeypatch, plan: Path, steps: dict | None = None) -> None:
    """compare.py's run jobs become StandInJobs of ``plan`` (what goes wrong: ``steps``); the workers import
    tests/remote_stand_in.py (tests/ on their PYTHONPATH)."""
    (plan / "plan.json").write_text(json.dumps(steps or {}))
    monkeypatch.setattr(compare_run, "RunJob", lambda *a: remote_stand_in.StandInJob(*a, plan=str(plan)))
    monkeypatch.setattr(toolrun, "run_tool", remote_stand_in.stand_in_tool(plan))  # data.py, run here
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (TESTS, os.environ.get("PYTHONPATH")) if p))


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    """The figures of the same comparison with --jobs 1 (stand-ins in this process)."""
    root = tmp_path_factory.mktemp("jobs1")
    (root / "tiny.txt").write_text(TINY)
    with pytest.MonkeyPatch.context() as m:
        stand_in(m, [])
        done = call_tool("compare", *BASE, "--jobs", "1", cwd=root)
    assert done.returncode == 0, done.stderr
    return figures(root / REPORT)


def pretrain_calls(plan: Path, spec: str) -> list[list[str]]:
    return [c["args"] for c in remote_stand_in.calls(plan) if c["tool"] == "pretrain.py" and spec in c["args"]]


def failed_then_fixed(cwd: Path, monkeypatch, executor: list[str], lost: str, expected: dict) -> None:
    """compare.py on ``executor``: bpe:512's pretrain.py fails (exit 1) while byte's process dies once (``lost``:
    a regular expression of the line that says so); the sweep exits 1, naming the failed run's log once; byte
    continues with --resume.  Then the same command with the cause fixed: byte is done before, bpe:512 trains,
    and the report's figures are those of --jobs 1, pretrain.py and bits.py having run in the engine's
    processes, none in this one."""
    plan = cwd / "plan"
    use_stand_ins(monkeypatch, plan, {"fail": {"bpe:512": 1}, "crash_once": ["byte"]})
    done = call_tool("compare", *BASE, *executor, cwd=cwd)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert [a[-1] for a in pretrain_calls(plan, "byte")] == ["--force", "--resume"]
    retried = next(line for line in lines if line.startswith("byte @1e11 s1337: "))
    assert re.fullmatch(rf"byte @1e11 s1337: {lost}; again from its checkpoint \(retry 1/2\)", retried), retried
    log = (cwd / LOG).resolve()  # the runs' paths are absolute on an engine elsewhere
    why = f"pretrain.py failed for bpe:512 (exit 1): pretrain.py: error: stand-in exit 1 (log: {log})"
    assert f"bpe:512 @1e11 s1337: failed: {why}" in lines
    assert f"compare.py: error: 1 of 2 runs failed (bpe:512 @1e11 s1337: {why}); the others" in done.stderr
    assert not (cwd / REPORT / "report.md").exists()
    use_stand_ins(monkeypatch, plan)  # the cause fixed: the same command again
    again = call_tool("compare", *BASE, *executor, cwd=cwd)
    assert again.returncode == 0, again.stderr
    assert "[1/2] byte @1e11 s1337" in again.stdout and "done before" in again.stdout
    assert figures(cwd / REPORT) == expected
    assert [len(pretrain_calls(plan, spec)) for spec in ("byte", "bpe:512")] == [2, 2]
    ran = remote_stand_in.calls(plan)
    assert [c["tool"] for c in ran if c["pid"] == os.getpid()] == ["data.py", "data.py"]  # the data, made here
    assert sorted(c["tool"] for c in ran if c["pid"] != os.getpid()) == ["bits.py", "bits.py"] + ["pretrain.py"] * 4


# ------------------------------------------------------------------ Ray
@pytest.fixture(scope="module")
def local_ray():
    """A local Ray of 2 CPUs, started by executors.RayEngine as compare.py starts it, for the whole module."""
    ray = pytest.importorskip("ray", reason="--executor ray needs the ray extra: pip install -e .[ray]")
    mp = pytest.MonkeyPatch()
    mp.setenv("RAY_ADDRESS", "local")  # a Ray of this process's own, never one already running here
    mp.setenv("PYTHONPATH", os.pathsep.join(p for p in (TESTS, os.environ.get("PYTHONPATH")) if p))
    try:
        executors.RayEngine(None, executors.Slot(1), REPO, cpus=2)
    finally:
        mp.undo()
    assert ray.is_initialized()
    yield ray
    ray.shutdown()


@pytest.fixture
def ray_kept(local_ray, monkeypatch):
    monkeypatch.setattr(local_ray, "shutdown", lambda *a, **k: None)  # compare.py's engine.close() keeps it
    return local_ray


def test_ray_runs_fail_named_retry_a_lost_worker_with_resume_and_give_the_figures_of_jobs_1(
    cwd, monkeypatch, ray_kept, expected
):
    failed_then_fixed(
        cwd, monkeypatch, ["--executor", "ray"], r"the Ray worker was lost \(WorkerCrashedError\)", expected
    )


# ------------------------------------------------------------------ submitit (Slurm's local executor)
SLURM = ["--executor", "slurm", "--slurm-cluster", "local", "--slurm-time", "5"]


@pytest.fixture(scope="module")
def have_submitit():  # module-scoped: the skip comes before the module's other fixtures are made
    return pytest.importorskip("submitit", reason="--executor slurm needs the slurm extra: pip install -e .[slurm]")


@pytest.fixture
def submitit_local(have_submitit, monkeypatch):
    submitit = have_submitit
    # submitit waits 15 s for the result file of a job that left none (a slow shared file system); none here
    monkeypatch.setattr(submitit.core.core.Job, "_results_timeout_s", 0)
    return submitit


def test_slurm_local_runs_fail_named_retry_a_lost_job_with_resume_and_give_the_figures_of_jobs_1(
    cwd, monkeypatch, submitit_local, expected
):
    lost = r"Slurm job (\d+) did not complete \(Job \1 \(task: 0\) with path .+_result\.pkl has not produced any output .+\)"
    failed_then_fixed(cwd, monkeypatch, SLURM, lost, expected)
