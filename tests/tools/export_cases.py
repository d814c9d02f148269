"""What the export tests share: tiny GPTs with random weights that end their documents, their checkpoints
and Hugging Face exports, and the checks that an export computes what storygpt computes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers
from conftest import CORPORA, corpus_text

from storygpt.checkpoint import save_checkpoint
from storygpt.model import GPT, GPTConfig
from storygpt.tokenizers import EOT, WordTokenizer, train_bpe

BLOCK = 96
PROMPT = 20
STEPS = 50
SAMPLE_DOCS = 40
CORPUS_FILES = sorted(CORPORA.glob("*.txt")) if CORPORA.is_dir() else []
needs_corpora = pytest.mark.skipif(not CORPUS_FILES, reason=f"shared corpora not found at {CORPORA}")


def docs_of(path: Path, limit: int | None) -> list[str]:
    """All documents of a shared corpus, or the first ``limit`` cut to their first 4,000 characters."""
    docs = path.read_text(encoding="utf-8").split(f"\n{EOT}\n")
    return docs if limit is None else [d[:4000] for d in docs[:limit]]


def texts_for_tests() -> dict:
    """Training text for the tokenizers and held-out text for the logits (the shared corpora when present)."""
    if CORPUS_FILES:
        train = EOT.join(p.read_text(encoding="utf-8")[:30_000] for p in CORPUS_FILES)
        held = CORPUS_FILES[0].read_text(encoding="utf-8")[200_000:205_000]
    else:
        docs = corpus_text(60).split(f"\n{EOT}\n")
        train, held = f"\n{EOT}\n".join(docs[:40]), f"\n{EOT}\n".join(docs[40:])
    return {"train": train, "held": held}


def tokenizers_for_tests(texts: dict) -> dict:
    return {
        "bpe": train_bpe(texts["train"], 400, pattern="gpt4"),
        "word": WordTokenizer.train(texts["train"].split(EOT), vocab_size=600),
        "simple": train_bpe(texts["train"], 300, pattern="simple"),
    }


def random_gpt(tok, position: str, seed: int = 0, **parts) -> GPT:
    """A GPT with every weight perturbed by N(0, 0.3): LayerNorms and biases away from 1 and 0, logits far apart.

    ``parts``: GPTConfig fields of a recipe (storygpt/model/recipes.py ``RECIPES``), e.g. the modern one's."""
    torch.manual_seed(seed)
    cfg = GPTConfig(
        vocab_size=tok.vocab_size, block_size=BLOCK, n_layer=2, n_head=2, n_embd=32, position=position, **parts
    )
    model = GPT(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return model.eval()


def ending_documents(model: GPT, prompt: torch.Tensor, eot: int) -> GPT:
    """``model`` with a part along the end-of-text embedding added to the final LayerNorm's bias (RMSNorm has
    none: to the end-of-text row of an output layer of its own): the smallest of a few strengths at which
    storygpt's greedy generation from ``prompt`` stops at <|endoftext|> after 3 to 49 tokens (so that stopping,
    not the first token, is tested)."""
    if getattr(model.ln_f, "bias", None) is not None:
        target, direction = model.ln_f.bias, model.wte.weight[eot].detach() / model.wte.weight[eot].detach().norm()
    else:  # RMSNorm (no bias), an output layer of its own: its end-of-text row along the continuation's
        # hidden states, made orthogonal to the last prompt position's (so the first token stays what it was)
        assert not model.config.tie_embeddings
        with torch.no_grad():
            h = model.hidden_states(model.generate(prompt, STEPS, temperature=0))[0]
        last = h[prompt.size(1) - 1] / h[prompt.size(1) - 1].norm()
        direction = h[prompt.size(1) :].mean(dim=0)
        direction -= (direction @ last) * last
        target, direction = model.lm_head.weight[eot], direction / direction.norm()
    bias = target.detach().clone()
    for strength in [0.25 * i for i in range(1, 41)]:
        with torch.no_grad():
            target.copy_(bias + strength * direction)
        out = model.generate(prompt, STEPS, temperature=0, stop_token=eot)
        new = out[0, prompt.size(1) :].tolist()
        if new[-1] == eot and 3 <= len(new) < STEPS:
            return model
    raise AssertionError("no strength makes the model end its document within the test's steps")


def save(model: GPT, tok, path: Path) -> Path:
    save_checkpoint(path, {"model": model.state_dict(), "config": model.config.to_dict(), "tokenizer": tok.to_dict()})
    return path


def load_hf(folder: Path):
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=False).eval()
    return model, transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=False)


def check_same_logits_and_greedy_tokens(e: dict, held: str, class_name: str) -> None:
    """The stock ``transformers`` class ``class_name`` loads the export ``e["hf"]``; its logits on ``held`` match
    storygpt's to 1e-4 and its greedy generation from ``e["prompt"]`` gives the same tokens."""
    hf, _ = load_hf(e["hf"])
    assert type(hf).__name__ == class_name
    ids = e["tok"].encode_ordinary(held)[:BLOCK]
    assert len(ids) == BLOCK
    x = torch.tensor([ids])
    with torch.no_grad():
        mine, _ = e["model"](x)
        theirs = hf(x).logits
    assert theirs.dtype == torch.float32
    assert (mine - theirs).abs().max().item() <= 1e-4
    assert mine.std().item() > 1.0  # logits far apart: the comparison means something
    p = e["prompt"]
    g_mine = e["model"].generate(p, STEPS, temperature=0)
    g_theirs = hf.generate(
        p, attention_mask=torch.ones_like(p), max_new_tokens=STEPS, do_sample=False, eos_token_id=None,
        suppress_tokens=[],  # the model's own greedy choice (generation_config.json suppresses <pad>, as sample.py)
    )  # fmt: skip
    assert g_theirs.shape == (1, PROMPT + STEPS)
    assert g_theirs.tolist() == g_mine.tolist()


def check_generate_stops_at_end_of_text(e: dict) -> None:
    """storygpt and the export stop greedy generation at the same <|endoftext|>."""
    hf, _ = load_hf(e["hf"])
    eot, p = e["tok"].eot_id, e["prompt"]
    mine = e["model"].generate(p, STEPS, temperature=0, stop_token=eot)[0].tolist()
    theirs = hf.generate(
        p, attention_mask=torch.ones_like(p), max_new_tokens=STEPS, do_sample=False, suppress_tokens=[]
    )
    theirs = theirs[0].tolist()
    assert mine[-1] == eot and len(mine) < PROMPT + STEPS
    assert theirs == mine  # generation_config.json's eos_token_id ends it at the same token
