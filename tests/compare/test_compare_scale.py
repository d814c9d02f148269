"""compare.py's runs at once (--jobs), on Ray and Slurm (--executor), its isoFLOP frontiers (--sizes) and --log.

Fast tests put a stand-in for the tools (storygpt.compare.toolrun.run_tool) that plays their part with fake
files (tests/fake_runs.py); the slow ones train real tiny runs and check the per-run figures bit for bit
against --jobs 1 (float32, one thread per run)."""

from __future__ import annotations

import json
import math
import sys
import threading
from pathlib import Path

import fake_runs
import pytest
from conftest import REPO, call_tool, one_error_line

from storygpt.compare import toolrun

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def cwd(tmp_path):
    (tmp_path / "tiny.txt").write_text("one two three\n<|endoftext|>\nfour five six\n<|endoftext|>\nseven eight\n")
    return tmp_path


BASE = [
    "byte",
    "bpe:512",
    "--train-file",
    "tiny.txt",
    "--budget-flops",
    "1e11",
    "--threads",
    "1",
    "--block-chars",
    "1000",
]


def stand_in(monkeypatch, calls: list, behave=None):
    """toolrun.run_tool replaced: each command recorded as (tool, args), then ``behave(tool, args)`` (may return
    an exit status), else the fake files of the tool and exit status 0."""

    lock = threading.Lock()

    def run_tool(cmd, log, verbose, follow=None, bar=None, cpu=None):
        tool, args = Path(cmd[1]).name, cmd[2:]
        with lock:
            calls.append((tool, args))
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a") as f:
                f.write(f"$ {tool}\n")
        if behave is not None:
            rc = behave(tool, args)
            if rc is not None:
                with open(log, "a") as f:
                    f.write(f"{tool}: error: stand-in exit {rc}\n")
                return rc
        fake_runs.play(tool, args)
        return 0

    monkeypatch.setattr(toolrun, "run_tool", run_tool)


