"""The optimizer of a training run: :class:`OptimConfig` and :func:`build_optimizer`, the one call the loop makes.

* ``"adamw"`` (the ``gpt2`` recipe): one :class:`torch.optim.AdamW` (betas (0.9, 0.95), eps 1e-8,
  weight decay on matrices and embeddings), built as storygpt always built it (bit for bit).
* ``"muon"`` (the ``modern`` recipe): :class:`torch.optim.Muon` (Jordan et al. 2024) for the blocks'
  2-D weights, AdamW for embeddings, output layer, gains and biases, with nanochat's width rule
  (Karpathy 2025: AdamW rates times ``(n_embd / 768) ** -0.5``).  On the CPU the Newton-Schulz
  iteration runs in float32 (:class:`Muon`).
Every group carries ``peak_lr`` and ``end_lr``; the loop's schedule moves all on one curve.

The rates, why float32 on CPUs without AVX-512 BF16, and the ablations: docs/training.md.
"""

from __future__ import annotations

import torch

from .config import KINDS, OptimConfig

__all__ = ["KINDS", "Muon", "MuonAdamW", "OptimConfig", "build_optimizer", "rates", "split_parameters"]

#: nanochat's reference width for the AdamW learning rates.
REFERENCE_WIDTH = 768


def rates(config: OptimConfig, n_embd: int) -> dict[str, float]:
    """The peak learning rates of ``"muon"``'s groups for width ``n_embd`` (the given ones win)."""
    scale = (n_embd / REFERENCE_WIDTH) ** -0.5
    rule = {"matrix": 0.02, "embed": 0.2 * scale, "head": 0.004 * scale, "gain": 0.02 * scale}
    given = {"matrix": config.matrix_lr, "embed": config.embed_lr, "head": config.head_lr, "gain": config.gain_lr}
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


def with_schedule(optimizer, ends: list[tuple[float, float]]):
    """Give group i of ``optimizer`` (a torch optimizer) ``peak_lr, end_lr = ends[i]``, again after every
    ``load_state_dict`` (a state stored before these keys existed lacks them); returns ``optimizer``."""

    def keep(opt) -> None:
        for group, (peak, end) in zip(opt.param_groups, ends):
            group["peak_lr"], group["end_lr"] = peak, end

    keep(optimizer)
    optimizer.register_load_state_dict_post_hook(keep)
    return optimizer


def build_optimizer(model, config: OptimConfig):
    """The optimizer for ``model`` (a :class:`storygpt.model.GPT`) described by ``config``.

    Returns:
        ``"adamw"``: a :class:`torch.optim.AdamW` with two groups (decay: parameters of 2 or more
        dimensions; no decay: the rest), as storygpt always built it.  ``"muon"``: a
        :class:`MuonAdamW`.  Every group has ``peak_lr`` and ``end_lr`` (the module docstring).
    """
    if config.kind == "adamw":
        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        adamw = torch.optim.AdamW(
            [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=config.lr,
            betas=(0.9, 0.95),
            eps=1e-8,
        )
        return with_schedule(adamw, [(config.lr, config.min_lr)] * 2)
    peak = rates(config, model.config.n_embd)
    parts = split_parameters(model)
    cpu = parts["matrix"][0].device.type == "cpu"
    muon = Muon(
        [{"params": parts["matrix"]}],
        ns_dtype=torch.float32 if cpu else torch.bfloat16,
        lr=peak["matrix"],
        weight_decay=config.matrix_weight_decay,
        momentum=config.momentum,
        nesterov=True,
        adjust_lr_fn="original",
    )
    decay = {"head": config.head_weight_decay}
    adamw_parts = [k for k in ("embed", "head", "gain") if parts[k]]
    groups = [{"params": parts[k], "lr": peak[k], "weight_decay": decay.get(k, 0.0)} for k in adamw_parts]
    adamw = torch.optim.AdamW(groups, betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0)
    end = config.min_lr_fraction
    with_schedule(muon, [(peak["matrix"], peak["matrix"] * end)])
    with_schedule(adamw, [(peak[k], peak[k] * end) for k in adamw_parts])
    return MuonAdamW(muon, adamw)
