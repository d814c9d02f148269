"""Training recipes by name (``pretrain.py --recipe NAME``), and :class:`Recipe`: a recipe as one value.

* ``gpt2``: GPT-2's architecture with one AdamW rate: storygpt before recipes, bit for bit (older
  checkpoints are ``gpt2`` runs).
* ``modern``: the nanochat-style model (RMSNorm, QK-norm, ReLU^2, untied, zero-init, no biases,
  embedding norm with std 0.8) with Muon + AdamW (storygpt/model/optim.py); no logit soft-cap.
The parts are the fields of ``GPTConfig`` and ``OptimConfig`` made with
:func:`storygpt.model.config.part` (value per recipe, help, allowed values, a pretrain.py flag);
nothing lists them by hand.  Why these parts (ablations): docs/training.md; export: docs/export.md.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, dataclass, fields

from ..cli import number_error, range_text
from .config import GPTConfig, OptimConfig, reader

#: The recipes, by name (each part's value in a recipe: its field's ``Part.values``).
NAMES = ("gpt2", "modern")
#: What a run stored before recipes existed was.
LEGACY = "gpt2"
#: pretrain.py's (and compare.py's) ``--recipe`` default: at the compare.py default budget ``modern``
#: reached ``gpt2``'s held-out bits/char with 22-28% of its FLOPs and 30-38% of its CPU time, and ended
#: 0.18-0.23 bits/char lower (docs/training.md, two seeds).
DEFAULT = "modern"


def _parts(cls) -> list:
    """``[(field, Part), ...]`` of a config class, in field order."""
    return [(f, f.metadata["part"]) for f in fields(cls) if "part" in f.metadata]


def _flag(f, p) -> str:
    """The pretrain.py flag's dest of part field ``f``."""
    return p.flag or f.name


#: GPTConfig fields that are recipe parts.
ARCH = tuple(f.name for f, _ in _parts(GPTConfig))
#: name -> {flag dest: value} of every part (``RECIPES["modern"]["optimizer"] == "muon"``).
RECIPES: dict[str, dict] = {
    name: {_flag(f, p): p.values.get(name, f.default) for cls in (GPTConfig, OptimConfig) for f, p in _parts(cls)}
    for name in NAMES
}
#: OptimConfig fields that are recipe parts.
OPTIM_PARTS = tuple(f.name for f, _ in _parts(OptimConfig))
#: pretrain.py flags (dest names) that only one optimizer kind reads.
OPTIMIZER_FLAGS = {kind: tuple(f.name for f in fields(OptimConfig) if reader(f) == kind) for kind in ("adamw", "muon")}
#: The recipe whose optimizer each kind is.
RECIPE_OF = {RECIPES[name]["optimizer"]: name for name in NAMES}


def _shown(v) -> str:
    return ("on" if v else "off") if isinstance(v, bool) else "default" if v is None else str(v)


