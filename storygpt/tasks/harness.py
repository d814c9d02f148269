"""storygpt checkpoints as an lm-evaluation-harness model, registered as ``storygpt``.

Importing this module imports lm-eval (``pip install -e .[tasks]``) and registers the class; nothing
else in storygpt imports lm-eval at module level.  ``python -m storygpt.tasks.harness`` is
``lm_eval`` with the class registered::

    python -m storygpt.tasks.harness --model storygpt --model_args checkpoint=RUN/best.pt --tasks lambada_openai

Any tokenizer kind works (only ``encode_ordinary``, ``decode``, ``eot_id`` are called); how text
becomes tokens: :mod:`storygpt.tasks.scoring`.  Python use: docs/tasks.md.
"""

from __future__ import annotations

import sys

from lm_eval.api.model import LM
from lm_eval.api.registry import get_model, register_model

from storygpt.tasks import scoring


class StoryGPTLM(LM):
    """A storygpt model for lm-eval: ``loglikelihood``, ``loglikelihood_rolling`` and ``generate_until``.

    Args:
        checkpoint: a checkpoint file or run folder (pretrain.py's); or give ``model`` and ``tokenizer``.
        model, tokenizer: an already loaded :class:`storygpt.model.GPT` and its tokenizer.
        device: torch device ("auto": cuda, then mps, then cpu).
        dtype: "float32" (default), "bfloat16", "float16" or "auto" (as bits.py's ``--dtype``).
        batch_size: accepted for lm-eval's command line and ignored: rows are batched by tokens
            (``tokens_per_batch``, default :data:`storygpt.tasks.scoring.TOKENS_PER_BATCH`).
        max_gen_toks: tokens ``generate_until`` draws at most when a task does not say (default 256).

    Attributes:
        cut_items: requests cut from the left because they were longer than the model's context.
        crossed_items: ``loglikelihood`` requests whose boundary a token crossed (given to the continuation).
    """

    def __init__(
        self,
        checkpoint: str | None = None,
        *,
        model=None,
        tokenizer=None,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size=None,
        max_batch_size=None,
        tokens_per_batch: int = scoring.TOKENS_PER_BATCH,
        max_gen_toks: int = 256,
        **unused,
    ):
        super().__init__()
        import torch

        from storygpt.runtime import pick_dtype, resolve_device

        device = resolve_device(str(device or "auto"))
        if model is None:
            if not checkpoint:
                raise ValueError("the storygpt model needs checkpoint=PATH (a checkpoint file or run folder)")
            from storygpt import load_checkpoint

            model, tokenizer, _ = load_checkpoint(str(checkpoint), device=device)
        elif tokenizer is None:
            raise ValueError("model= needs tokenizer= as well")
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self._device = torch.device(device)
        self.max_gen_toks = int(max_gen_toks)
        self.scorer = scoring.Scorer(
            self.model,
            int(model.config.block_size),
            device=device,
            dtype=pick_dtype(str(dtype), torch.device(device)),
            tokens_per_batch=int(tokens_per_batch),
        )
        self.crossed_items = 0

    # lm-eval reads these
    @property
    def eot_token_id(self) -> int:
        return int(self.tokenizer.eot_id)

    @property
    def max_length(self) -> int:
        return self.scorer.block_size

    @property
    def cut_items(self) -> int:
        return self.scorer.cut_items

    @property
    def tokenizer_name(self) -> str:
        return f"storygpt-{self.tokenizer.kind}-{self.tokenizer.fingerprint()}"

    def tok_encode(self, string: str, **kwargs) -> list[int]:
        return [int(t) for t in self.tokenizer.encode_ordinary(string)]

    def tok_decode(self, ids, **kwargs) -> str:
        return self.tokenizer.decode(list(ids))

    def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        pairs = [tuple(r.args[:2]) for r in requests]
        out, crossed = scoring.loglikelihood(self.scorer, self.tokenizer, pairs)
        self.crossed_items += crossed
        for pair, res in zip(pairs, out):
            self.cache_hook.add_partial("loglikelihood", pair, res)
        return out

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        texts = [r.args[0] for r in requests]
        out = scoring.rolling(self.scorer, self.tokenizer, texts)
        for t, res in zip(texts, out):
            self.cache_hook.add_partial("loglikelihood_rolling", (t,), res)
        return out

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        out = []
        for r in requests:
            context, kwargs = r.args[0], dict(r.args[1] if len(r.args) > 1 else {})
            until = kwargs.get("until") or []
            until = [until] if isinstance(until, str) else list(until)
            text = scoring.generate(
                self.model,
                self.tokenizer,
                context,
                until=until,
                max_new_tokens=int(kwargs.get("max_gen_toks", self.max_gen_toks)),
                block_size=self.scorer.block_size,
                device=str(self._device),
            )
            self.cache_hook.add_partial("generate_until", (context, r.args[1] if len(r.args) > 1 else {}), text)
            out.append(text)
        return out


def _register() -> None:
    try:
        if get_model("storygpt") is StoryGPTLM:
            return
    except (KeyError, ValueError, AttributeError):
        pass
    register_model("storygpt")(StoryGPTLM)


_register()


def main(argv: list[str] | None = None) -> int:
    """lm-eval's command line with the ``storygpt`` model registered."""
    from lm_eval.__main__ import cli_evaluate

    sys.argv = [sys.argv[0], *(argv if argv is not None else sys.argv[1:])]
    cli_evaluate()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
