"""Issue 46: the big presets train on a CPU (short windows, a tiny made corpus, the word tokenizer: no
download), and --compile trains the losses eager does.  The gpt2 runs are slow (@pytest.mark.slow, about a
minute each on one core, docs/training.md); the --compile check on the tiny preset too (its CPU compile
alone takes longer than 30 s on the shared machine)."""

from __future__ import annotations

import pytest
from pretrain_runs import make_corpus, rows, trained

torch = pytest.importorskip("torch")

GPT2_CPU = ["--preset", "gpt2", "--block-size", "64", "--batch-size", "2", "--warmup-steps", "1",
            "--eval-windows", "2", "--eval-chars", "2000", "--no-progress", "--threads", "1",
            "--device", "cpu", "--dtype", "float32",
            "--schedule", "wsd", "--decay-fraction", "0.01"]  # fmt: skip
# wsd with a short decay: the peak rate at every step here, whatever --max-steps (a cosine over 2 steps and one
# over 3 give step 2 different rates, so a 2-step run resumed to 3 would not be the 3-step run)


def step_losses(folder) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in rows(folder) if r["kind"] == "step"}


@pytest.mark.slow
def test_gpt2_preset_trains_and_resumes_exactly(tmp_path):
    data = make_corpus(tmp_path)
    common = ["--data", data, "--out-dir", tmp_path / "ck", *GPT2_CPU, "--eval-interval", "2"]
    whole = trained(*common, "--run-name", "whole", "--max-steps", "3")
    assert whole["params"] > 85_000_000 and whole["steps"] == 3
    losses = step_losses(whole["folder"])
    assert losses[2] < losses[1], losses  # the loss falls
    trained(*common, "--run-name", "split", "--max-steps", "2")
    resumed = trained(*common, "--run-name", "split", "--max-steps", "3", "--resume")
    again = step_losses(resumed["folder"])
    assert again[3] == losses[3], (again, losses)  # the same loss on the next step as the uninterrupted run
    assert resumed["val_loss"] == whole["val_loss"]


#: eager and --compile differ by float reassociation (inductor's fused kernels), no more
COMPILE_TOLERANCE = 1e-4


@pytest.mark.slow
def test_compile_trains_the_losses_of_eager_on_cpu(tmp_path):
    data = make_corpus(tmp_path)
    common = ["--data", data, "--out-dir", tmp_path / "ck", "--preset", "tiny", "--max-steps", "4",
              "--eval-interval", "4", "--no-progress", "--threads", "1", "--device", "cpu", "--dtype", "float32"]  # fmt: skip
    eager = trained(*common, "--run-name", "eager")
    compiled = trained(*common, "--run-name", "compiled", "--compile")
    a, b = step_losses(eager["folder"]), step_losses(compiled["folder"])
    assert a.keys() == b.keys() == {1, 2, 3, 4}
    for step in a:
        assert b[step] == pytest.approx(a[step], rel=COMPILE_TOLERANCE), (a, b)
    assert compiled["compile_time"] > 0
