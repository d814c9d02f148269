"""Run folders and token files as compare.py finds them after data.py, pretrain.py and bits.py, made by hand.

:func:`write_fake_run` writes a run folder (summary.json, metrics.jsonl, ckpt.pt and bits.json as pretrain.py
and ``bits.py --json FILE`` leave them, docs/design.md) for one of the tokenizers of :data:`FAKE`;
:func:`play` does a tool's part for one command compare.py runs, with such files instead of the tool
(tests/tool_faults.py's ``record_tools`` fault calls it inside compare.py).  No model is trained.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

# spec -> (vocab, embedding params, other params, chars/token held out, final bits/char, unk share, round trip)
FAKE = {
    "byte": (258, 24_768, 335_712, 1.0, 2.61, 0.0, 1.0),
    "bpe:512": (512, 49_152, 335_712, 2.05, 2.43, 0.0, 1.0),
    "word:200": (200, 19_200, 335_712, 4.4, 1.95, 0.074, 0.0),
    "bpe:520": (520, 49_920, 335_712, 2.06, 2.432, 0.0, 1.0),  # within noise of bpe:512 (its blocks differ)
    "bpe:300": (300, 28_800, 335_712, 1.6, 2.80, 0.0, 1.0),  # clearly worse than bpe:512, seed noise 1e-4
    "bpe:530": (530, 50_880, 335_712, 2.07, 2.432, 0.0, 1.0),  # close to bpe:512, seed noise 0.02
}
#: Seed-to-seed noise of a SPEC's bits/char: seed SEED + k adds JITTER[spec] * JITTER_PATTERN[k % 6] (besides
#: the 0.01 * k every SPEC gets, which leaves the paired differences of the others without spread).
JITTER = {"bpe:300": 1e-4, "bpe:530": 0.02}
JITTER_PATTERN = (0.0, 1.0, -0.7, 0.4, -1.2, 0.9)
SEED = 1337  # compare.py's first seed; seed SEED + k adds 0.01 * k bits/char
FLOPS = 1e11  # the budget of the fake runs (training FLOPs)
HELDOUT_CHARS = 5_000  # held-out characters bits.json says were measured


def block_pattern(spec: str, n: int) -> list[float]:
    """Bits/char of each of ``n`` blocks minus the mean (sums to zero): the same pattern for every SPEC but
    bpe:520, whose pattern is reversed and 20 times larger (so its difference from bpe:512 is noise)."""
    w = [(i - (n - 1) / 2) * 0.01 for i in range(n)]
    return [-20 * x for x in w] if spec == "bpe:520" else w


def fake_bpc(spec: str, seed: int = SEED, flops: float = FLOPS) -> float:
    """The final held-out bits/char of a fake run of ``spec`` with ``seed`` at ``flops``."""
    bpc = FAKE[spec][4] + 0.01 * (seed - SEED) + 0.2 * ((FLOPS / flops) ** 0.5 - 1)  # E + A C^-0.5 over budgets
    return bpc + JITTER.get(spec, 0.0) * JITTER_PATTERN[(seed - SEED) % len(JITTER_PATTERN)]


def write_fake_run(
    folder: Path,
    spec: str,
    corpus: str = "tiny",
    stop_reason: str | None = "flops",
    seed: int = SEED,
    block_chars: int = 1000,
    flops: float = FLOPS,
) -> None:
    """A run folder of ``spec`` (a key of :data:`FAKE`) on ``corpus`` as pretrain.py (summary.json, metrics.jsonl,
    ckpt.pt, dated 2001) and bits.py --json FILE (bits.json, unless ``stop_reason`` is None: an interrupted
    run of 3 steps) leave it."""
    vocab, emb, rest, cpt, _, unk, rt = FAKE[spec]
    bpc = fake_bpc(spec, seed, flops)
    folder.mkdir(parents=True, exist_ok=True)
    fpt = 6 * rest + 6 * 96 * vocab
    tokens_per_step = 16 * 128
    steps = int(flops // (fpt * tokens_per_step)) if stop_reason else 3
    rows = []
    for s in range(1, steps + 1):
        t = s * tokens_per_step
        rows.append({"kind": "step", "step": s, "tokens": t, "chars": t * cpt, "flops": t * fpt, "elapsed": 0.1 * s})
        rows[-1].update(lr=1e-3, loss=4.0, grad_norm=1.0)
        if s % 2 == 0 or s == steps:
            rows.append(
                {
                    "kind": "eval",
                    "step": s,
                    "tokens": t,
                    "chars": t * cpt,
                    "flops": t * fpt,
                    "elapsed": 0.1 * s,
                    "val_loss": 3.0,
                    "val_bpc": bpc + 1.0 / s,
                }
            )
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    t = steps * tokens_per_step
    summary = {
        "spec": spec,
        "slug": spec.replace(":", "-"),
        "corpus": corpus,
        "params": emb + rest,
        "params_embedding": emb,
        "params_non_embedding": rest,
        "steps": steps,
        "tokens": t,
        "chars": t * cpt,
        "flops": flops if stop_reason else t * fpt,
        "elapsed": 0.1 * steps,
        "train_time": 0.08 * steps,
        "stop_reason": stop_reason,
        "val_loss": 3.0,
        "val_bpc": bpc + 1.0 / steps,
        "best_val_bpc": bpc + 1.0 / steps,
        "args": {"seed": seed, "warmup_steps": 20, "lr": 3e-3, "recipe": "modern"},
        "config": {"n_layer": 3, "n_head": 4, "n_embd": 96, "block_size": 128, "vocab_size": vocab},
        "batch_windows": 16,
        "processes": 1,
        "device": "cpu",
        "dtype": "float32",
        "threads": 1,
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "ckpt.pt").write_bytes(b"not a real checkpoint")
    os.utime(folder / "ckpt.pt", (1e9, 1e9))
    if stop_reason is None:
        return
    row = {
        "name": folder.name,
        "checkpoint": str(folder / "ckpt.pt"),
        "corpus": corpus,
        "tokenizer": spec.split(":")[0],
        "vocab_size": vocab,
        "parameters": emb + rest,
        "tokens": round(HELDOUT_CHARS / cpt),
        "characters": HELDOUT_CHARS,
        "characters_per_token": HELDOUT_CHARS / round(HELDOUT_CHARS / cpt),
        "unknown_share": unk,
        "round_trip_share": rt,
        "bits_per_character": bpc,
        "lossy": rt < 1 or unk > 0,
        "renyi_efficiency": 0.3 + vocab / 10_000,
        "vocab_used_share": 0.5,
        "mean_token_bytes": cpt,
    }
    n = HELDOUT_CHARS // block_chars
    row.update(
        block_chars=block_chars,
        block_characters=[block_chars] * n,
        block_nats=[math.log(2) * block_chars * (bpc + w) for w in block_pattern(spec, n)],
        blocks_exact=True,
    )
    bits = {"text": "data/tiny/valid.txt", "characters": HELDOUT_CHARS, "documents": 3, "results": [row]}
    (folder / "bits.json").write_text(json.dumps(bits))


def play(tool: str, args: list[str]) -> None:
    """Leave what ``tool`` (``data.py``, ``pretrain.py`` or ``bits.py``) would leave when run with ``args`` by
    compare.py, paths relative to the working folder: data.py the token files of ``--tokenizer`` (and
    valid.txt) in ``--out/NAME``, each holding ``x``; pretrain.py a finished run in
    ``--out-dir/CORPUS/--run-name`` not yet measured (no bits.json); bits.py the run's bits.json."""

    def value(flag: str) -> str | None:
        return args[args.index(flag) + 1] if flag in args else None

    if tool == "data.py":
        slug = value("--tokenizer").replace(":", "-")
        train_file = value("--train-file")
        name = value("--name") or (Path(train_file).stem if train_file else value("--corpus"))
        data = Path(value("--out")) / name
        data.mkdir(parents=True, exist_ok=True)
        for file in (f"train-{slug}.bin", f"valid-{slug}.bin", f"tokenizer-{slug}.json", "valid.txt"):
            (data / file).write_text("x")
    elif tool == "pretrain.py":
        corpus = Path(value("--data")).name
        folder = Path(value("--out-dir")) / corpus / value("--run-name")
        spec = value("--tokenizer")
        vocab, _, rest = FAKE[spec][:3]
        flops = float(value("--budget-flops") or float(value("--budget-tokens")) * (6 * rest + 6 * 96 * vocab))
        if "--pause-after-branches" in args:  # a --halving trunk: paused, its branches' folders paused too
            for name in [folder.name] + [a.split("=")[1] for a in args if a.startswith("--branch=")]:
                if name == folder.name or not (folder.parent / name / "ckpt.pt").is_file():
                    write_fake_run(folder.parent / name, spec, corpus, stop_reason=None, seed=int(value("--seed")))
            return
        write_fake_run(folder, spec, corpus, seed=int(value("--seed")), flops=flops)
        (folder / "bits.json").unlink()
    elif tool == "bits.py":
        folder = Path(args[0]).parent
        summary = json.loads((folder / "summary.json").read_text())
        seed, flops = summary["args"]["seed"], summary["flops"]
        blocks = int(value("--block-chars"))
        write_fake_run(folder, summary["spec"], summary["corpus"], seed=seed, block_chars=blocks, flops=flops)
    else:
        raise ValueError(f"fake_runs.play: no fake for {tool}")
