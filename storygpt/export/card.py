"""The model card (``README.md``) written into every exported Hugging Face folder.

It says what the checkpoint is (recipe, tokenizer SPEC, parameters, shape, steps, held-out bits per
character) and how to load it with stock ``transformers``; every figure comes from the checkpoint.
"""

from __future__ import annotations

from pathlib import Path

from storygpt.model.recipes import ARCH, RECIPES


def recipe_of(ckpt: dict, config) -> str:
    """The recipe a checkpoint was trained with: the name pretrain.py stored (ckpt.pt), else the recipe whose
    architecture parts the config has (best.pt stores no flags), else ``"custom"``, with the parts that differ
    from the nearest named recipe."""
    parts = {k: getattr(config, k) for k in ARCH}
    name = (ckpt.get("args") or {}).get("recipe")
    if name not in RECIPES:
        name = min(RECIPES, key=lambda r: sum(RECIPES[r][k] != v for k, v in parts.items()))
    changed = [f"{k}={v}" for k, v in parts.items() if RECIPES[name][k] != v]
    return f"`{name}`" + (f" with {', '.join(changed)}" if changed else "")


def _steps_and_bpc(ckpt: dict) -> tuple[int | None, float | None]:
    """Steps trained and the best held-out bits per character: best.pt stores ``step`` and ``val_bpc``,
    ckpt.pt its training ``state``."""
    if "step" in ckpt:
        return ckpt.get("step"), ckpt.get("val_bpc")
    state = ckpt.get("state") or {}
    best = state.get("best_bpc")
    return state.get("step"), best if best is not None and best != float("inf") else None


def load_path(out) -> str:
    """The exported folder as the card's loading example names it: :func:`storygpt.cli.show`'s path
    (relative to the working directory below it, else absolute), a relative one starting ``./`` so that
    ``from_pretrained`` reads it as a folder, never as a Hub id."""
    from storygpt.cli import show

    p = show(out)
    return p if Path(p).is_absolute() or p.startswith(("./", "../")) or p == "." else f"./{p}"


def model_card(ckpt: dict, model, tok, arch, name: str, checkpoint: str, path: str | None = None) -> str:
    """The ``README.md`` text of an export.

    Args:
        ckpt: the checkpoint dict (:func:`storygpt.checkpoint.load_checkpoint`'s third value).
        model: its :class:`storygpt.model.GPT`; tok: its tokenizer; arch: the Architecture written.
        name: the exported folder's name (the title); checkpoint: the file read.
        path: the folder's path in the loading example (:func:`load_path`; ``name`` when not given).
    """
    from storygpt.model.flops import parameter_split

    config = model.config
    emb, other = parameter_split(model)
    steps, bpc = _steps_and_bpc(ckpt)
    spec = ckpt.get("spec") or f"{tok.kind} (no SPEC recorded)"
    rows = [
        ("recipe", recipe_of(ckpt, config)),
        ("tokenizer", f"`{spec}`: {tok.kind}, {tok.vocab_size:,} tokens"),
        ("parameters", f"{emb + other:,} ({emb:,} in embeddings and output layer, {other:,} in the blocks)"),
        (
            "shape",
            f"{config.n_layer} layers, {config.n_head} heads, width {config.n_embd}, "
            f"context {config.block_size} tokens, {config.position} positions",
        ),
        ("training steps", "not recorded" if steps is None else f"{steps:,}"),
        (
            "held-out bits per character",
            "not measured"
            if bpc is None
            else f"{bpc:.4f} (pretrain.py's best held-out figure; bits.py measures all of valid.txt)",
        ),
        ("corpus", f"`{ckpt['corpus']}`" if ckpt.get("corpus") else "not recorded"),
        ("exported from", f"`{checkpoint}` as stock `{arch.hf_class}` (float32)"),
    ]
    table = "\n".join(f"| {k} | {v} |" for k, v in rows)
    path = name if path is None else path
    return f"""---
library_name: transformers
pipeline_tag: text-generation
tags:
- storygpt
---

# {name}

A small GPT trained with storygpt and exported by `export.py` as a stock `transformers` model (no custom code).

| | |
|---|---|
{table}

## Load

```python
from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline

tok = AutoTokenizer.from_pretrained("{path}")
model = AutoModelForCausalLM.from_pretrained("{path}")
generate = pipeline("text-generation", model=model, tokenizer=tok)
print(generate("The", max_new_tokens=40, do_sample=False)[0]["generated_text"])
```

The tokenizer puts `<|endoftext|>` before the text, as the model was trained (every document starts after
one), so `tok(text)` and the pipeline give the model what `sample.py` gives it; `add_special_tokens=False`
leaves it out. Generation ends at `<|endoftext|>`. Greedy generation gives `sample.py --temperature 0
--no-heal`'s tokens, and `tok.decode` gives storygpt's text.
"""