@dataclass(frozen=True)
class Recipe:
    """A recipe with its parts resolved: the name it was asked by, the model's parts, the optimizer.

    Built once, from flags (:meth:`from_flags`) or from a checkpoint (:meth:`from_checkpoint`); printed
    (``str``: the name and the parts that differ from it), recorded (:meth:`to_dict`) and compared
    (``==``, :meth:`differences`) as one object.

    Attributes:
        name: ``gpt2`` or ``modern``.
        model: GPTConfig part -> value (every field of :data:`ARCH`).
        optim: the optimizer, an :class:`OptimConfig`.
    """

    name: str
    model: dict
    optim: OptimConfig

    @classmethod
    def named(cls, name: str) -> Recipe:
        """The recipe ``name`` as it is defined.

        Raises:
            ValueError: an unknown name, naming the known ones.
        """
        return cls.from_flags({"recipe": name})

    @classmethod
    def from_flags(cls, flags: dict, explicit: set[str] = frozenset()) -> Recipe:
        """The recipe ``flags["recipe"]`` with the part flags of ``flags`` that are not None in place of its
        values, and the other OptimConfig fields (``lr``, ``min_lr``, ``weight_decay``) from ``flags`` when there.

        ``explicit``: the flags given on the command line; one that only the other optimizer kind reads is
        refused.

        Raises:
            ValueError: an unknown recipe; a flag of the other optimizer kind in ``explicit`` (one line
                naming both kinds' recipes and this kind's flags); ``--decay-fraction`` in ``explicit``
                without the ``wsd`` schedule.
        """
        name = flags.get("recipe")
        if name not in NAMES:
            raise ValueError(f"unknown recipe {name!r}; known: {', '.join(NAMES)}")
        given = {k: v for k, v in flags.items() if v is not None}
        parts = {k: given.get(k, v) for k, v in RECIPES[name].items()}
        kind = parts["optimizer"]
        wrong = foreign_flag(kind, explicit, name)
        if wrong:
            raise ValueError(wrong)
        if "decay_fraction" in explicit and parts["schedule"] != "wsd":
            raise ValueError(f"--decay-fraction is wsd's; recipe {name} here has --schedule {parts['schedule']}")
        model = {k: parts[k] for k in ARCH}
        optim = {f.name: parts[_flag(f, p)] for f, p in _parts(OptimConfig)}
        optim |= {f.name: given[f.name] for f in fields(OptimConfig) if "part" not in f.metadata and f.name in given}
        return cls(name, model, OptimConfig(**optim))

    @classmethod
    def from_checkpoint(cls, ckpt: dict) -> Recipe:
        """The recipe a ``ckpt.pt`` was trained with, from its stored flags (:func:`legacy_args`: a run from
        before recipes is ``gpt2``, a run from before a part existed is without it)."""
        return cls.from_flags(legacy_args(ckpt["args"]))

    def flags(self) -> dict:
        """pretrain.py's flags (dest -> value) of the recipe: ``recipe``, every part, lr, min_lr, weight_decay."""
        optim = self.optim.to_dict()
        parts = {_flag(f, p): optim[f.name] for f, p in _parts(OptimConfig)}
        rest = {f.name: optim[f.name] for f in fields(OptimConfig) if reader(f) and "part" not in f.metadata}
        return {"recipe": self.name, **self.model, **parts, **rest}

    def config(self, **shape) -> GPTConfig:
        """The model's :class:`GPTConfig`: ``shape`` (vocab_size, n_layer, ..., position) and the parts."""
        return GPTConfig(**shape, **self.model)

    def to_dict(self) -> dict:
        """``{"name", "model", "optim"}`` of plain values (recorded in summary.json)."""
        return {"name": self.name, "model": dict(self.model), "optim": self.optim.to_dict()}

    def parts(self) -> dict:
        """Part flag -> value, as :data:`RECIPES` lists them."""
        return {k: v for k, v in self.flags().items() if k in RECIPES[self.name]}

    def differences(self, other: Recipe) -> list[str]:
        """``"part: mine -> other's"`` for every part (and the name) that differs."""
        a, b = {"recipe": self.name, **self.parts()}, {"recipe": other.name, **other.parts()}
        return [f"{k}: {_shown(a[k])} -> {_shown(b[k])}" for k in a if a[k] != b[k]]

    def __str__(self) -> str:
        changed = [f"{k}={_shown(v)}" for k, v in self.parts().items() if v != RECIPES[self.name][k]]
        return " ".join([self.name, *(["+", *changed] if changed else [])])


def foreign_flag(optimizer: str, explicit: set[str], recipe: str | None = None) -> str | None:
    """A one-line error when a flag of the other optimizer kind was given explicitly, else None; ``recipe``: the
    run's recipe, named in the message (with ``--optimizer`` when the run's optimizer is not the recipe's)."""
    other = "muon" if optimizer == "adamw" else "adamw"
    wrong = [f for f in OPTIMIZER_FLAGS[other] if f in explicit]
    if not wrong:
        return None
    flag = "--" + wrong[0].replace("_", "-")
    own = ", ".join("--" + f.replace("_", "-") for f in OPTIMIZER_FLAGS[optimizer])
    recipe = recipe or RECIPE_OF[optimizer]
    run = f"--recipe {recipe}" + (f" --optimizer {optimizer}" if RECIPES[recipe]["optimizer"] != optimizer else "")
    return (
        f"{flag} is a flag of the {other} optimizer (--optimizer {other}, as in --recipe {RECIPE_OF[other]}); "
        f"this run ({run}) uses the {optimizer} optimizer, which takes {own}"
    )


