"""Log-likelihoods of text under a storygpt model, for tasks: the scorer behind the lm-eval class.

Nothing here needs lm-eval; :mod:`storygpt.tasks.harness` wraps these functions as lm-eval's
``loglikelihood``, ``loglikelihood_rolling`` and ``generate_until``.  Every sequence starts with
``<|endoftext|>`` (context only).  Context and continuation are encoded as one string; a token
that crosses the boundary belongs to the continuation (:func:`split_pair` says whether one did;
lm-eval's ``TemplateLM`` would give it to the context).  An item longer than ``block_size + 1``
tokens is cut from the left and counted in :attr:`Scorer.cut_items`.

The boundary rule, long items and how they compare with lm-eval's ``hf`` model: docs/tasks.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

#: input tokens per forward pass when batching rows (about; a longer row still gets a batch of its own)
TOKENS_PER_BATCH = 8192


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two id lists."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


@dataclass
class Pair:
    """One (context, continuation) request as tokens: ``ids`` is ``[eot] + enc(context + continuation)``;
    targets ``ids[first:]`` are the continuation's (``first >= 1``); ``crossed``: a token crossed the
    boundary (see the module docstring)."""

    ids: list[int]
    first: int
    crossed: bool


def split_pair(tokenizer, context: str, continuation: str) -> Pair:
    """Encode ``context + continuation`` as one string and split it by the boundary rule (module docstring).

    Raises:
        ValueError: the tokenizer has no ``eot_id``.
    """
    eot = getattr(tokenizer, "eot_id", None)
    if eot is None:
        raise ValueError("the tokenizer has no end-of-text token (eot_id is None)")
    whole = [int(t) for t in tokenizer.encode_ordinary(context + continuation)]
    if not context:
        return Pair([int(eot)] + whole, 1, False)
    ctx = [int(t) for t in tokenizer.encode_ordinary(context)]
    k = common_prefix(ctx, whole)
    return Pair([int(eot)] + whole, 1 + k, k < len(ctx))


def windows_for(n: int, first: int, block_size: int) -> list[tuple[int, int, int]]:
    """Rows that predict targets ``first .. n-1`` of an ``n``-token sequence exactly once.

    Targets are taken from the start in groups of at most ``block_size``; the row of a group that ends
    at target ``c`` has inputs ``ids[max(0, c - block_size) : c]`` (as much context as fits, the oldest
    tokens cut).  Returns ``(input_begin, input_end, first_target)`` triples: the row predicts
    ``ids[input_begin+1 : input_end+1]`` and scores the targets ``>= first_target``.
    """
    out = []
    a = first
    while a < n:
        c = min(a + block_size - 1, n - 1)
        out.append((max(0, c - block_size), c, a))
        a = c + 1
    return out


@dataclass
class Scorer:
    """Log-likelihoods of token sequences under a storygpt :class:`~storygpt.model.GPT` (or any model with
    ``hidden_states(idx) -> (B, T, C)`` and ``lm_head``), batched by length.

    Attributes:
        model: the model, in eval mode (put there by the constructor's caller).
        block_size: the model's context length.
        device: torch device of the model.
        dtype: autocast dtype (None or float32: none); log-probabilities are float32, sums float64.
        cut_items: items cut from the left so far (longer than the context).
        progress: called with the number of rows scored so far after each batch (or None).
    """

    model: object
    block_size: int
    device: str = "cpu"
    dtype: object = None
    tokens_per_batch: int = TOKENS_PER_BATCH
    cut_items: int = 0
    progress: Callable[[int, int], None] | None = field(default=None, repr=False)

    def score(self, sequences: Sequence[tuple[list[int], int]]) -> list[tuple[float, bool]]:
        """Sum of ``ln p(target | earlier tokens)`` over targets ``ids[first:]`` of each ``(ids, first)``, and
        whether each of those targets is the model's most likely token (lm-eval's ``is_greedy``).

        Returns one ``(log-likelihood in nats, is_greedy)`` per sequence, in order.  A sequence with no
        target (``first >= len(ids)``) gets ``(0.0, True)``.  Sequences longer than ``block_size + 1`` are
        counted in :attr:`cut_items` (once each).

        Raises:
            ValueError: ``first < 1``, or a token id outside the model's vocabulary.
        """
        import torch

        from storygpt.runtime import autocast_for

        rows = []  # (length, sequence index, input_begin, input_end, first_target)
        for i, (ids, first) in enumerate(sequences):
            if first < 1:
                raise ValueError(f"sequence {i}: the first target must be at index 1 or later, got {first}")
            if len(ids) - 1 > self.block_size:
                self.cut_items += 1
            for b, e, f in windows_for(len(ids), first, self.block_size):
                rows.append((e - b, i, b, e, f))
        rows.sort(key=lambda r: -r[0])  # longest first: the padding within a batch stays small
        ll = np.zeros(len(sequences), dtype=np.float64)
        greedy = np.ones(len(sequences), dtype=bool)
        vocab = self.model.lm_head.weight.shape[0]
        done = 0
        with torch.inference_mode(), autocast_for(self.device, self.dtype):
            start = 0
            while start < len(rows):
                width = rows[start][0]
                count = max(1, self.tokens_per_batch // width)
                batch = rows[start : start + count]
                start += len(batch)
                x = torch.zeros((len(batch), width), dtype=torch.long)
                pos_rows, pos_cols, targets, owners = [], [], [], []
                for r, (_, i, b, e, f) in enumerate(batch):
                    ids = sequences[i][0]
                    x[r, : e - b] = torch.tensor(ids[b:e])
                    for t in range(f, e + 1):  # target index t is predicted at input column t - 1 - b
                        pos_rows.append(r)
                        pos_cols.append(t - 1 - b)
                        targets.append(ids[t])
                        owners.append(i)
                if not targets:
                    continue
                if max(targets) >= vocab or int(x.max()) >= vocab:
                    raise ValueError(
                        f"token id {max(max(targets), int(x.max()))} is outside the model's vocabulary of {vocab}: "
                        "the tokenizer does not belong to this model"
                    )
                h = self.model.hidden_states(x.to(self.device))
                h = h[torch.tensor(pos_rows, device=h.device), torch.tensor(pos_cols, device=h.device)]
                logp = torch.log_softmax(self.model.lm_head(h).float(), dim=-1)
                tgt = torch.tensor(targets, device=logp.device)
                picked = logp.gather(1, tgt[:, None])[:, 0].double().cpu().numpy()
                is_top = (logp.argmax(dim=-1) == tgt).cpu().numpy()
                own = np.asarray(owners)
                np.add.at(ll, own, picked)
                np.logical_and.at(greedy, own, is_top)
                done += len(batch)
                if self.progress is not None:
                    self.progress(done, len(rows))
        return [(float(a), bool(g)) for a, g in zip(ll, greedy)]


def loglikelihood(scorer: Scorer, tokenizer, pairs: Sequence[tuple[str, str]]) -> tuple[list[tuple[float, bool]], int]:
    """``(log-likelihood in nats, is_greedy)`` of each continuation given its context (the boundary rule of the
    module docstring), and how many pairs had a token crossing their boundary."""
    split = [split_pair(tokenizer, c, x) for c, x in pairs]
    return scorer.score([(p.ids, p.first) for p in split]), sum(p.crossed for p in split)


def rolling(scorer: Scorer, tokenizer, texts: Sequence[str]) -> list[float]:
    """Log-likelihood (nats) of each whole text after ``<|endoftext|>``: every token predicted once, in windows
    of ``block_size`` predicted tokens each with as much context as fits (lm-eval's ``loglikelihood_rolling``)."""
    seqs = [([int(tokenizer.eot_id)] + [int(t) for t in tokenizer.encode_ordinary(s)], 1) for s in texts]
    return [ll for ll, _ in scorer.score(seqs)]


def generate(
    model, tokenizer, context: str, *, until: Sequence[str], max_new_tokens: int, block_size: int, device="cpu"
) -> str:
    """Greedy continuation of ``context`` (after ``<|endoftext|>``), stopped at ``<|endoftext|>``, after
    ``max_new_tokens`` tokens, or at the first of the ``until`` strings (which is left out).  The prompt is cut
    from the left to ``block_size`` tokens."""
    import torch

    ids = [int(tokenizer.eot_id)] + [int(t) for t in tokenizer.encode_ordinary(context)]
    ids = ids[-block_size:]
    out: list[int] = []
    text = ""
    with torch.inference_mode():
        x = torch.tensor([ids], device=device)
        for tok in model.stream(x, max_new_tokens, temperature=0, stop_token=int(tokenizer.eot_id)):
            t = int(tok[0])
            if t == tokenizer.eot_id:
                break
            out.append(t)
            text = tokenizer.decode(out)
            cut = [text.find(s) for s in until if s and s in text]
            if cut:
                return text[: min(cut)]
    return text


def nats_to_bits(nats: float) -> float:
    return nats / math.log(2)
