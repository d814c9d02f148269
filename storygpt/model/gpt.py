"""A decoder-only transformer (GPT) with learned or rotary position embeddings.

GPT-2 (Radford et al. 2019) with pre-norm blocks: token embedding ``wte``, learned positions
``wpe`` or rotary ones (RoFormer, Su et al. 2021, arXiv:2104.09864; :func:`apply_rotary`),
``n_layer`` causal attention + MLP blocks, a final norm and an output layer tied to ``wte``.
That is the ``gpt2`` recipe, :class:`GPTConfig` at its defaults; the ``modern`` recipe
(storygpt/model/recipes.py) switches one field per part: ``norm``, ``qk_norm``, ``mlp``,
``tie_embeddings``, ``zero_init``, ``logit_softcap``, ``bias``, ``embed_norm``/``embed_std``.

:meth:`GPT.generate` and :meth:`GPT.stream` keep a key/value cache (docs/sampling.md).
The parts and their sources: docs/training.md; the layout: docs/design.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import GPTConfig


def rotary_cos_sin(positions: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Cosines and sines of the rotary angles.

    Args:
        positions: (T,) integer tensor of absolute positions.
        head_dim: size of one head (even).
        theta: frequency base.

    Returns:
        ``(cos, sin)``, each float32 of shape (T, head_dim // 2): entry
        ``[t, i]`` is ``cos/sin(positions[t] * theta ** (-2 i / head_dim))``.
        Angles are computed in float64 so large positions keep their precision.
    """
    inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64, device=positions.device) / head_dim)
    angles = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    return angles.cos().float(), angles.sin().float()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each consecutive pair of dimensions of ``x`` (RoFormer, eq. 14-15).

    Pair ``i`` = dims ``(2i, 2i+1)`` of a vector at position ``m`` is rotated by
    the angle ``m * theta_i``::

        [x'_2i  ]   [cos -sin] [x_2i  ]
        [x'_2i+1] = [sin  cos] [x_2i+1]

    Args:
        x: (B, n_head, T, head_dim), any float dtype.
        cos, sin: (T, head_dim // 2) from :func:`rotary_cos_sin`.

    Returns:
        A tensor like ``x`` (same shape and dtype); computed in float32.
    """
    xf = x.float().unflatten(-1, (-1, 2))
    x0, x1 = xf[..., 0], xf[..., 1]
    out = torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)
    return out.flatten(-2).to(x.dtype)


class RMSNorm(nn.Module):
    """Parameter-free RMSNorm over the last dimension: ``x / sqrt(mean(x**2) + eps)``, eps = dtype's eps."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.size(-1),))


def make_norm(config: GPTConfig) -> nn.Module:
    """The block and final norm of ``config``: LayerNorm (gain, and bias if ``config.bias``) or RMSNorm."""
    if config.norm == "rmsnorm":
        return RMSNorm()
    return nn.LayerNorm(config.n_embd, bias=config.bias)


class SoftCap(torch.autograd.Function):
    """``y = cap * tanh(u)`` with the derivative from the output: ``dy/du = cap - y**2 / cap``.

    Autograd of ``cap * tanh(z / cap)`` makes three (B, T, vocab_size) temporaries forward and
    three backward; this makes one each way (forward: tanh, then scale in place; backward: one
    ``addcmul``, then multiply in place), saving only ``y``.  ``u`` is ``z / cap``, the division
    done on the (much smaller) input of the output layer by :class:`SoftCappedLinear`.
    """

    @staticmethod
    def forward(ctx, u: torch.Tensor, cap: float) -> torch.Tensor:
        y = torch.tanh(u).mul_(cap)
        ctx.save_for_backward(y)
        ctx.cap = cap
        return y

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (y,) = ctx.saved_tensors
        slope = torch.addcmul(torch.tensor(ctx.cap, dtype=y.dtype), y, y, value=-1.0 / ctx.cap)
        return slope.mul_(grad), None


class SoftCappedLinear(nn.Linear):
    """The output layer with soft-capped logits: ``cap * tanh((x / cap) W^T)`` (Gemma 2, nanochat).

    Same parameters (and state_dict keys) as a bias-free :class:`torch.nn.Linear`, so every path
    that computes logits from ``lm_head`` (training, ``storygpt.eval.bits``, sampling) gets the cap.
    Dividing the input by ``cap`` (n_embd values per token) instead of the logits (vocab_size per
    token) and :class:`SoftCap` keep the cap's CPU cost down (docs/training.md measures it).
    """

    def __init__(self, in_features: int, out_features: int, cap: float):
        super().__init__(in_features, out_features, bias=False)
        self.cap = float(cap)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return SoftCap.apply(F.linear(x * (1.0 / self.cap), self.weight), self.cap)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention, optionally with rotary positions and a KV cache."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.n_head = config.n_head
        self.head_dim = config.head_dim
        self.rope = config.position == "rope"
        self.qk_norm = config.qk_norm
        self.dropout = config.dropout
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(
        self,
        x: torch.Tensor,
        rotary: tuple[torch.Tensor, torch.Tensor] | None = None,
        past: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Attend.

        Args:
            x: (B, T, n_embd) float.
            rotary: ``(cos, sin)`` for the T new positions (rope only).
            past: cached ``(k, v)``, each (B, n_head, T_past, head_dim), of the
                tokens just before ``x`` (keys already rotated), or None.

        Returns:
            ``(y, (k, v))``: y is (B, T, n_embd); k, v are (B, n_head,
            T_past + T, head_dim), the cache extended with the new tokens.
        """
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        if self.qk_norm:  # before the rotation (which keeps the norm): the cache holds normed, rotated keys
            q = F.rms_norm(q, (self.head_dim,))
            k = F.rms_norm(k, (self.head_dim,))
        if self.rope:
            cos, sin = rotary
            q = apply_rotary(q, cos, sin)
            k = apply_rotary(k, cos, sin)
        mask, causal = None, True
        if past is not None and past[0].size(2) > 0:
            k = torch.cat((past[0], k), dim=2)
            v = torch.cat((past[1], v), dim=2)
            causal = False
            if T > 1:  # new query i (absolute T_past + i) sees keys 0 .. T_past + i
                t_past = k.size(2) - T
                mask = torch.ones(T, k.size(2), dtype=torch.bool, device=x.device).tril(diagonal=t_past)
        y = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=mask,
            is_causal=causal and T > 1,
            dropout_p=self.dropout if self.training else 0.0,
        )
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y)), (k, v)


class ReLUSquared(nn.Module):
    """``relu(x) ** 2`` (So et al. 2021, "Primer", arXiv:2109.08668)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x).square()


class MLP(nn.Module):
    """``Linear(n_embd, 4 n_embd) -> GELU or ReLU^2 -> Linear(4 n_embd, n_embd)``."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU() if config.mlp == "gelu" else ReLUSquared()  # the name keeps old state_dicts valid
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-norm transformer block: ``x + attn(ln_1(x))`` then ``x + mlp(ln_2(x))``."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = make_norm(config)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = make_norm(config)
        self.mlp = MLP(config)

    def forward(self, x, rotary=None, past=None):
        a, kv = self.attn(self.ln_1(x), rotary, past)
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return x, kv


class GPT(nn.Module):
    """Decoder-only transformer language model; see the module docstring.

    Args:
        config: a :class:`GPTConfig`.
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd) if config.position == "learned" else None
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = make_norm(config)
        if config.logit_softcap > 0:
            self.lm_head = SoftCappedLinear(config.n_embd, config.vocab_size, config.logit_softcap)
        else:
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.wte.weight
        self.apply(self._init_weights)  # wte: std config.embed_std
        # GPT-2: scale the residual projections by 1/sqrt(2 n_layer); zero_init: start them at 0
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                if config.zero_init:
                    nn.init.zeros_(p)
                else:
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
        if config.zero_init and not config.tie_embeddings:
            nn.init.zeros_(self.lm_head.weight)

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            std = self.config.embed_std if module is self.wte else 0.02
            nn.init.normal_(module.weight, mean=0.0, std=std)

    def num_parameters(self) -> int:
        """Number of parameters (a tied embedding counted once)."""
        return sum(p.numel() for p in self.parameters())

    # ------------------------------------------------------------------ forward
    def _hidden(self, idx: torch.Tensor, start: int, cache: list | None) -> tuple[torch.Tensor, list]:
        """Run the blocks on ``idx`` (B, T) whose first token is at absolute position ``start``."""
        B, T = idx.shape
        x = self.wte(idx)
        if self.config.embed_norm:
            x = F.rms_norm(x, (x.size(-1),))
        rotary = None
        positions = torch.arange(start, start + T, device=idx.device)
        if self.wpe is not None:
            if start + T > self.config.block_size:
                raise ValueError(
                    f"sequence of {start + T} tokens is longer than block_size {self.config.block_size} "
                    "(learned positions cannot go further)"
                )
            x = x + self.wpe(positions)
        else:
            rotary = rotary_cos_sin(positions, self.config.head_dim, self.config.rope_theta)
        x = self.drop(x)
        new_cache = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, rotary, cache[i] if cache is not None else None)
            new_cache.append(kv)
        return self.ln_f(x), new_cache

    def hidden_states(self, idx: torch.Tensor) -> torch.Tensor:
        """The final (normed) hidden states of ``idx`` (B, T): (B, T, n_embd); ``lm_head`` of them is the logits.

        For callers that apply the output layer in pieces (``storygpt.eval.bits``).

        Raises:
            ValueError: T > block_size.
        """
        if idx.size(1) > self.config.block_size:
            raise ValueError(f"sequence length {idx.size(1)} exceeds block_size {self.config.block_size}")
        return self._hidden(idx, 0, None)[0]

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, ignore_index: int = -1):
        """Logits for every position, and the loss when ``targets`` are given.

        Args:
            idx: (B, T) int64 token ids, T <= block_size.
            targets: optional (B, T) int64 next-token ids; positions equal to
                ``ignore_index`` do not count.
            ignore_index: the target value to ignore (default -1).

        Returns:
            ``(logits, loss)``: logits (B, T, vocab_size) in the compute dtype
            (float32, or bfloat16/float16 under autocast); loss is the mean
            cross-entropy in nats over the counted targets, a float32 scalar
            tensor, or None without targets.

        Raises:
            ValueError: T > block_size.
        """
        if idx.dim() != 2:
            raise ValueError(f"idx must be (B, T), got shape {tuple(idx.shape)}")
        if idx.size(1) > self.config.block_size:
            raise ValueError(f"sequence length {idx.size(1)} exceeds block_size {self.config.block_size}")
        h, _ = self._hidden(idx, 0, None)
        logits = self.lm_head(h)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(
                logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=ignore_index
            )
        return logits, loss

    # --------------------------------------------------------------- generation
    @torch.no_grad()
    def stream(
        self,
        idx: torch.Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        generator: torch.Generator | None = None,
        seed: int | None = None,
        stop_token: int | None = None,
        use_cache: bool = True,
        top_p: float | None = None,
        allowed: torch.Tensor | None = None,
    ) -> Iterator[torch.Tensor]:
        """Sample tokens one at a time; yields each new (B,) int64 tensor as soon as it is drawn.

        Args:
            idx: (B, T) int64 prompt, T >= 1.  With ``use_cache`` and rotary
                positions a prompt longer than block_size is cropped to its
                last block_size tokens (they get positions 0..block_size-1).
            max_new_tokens: the most tokens to draw.
            temperature: > 0 divides the logits; 0 means greedy (argmax).
            top_k: keep only the k most likely tokens before sampling.
            generator: a ``torch.Generator`` (on the model's device) for the
                draws; if None and ``seed`` is given one is made from ``seed``.
            seed: see ``generator``.
            stop_token: stop once every row has produced this id (the id is
                yielded; a row that has stopped keeps yielding it).
            top_p: nucleus sampling (Holtzman et al. 2019, "The Curious Case of
                Neural Text Degeneration", arXiv:1904.09751): after temperature
                and top_k, keep the most likely tokens whose probabilities add
                up to at least ``top_p`` (0 < top_p <= 1; the most likely token
                is always kept) and renormalize.  None or 1: off.
            allowed: bool (n, vocab_size) or (vocab_size,): the tokens each draw
                may produce; row i constrains draw i, the last row every later
                draw (sample.py: no ``<pad>``, token healing).  None: any token.
            use_cache: True (default): key/value cache; see the module docstring
                for what happens past block_size.  False: the reference
                "uncached" computation -- every step runs :meth:`forward` on the
                last block_size tokens, positions starting at 0.  Within
                block_size both give the same logits (up to rounding) and so
                the same tokens for the same seed; past block_size they agree
                for learned positions, while the rotary sliding cache instead
                equals full attention with absolute positions over a causal
                window of block_size keys.
        """
        if idx.dim() != 2 or idx.size(1) < 1:
            raise ValueError(f"prompt must be (B, T) with T >= 1, got shape {tuple(idx.shape)}")
        if not 0 <= temperature < math.inf:  # nan and inf would reach torch.multinomial as nan probabilities
            raise ValueError(f"temperature must be a finite number >= 0, got {temperature}")
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        if top_p is not None and not 0 < top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        if allowed is not None:
            allowed = allowed.reshape(-1, allowed.size(-1)).to(idx.device)
            if allowed.size(-1) != self.config.vocab_size or allowed.dtype != torch.bool or not len(allowed):
                raise ValueError(f"allowed must be a (n, vocab_size) bool tensor, got {tuple(allowed.shape)}")
            if not bool(allowed.any(dim=-1).all()):
                raise ValueError("allowed allows no token for some draw")
        if generator is None and seed is not None:
            generator = torch.Generator(device=idx.device)
            generator.manual_seed(seed)
        bs = self.config.block_size
        rope = self.config.position == "rope"
        seq = idx
        done = torch.zeros(idx.size(0), dtype=torch.bool, device=idx.device)
        cache, pos = None, 0  # pos: absolute position of the next token fed to the cache
        for i in range(max_new_tokens):
            if not use_cache or (not rope and seq.size(1) > bs):
                h, _ = self._hidden(seq[:, -bs:], 0, None)
                cache = None
            elif cache is None:  # prefill
                prompt = seq[:, -bs:]
                h, cache = self._hidden(prompt, 0, [None] * len(self.blocks))
                pos = prompt.size(1)
            else:
                h, cache = self._hidden(seq[:, -1:], pos, cache)
                pos += 1
            if cache is not None and rope:  # keep the last block_size-1 keys/values
                cache = [
                    (k[:, :, -(bs - 1) :], v[:, :, -(bs - 1) :]) if bs > 1 else (k[:, :, :0], v[:, :, :0])
                    for k, v in cache
                ]
            logits = self.lm_head(h[:, -1, :]).float()
            if allowed is not None:
                logits = logits.masked_fill(~allowed[min(i, len(allowed) - 1)], float("-inf"))
            nxt = self._sample(logits, temperature, top_k, generator, top_p)
            if stop_token is not None:
                nxt = torch.where(done, torch.full_like(nxt, stop_token), nxt)
                done |= nxt == stop_token
            seq = torch.cat((seq, nxt[:, None]), dim=1)
            yield nxt
            if stop_token is not None and bool(done.all()):
                return

    @staticmethod
    def filter_logits(
        logits: torch.Tensor, temperature: float, top_k: int | None = None, top_p: float | None = None
    ) -> torch.Tensor:
        """The logits :meth:`stream` samples from: divided by ``temperature`` (> 0), then the
        ``top_k`` most likely kept, then the nucleus of probability ``top_p`` kept; the others
        become -inf.  ``logits`` is (B, vocab_size) float; returns a new tensor of that shape."""
        logits = logits / temperature
        if top_k is not None and top_k < logits.size(-1):
            kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        if top_p is not None and top_p < 1.0:
            probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
            before = probs.cumsum(dim=-1) - probs  # the mass of the more likely tokens
            drop = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, order, before >= top_p)
            logits = logits.masked_fill(drop, float("-inf"))
        return logits

    @staticmethod
    def _sample(
        logits: torch.Tensor, temperature: float, top_k: int | None, generator, top_p: float | None = None
    ) -> torch.Tensor:
        if temperature == 0:
            return logits.argmax(dim=-1)
        probs = torch.softmax(GPT.filter_logits(logits, temperature, top_k, top_p), dim=-1)
        return torch.multinomial(probs, 1, generator=generator).squeeze(1)

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        max_new_tokens: int,
        *args,
        callback: Callable[[torch.Tensor], None] | None = None,
        **kwargs,
    ) -> torch.Tensor:
        """Extend ``idx`` by up to ``max_new_tokens`` sampled tokens.

        The other arguments are :meth:`stream`'s; ``callback`` is called with each new
        (B,) int64 tensor as it is drawn (e.g. to print tokens as they come).

        Returns (B, T + n) int64: the prompt and the n <= max_new_tokens tokens drawn (fewer on ``stop_token``).
        """
        new = []
        for tok in self.stream(idx, max_new_tokens, *args, **kwargs):
            new.append(tok)
            if callback is not None:
                callback(tok)
        if not new:
            return idx
        return torch.cat((idx, torch.stack(new, dim=1)), dim=1)