def legacy_args(saved: dict) -> dict:
    """A stored run's flags with the recipe flags filled in: a run from before recipes is ``gpt2``, and a
    part the run does not record takes its field's default (the model or optimizer of before the part).
    A part stored as None is left None (no version wrote one; :func:`stored_error` refuses it)."""
    out = dict(saved)
    out.setdefault("recipe", LEGACY)
    for cls in (GPTConfig, OptimConfig):
        for f, p in _parts(cls):
            out.setdefault(_flag(f, p), None if f.default is MISSING else f.default)
    return out


def stored_error(saved: dict) -> str | None:
    """Why a stored run's flags (after :func:`legacy_args`) cannot be its recipe: an unknown recipe, or a part
    of the wrong type, outside its choices or its range (an edited or damaged checkpoint); else None.  The
    message names the flag, e.g. ``--momentum must be in 0 .. 0.999, got nan``."""
    if saved.get("recipe") not in NAMES:
        return f"--recipe {saved.get('recipe')!r} is not a recipe (known: {', '.join(NAMES)})"
    for cls in (GPTConfig, OptimConfig):
        for f, p in _parts(cls):
            dest = _flag(f, p)
            flag, value = "--" + dest.replace("_", "-"), saved.get(dest)
            if value is None and f.default is None:
                continue
            if p.choices:
                if value not in p.choices:
                    return f"{flag} must be one of {', '.join(p.choices)}, got {value!r}"
            elif isinstance(f.default, bool):
                if not isinstance(value, bool):
                    return f"{flag} must be on or off (a bool), got {value!r}"
            elif why := number_error(flag, value, isinstance(f.default, int), p.range):
                return why
    return model_error(saved)


def model_error(flags: dict) -> str | None:
    """Why the model parts in ``flags`` (dest -> value) make no :class:`GPTConfig` (its own checks: the
    soft-cap's 0 or 0.01 .. 10000, the embedding's std), naming the flag; else None."""
    try:
        GPTConfig(**{k: flags[k] for k in ARCH})
    except (ValueError, TypeError) as e:
        return re.sub(r"GPTConfig\.(\w+)", lambda m: "--" + m.group(1).replace("_", "-"), str(e))
    return None


def flag_rows(on_off) -> list[tuple]:
    """pretrain.py's flag rows ``(flag, type, default, help)`` of the parts; ``on_off``: the yes/no type.

    The help gives the allowed range and each recipe's value (one value when every recipe has the same);
    a part one optimizer kind reads names its value in the recipes of the other kind given ``--optimizer``."""
    rows = []
    for cls in (GPTConfig, OptimConfig):
        for f, p in _parts(cls):
            flag = _flag(f, p)
            typ = str if p.choices else on_off if isinstance(f.default, bool) else type(f.default or 0.0)
            mine = [n for n in NAMES if p.only in (None, RECIPES[n]["optimizer"])]
            shown = {n: RECIPES[n][flag] for n in mine if RECIPES[n][flag] is not None}
            if p.only and f.default is not None:
                shown |= {f"{n} --optimizer {p.only}": f.default for n in NAMES if n not in mine}
            if len(NAMES) > 1 and len(shown) == len(NAMES) and len(set(map(_shown, shown.values()))) == 1:
                values = f"every recipe: {_shown(next(iter(shown.values())))}"
            else:
                values = ", ".join(f"{n}: {_shown(v)}" for n, v in shown.items())
            bounds = f", {range_text(p.range)}" if p.range else ""
            help = f"{p.only or 'part'}: {p.help}{bounds}" + (f"; {values}" if values else "")
            rows.append(("--" + flag.replace("_", "-"), typ, None, help))
    return rows


def flag_choices() -> dict:
    """``{flag: allowed values}`` of the text parts (for pretrain.py's parser)."""
    return {
        "--" + _flag(f, p).replace("_", "-"): list(p.choices)
        for cls in (GPTConfig, OptimConfig)
        for f, p in _parts(cls)
        if p.choices
    }


def flag_ranges() -> dict:
    """``{dest: (low, high[, "strict"])}`` of the number parts (for :func:`storygpt.cli.check_ranges`)."""
    return {_flag(f, p): p.range for cls in (GPTConfig, OptimConfig) for f, p in _parts(cls) if p.range}
