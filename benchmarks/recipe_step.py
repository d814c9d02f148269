#!/usr/bin/env python
"""CPU seconds per training step of each recipe part, and of storygpt's step against a minimal loop.

    nice -n 10 python benchmarks/recipe_step.py --data data/shakespeare --steps 20 --rounds 3

Part costs: the ``small`` preset (or ``--preset``) on bpe:8192 windows, float32, one thread, batch
16 x block_size; for gpt2, modern, and modern with one part switched (soft-cap 15 on,
LayerNorm, no QK-norm, GELU, tied, AdamW), the process CPU time (``time.process_time``) of
``--steps`` steps of a minimal loop (forward with loss, backward, optimizer step, zero_grad),
after ``--warmup`` steps.  Variants run interleaved, ``--rounds`` times; the table gives the
median per step.

Loop overhead: storygpt.train.loop.train_step (batch drawn from the memmap, learning rates set per
group, gradient clipping, loss.item()) on a Run built by storygpt.train.start.build, against
the minimal loop on the same model and batch size, interleaved; both are checked to start from
identical weights and to give the same first loss on the same batch before timing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from storygpt.model import GPT, GPTConfig  # noqa: E402
from storygpt.model.optim import OptimConfig, build_optimizer  # noqa: E402
from storygpt.model.presets import preset as preset_shape  # noqa: E402
from storygpt.model.recipes import ARCH, RECIPES  # noqa: E402
from storygpt.train import loop as train_loop  # noqa: E402
from storygpt.train import start  # noqa: E402
from storygpt.train.inputs import heldout_slice  # noqa: E402
from storygpt.train.runfolder import RunFiles  # noqa: E402

GPT2 = RECIPES["gpt2"]
MODERN = RECIPES["modern"]
VARIANTS = {
    "gpt2": dict(GPT2),
    "modern": dict(MODERN),
    "modern + soft-cap 15": {**MODERN, "logit_softcap": 15.0},
    "modern + soft-cap 15 by autograd": {**MODERN, "logit_softcap": 15.0, "plain_softcap": True},
    "modern, LayerNorm": {**MODERN, "norm": "layernorm"},
    "modern, no QK-norm": {**MODERN, "qk_norm": False},
    "modern, GELU": {**MODERN, "mlp": "gelu"},
    "modern, tied": {**MODERN, "tie_embeddings": True},
    "modern, AdamW": {**MODERN, "optimizer": "adamw"},
    "modern, embedding norm off": {**MODERN, "embed_norm": False},
    "modern, embedding norm on": {**MODERN, "embed_norm": True},
    "modern, cosine and momentum 0.95": {**MODERN, "schedule": "cosine", "decay_fraction": 1.0, "momentum": 0.95},
}


class PlainSoftCap:
    """``cap * tanh((x W^T) / cap)`` written out: three temporaries forward, three backward."""

    def __init__(self, head):
        self.head = head

    def __call__(self, x):
        return self.head.cap * torch.tanh(torch.nn.functional.linear(x, self.head.weight) / self.head.cap)


def build(variant: dict, shape: dict, vocab: int, seed: int = 0):
    torch.manual_seed(seed)
    arch = {k: variant[k] for k in ARCH}
    b, n_layer, n_head, d = shape["block_size"], shape["n_layer"], shape["n_head"], shape["n_embd"]
    config = GPTConfig(vocab, b, n_layer, n_head, d, position="rope", **arch)
    model = GPT(config)
    if variant.get("plain_softcap"):  # the formula as autograd sees it, in place of SoftCap
        model.lm_head.forward = PlainSoftCap(model.lm_head)
    kw = {"momentum": variant["momentum"]} if variant["optimizer"] == "muon" else {}
    opt = build_optimizer(model, OptimConfig(variant["optimizer"], shape["lr"], **kw))
    opt.schedule = (variant["schedule"], variant["decay_fraction"])  # read by minimal_steps
    return model, opt


def minimal_steps(model, opt, data, batch: int, block: int, steps: int, rng) -> float:
    """CPU seconds of ``steps`` minimal steps (forward+loss, backward, step, zero_grad)."""
    t = time.process_time()
    for _ in range(steps):
        starts = rng.integers(0, len(data) - block, size=batch)
        arr = torch.from_numpy(np.asarray(data[starts[:, None] + np.arange(block + 1)], dtype=np.int64))
        _, loss = model(arr[:, :-1], arr[:, 1:])
        loss.backward()
        train_loop.set_rates(opt, 10**9, 0.5, 0, *opt.schedule)  # as train_step: every group's rate set each step
        opt.step()
        opt.zero_grad(set_to_none=True)
    return time.process_time() - t


def part_costs(args, data, vocab, shape) -> None:
    names = args.variants or list(VARIANTS)
    built = {name: build(VARIANTS[name], shape, vocab) for name in ["gpt2", "modern", *names] if name in VARIANTS}
    rng = np.random.default_rng(0)
    for model, opt in built.values():
        minimal_steps(model, opt, data, args.batch_size, shape["block_size"], args.warmup, rng)
    times = {name: [] for name in built}
    for _ in range(args.rounds):
        for name, (model, opt) in built.items():
            times[name].append(minimal_steps(model, opt, data, args.batch_size, shape["block_size"], args.steps, rng))
    base = statistics.median(times["modern"]) / args.steps
    gpt2 = statistics.median(times["gpt2"]) / args.steps
    print("\n| variant | CPU ms/step | vs modern | vs gpt2 |\n|---|---|---|---|")
    for name, ts in times.items():
        per = statistics.median(ts) / args.steps
        print(f"| {name} | {per * 1000:.1f} | {per / base:.3f} | {per / gpt2:.3f} |")


def loop_overhead(args, data, tokenizer, shape) -> None:
    """storygpt's train_step against the minimal loop, same model and optimizer kind."""
    from storygpt.runtime import Dist, StopFlag

    for recipe in ("gpt2", "modern"):
        v = RECIPES[recipe]
        arch = {k: v[k] for k in ARCH}
        config = GPTConfig(
            tokenizer.vocab_size,
            shape["block_size"],
            shape["n_layer"],
            shape["n_head"],
            shape["n_embd"],
            position="rope",
            **arch,
        )
        kw = {"momentum": v["momentum"]} if v["optimizer"] == "muon" else {}
        optim = OptimConfig(v["optimizer"], shape["lr"], **kw)
        meta = {"optim": optim.to_dict()}
        heldout = heldout_slice(tokenizer, Path(args.data) / "valid.txt", 1000, shape["block_size"])
        hyper = train_loop.Hyper(args.batch_size, 1, 0, 1.0, 10**9, 0, v["schedule"], v["decay_fraction"])
        s, state = start.build(
            config=config,
            tokenizer=tokenizer,
            train=data,
            heldout=heldout,
            hyper=hyper,
            budgets=train_loop.Budgets(),
            files=RunFiles(Path("/nonexistent")),
            meta=meta,
            device=torch.device("cpu"),
            dtype=torch.float32,
            dist=Dist.from_env(),
            stop=StopFlag(),
            log=lambda m: None,
            options=start.Options(optim, eval_windows=1, compile=False, probe_threads=False, progress=False),
            chars_per_token=1.0,
            ckpt=None,
        )
        model, opt = build(v, shape, tokenizer.vocab_size)
        model.load_state_dict(s.model.state_dict())
        rng = np.random.default_rng(0)
        for _ in range(args.warmup):
            train_loop.train_step(s, state, 0.5)
        minimal_steps(model, opt, data, args.batch_size, shape["block_size"], args.warmup, rng)
        loop, mini = [], []
        for _ in range(args.rounds):
            t = time.process_time()
            for _ in range(args.steps):
                train_loop.train_step(s, state, 0.5)
            loop.append(time.process_time() - t)
            mini.append(minimal_steps(model, opt, data, args.batch_size, shape["block_size"], args.steps, rng))
        a, b = statistics.median(loop) / args.steps, statistics.median(mini) / args.steps
        print(f"| {recipe} | train_step {a * 1000:.1f} ms | minimal loop {b * 1000:.1f} ms | ratio {a / b:.3f} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="data/shakespeare")
    p.add_argument("--tokenizer", default="bpe:8192")
    p.add_argument("--preset", default="small")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--skip-parts", action="store_true")
    p.add_argument("--skip-loop", action="store_true")
    p.add_argument("--variants", nargs="+", choices=list(VARIANTS), help="time only these (with gpt2 and modern)")
    args = p.parse_args()
    torch.set_num_threads(1)
    from storygpt.checkpoint import load_tokenizer
    from storygpt.data import read_tokens
    from storygpt.tokenizers.spec import parse_spec

    slug = parse_spec(args.tokenizer).slug
    tokenizer = load_tokenizer(Path(args.data) / f"tokenizer-{slug}.json")
    data = read_tokens(Path(args.data) / f"train-{slug}.bin", tokenizer)
    shape = preset_shape(args.preset)
    import os

    print(f"load {os.getloadavg()}, preset {args.preset}, vocab {tokenizer.vocab_size}, float32, 1 thread")
    if not args.skip_parts:
        part_costs(args, data, tokenizer.vocab_size, shape)
    if not args.skip_loop:
        print("\n| recipe | storygpt step | minimal loop | ratio |")
        loop_overhead(args, data, tokenizer, shape)


if __name__ == "__main__":
    main()
