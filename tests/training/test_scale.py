"""Issue 46: pretrain.py --dry-run's size estimate, --total-batch-size (tokens per step), throughput figures
(tokens/s, FLOPs/s, MFU) in metrics.jsonl and summary.json, and the refusals before any work (no CUDA, a
batch that does not fit, a corpus shorter than one window).  CPU only: nothing here needs a GPU."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from conftest import REPO, call_tool, run_tool
from pretrain_runs import assert_error, dry_run, make_corpus, refused, rows, run, run_refused

torch = pytest.importorskip("torch")

GPT2_SMALL = 124_439_808  # GPT-2 small (HF gpt2): tied embeddings, vocab 50257, 1024 learned positions


def meta_count(args: dict) -> tuple[int, int]:
    """``(total, embedding)`` of the model ``args`` describes, built on the meta device (no memory)."""
    from storygpt.model import GPT
    from storygpt.model.flops import parameter_split
    from storygpt.model.recipes import Recipe

    recipe = Recipe.from_flags(args)
    shape = {k: args[k] for k in ("n_layer", "n_head", "n_embd", "block_size", "dropout", "rope_theta")}
    position = "rope" if args["rope"] else "learned"
    config = recipe.config(vocab_size=args["estimate"]["vocab_size"], **shape, position=position)
    with torch.device("meta"):
        model = GPT(config)
    total = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())  # a tied weight once
    emb, non_emb = parameter_split(model)
    assert emb + non_emb == total
    return total, emb


def test_dry_run_gpt2_parameters_fast(tmp_path):
    t = time.perf_counter()
    done = run_tool("pretrain", "--preset", "gpt2", "--recipe", "gpt2", "--tokenizer", "bpe:50257", "--dry-run",
                    "--data", tmp_path / "nowhere")  # fmt: skip
    seconds = time.perf_counter() - t
    assert done.returncode == 0, done.stderr
    assert seconds < 30  # no torch, no data: the interpreter's start only
    assert "parameters: 124,439,808 (39,383,808 embedding, 85,056,000 rest; vocab 50,257)" in done.stderr
    assert "FLOPs per token: " in done.stderr and "memory: weights 0.46 GiB" in done.stderr
    args = dry_run("--preset", "gpt2", "--recipe", "gpt2", "--tokenizer", "bpe:50257")
    est = args["estimate"]
    assert abs(est["params"] - 124.4e6) / 124.4e6 < 0.01 and est["params"] == GPT2_SMALL
    assert (est["params"], est["params_embedding"]) == meta_count(args)
    assert est["params_non_embedding"] == est["params"] - est["params_embedding"]


@pytest.mark.parametrize(
    "flags",
    [
        ("--preset", "gpt2-medium", "--tokenizer", "bpe:50257"),  # modern: untied, rmsnorm, no bias, rope
        ("--preset", "gpt2", "--rope", "--tokenizer", "bpe:8192"),
        ("--recipe", "gpt2", "--bias", "off", "--tie-embeddings", "off", "--tokenizer", "byte"),
        ("--preset", "gpt2", "--tokenizer", "tiktoken:cl100k_base"),  # no size known: GPT-2's assumed
    ],
)
def test_estimate_counts_as_the_model_does(flags):
    args = dry_run(*flags)
    est = args["estimate"]
    assert (est["params"], est["params_embedding"]) == meta_count(args)
    assert est["vocab_assumed"] == (flags[-1] == "tiktoken:cl100k_base")


def test_memory_estimate_parts():
    from storygpt.model.sizing import memory_estimate, parameter_counts

    a = dry_run("--preset", "gpt2", "--recipe", "gpt2", "--tokenizer", "bpe:50257", "--batch-size", "4",
                "--dtype", "bfloat16")  # fmt: skip
    m, n = a["estimate"]["memory"], GPT2_SMALL
    assert (m["weights"], m["gradients"], m["optimizer"]) == (4 * n, 4 * n, 8 * n)  # AdamW: 2 float32 states
    T, C, H, L, V, B = 1024, 768, 12, 12, 50257, 4
    assert m["activations"] == L * (34 * T * C + 5 * H * T * T) * B + 8 * B * T * V  # Korthikanti et al., bf16
    assert m["total"] == sum(v for k, v in m.items() if k != "total")
    modern = dry_run("--preset", "gpt2", "--tokenizer", "bpe:50257", "--batch-size", "4")["estimate"]
    n = modern["params"]
    assert modern["memory"]["optimizer"] == 4 * 12 * 12 * C * C + 8 * (n - 12 * 12 * C * C)  # Muon: 1 momentum
    assert modern["activation_bytes"] == 4  # --dtype auto on a CPU: float32, the larger
    cfg = dict(vocab_size=V, block_size=T, n_layer=L, n_embd=C, n_head=H)
    assert (
        memory_estimate(cfg, "adamw", 2, False)["activations"] > memory_estimate(cfg, "adamw", 2, True)["activations"]
    )
    assert parameter_counts(cfg)[0] == GPT2_SMALL


def test_total_batch_size_in_tokens(tmp_path):
    data = make_corpus(tmp_path)
    # TINY_FLAGS: --block-size 16; 2 windows a micro-batch = 32 tokens; 64 tokens a step = 2 micro-batches
    m = run(data, tmp_path / "a", "--batch-size", "2", "--total-batch-size", "64", "--max-steps", "2")
    assert m["tokens"] == 2 * 64 and m["batch_windows"] == 4 and m["args"]["total_batch_size"] == 64
    assert_error(
        r"--total-batch-size 65 tokens is not a multiple of --batch-size 2 x --block-size 16 x 1 process\(es\) "
        "= 32 tokens",
        run_refused(data, tmp_path / "b", "--batch-size", "2", "--total-batch-size", "65", "--max-steps", "1"),
    )
    assert_error("give one of them", refused("--total-batch", "8", "--total-batch-size", "128"))
    help_text = call_tool("pretrain", "--help").stdout
    assert "--total-batch-size" in " ".join(help_text.split()) and "tokens per optimizer step" in help_text


def test_throughput_recorded(tmp_path):
    data = make_corpus(tmp_path)
    m = run(data, tmp_path / "a", "--max-steps", "3")
    steps = [r for r in rows(m["folder"]) if r["kind"] == "step"]
    assert len(steps) == 3
    for r in steps:
        assert r["tokens_per_sec"] > 0
        assert r["flops_per_sec"] == pytest.approx(m["flops_per_token"] * r["tokens_per_sec"])
        assert "mfu" not in r  # a CPU: no peak known
    assert m["flops_per_sec"] == pytest.approx(m["flops_per_token"] * m["tokens_per_sec"])
    assert m["tokens_per_sec"] == pytest.approx(m["tokens"] / m["train_time"])
    assert m["mfu"] is None and m["peak_flops"] is None and m["max_memory_allocated"] is None
    assert "FLOPs/s" in m["stdout"]


def test_peaks_and_mfu():
    from storygpt.model.sizing import peak_flops

    assert peak_flops("NVIDIA H100 80GB HBM3") == 989e12
    assert peak_flops("NVIDIA H100 PCIe") == 756e12
    assert peak_flops("NVIDIA H200") == 989e12
    assert peak_flops("NVIDIA A100-SXM4-80GB") == 312e12
    assert peak_flops("NVIDIA GeForce RTX 4090") is None and peak_flops(None) is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_no_cuda_refused_at_once(tmp_path):
    err = refused("--device", "cuda", "--data", tmp_path / "nowhere")  # no data folder: refused before reading it
    assert err.strip().splitlines()[-1] == (
        "pretrain.py: error: --device 'cuda': CUDA is not available on this machine (use cpu or auto)"
    )
    assert not (tmp_path / "nowhere").exists()
    done = run_tool("compare", "byte", "--pretrain-args=--device cuda", cwd=tmp_path)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "--pretrain-args '--device cuda'" in last and "CUDA is not available on this machine" in last, last
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no folder written


def test_batch_that_cannot_fit_refused(tmp_path):
    from storygpt.model.sizing import machine_memory

    ram = machine_memory()
    assert ram
    out = tmp_path / "ck"
    err = refused("--preset", "gpt2-large", "--block-size", "64", "--batch-size", "100000000", "--data",
                  tmp_path / "nowhere", "--out-dir", out, "--device", "cpu", "--no-progress")  # fmt: skip
    last = err.strip().splitlines()[-1]
    assert "--batch-size 100000000 x --block-size 64 does not fit: the estimate is" in last, err
    assert f"above this machine's RAM, {ram / 2**30:.2f} GiB" in last
    assert "nowhere" not in last  # refused before the data is looked at


def test_corpus_shorter_than_one_window_refused(tmp_path):
    data = make_corpus(tmp_path)
    err = run_refused(data, tmp_path / "ck", "--block-size", "4096", "--max-steps", "1")
    assert_error(r"has \d+ tokens, fewer than one training window \(block_size \+ 1 = 4097\)", err)


def test_gpu_script_dry_run_and_bad_argument(tmp_path):
    script = REPO / "benchmarks" / "gpu.sh"
    done = subprocess.run(["bash", str(script), "--dry-run"], capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "out")})  # fmt: skip
    assert done.returncode == 0, done.stderr
    for word in ("pretrain.py", "--preset gpt2", "--compile", "compare.py", "--jobs 2", "--device cuda"):
        assert word in done.stdout, done.stdout
    assert not (tmp_path / "out").exists()  # nothing written
    bad = subprocess.run(["bash", str(script), "--fast"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == ["gpu.sh: unknown argument '--fast' (use --dry-run or none)"]
    assert Path(script).stat().st_mode & 0o111
