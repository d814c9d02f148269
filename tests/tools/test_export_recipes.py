"""export.py and storygpt.export on the modern recipe and its variants: the stock architecture each exports as
(NanoChat, Qwen3, Llama, GPT-NeoX), the same logits and greedy tokens in ``transformers``, and the refusals
(the gpt2 recipe's exports: test_export.py, whose oracles these are too).
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install -e .[interop])")
pytest.importorskip("safetensors", reason="safetensors is not installed (pip install -e .[interop])")

from export_cases import (  # noqa: E402
    PROMPT,
    check_generate_stops_at_end_of_text,
    check_same_logits_and_greedy_tokens,
    ending_documents,
    random_gpt,
    save,
    texts_for_tests,
    tokenizers_for_tests,
)

from storygpt.export import ExportError, choose_architecture, export  # noqa: E402
from storygpt.export.arch import GPT_NEOX, LLAMA, NANOCHAT, QWEN3, rotary_row_order  # noqa: E402
from storygpt.model import GPTConfig  # noqa: E402
from storygpt.model.recipes import ARCH, RECIPES  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _one_thread(one_torch_thread):
    """Tiny models: one torch thread is faster than two on a busy machine (and fair to it)."""


@pytest.fixture(scope="module")
def texts() -> dict:
    """Training text for the tokenizers and held-out text for the logits (the shared corpora when present)."""
    return texts_for_tests()


@pytest.fixture(scope="module")
def tokenizers(texts) -> dict:
    return tokenizers_for_tests(texts)


# ------------------------------------------------------------------------------- the modern recipe
MODERN = {k: RECIPES["modern"][k] for k in ARCH}
#: modern with nanochat's logit soft-cap (``--logit-softcap 15``; off by default since the recipe ablation)
#: and without the embedding norm (whose export keeps storygpt's embedding rows as they are)
SOFTCAP = {**MODERN, "logit_softcap": 15.0, "embed_norm": False, "embed_std": 0.02}
RECIPES_GPT2_ARCH = {k: RECIPES["gpt2"][k] for k in ARCH}
#: name -> (the GPTConfig parts: the modern recipe with some switched, the stock class they export as)
#: modern before issue 37: no norm after the token embedding (so Qwen3 and Llama compute it)
NO_EMBED_NORM = {"embed_norm": False, "embed_std": 0.02}
VARIANTS = {
    "modern": ({}, "NanoChatForCausalLM"),  # its embedding norm: NanoChat's, which Qwen3 lacks
    "modern-no-embed-norm": (NO_EMBED_NORM, "Qwen3ForCausalLM"),
    "modern-noqk": ({**NO_EMBED_NORM, "qk_norm": False}, "LlamaForCausalLM"),
    "modern-bias-noqk": ({**NO_EMBED_NORM, "qk_norm": False, "bias": True}, "LlamaForCausalLM"),
    "modern-softcap": ({**NO_EMBED_NORM, "logit_softcap": 15.0}, "NanoChatForCausalLM"),
    "modern-softcap-tied": ({**NO_EMBED_NORM, "logit_softcap": 15.0, "tie_embeddings": True}, "NanoChatForCausalLM"),
    "gpt2-nobias": ({**RECIPES_GPT2_ARCH, "bias": False}, "GPTNeoXForCausalLM"),
}

#: The variants made to end their documents (:func:`ending_documents`) and checked to stop there.
STOPPING = [n for n in VARIANTS if n not in ("modern-softcap-tied", "gpt2-nobias")]


@pytest.fixture(scope="module")
def modern(tmp_path_factory, tokenizers, texts) -> dict:
    """Each of :data:`VARIANTS` (rotary, BPE): the storygpt model, its checkpoint and its HF export."""
    root = tmp_path_factory.mktemp("modern")
    tok, out = tokenizers["bpe"], {}
    prompt = torch.tensor([[tok.eot_id, *tok.encode_ordinary(texts["held"])[: PROMPT - 1]]])
    for name, (switched, _) in VARIANTS.items():
        parts = {**MODERN, **switched} if name.startswith("modern") else switched
        model = random_gpt(tok, "rope", **parts)
        if name in STOPPING:  # the others have neither a final-norm bias nor an output layer of their own
            model = ending_documents(model, prompt, tok.eot_id)
        ckpt = save(model, tok, root / f"{name}.pt")
        res = export(ckpt, root / f"{name}-hf")
        out[name] = {"model": model, "tok": tok, "ckpt": ckpt, "hf": root / f"{name}-hf", "res": res, "prompt": prompt}
    return out


def test_the_table_picks_an_architecture_for_each_recipe_variant():
    base = dict(position="rope")
    assert choose_architecture(GPTConfig(**base, **MODERN)) is NANOCHAT
    assert choose_architecture(GPTConfig(**base, **{**MODERN, "embed_norm": False})) is QWEN3
    assert choose_architecture(GPTConfig(**base, **{**MODERN, "embed_norm": False, "qk_norm": False})) is LLAMA
    assert choose_architecture(GPTConfig(**base, **SOFTCAP)) is NANOCHAT
    assert choose_architecture(GPTConfig(**base, **{**SOFTCAP, "zero_init": False, "tie_embeddings": True})) is NANOCHAT
    assert choose_architecture(GPTConfig(**base, **{**RECIPES_GPT2_ARCH, "zero_init": True})) is GPT_NEOX


@pytest.mark.parametrize(
    "parts, message",
    [
        (
            dict(MODERN, position="learned"),
            "GPTConfig.norm = 'rmsnorm' (in llama/qwen3/nanochat) does not go with position = 'learned' (in gpt2): "
            "no stock architecture has them all",
        ),
        (
            dict(SOFTCAP, position="rope", bias=True),
            "GPTConfig.bias = True (in gpt2/gpt_neox/llama) does not go with position = 'rope' (in gpt_neox/llama/"
            "qwen3/nanochat), norm = 'rmsnorm' (in llama/qwen3/nanochat), qk_norm = True (in qwen3/nanochat), mlp = "
            "'relu2' (in llama/qwen3/nanochat), tie_embeddings = False (in llama/qwen3/nanochat), logit_softcap = "
            "15.0 (in nanochat): no stock architecture has them all",
        ),
        (dict(SOFTCAP, position="rope", qk_norm=False), "GPTConfig.logit_softcap = 15.0 (in nanochat) does not go "),
        (dict(MODERN, position="rope", mlp="gelu"), "GPTConfig.mlp = 'gelu' (in gpt2/gpt_neox) does not go with "),
        (dict(position="rope", tie_embeddings=False), "GPTConfig.tie_embeddings = False (in llama/qwen3/nanochat)"),
        (  # only NanoChat norms the embedding, and it has QK-norm: no Llama with an embedding norm
            dict(MODERN, position="rope", embed_norm=True, qk_norm=False),
            "GPTConfig.embed_norm = True (in nanochat) does not go with position = 'rope' (in gpt_neox/llama/qwen3/"
            "nanochat), norm = 'rmsnorm' (in llama/qwen3/nanochat), qk_norm = False (in gpt2/gpt_neox/llama)",
        ),
    ],
)
def test_recipe_parts_no_stock_architecture_computes_are_refused_in_one_line(parts, message):
    with pytest.raises(ExportError) as e:
        choose_architecture(GPTConfig(**parts))
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_recipe_variants_export_with_the_same_logits_and_greedy_tokens(modern, texts, name):
    check_same_logits_and_greedy_tokens(modern[name], texts["held"], VARIANTS[name][1])


@pytest.mark.parametrize("name", STOPPING)
def test_recipe_variants_generate_stops_at_end_of_text(modern, name):
    check_generate_stops_at_end_of_text(modern[name])


def test_modern_export_layout(modern):
    """NanoChat: the embedding rows rescaled so its norm after the embedding gives storygpt's rows back, an
    output layer of its own, q/k rows in rotate-half order with the second half negated, soft-cap and epsilon."""
    from safetensors import safe_open

    e = modern["modern-softcap"]
    cfg = json.loads((e["hf"] / "config.json").read_text())
    assert (cfg["model_type"], cfg["final_logit_softcapping"], cfg["hidden_act"]) == ("nanochat", 15.0, "relu2")
    assert cfg["rms_norm_eps"] == torch.finfo(torch.float32).eps and cfg["tie_word_embeddings"] is False
    sd = e["model"].state_dict()
    with safe_open(str(e["hf"] / "model.safetensors"), "pt") as f:
        emb, head = f.get_tensor("model.embed_tokens.weight"), f.get_tensor("lm_head.weight")
        q = f.get_tensor("model.layers.1.self_attn.q_proj.weight")
    assert torch.equal(head, sd["lm_head.weight"])
    restored = torch.nn.functional.rms_norm(emb, (32,), eps=cfg["rms_norm_eps"])
    assert (restored - sd["wte.weight"]).abs().max().item() < 1e-6
    want = sd["blocks.1.attn.c_attn.weight"][16:32][rotary_row_order(16)]
    want[8:] *= -1  # NanoChat's rotate_half turns the other way: the second half of each head negated
    assert torch.equal(q[16:32], want)
    tied = json.loads((modern["modern-softcap-tied"]["hf"] / "config.json").read_text())
    assert tied["tie_word_embeddings"] is False  # the output layer is storygpt's wte, the embedding is rescaled
    # today's modern: NanoChat's own norm after the embedding is storygpt's embed_norm, so the rows go as they are
    e = modern["modern"]
    cfg = json.loads((e["hf"] / "config.json").read_text())
    assert (cfg["model_type"], cfg["final_logit_softcapping"], cfg["tie_word_embeddings"]) == ("nanochat", None, False)
    with safe_open(str(e["hf"] / "model.safetensors"), "pt") as f:
        assert torch.equal(f.get_tensor("model.embed_tokens.weight"), e["model"].state_dict()["wte.weight"])
    qwen = json.loads((modern["modern-no-embed-norm"]["hf"] / "config.json").read_text())
    assert (qwen["hidden_act"], qwen["head_dim"], qwen["attention_bias"]) == ("relu", 16, False)


def test_qk_norm_before_or_after_the_rotation_is_the_same():
    """storygpt norms q/k then rotates; NanoChat rotates then norms: a rotation keeps each head's RMS."""
    from storygpt.model.gpt import apply_rotary, rotary_cos_sin

    torch.manual_seed(1)
    q = torch.randn(2, 3, 50, 16) * 3
    cos, sin = rotary_cos_sin(torch.arange(50), 16, 10000.0)
    a = apply_rotary(torch.nn.functional.rms_norm(q, (16,)), cos, sin)
    b = torch.nn.functional.rms_norm(apply_rotary(q, cos, sin), (16,))
    assert (a - b).abs().max().item() < 1e-5


