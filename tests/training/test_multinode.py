"""One model on several machines (docs/training.md, "Several machines"): two torchrun "nodes" on this machine,
one process each, meeting by c10d rendezvous on gloo, train exactly what one node with two processes trains
(the same total batch: each rank samples its windows from (seed, rank), whatever node it is on)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
import torch
from conftest import REPO
from pretrain_runs import TINY_FLAGS, make_corpus

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

STEPS = ["--max-steps", "3", "--eval-interval", "3", "--eval-chars", "400", "--device", "cpu"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(*launcher: str, out, data) -> list[str]:
    pretrain = [str(REPO / "pretrain.py"), "--data", str(data), "--out-dir", str(out), *TINY_FLAGS, *STEPS]
    return [sys.executable, "-m", "torch.distributed.run", *launcher, *pretrain]


def finished(procs) -> None:
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, out[-3000:] + err[-3000:]


def test_two_nodes_train_what_one_node_with_two_processes_trains(tmp_path):
    data = make_corpus(tmp_path)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    port = free_port()
    rdzv = ["--nnodes", "2", "--nproc_per_node", "1", "--rdzv_backend", "c10d"]
    rdzv += ["--rdzv_endpoint", f"127.0.0.1:{port}", "--rdzv_id", "storygpt-test"]
    nodes = [
        # node 0 hosts the rendezvous store (what torchrun infers on the machine named in --rdzv_endpoint)
        subprocess.Popen(
            torchrun(*rdzv, "--rdzv_conf", f"is_host={host}", out=tmp_path / "two-nodes", data=data),
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for host in ("true", "false")
    ]
    one = subprocess.Popen(
        torchrun("--standalone", "--nproc_per_node", "2", out=tmp_path / "one-node", data=data),
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    finished([*nodes, one])
    runs = {name: tmp_path / name / "tiny" / "learned-word-10000" for name in ("two-nodes", "one-node")}
    ckpts = {name: torch.load(d / "ckpt.pt", weights_only=True) for name, d in runs.items()}
    summaries = {name: json.loads((d / "summary.json").read_text()) for name, d in runs.items()}
    two, one_node = ckpts["two-nodes"], ckpts["one-node"]
    assert two["state"]["rng"]["world_size"] == 2 and two["state"]["tokens"] == 3 * 8 * 16 * 2
    assert summaries["two-nodes"]["processes"] == 2 and summaries["two-nodes"]["batch_windows"] == 16
    assert two["model"].keys() == one_node["model"].keys()
    for k, w in two["model"].items():  # bit for bit
        assert torch.equal(w, one_node["model"][k]), k
    assert summaries["two-nodes"]["val_bpc"] == summaries["one-node"]["val_bpc"]
    # the ranks drew different windows: a node that trained alone would have drawn rank 0's only
    ranks = two["state"]["rng"]["ranks"]
    assert ranks[0]["batch"] != ranks[1]["batch"]
