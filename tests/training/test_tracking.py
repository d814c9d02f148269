"""pretrain.py --log tensorboard / wandb (storygpt/train/tracking.py): the event files, read back, hold every
number of metrics.jsonl at its step, and the run's recipe and provenance as config.  wandb runs offline
(WANDB_MODE=offline): its run file is read back record by record (the wandb protobuf ``Record``)."""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import call_tool, one_error_line
from pretrain_runs import TINY_FLAGS, make_corpus, rows

from storygpt.train import tracking

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

RUN = ("tiny", "learned-word-10000")


def pretrain(data: Path, out: Path, *extra: str):
    done = call_tool("pretrain", "--data", data, "--out-dir", out, *TINY_FLAGS, "--eval-interval", "3", *extra)
    assert done.returncode == 0, done.stderr
    return done


def expected(folder: Path) -> dict[tuple[str, int], float]:
    """``{(KIND/FIELD, step): value}`` of every number in metrics.jsonl (the oracle)."""
    out = {}
    for r in rows(folder):
        for k, v in r.items():
            if k not in ("kind", "step") and isinstance(v, (int, float)) and not isinstance(v, bool):
                out[(f"{r['kind']}/{k}", r["step"])] = v
    return out


def test_tensorboard_event_files_hold_the_metrics_rows_and_the_config(tmp_path):
    event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    data = make_corpus(tmp_path)
    done = pretrain(data, tmp_path / "ck", "--max-steps", "6", "--log", "tensorboard")
    folder = tmp_path / "ck" / Path(*RUN)
    assert f"tracking: {folder}/tensorboard\n" in done.stdout
    pretrain(data, tmp_path / "ck", "--max-steps", "9", "--resume")  # keeps the run's --log
    ea = event_accumulator.EventAccumulator(str(folder / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    want = expected(folder)
    got = {(tag, e.step): e.value for tag in ea.Tags()["scalars"] for e in ea.Scalars(tag)}
    assert got.keys() == want.keys()  # each step once, across the resume
    for key, v in want.items():
        assert got[key] == np.float32(v), key  # TensorBoard stores float32
    assert {("step/loss", s) for s in range(1, 10)} <= got.keys() and ("eval/val_bpc", 9) in got
    config = json.loads(ea.Tensors("config/text_summary")[0].tensor_proto.string_val[0].decode().strip("`\n"))
    assert config["recipe"] == "gpt2" and config["model"]["n_embd"] == 32 and config["args"]["seed"] == 1337
    assert config["provenance"]["torch"] and "commit" in config["provenance"] and config["params"] > 0


def wandb_records(folder: Path) -> list:
    """The records of the offline run file, up to its ``exit`` record (wandb's own process writes the file:
    waited for up to 30 s)."""
    for _ in range(60):
        records = read_wandb_file(folder)
        if records and records[-1].WhichOneof("record_type") == "exit":
            return records
        time.sleep(0.5)
    raise AssertionError(f"no exit record in {folder}/wandb: {[r.WhichOneof('record_type') for r in records]}")


def read_wandb_file(folder: Path) -> list:
    """The whole records of the offline run file (a LevelDB-style log: 32 KiB blocks of CRC, length, type, data)."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2")
    (path,) = folder.glob("wandb/offline-run-*/run-*.wandb")
    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, block, part, records = 7, 32768, b"", []
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _crc, n, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if (kind == 0 and n == 0) or pos + 7 + n > len(data):  # the end, or a record still being written
            break
        part += data[pos + 7 : pos + 7 + n]
        pos += 7 + n
        if kind in (1, 4):  # FULL or LAST
            records.append(pb.Record.FromString(part))
            part = b""
    return records


def test_wandb_offline_run_holds_the_metrics_rows_and_the_config(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_PROJECT", "storygpt-test")
    data = make_corpus(tmp_path)
    done = pretrain(data, tmp_path / "ck", "--max-steps", "6", "--log", "wandb")
    folder = tmp_path / "ck" / Path(*RUN)
    run_id = (folder / "wandb" / "storygpt-run-id").read_text().strip()
    assert f"wandb run {run_id} (offline" in done.stdout
    records = wandb_records(folder)
    (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert run.run_id == run_id and run.project == "storygpt-test" and run.display_name == RUN[1]
    config = {i.key: json.loads(i.value_json) for i in run.config.update}
    assert config["recipe"] == "gpt2" and config["model"]["n_layer"] == 1 and config["provenance"]["numpy"]
    got = {}
    for r in records:
        if r.WhichOneof("record_type") == "history":
            items = {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.history.item}
            got |= {(k, r.history.step.num): v for k, v in items.items() if not k.startswith("_")}
    assert got == expected(folder)  # the same numbers, exactly (JSON both ways)


def test_log_bad_input_is_one_line_before_training(tmp_path, monkeypatch):
    data = make_corpus(tmp_path)
    argv = ["--data", data, "--out-dir", tmp_path / "ck", *TINY_FLAGS, "--max-steps", "2"]
    done = call_tool("pretrain", *argv, "--log", "tensorboard,mlflow")
    assert done.returncode == 2
    assert "--log tensorboard,mlflow: unknown tracker 'mlflow': use tensorboard, wandb" in one_error_line(
        done.stderr, "pretrain.py"
    )
    monkeypatch.setitem(tracking.PACKAGE, "wandb", "storygpt_no_such_package")
    done = call_tool("pretrain", *argv, "--log", "wandb")
    assert done.returncode == 2
    assert one_error_line(done.stderr, "pretrain.py").endswith(
        "--log wandb needs the storygpt_no_such_package package: pip install -e .[wandb]"
    )
    assert not (tmp_path / "ck").exists()
    # off by default: a plain run writes neither
    pretrain(data, tmp_path / "ck2", "--max-steps", "1")
    folder = tmp_path / "ck2" / Path(*RUN)
    assert (folder / "metrics.jsonl").exists()
    assert not (folder / "tensorboard").exists() and not (folder / "wandb").exists()
