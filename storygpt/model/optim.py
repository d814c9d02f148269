"""The optimizer of a training run: :class:`OptimConfig` and :func:`build_optimizer`, the one call the loop makes.

Two kinds:

* ``"adamw"`` (the ``gpt2`` recipe): one :class:`torch.optim.AdamW`, one learning rate (``--lr``,
  cosine to ``--min-lr``), betas (0.9, 0.95), eps 1e-8, weight decay on the matrices and
  embeddings only -- the optimizer storygpt always had, built in the same order (bit for bit).
* ``"muon"`` (the ``modern`` recipe): :class:`torch.optim.Muon` (Jordan et al. 2024, "Muon: an
  optimizer for hidden layers"; torch's implementation, Keller's ``"original"`` shape adjustment
  ``sqrt(max(1, rows / cols))``) for the 2-D weight matrices of the blocks, and
  :class:`torch.optim.AdamW` (betas (0.8, 0.95), eps 1e-10, no weight decay) for the token and
  position embeddings, the output layer, and any gains and biases.  On the CPU, Muon's Newton-Schulz
  iteration runs in float32 (:class:`Muon`): torch's runs it in bfloat16, which CPUs without native
  bfloat16 (AVX2, no AVX-512 BF16) emulate at 18x the cost (203 against 11 ms a step for the
  ``small`` preset's twelve block matrices on an AMD EPYC with AVX2: a modern step took 1.4x gpt2's).

Learning rates of ``"muon"``, scaled with the width ``d = n_embd`` (the rule of nanochat, Karpathy
2025, ``setup_optimizers``: AdamW rates scaled by ``(d / 768) ** -0.5``, Muon's not, since the
orthogonalised update has a fixed RMS whatever the width)::

    matrix_lr = 0.02                          Muon, every 2-D block weight (momentum 0.95, Nesterov)
    embed_lr  = 0.2   * (d / 768) ** -0.5     AdamW, wte (and wpe)
    head_lr   = 0.004 * (d / 768) ** -0.5     AdamW, the untied output layer (and a tied wte/lm_head)
    gain_lr   = 0.02  * (d / 768) ** -0.5     AdamW, LayerNorm gains and biases (our choice; the
                                              modern model has none)

Each ``"muon"`` group carries its peak rate as ``lr_scale``; the loop's schedule then gives a
multiplier (1 at the peak, ``min_lr_fraction`` at the end) and a group's rate is
``multiplier * lr_scale``.  Groups without ``lr_scale`` (``"adamw"``) get the schedule's rate itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import torch

KINDS = ("adamw", "muon")
#: nanochat's reference width for the AdamW learning rates.
REFERENCE_WIDTH = 768


@dataclass
class OptimConfig:
    """The optimizer of a run; stored in ``ckpt.pt`` as a plain dict (``optim``).

    Attributes:
        kind: ``"adamw"`` or ``"muon"`` (see the module docstring).
        lr: peak learning rate of ``"adamw"``.
        weight_decay: AdamW weight decay of ``"adamw"`` (matrices and embeddings).
        matrix_lr, embed_lr, head_lr, gain_lr: peak learning rates of ``"muon"``'s groups; None: the
            width rule of the module docstring.
        matrix_weight_decay: decoupled weight decay of Muon's block matrices (``"muon"``; each step
            multiplies them by ``1 - rate * matrix_weight_decay``).
        head_weight_decay: AdamW's decoupled weight decay of ``"muon"``'s head group (the untied output
            layer, or the tied embedding).
        min_lr_fraction: the end of ``"muon"``'s cosine schedule, as a fraction of each group's peak.
        momentum: Muon's momentum.

    The Newton-Schulz dtype of :class:`Muon` is not a field: it follows the device (float32 on the CPU,
    bfloat16 elsewhere), so a run resumed on another device changes it.
    """

    kind: str = "adamw"
    lr: float = 3e-3
    weight_decay: float = 0.1
    matrix_lr: float | None = None
    embed_lr: float | None = None
    head_lr: float | None = None
    gain_lr: float | None = None
    momentum: float = 0.95
    matrix_weight_decay: float = 0.0
    head_weight_decay: float = 0.0
    min_lr_fraction: float = 0.1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"OptimConfig.kind must be one of {KINDS}, got {self.kind!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> OptimConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"OptimConfig: unknown keys {unknown}")
        return cls(**d)

    def rates(self, n_embd: int) -> dict[str, float]:
        """The peak learning rates of ``"muon"``'s groups for width ``n_embd`` (given ones win)."""
        scale = (n_embd / REFERENCE_WIDTH) ** -0.5
        rule = {"matrix": 0.02, "embed": 0.2 * scale, "head": 0.004 * scale, "gain": 0.02 * scale}
        given = {"matrix": self.matrix_lr, "embed": self.embed_lr, "head": self.head_lr, "gain": self.gain_lr}
        return {k: (given[k] if given[k] is not None else rule[k]) for k in rule}


