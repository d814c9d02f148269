#!/usr/bin/env python
"""Tokens per second of one training step (forward + backward + AdamW step) per dtype.

    python benchmarks/train_throughput.py                  # pretrain.py's default model, this device
    python benchmarks/train_throughput.py --rope --steps 20

For every dtype the device offers (float32; bfloat16 autocast; float16
autocast with a gradient scaler on CUDA) it runs ``--warmup`` untimed steps,
then times ``--steps`` steps on random token windows and prints tokens per
second (batch_size * block_size * steps / seconds), so pretrain.py's
``--dtype auto`` is a measured choice (figures in docs/training.md).
The model flags default to pretrain.py's defaults.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import pretrain  # noqa: E402  (for its defaults and device choice)
from storygpt import runtime  # noqa: E402
from storygpt.helpformat import DefaultsOnceHelpFormatter  # noqa: E402
from storygpt.model import GPT, GPTConfig  # noqa: E402


def main(argv=None) -> list[dict]:
    d = pretrain.build_parser().parse_args([])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=DefaultsOnceHelpFormatter)
    p.add_argument(
        "--vocab-size", type=int, default=8192, help="vocabulary size (default: %(default)s, the data.py --bpe default)"
    )
    p.add_argument("--n-layer", type=int, default=d.n_layer, help="transformer blocks")
    p.add_argument("--n-head", type=int, default=d.n_head, help="attention heads")
    p.add_argument("--n-embd", type=int, default=d.n_embd, help="embedding width")
    p.add_argument("--block-size", type=int, default=d.block_size, help="context length in tokens")
    p.add_argument("--batch-size", type=int, default=d.batch_size, help="windows per step")
    p.add_argument("--rope", action="store_true", help="rotary positions (default learned)")
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu, cuda, mps")
    p.add_argument(
        "--dtypes",
        default=None,
        help="comma-separated subset of float32,bfloat16,float16 (default: all the device offers)",
    )
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: all cores)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    p.add_argument("--steps", type=int, default=10, help="timed steps")
    args = p.parse_args(argv)

    device = runtime.training_device(args.device, 0)
    torch.set_num_threads(args.threads or runtime.usable_cores())
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        offered = ["float32", "bfloat16", "float16"] if torch.cuda.is_bf16_supported() else ["float32", "float16"]
    elif device.type == "mps":
        offered = ["float32", "float16"]
    else:
        offered = ["float32", "bfloat16"]
    dtypes = args.dtypes.split(",") if args.dtypes else offered
    config = GPTConfig(
        vocab_size=args.vocab_size,
        block_size=args.block_size,
        n_layer=args.n_layer,
        n_head=args.n_head,
        n_embd=args.n_embd,
        position="rope" if args.rope else "learned",
    )
    tokens_per_step = args.batch_size * args.block_size
    print(
        f"device {device}, {torch.get_num_threads()} threads, torch {torch.__version__}; "
        f"n_layer={config.n_layer} n_head={config.n_head} n_embd={config.n_embd} block_size={config.block_size} "
        f"batch_size={args.batch_size} vocab_size={config.vocab_size} position={config.position}"
    )
    results = []
    for name in dtypes:
        dtype = getattr(torch, name)
        torch.manual_seed(0)
        model = GPT(config).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
        ctx = contextlib.nullcontext() if dtype == torch.float32 else torch.autocast(device.type, dtype=dtype)
        g = torch.Generator().manual_seed(0)
        batch = torch.randint(0, config.vocab_size, (args.batch_size, config.block_size + 1), generator=g).to(device)
        x, y = batch[:, :-1], batch[:, 1:]

        def step():
            with ctx:
                _, loss = model(x, y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            return loss

        for _ in range(args.warmup):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            loss = step()
        loss.item()
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        tps = tokens_per_step * args.steps / seconds
        results.append({"dtype": name, "tokens_per_sec": tps, "ms_per_step": 1000 * seconds / args.steps})
        print(
            f"{name:>9}: {tps:>12,.0f} tokens/s  ({1000 * seconds / args.steps:,.1f} ms/step, "
            f"{model.num_parameters():,} parameters)",
            flush=True,
        )
    return results


if __name__ == "__main__":
    main()
