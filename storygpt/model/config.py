"""The hyper-parameters of a run: :class:`GPTConfig` (the model; what each field does: gpt.py's docstring) and
:class:`OptimConfig` (the optimizer; what each field does: optim.py's docstring).

A field made with :func:`part` is a *recipe part*: its metadata (:class:`Part`) holds its help line, its value
in each recipe (storygpt/model/recipes.py) and its allowed values, so that pretrain.py's flag, its range check
and the recipes come from the field itself: a new part is its field here and its use (gpt.py or optim.py).
The field's default is what a checkpoint written before the part existed means, so such a run resumes
without it.  This module imports no torch: the tools check their flags before torch is imported.
"""

from __future__ import annotations

from dataclasses import Field, asdict, dataclass, field, fields

POSITIONS = ("learned", "rope")
NORMS = ("layernorm", "rmsnorm")
MLPS = ("gelu", "relu2")
KINDS = ("adamw", "muon")
SCHEDULES = ("cosine", "wsd")


#: The logit soft-cap's range (besides 0, off): float32 logits stay finite inside it.
MIN_SOFTCAP, MAX_SOFTCAP = 0.01, 1e4
#: The token embedding's initial standard deviation: above 0, at most 10.
MIN_EMBED_STD, MAX_EMBED_STD = 0.0, 10.0


@dataclass(frozen=True)
class Part:
    """What a recipe part is besides its field (see the module docstring).

    Attributes:
        help: pretrain.py's help line of its flag.
        values: recipe name -> the part's value in that recipe (a recipe not named: the field's default).
        choices: the allowed values of a text part, or None.
        range: ``(low, high[, "strict"])`` for :func:`storygpt.cli.check_ranges`, or None.
        only: the optimizer kind that reads it (its flag is refused with the other), or None.
        flag: the flag's name when it is not the field's (``--optimizer`` for ``OptimConfig.kind``).
    """

    help: str
    values: dict
    choices: tuple | None = None
    range: tuple | None = None
    only: str | None = None
    flag: str | None = None


def part(default, help: str, values: dict | None = None, **kw) -> Field:
    """A dataclass field that is a recipe part; ``kw``: the other :class:`Part` attributes."""
    return field(default=default, metadata={"part": Part(help, dict(values or {}), **kw)})


def only(kind: str) -> dict:
    """Metadata of a field that is not a recipe part but that only the optimizer ``kind`` reads (``--lr``)."""
    return {"only": kind}


def reader(f) -> str | None:
    """The optimizer kind that alone reads the dataclass field ``f`` (:func:`only`, ``Part.only``), or None."""
    p = f.metadata.get("part")
    return p.only if p is not None else f.metadata.get("only")