def orthogonalize(g: torch.Tensor, coefficients: tuple, steps: int, eps: float, dtype: torch.dtype) -> torch.Tensor:
    """The quintic Newton-Schulz iteration of Muon (Jordan et al. 2024), as torch.optim.Muon's, in ``dtype``.

    ``g``: a 2-D (rows, cols) update; returns a (rows, cols) tensor of ``dtype`` whose singular values
    are near 1 (roughly U V^T of g's SVD).
    """
    a, b, c = coefficients
    x = g.to(dtype)
    if g.size(0) > g.size(1):
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.T
        x = torch.addmm(x, torch.addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if g.size(0) > g.size(1) else x


class Muon(torch.optim.Muon):
    """:class:`torch.optim.Muon` (Nesterov momentum, decoupled weight decay, Keller's ``"original"``
    rate adjustment ``sqrt(max(1, rows / cols))``) with the Newton-Schulz iteration in ``ns_dtype``.

    With ``torch.bfloat16`` it is torch's step itself; with another dtype, the same update written out
    (the same ``momentum_buffer`` state, so state dicts are interchangeable).
    """

    def __init__(self, params, ns_dtype: torch.dtype = torch.bfloat16, **kw):
        if kw.get("adjust_lr_fn", "original") != "original":
            raise ValueError("storygpt's Muon supports adjust_lr_fn='original' only")
        super().__init__(params, **kw)
        self.ns_dtype = ns_dtype

    @torch.no_grad()
    def step(self, closure=None):
        if closure is not None:
            raise ValueError("Muon.step takes no closure")
        return super().step() if self.ns_dtype == torch.bfloat16 else self.step_in(self.ns_dtype)

    @torch.no_grad()
    def step_in(self, ns_dtype: torch.dtype) -> None:
        """torch.optim.Muon's step written out, with the Newton-Schulz iteration in ``ns_dtype``."""
        for group in self.param_groups:
            lr, mu = group["lr"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p.grad)
                buf = state["momentum_buffer"]
                buf.lerp_(p.grad, 1 - mu)
                update = p.grad.lerp(buf, mu) if group["nesterov"] else buf
                update = orthogonalize(update, group["ns_coefficients"], group["ns_steps"], group["eps"], ns_dtype)
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(update, alpha=-lr * max(1.0, p.size(0) / p.size(1)) ** 0.5)


class MuonAdamW:
    """Muon for the block matrices and AdamW for the rest, driven as one optimizer.

    Offers what the training loop and :class:`torch.amp.GradScaler` use: ``param_groups`` (Muon's,
    then AdamW's: the same dicts), ``step``, ``zero_grad``, ``state_dict`` (``{"muon": ..., "adamw":
    ...}``, momentum buffers and Adam moments included) and ``load_state_dict``.
    """

    def __init__(self, muon: torch.optim.Muon, adamw: torch.optim.AdamW):
        self.muon, self.adamw = muon, adamw
        self.param_groups = muon.param_groups + adamw.param_groups
        self.state = {}  # GradScaler reads no state; kept for duck typing

    @torch.no_grad()
    def step(self, closure=None):
        if closure is not None:
            raise ValueError("MuonAdamW.step takes no closure")
        self.muon.step()
        self.adamw.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.muon.zero_grad(set_to_none=set_to_none)
        self.adamw.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict:
        return {"muon": self.muon.state_dict(), "adamw": self.adamw.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` output.

        Raises:
            ValueError: a state of another optimizer (e.g. a ``gpt2`` run's AdamW).
        """
        if set(state) != {"muon", "adamw"}:
            raise ValueError("the stored optimizer state is not Muon + AdamW (a run of another recipe?)")
        self.muon.load_state_dict(state["muon"])
        self.adamw.load_state_dict(state["adamw"])
        self.param_groups = self.muon.param_groups + self.adamw.param_groups


def split_parameters(model) -> dict[str, list[torch.nn.Parameter]]:
    """``{"matrix", "embed", "head", "gain"}`` -> parameters of a :class:`storygpt.model.GPT`.

    matrix: 2-D weights inside the blocks; embed: ``wte`` (unless tied) and ``wpe``; head: the
    untied ``lm_head`` or the tied ``wte``; gain: every other (1-D) parameter.
    """
    tied = model.lm_head.weight is model.wte.weight
    embed = [] if tied else [model.wte.weight]
    if model.wpe is not None:
        embed.append(model.wpe.weight)
    head = [model.lm_head.weight]
    special = {id(p) for p in embed + head}
    matrix = [p for p in model.blocks.parameters() if p.dim() == 2]
    special |= {id(p) for p in matrix}
    gain = [p for p in model.parameters() if id(p) not in special]
    return {"matrix": matrix, "embed": embed, "head": head, "gain": gain}


def build_optimizer(model, config: OptimConfig):
    """The optimizer for ``model`` (a :class:`storygpt.model.GPT`) described by ``config``.

    Returns:
        ``"adamw"``: a :class:`torch.optim.AdamW` with two groups (decay: parameters of 2 or more
        dimensions; no decay: the rest), as storygpt always built it.  ``"muon"``: a
        :class:`MuonAdamW`; each group has ``lr_scale``, its peak learning rate.
    """
    if config.kind == "adamw":
        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        return torch.optim.AdamW(
            [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=config.lr,
            betas=(0.9, 0.95),
            eps=1e-8,
        )
    rates = config.rates(model.config.n_embd)
    parts = split_parameters(model)
    cpu = parts["matrix"][0].device.type == "cpu"
    muon = Muon(
        [{"params": parts["matrix"], "lr_scale": rates["matrix"]}],
        ns_dtype=torch.float32 if cpu else torch.bfloat16,
        lr=rates["matrix"],
        weight_decay=config.matrix_weight_decay,
        momentum=config.momentum,
        nesterov=True,
        adjust_lr_fn="original",
    )
    decay = {"head": config.head_weight_decay}
    groups = [
        {"params": parts[k], "lr": rates[k], "lr_scale": rates[k], "weight_decay": decay.get(k, 0.0)}
        for k in ("embed", "head", "gain")
        if parts[k]
    ]
    adamw = torch.optim.AdamW(groups, betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0)
    return MuonAdamW(muon, adamw)


def schedule_peak(config: OptimConfig, lr: float, min_lr: float) -> tuple[float, float]:
    """``(peak, end)`` of the loop's schedule: the learning rates for ``"adamw"``, the multipliers
    ``(1, config.min_lr_fraction)`` for ``"muon"`` (whose groups scale them by their ``lr_scale``)."""
    return (lr, min_lr) if config.kind == "adamw" else (1.0, config.min_lr_fraction)


def group_lr(group: dict, lr: float) -> float:
    """The learning rate of ``group`` when the schedule gives ``lr`` (see the module docstring)."""
    return lr * group["lr_scale"] if "lr_scale" in group else lr
