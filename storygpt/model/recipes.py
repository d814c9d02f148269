"""Training recipes by name (``pretrain.py --recipe NAME``): a model architecture and an optimizer.

* ``gpt2``: GPT-2's architecture (LayerNorm, GELU, tied embeddings, biases) trained with one AdamW
  learning rate: storygpt's model and optimizer before recipes existed, bit for bit.  Checkpoints
  written before recipes existed are ``gpt2`` runs.
* ``modern``: the nanochat-style model (parameter-free RMSNorm, RMSNorm on queries and keys,
  ReLU^2, untied embeddings, zero-initialised output projections, no biases) trained with Muon +
  AdamW (storygpt/model/optim.py).  nanochat's logit soft-cap (``--logit-softcap 15``) is left out:
  at the compare.py default budget it cost 23-29% more CPU per run for no lower bits/char
  (docs/training.md, "Ablations"), and without it the model is exactly Qwen3 for export.

Every part is a :class:`storygpt.model.GPTConfig` field (``ARCH``) or the optimizer kind, and a
flag of pretrain.py, so one part can be switched at a time (``--recipe gpt2 --optimizer muon``).
"""

from __future__ import annotations

#: The architecture fields a recipe sets (GPTConfig field -> value) and its optimizer kind.
RECIPES: dict[str, dict] = {
    "gpt2": dict(
        norm="layernorm",
        qk_norm=False,
        mlp="gelu",
        tie_embeddings=True,
        zero_init=False,
        logit_softcap=0.0,
        bias=True,
        optimizer="adamw",
        matrix_weight_decay=0.0,
        head_weight_decay=0.0,
        min_lr_fraction=0.1,
    ),
    "modern": dict(
        norm="rmsnorm",
        qk_norm=True,
        mlp="relu2",
        tie_embeddings=False,
        zero_init=True,
        logit_softcap=0.0,
        bias=False,
        optimizer="muon",
        matrix_weight_decay=0.0,
        head_weight_decay=0.0,
        min_lr_fraction=0.1,
    ),
}
#: GPTConfig fields a recipe sets (the others go to OptimConfig).
ARCH = ("norm", "qk_norm", "mlp", "tie_embeddings", "zero_init", "logit_softcap", "bias")
#: pretrain.py flags (dest names) that only one optimizer kind reads.
OPTIMIZER_FLAGS = {
    "adamw": ("lr", "min_lr", "weight_decay"),
    "muon": ("matrix_lr", "embed_lr", "head_lr", "matrix_weight_decay", "head_weight_decay", "min_lr_fraction"),
}
#: The recipe whose optimizer each kind is.
RECIPE_OF = {"adamw": "gpt2", "muon": "modern"}
#: What a run stored before recipes existed was.
LEGACY = "gpt2"
#: pretrain.py's (and compare.py's) ``--recipe`` default: at the compare.py default budget ``modern``
#: reached ``gpt2``'s held-out bits/char with 22-28% of its FLOPs and 30-38% of its CPU time, and ended
#: 0.18-0.23 bits/char lower (docs/training.md, two seeds).
DEFAULT = "modern"


def parts(name: str, given: dict) -> dict:
    """The recipe ``name``'s parts (:data:`RECIPES`), with the non-None values of ``given`` in their place.

    Raises:
        ValueError: an unknown recipe, naming the known ones.
    """
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {name!r}; known: {', '.join(RECIPES)}")
    return {k: (given[k] if given.get(k) is not None else v) for k, v in RECIPES[name].items()}


def foreign_flag(optimizer: str, explicit: set[str]) -> str | None:
    """A one-line error when a flag of the other optimizer kind was given explicitly, else None."""
    other = "muon" if optimizer == "adamw" else "adamw"
    wrong = [f for f in OPTIMIZER_FLAGS[other] if f in explicit]
    if not wrong:
        return None
    flag = "--" + wrong[0].replace("_", "-")
    own = ", ".join("--" + f.replace("_", "-") for f in OPTIMIZER_FLAGS[optimizer])
    return (
        f"{flag} is a flag of the {other} optimizer (--recipe {RECIPE_OF[other]}); this run uses the "
        f"{optimizer} optimizer (--recipe {RECIPE_OF[optimizer]}), which takes {own}"
    )


def legacy_args(saved: dict) -> dict:
    """A stored run's flags with the recipe flags filled in: a run from before recipes is ``gpt2``."""
    out = dict(saved)
    out.setdefault("recipe", LEGACY)
    for k, v in RECIPES[LEGACY].items():
        out.setdefault(k, v)
    for k in OPTIMIZER_FLAGS["muon"]:
        out.setdefault(k, None)
    return out