@dataclass
class GPTConfig:
    """Hyper-parameters of :class:`GPT`; stored in checkpoints as a plain dict.

    Attributes:
        vocab_size: number of token ids (the tokenizer's ``vocab_size``).
        block_size: the longest context (tokens) seen in training; with
            learned positions also the longest context the model accepts.
        n_layer: number of transformer blocks.
        n_head: attention heads per block; must divide ``n_embd``.
        n_embd: width of the residual stream.
        dropout: dropout probability (embeddings, attention, residual), 0-1.
        position: ``"learned"`` or ``"rope"``.
        rope_theta: base of the rotary frequencies, ``theta_i = rope_theta **
            (-2i / head_dim)`` (10000 in RoFormer).
        norm: ``"layernorm"`` (with gain and bias) or ``"rmsnorm"`` (parameter-free).
        qk_norm: RMSNorm (parameter-free) of queries and keys, per head.
        mlp: ``"gelu"`` or ``"relu2"`` (squared ReLU).
        tie_embeddings: the output layer shares ``wte``'s weight.
        zero_init: output projections of attention and MLP, and an untied output layer, start at 0.
        logit_softcap: 0 (off) or ``c`` in [0.01, 10000]: logits become ``c * tanh(logits / c)``.
        bias: biases in the linear layers and LayerNorms.
        embed_norm: parameter-free RMSNorm of the token embedding's output, before the first block
            (and before learned positions are added).
        embed_std: standard deviation of the token embedding's initial weights, in (0, 10]
            (an embedding tied to the output layer gets the output layer's 0.02).

    A checkpoint written before a field existed lacks it and loads with its default
    (for a recipe part, the value that reproduces the model of before it existed).
    """

    vocab_size: int = 256
    block_size: int = 128
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    position: str = "learned"
    rope_theta: float = 10000.0
    norm: str = part("layernorm", "layernorm or rmsnorm (parameter-free)", {"modern": "rmsnorm"}, choices=NORMS)
    qk_norm: bool = part(False, "RMSNorm of queries and keys (on/off)", {"modern": True})
    mlp: str = part("gelu", "gelu or relu2 (squared ReLU)", {"modern": "relu2"}, choices=MLPS)
    tie_embeddings: bool = part(True, "output layer tied to the token embedding (on/off)", {"modern": False})
    zero_init: bool = part(False, "output projections start at zero (on/off)", {"modern": True})
    logit_softcap: float = part(
        0.0,
        "logits c*tanh(z/c) with this c: 0 (off) or 0.01 .. 10000 (c > 0: no exact stock equivalent once trained, "
        "export.py refuses it)",
    )
    bias: bool = part(True, "biases in linear layers and LayerNorms (on/off)", {"modern": False})
    embed_norm: bool = part(
        False, "RMSNorm (parameter-free) of the token embedding, before the first block (on/off)", {"modern": True}
    )
    embed_std: float = part(
        0.02,
        "initial std of the token embedding (untied)",
        {"modern": 0.8},
        range=(MIN_EMBED_STD, MAX_EMBED_STD, "strict"),
    )

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"GPTConfig.{name} must be a positive integer, got {value!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"GPTConfig: n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")
        if self.position not in POSITIONS:
            raise ValueError(f"GPTConfig.position must be one of {POSITIONS}, got {self.position!r}")
        if self.position == "rope" and (self.n_embd // self.n_head) % 2:
            raise ValueError(
                f"GPTConfig: rotary positions need an even head size, got n_embd/n_head = {self.n_embd // self.n_head}"
            )
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(f"GPTConfig.dropout must be in [0, 1), got {self.dropout!r}")
        if not float(self.rope_theta) > 0:
            raise ValueError(f"GPTConfig.rope_theta must be positive, got {self.rope_theta!r}")
        if self.norm not in NORMS:
            raise ValueError(f"GPTConfig.norm must be one of {NORMS}, got {self.norm!r}")
        if self.mlp not in MLPS:
            raise ValueError(f"GPTConfig.mlp must be one of {MLPS}, got {self.mlp!r}")
        for name in ("qk_norm", "tie_embeddings", "zero_init", "bias", "embed_norm"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"GPTConfig.{name} must be True or False, got {getattr(self, name)!r}")
        c = float(self.logit_softcap)
        if not (c == 0.0 or MIN_SOFTCAP <= c <= MAX_SOFTCAP):  # outside, float32 logits overflow or turn nan
            raise ValueError(
                f"GPTConfig.logit_softcap must be 0 (off) or from {MIN_SOFTCAP:g} to {MAX_SOFTCAP:g}, "
                f"got {self.logit_softcap!r}"
            )

        if not MIN_EMBED_STD < float(self.embed_std) <= MAX_EMBED_STD:  # refuses nan as well
            raise ValueError(
                f"GPTConfig.embed_std must be above {MIN_EMBED_STD:g} and at most {MAX_EMBED_STD:g}, got {self.embed_std!r}"
            )

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    def to_dict(self) -> dict:
        """The config as a plain dict (ints, floats, str)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> GPTConfig:
        """Build a config from :meth:`to_dict` output; ValueError on unknown or missing keys."""
        if not isinstance(d, dict):
            raise ValueError(f"GPTConfig.from_dict needs a dict, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"GPTConfig: unknown keys {unknown}")
        return cls(**d)


@dataclass
class OptimConfig:
    """The optimizer of a run (storygpt/model/optim.py); stored in ``ckpt.pt`` as a plain dict (``optim``).

    Attributes:
        kind: ``"adamw"`` or ``"muon"`` (see optim.py's docstring).
        lr, min_lr: ``"adamw"``'s peak learning rate and the end of its schedule.
        weight_decay: AdamW weight decay of ``"adamw"`` (matrices and embeddings).
        matrix_lr, embed_lr, head_lr, gain_lr: peak learning rates of ``"muon"``'s groups; None: the
            width rule of optim.py's docstring.
        momentum: Muon's momentum.
        matrix_weight_decay: decoupled weight decay of Muon's block matrices (``"muon"``; each step
            multiplies them by ``1 - rate * matrix_weight_decay``).
        head_weight_decay: AdamW's decoupled weight decay of ``"muon"``'s head group (the untied output
            layer, or the tied embedding).
        min_lr_fraction: the end of ``"muon"``'s schedule, as a fraction of each group's peak.
        warmup_steps: steps of the schedule's linear warm-up (storygpt.train.loop.lr_at).
        schedule: ``"cosine"`` (a half cosine from the peak to the end over the budget) or ``"wsd"``
            (warm-up, stable, decay: the peak rate, then a linear decay to the end over the budget's last
            ``decay_fraction``; Hu et al. 2024, "MiniCPM"; Hägele et al. 2024).
        decay_fraction: ``"wsd"``'s decay, as a fraction of the budget, in (0, 1].

    Every group follows one schedule (storygpt.train.loop.lr_at) from its peak rate to its end rate; a rate
    means a learning rate everywhere.  The Newton-Schulz dtype of Muon is not a field: it follows the
    device (float32 on the CPU, bfloat16 elsewhere), so a run resumed on another device changes it.
    """

    kind: str = part(
        "adamw",
        "adamw (one --lr) or muon (Muon + AdamW, per-group rates)",
        {"modern": "muon"},
        choices=KINDS,
        flag="optimizer",
    )
    lr: float = field(default=3e-3, metadata=only("adamw"))
    weight_decay: float = field(default=0.1, metadata=only("adamw"))
    matrix_lr: float | None = part(
        None, "Muon's peak rate for block matrices (default 0.02)", range=(0, None), only="muon"
    )
    embed_lr: float | None = part(
        None, "AdamW peak rate for embeddings (default 0.2*(n_embd/768)^-0.5)", range=(0, None), only="muon"
    )
    head_lr: float | None = part(
        None, "AdamW peak rate for the output layer (default 0.004*(n_embd/768)^-0.5)", range=(0, None), only="muon"
    )
    gain_lr: float | None = None
    momentum: float = part(0.95, "Muon's momentum (Nesterov)", {"modern": 0.85}, range=(0, 0.999), only="muon")
    matrix_weight_decay: float = part(
        0.0,
        "Muon's decoupled weight decay of block matrices (x(1 - rate*this) a step)",
        range=(0, None),
        only="muon",
    )
    head_weight_decay: float = part(
        0.0, "AdamW's decoupled weight decay of the output layer", range=(0, None), only="muon"
    )
    min_lr_fraction: float = part(
        0.1, "the end of the schedule, as a fraction of each group's peak rate", range=(0, 1), only="muon"
    )
    min_lr: float = field(default=3e-4, metadata=only("adamw"))
    warmup_steps: int = part(20, "linear learning-rate warm-up steps (0: none)", {"modern": 5}, range=(0, None))
    schedule: str = part(
        "cosine",
        "after the warm-up: cosine (a half cosine over the budget) or wsd (the peak rate, then a linear "
        "decay over the budget's last --decay-fraction)",
        {"modern": "wsd"},
        choices=SCHEDULES,
    )
    decay_fraction: float = part(
        0.6,
        "with --schedule wsd: the last fraction of the budget over which the rate decays to its end",
        range=(0, 1, "strict"),
    )

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"OptimConfig.kind must be one of {KINDS}, got {self.kind!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> OptimConfig:
        """Build from :meth:`to_dict` output (a dict stored before ``min_lr`` existed lacks it: the default)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"OptimConfig: unknown keys {unknown}")
        return cls(**d)

    def rate_flags(self) -> str:
        """The flags of this kind's peak rates, for a message (``--lr``; ``--matrix-lr/--embed-lr/--head-lr``)."""
        names = [f.name for f in fields(self) if reader(f) == self.kind and f.name.endswith("lr")]
        return "/".join("--" + n.replace("_", "-") for n in names if n != "min_lr")