def test_jobs_train_runs_at_once_and_say_so(cwd, monkeypatch):
    calls = []
    both_running = threading.Barrier(2, timeout=30)  # only passes when two pretrain.py run at the same time

    def behave(tool, args):
        if tool == "pretrain.py":
            both_running.wait()

    stand_in(monkeypatch, calls, behave)
    done = call_tool("compare", *BASE, "--jobs", "2", cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "jobs: 2 runs at once (" in done.stdout and "1 thread each; given)" in done.stdout
    trained = [a for t, a in calls if t == "pretrain.py"]
    assert len(trained) == 2 and all(a[a.index("--threads") + 1] == "1" for a in trained)
    logs = sorted(p.name for p in (cwd / "reports" / "tiny-flops1e11" / "logs").iterdir())
    assert logs == ["rope-bpe-512-flops1e11-s1337.log", "rope-byte-flops1e11-s1337.log"]  # one per run
    again = call_tool("compare", *BASE, "--jobs", "2", cwd=cwd)  # finished runs are reused
    assert again.stdout.count("done before") == 2 and len(calls) == 6


def test_more_jobs_than_runs_is_clamped_and_jobs_0_refused(cwd, monkeypatch):
    stand_in(monkeypatch, [])
    done = call_tool("compare", *BASE, "--jobs", "8", cwd=cwd)
    assert done.returncode == 0 and "--jobs 8: only 2 runs to train: 2 at once" in done.stdout
    refused = call_tool("compare", *BASE, "--jobs", "0", cwd=cwd)
    assert refused.returncode == 2 and one_error_line(refused.stderr, "compare.py").endswith(
        "--jobs must be >= 1, got 0"
    )


def test_a_failed_run_is_named_and_the_rest_finish(cwd, monkeypatch):
    calls = []
    stand_in(monkeypatch, calls, lambda tool, args: 1 if tool == "pretrain.py" and "byte" in args else None)
    done = call_tool("compare", *BASE, "--jobs", "2", cwd=cwd)
    assert done.returncode == 1
    log = Path("reports") / "tiny-flops1e11" / "logs" / "rope-byte-flops1e11-s1337.log"
    assert (
        f"failed: pretrain.py failed for byte (exit 1): pretrain.py: error: stand-in exit 1 (log: {log})" in done.stdout
    )
    assert "compare.py: error: 1 of 2 runs failed" in done.stderr and "no report until every run" in done.stderr
    assert [t for t, a in calls if t == "bits.py"] == ["bits.py"]  # bpe:512 was trained and measured
    assert not (cwd / "reports" / "tiny-flops1e11" / "report.md").exists()


def test_a_killed_run_continues_from_its_checkpoint(cwd, monkeypatch):
    calls = []
    killed = []

    def behave(tool, args):
        if tool == "pretrain.py" and "byte" in args and not killed:
            killed.append(1)
            folder = Path(args[args.index("--out-dir") + 1]) / "tiny" / args[args.index("--run-name") + 1]
            fake_runs.write_fake_run(folder, "byte", stop_reason=None)  # 3 steps and a checkpoint, then SIGTERM
            return 130

    stand_in(monkeypatch, calls, behave)
    done = call_tool("compare", *BASE, "--jobs", "2", cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "again from its checkpoint (retry 1/2)" in done.stdout
    byte = [a for t, a in calls if t == "pretrain.py" and "byte" in a]
    assert [a[-1] for a in byte] == ["--force", "--resume"]


def test_log_is_forwarded_to_every_run(cwd, monkeypatch):
    calls = []
    stand_in(monkeypatch, calls)
    assert call_tool("compare", *BASE, "--jobs", "1", "--log", "tensorboard", cwd=cwd).returncode == 0
    trained = [a for t, a in calls if t == "pretrain.py"]
    assert len(trained) == 2 and all(a[a.index("--log") + 1] == "tensorboard" for a in trained)
    assert list((cwd / "checkpoints" / "compare").iterdir())  # the folder of runs: one, with or without --log
    calls.clear()
    assert call_tool("compare", *BASE, "--jobs", "1", cwd=cwd).stdout.count("done before") == 2


SIZE_PARAMS = {"tiny": 1e5, "small": 4e5, "base": 1.6e6}
OPTIMUM = {("byte", 1e11): 1e5, ("byte", 1e12): 4e5, ("bpe:512", 1e11): 2e5, ("bpe:512", 1e12): 8e5}


def sized_runs(tool, args):
    """The fake files, then the run's parameters from its preset and its bits/char on a parabola in log
    parameters (minimum at OPTIMUM) so that the frontier has a known answer."""
    fake_runs.play(tool, args)
    folder = Path(args[0]).parent if tool == "bits.py" else None
    if tool == "pretrain.py":
        folder = Path(args[args.index("--out-dir") + 1]) / "tiny" / args[args.index("--run-name") + 1]
    if folder is None:
        return 0
    size = next(s for s in SIZE_PARAMS if f"-{s}-" in folder.name)
    summary = json.loads((folder / "summary.json").read_text())
    summary["params"] = SIZE_PARAMS[size]
    (folder / "summary.json").write_text(json.dumps(summary))
    if (folder / "bits.json").exists():
        bits = json.loads((folder / "bits.json").read_text())
        row = bits["results"][0]
        budget = summary["flops"]
        spec = summary["spec"]
        lift = 0.05 * (math.log(SIZE_PARAMS[size]) - math.log(OPTIMUM[(spec, budget)])) ** 2
        row["bits_per_character"] += lift
        row["parameters"] = SIZE_PARAMS[size]
        row["block_nats"] = [n + math.log(2) * c * lift for n, c in zip(row["block_nats"], row["block_characters"])]
        (folder / "bits.json").write_text(json.dumps(bits))
    return 0


def test_sizes_give_the_isoflop_frontier(cwd, monkeypatch):
    calls = []
    stand_in(monkeypatch, calls, lambda tool, args: sized_runs(tool, args) and None)
    argv = ["byte", "bpe:512", "--train-file", "tiny.txt", "--budget-flops", "1e11,1e12", "--sizes", "tiny,small,base"]
    done = call_tool("compare", *argv, "--threads", "1", "--block-chars", "1000", "--jobs", "1", cwd=cwd)
    assert done.returncode == 0, done.stderr
    trained = [a for t, a in calls if t == "pretrain.py"]
    assert len(trained) == 12 and sorted({a[a.index("--preset") + 1] for a in trained}) == ["base", "small", "tiny"]
    assert all("--n-layer" not in a for a in trained)
    report = cwd / "reports" / "tiny-flops1e11-1e12-sizes-tiny-small-base"
    doc = json.loads((report / "results.json").read_text())
    fronts = {f["budget"]: f for f in doc["frontiers"]}
    for (spec, budget), n_star in OPTIMUM.items():
        curve = next(c for c in fronts[budget]["curves"] if c["spec"] == spec)
        if SIZE_PARAMS["tiny"] < n_star < SIZE_PARAMS["base"]:
            assert curve["optimal_params"] == pytest.approx(n_star, rel=1e-6) and not curve["edge"]
        else:
            assert curve["edge"] and curve["optimal_params"] == n_star
    # fake_runs: bpe:512 is 0.18 bits/char below byte at the optimum, at both budgets
    assert fronts[1e11]["winner"] == "bpe:512" and fronts[1e12]["winner"] == "bpe:512"
    text = (report / "report.md").read_text()
    assert "## Compute-optimal frontier (isoFLOP)" in text and "| bpe:512 | 512 | 200k |" in text
    assert "`byte@tiny`" in text  # the usual tables: one row per tokenizer and size
    assert (report / "isoflop.png").read_bytes()[:4] == b"\x89PNG"
    assert "Compute-optimal frontier (isoFLOP):" in done.stdout


def test_sizes_bad_input(cwd):
    for extra, message in [
        (["--sizes", "tiny,huge"], "--sizes: unknown preset 'huge'; known: tiny, small"),
        (["--sizes", "tiny,tiny"], "--sizes: tiny is given twice"),
        (["--sizes", ""], "--sizes '': no preset named; known: tiny, small"),  # was: silently no sizes
        (["--sizes", "tiny,small", "--n-layer", "2"], "--sizes names the model shapes: drop --n-layer"),
    ]:
        done = call_tool("compare", *BASE, *extra, cwd=cwd)
        assert done.returncode == 2 and message in one_error_line(done.stderr, "compare.py")
    assert not (cwd / "checkpoints").exists() and not (cwd / "data").exists()


def test_cluster_settings_are_refused_before_any_work(cwd):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pytest.importorskip("ray")
    done = call_tool("compare", *BASE, "--executor", "ray", "--ray-address", f"127.0.0.1:{port}", cwd=cwd)
    assert done.returncode == 2
    assert f"--ray-address 127.0.0.1:{port}: cannot reach it" in one_error_line(done.stderr, "compare.py")
    pytest.importorskip("submitit")
    done = call_tool(
        "compare", *BASE, "--executor", "slurm", "--slurm-cluster", "local", "--slurm-param", "gpu=1", cwd=cwd
    )
    assert done.returncode == 2
    assert "submitit refused the settings: Unknown argument 'gpu'" in one_error_line(done.stderr, "compare.py")
    assert not (cwd / "data").exists() and not (cwd / "checkpoints").exists()
    assert not (cwd / "reports").exists()  # submitit's log folder is not left behind


@pytest.mark.parametrize(
    "extra,message",
    [
        (
            ["--ray-address", "1.2.3.4:6379"],
            "--ray-address is a setting of --executor ray; these runs go to --executor local",
        ),
        (["--executor", "ray", "--slurm-time", "5"], "--slurm-time is a setting of --executor slurm"),
        (["--executor", "slurm", "--ray-gpus", "1"], "--ray-gpus is a setting of --executor ray"),
    ],
)
def test_engine_flags_beside_another_executor_are_refused(cwd, extra, message):
    # before: ignored without a word (the runs trained here, not on the cluster the user named)
    done = call_tool("compare", *BASE, *extra, cwd=cwd)
    assert done.returncode == 2 and message in one_error_line(done.stderr, "compare.py")
    assert sorted(p.name for p in cwd.iterdir()) == ["tiny.txt"]


def test_eval_name_of_a_held_out_set_is_refused_before_training(cwd, monkeypatch):
    # before: every run trained, then bits.py refused it (or, earlier, the set silently replaced doc-1)
    calls = []
    stand_in(monkeypatch, calls)
    (cwd / "good.txt").write_text("hello\n")
    # the stand-in data.py writes a valid.txt of one document: the held-out text's one set is doc-1
    done = call_tool("compare", *BASE, "--eval", "doc-1=good.txt", cwd=cwd)
    assert done.returncode == 2, done.stderr
    assert "'doc-1' is already a set of the held-out text" in one_error_line(done.stderr, "compare.py")
    assert [tool for tool, _ in calls if tool != "data.py"] == []  # nothing trained


def test_bad_log_is_refused_before_any_work(cwd, monkeypatch):
    calls = []
    stand_in(monkeypatch, calls)
    done = call_tool("compare", *BASE, "--log", "bogus", cwd=cwd)
    assert done.returncode == 2, done.stderr
    assert "--log bogus: unknown tracker 'bogus'" in one_error_line(done.stderr, "compare.py")
    assert calls == [] and sorted(p.name for p in cwd.iterdir()) == ["tiny.txt"]


def test_failed_run_names_its_log_once(cwd, monkeypatch):
    stand_in(monkeypatch, [], behave=lambda tool, args: 3 if tool == "pretrain.py" else None)
    done = call_tool("compare", *BASE, "--jobs", "2", cwd=cwd)
    assert done.returncode == 1
    failed = [line for line in done.stdout.splitlines() if ": failed: " in line]
    assert len(failed) == 2 and all(line.count("(log: ") == 1 for line in failed), done.stdout


# ------------------------------------------------------------------ real tiny runs (slow)
def real_argv(corpus: Path) -> list[str]:
    return [
        "byte",
        "bpe:300",
        "--train-file",
        str(corpus),
        "--budget-flops",
        "2e9",
        "--n-layer",
        "1",
        "--n-head",
        "2",
        "--n-embd",
        "32",
        "--block-size",
        "32",
        "--batch-size",
        "4",
        "--bits-chars",
        "2000",
        "--block-chars",
        "500",
        "--device",
        "cpu",
        "--threads",
        "1",
        "--pretrain-args",
        "--dtype float32",
    ]


def figures(report: Path) -> dict:
    rows = json.loads((report / "results.json").read_text())["results"]
    return {(r["spec"], r["seed"]): (r["bits_per_char"], r["block_nats"], r["steps"]) for r in rows}


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """The --jobs 1 figures of two tiny real runs (the reference of the slow tests)."""
    sys.path.insert(0, str(REPO / "tests" / "tools"))  # test_bits.py lives with the tools' tests
    import test_bits as kit

    root = tmp_path_factory.mktemp("scale")
    corpus = root / "tiny.txt"
    kit.write_docs(corpus, kit.story_docs(80, 1))
    done = call_tool("compare", *real_argv(corpus), "--jobs", "1", "--report", "one", cwd=root)
    assert done.returncode == 0, done.stderr
    return root, corpus, figures(root / "reports" / "one")


@pytest.mark.slow  # real tiny runs: about a minute
def test_jobs_2_gives_the_figures_of_jobs_1_bit_for_bit(real):
    root, corpus, reference = real
    argv = [*real_argv(corpus), "--jobs", "2", "--report", "two", "--out-dir", "checkpoints/two"]
    done = call_tool("compare", *argv, cwd=root)
    assert done.returncode == 0, done.stderr
    assert "jobs: 2 runs at once" in done.stdout
    assert figures(root / "reports" / "two") == reference


@pytest.mark.slow  # starts a local Ray
def test_ray_gives_the_figures_of_jobs_1_bit_for_bit(real):
    pytest.importorskip("ray")
    root, corpus, reference = real
    argv = [*real_argv(corpus), "--executor", "ray", "--report", "ray", "--out-dir", "checkpoints/ray"]
    done = call_tool("compare", *argv, cwd=root)
    assert done.returncode == 0, done.stderr
    assert figures(root / "reports" / "ray") == reference


@pytest.mark.slow  # submitit's local executor: a process per run
def test_slurm_local_gives_the_figures_of_jobs_1_bit_for_bit(real):
    pytest.importorskip("submitit")
    root, corpus, reference = real
    argv = [*real_argv(corpus), "--executor", "slurm", "--slurm-cluster", "local", "--report", "slurm"]
    done = call_tool("compare", *argv, "--out-dir", "checkpoints/slurm", cwd=root)
    assert done.returncode == 0, done.stderr
    assert figures(root / "reports" / "slurm") == reference