def test_nanochat_refuses_embedding_rows_its_norm_cannot_give_back(modern, tmp_path):
    """Trained modern runs (docs/export.md) have embedding rows of RMS up to ~7: the one-line refusal names one."""
    e = modern["modern-softcap"]
    model = random_gpt(e["tok"], "rope", **SOFTCAP)
    with torch.no_grad():
        model.wte.weight[7] *= 2.0 / model.wte.weight[7].square().mean().sqrt()
    ckpt = save(model, e["tok"], tmp_path / "big.pt")
    with pytest.raises(ExportError, match=r"token 7 has RMS 2 \(a run with --logit-softcap 0 exports as Qwen3\)"):
        export(ckpt, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.pt"]


@pytest.mark.parametrize(
    "name, why",
    [
        ("modern-softcap", "llama.cpp has no NanoChat architecture"),
        ("modern", "llama.cpp has no NanoChat architecture"),
        ("modern-no-embed-norm", "llama.cpp's qwen3 computes a SiLU-gated MLP"),
        ("modern-noqk", "llama.cpp's llama computes a SiLU-gated MLP"),
    ],
)
def test_gguf_refuses_the_modern_architectures(modern, tmp_path, name, why):
    pytest.importorskip("gguf", reason="gguf is not installed (pip install -e .[interop])")
    with pytest.raises(ExportError, match=why) as refused:
        export(modern[name]["ckpt"], tmp_path / "m.gguf", fmt="gguf")
    assert str(refused.value).endswith("; train with --recipe gpt2 for a GGUF export")  # the way forward
    with pytest.raises(ExportError, match=why):  # the folders it made for OUT are removed again
        export(modern[name]["ckpt"], tmp_path / "new" / "deeper" / "m.gguf", fmt="gguf")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("model_type", ["nanochat", "qwen3", "llama"])
def test_gguf_refusal_names_the_way_forward(tmp_path, model_type):
    """The refusal, read from a transformers folder's config alone: why, then the recipe that exports."""
    pytest.importorskip("gguf", reason="gguf is not installed (pip install -e .[interop])")
    pytest.importorskip("safetensors", reason="safetensors is not installed (pip install -e .[interop])")
    from storygpt.export.gguf import NO_GGUF, write_gguf

    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type}), encoding="utf-8")
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ExportError) as refused:
        write_gguf(tmp_path, tmp_path / "m.gguf")
    expected = f"no GGUF for this model: {NO_GGUF[model_type]}; train with --recipe gpt2 for a GGUF export"
    assert str(refused.value) == expected
    assert not (tmp_path / "m.gguf").exists()
