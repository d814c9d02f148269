"""Tests of storygpt.model: rotary embeddings, forward pass, generation with a KV cache, learning."""

import math

import pytest
import torch
import torch.nn.functional as F

from storygpt.checkpoint import load_checkpoint
from storygpt.model import GPT, GPTConfig, apply_rotary, rotary_cos_sin

TINY = dict(vocab_size=23, block_size=16, n_layer=2, n_head=2, n_embd=32)


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def rotation_matrix(m: int, head_dim: int, theta: float) -> torch.Tensor:
    """Block-diagonal RoFormer rotation R(m) (head_dim x head_dim, float64), built pair by pair."""
    R = torch.zeros(head_dim, head_dim, dtype=torch.float64)
    for i in range(head_dim // 2):
        a = m * theta ** (-2 * i / head_dim)
        c, s = math.cos(a), math.sin(a)
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = c, -s
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = s, c
    return R


def make_model(position: str, seed: int = 0, std: float | None = None, **kw) -> GPT:
    torch.manual_seed(seed)
    model = GPT(GPTConfig(**{**TINY, **kw, "position": position})).eval()
    if std is not None:  # large random weights: peaked, input-sensitive predictions
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0.0, std)
    return model


def reference_logits(model: GPT, idx: torch.Tensor, window: int | None = None) -> torch.Tensor:
    """An independent float64 forward pass written from the weights.

    Rotary positions use explicit rotation matrices at absolute positions 0..T-1;
    query i attends to keys j with i - window < j <= i (all j <= i if window is None).
    """
    cfg = model.config
    C, H, hd = cfg.n_embd, cfg.n_head, cfg.head_dim
    B, T = idx.shape
    W = {k: v.double() for k, v in model.state_dict().items()}
    x = W["wte.weight"][idx]
    if cfg.position == "learned":
        x = x + W["wpe.weight"][:T]
    else:
        R = torch.stack([rotation_matrix(m, hd, cfg.rope_theta) for m in range(T)])  # (T, hd, hd)
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    allowed = j <= i
    if window is not None:
        allowed &= (i - j) < window
    for layer in range(cfg.n_layer):
        p = f"blocks.{layer}."
        h = F.layer_norm(x, (C,), W[p + "ln_1.weight"], W[p + "ln_1.bias"])
        qkv = h @ W[p + "attn.c_attn.weight"].T + W[p + "attn.c_attn.bias"]
        q, k, v = (t.reshape(B, T, H, hd) for t in qkv.split(C, dim=-1))
        if cfg.position == "rope":
            q = torch.einsum("tij,bthj->bthi", R, q)
            k = torch.einsum("tij,bthj->bthi", R, k)
        att = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(hd)
        att = att.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
        y = torch.einsum("bhij,bjhd->bihd", att, v).reshape(B, T, C)
        x = x + y @ W[p + "attn.c_proj.weight"].T + W[p + "attn.c_proj.bias"]
        h = F.layer_norm(x, (C,), W[p + "ln_2.weight"], W[p + "ln_2.bias"])
        h = F.gelu(h @ W[p + "mlp.c_fc.weight"].T + W[p + "mlp.c_fc.bias"])
        x = x + h @ W[p + "mlp.c_proj.weight"].T + W[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), W["ln_f.weight"], W["ln_f.bias"])
    return x @ W["wte.weight"].T


# ------------------------------------------------------------------ rotary
def test_rotary_matches_explicit_rotation_matrices():
    torch.manual_seed(0)
    head_dim, theta = 8, 10000.0
    positions = torch.tensor([0, 1, 5, 17, 1000])
    x = torch.randn(2, 3, len(positions), head_dim)
    cos, sin = rotary_cos_sin(positions, head_dim, theta)
    got = apply_rotary(x, cos, sin).double()
    for t, m in enumerate(positions.tolist()):
        want = x[:, :, t].double() @ rotation_matrix(m, head_dim, theta).T
        torch.testing.assert_close(got[:, :, t], want, atol=1e-5, rtol=1e-5)
    # position 0 is the identity; a rotation keeps the norm
    torch.testing.assert_close(got[:, :, 0], x[:, :, 0].double())
    torch.testing.assert_close(got.norm(dim=-1), x.double().norm(dim=-1), atol=1e-5, rtol=1e-5)


def test_rotary_hand_computed_pair():
    # head_dim 2: one pair, frequency theta**0 = 1, so position m rotates by m radians
    x = torch.tensor([[[[1.0, 0.0], [0.0, 2.0]]]])  # (1, 1, 2, 2): positions 0 and 1 below
    cos, sin = rotary_cos_sin(torch.tensor([1, 2]), 2, 10000.0)
    out = apply_rotary(x, cos, sin)[0, 0]
    torch.testing.assert_close(out[0], torch.tensor([math.cos(1), math.sin(1)]))
    torch.testing.assert_close(out[1], torch.tensor([-2 * math.sin(2), 2 * math.cos(2)]))


def test_rotary_scores_depend_only_on_relative_position():
    torch.manual_seed(1)
    head_dim = 16
    q, k = torch.randn(head_dim), torch.randn(head_dim)

    def score(m, n):
        cq, sq = rotary_cos_sin(torch.tensor([m]), head_dim, 10000.0)
        ck, sk = rotary_cos_sin(torch.tensor([n]), head_dim, 10000.0)
        rq = apply_rotary(q.view(1, 1, 1, -1), cq, sq).flatten().double()
        rk = apply_rotary(k.view(1, 1, 1, -1), ck, sk).flatten().double()
        return float(rq @ rk)

    for delta in (0, 1, 3, 7):
        ref = score(delta, 0)
        for m in (delta + 1, delta + 10, delta + 500):
            assert score(m, m - delta) == pytest.approx(ref, abs=1e-4)
    assert score(3, 0) != pytest.approx(score(0, 0), abs=1e-3)  # ...but it does depend on m - n


# ----------------------------------------------------------------- forward
@pytest.mark.parametrize("position", ["learned", "rope"])
def test_forward_matches_independent_reference(position):
    model = make_model(position, std=0.3)
    idx = torch.randint(0, TINY["vocab_size"], (3, TINY["block_size"]))
    logits, loss = model(idx)
    assert loss is None and logits.shape == (3, 16, 23) and logits.dtype == torch.float32
    torch.testing.assert_close(logits.double(), reference_logits(model, idx), atol=1e-4, rtol=1e-4)


def test_loss_is_mean_cross_entropy_with_ignore_index():
    model = make_model("rope", std=0.3)
    idx = torch.randint(0, 23, (2, 10))
    targets = torch.randint(0, 23, (2, 10))
    targets[0, :4] = -1
    logits, loss = model(idx, targets)
    logp = logits.double().log_softmax(-1)
    keep = targets != -1
    want = -logp[keep].gather(-1, targets[keep][:, None]).mean()
    assert loss.dtype == torch.float32 and loss.item() == pytest.approx(want.item(), rel=1e-5)


def test_tied_embedding_and_bad_inputs():
    model = make_model("learned")
    assert model.lm_head.weight is model.wte.weight
    with pytest.raises(ValueError, match="block_size"):
        model(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="n_head"):
        GPTConfig(n_embd=30, n_head=4)
    with pytest.raises(ValueError, match="position"):
        GPTConfig(position="alibi")
    with pytest.raises(ValueError, match="unknown keys"):
        GPTConfig.from_dict({**GPTConfig().to_dict(), "swiglu": True})
    assert GPTConfig.from_dict(GPTConfig(position="rope").to_dict()) == GPTConfig(position="rope")


# -------------------------------------------------------------- generation
@pytest.mark.parametrize("position", ["learned", "rope"])
def test_cached_and_uncached_generation_agree_within_block_size(position):
    model = make_model(position, std=0.3)
    prompt = torch.randint(0, 23, (2, 3))
    a = model.generate(prompt, 13, temperature=1.0, top_k=10, seed=7)
    b = model.generate(prompt, 13, temperature=1.0, top_k=10, seed=7, use_cache=False)
    assert a.shape == (2, 16)
    assert torch.equal(a, b)
    c = model.generate(prompt, 13, temperature=1.0, top_k=10, seed=8)
    assert not torch.equal(a, c)  # the seed matters


def test_learned_positions_past_block_size_crop_and_recompute():
    model = make_model("learned", std=0.3)
    prompt = torch.randint(0, 23, (1, 5))
    a = model.generate(prompt, 30, seed=3)
    b = model.generate(prompt, 30, seed=3, use_cache=False)
    assert a.shape == (1, 35) and torch.equal(a, b)
    # the step after block_size used exactly the last block_size tokens at positions 0..15
    g = torch.Generator().manual_seed(3)
    seq = prompt
    for _ in range(30):
        logits = reference_logits(model, seq[:, -16:])[:, -1].float()
        seq = torch.cat((seq, GPT._sample(logits, 1.0, None, g)[:, None]), dim=1)
    assert torch.equal(a, seq)


def test_rope_sliding_cache_past_block_size_equals_absolute_position_reference():
    model = make_model("rope", std=0.3)
    bs = model.config.block_size
    prompt = torch.randint(0, 23, (2, 4))
    n_new = 2 * bs + 5
    got = model.generate(prompt, n_new, temperature=0.8, seed=11)
    # reference: full sequence, absolute positions, each query sees its last block_size keys
    g = torch.Generator().manual_seed(11)
    seq = prompt
    for _ in range(n_new):
        logits = reference_logits(model, seq, window=bs)[:, -1].float() / 0.8
        seq = torch.cat((seq, torch.multinomial(logits.softmax(-1), 1, generator=g)), dim=1)
    assert torch.equal(got, seq)
    # the window matters past block_size (the reference is sensitive to it)
    full = reference_logits(model, seq, window=None)[:, -1]
    assert not torch.allclose(full, reference_logits(model, seq, window=bs)[:, -1], atol=1e-3)


def test_stream_stop_token_greedy_and_callback():
    model = make_model("rope", std=0.3)
    prompt = torch.randint(0, 23, (1, 4))
    greedy = model.generate(prompt, 10, temperature=0)
    assert torch.equal(greedy, model.generate(prompt, 10, top_k=1, seed=0))
    want = reference_logits(model, prompt)[:, -1].argmax(-1)
    assert greedy[0, 4].item() == want.item()
    stop = greedy[0, 6].item()
    first = [t for t in range(4, 14) if greedy[0, t].item() == stop][0]
    seen = []
    out = model.generate(prompt, 10, temperature=0, stop_token=stop, callback=lambda t: seen.append(t.item()))
    assert out[0].tolist() == greedy[0, : first + 1].tolist()
    assert seen == greedy[0, 4 : first + 1].tolist()
    assert [t.item() for t in model.stream(prompt, 3, temperature=0)] == greedy[0, 4:7].tolist()


# ---------------------------------------------------------------- learning
@pytest.mark.parametrize("position", ["learned", "rope"])
def test_tiny_model_learns(position):
    torch.manual_seed(0)
    model = GPT(GPTConfig(**{**TINY, "position": position}))
    # a repeating pattern of period 7 over 7 distinct tokens: perfectly predictable after one period
    data = torch.tensor([3, 1, 4, 15, 9, 2, 6] * 40)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(40):
        ix = torch.randint(0, len(data) - 17, (8,), generator=g)
        x = torch.stack([data[i : i + 16] for i in ix])
        y = torch.stack([data[i + 1 : i + 17] for i in ix])
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(math.log(23), abs=0.3)  # starts near uniform over 23 ids
    assert losses[-1] < 0.5, losses  # ln 23 = 3.1 -> below 0.5 nats


# ---------------------------------------------------------------- bad input (``tiny_run``: tests/conftest.py)
@pytest.mark.parametrize("temperature", [float("nan"), float("inf"), -1.0])
def test_model_stream_temperature(tiny_run, temperature):
    # before: nan / inf reached torch.multinomial: "probability tensor contains either inf, nan or element < 0"
    model, _, _ = load_checkpoint(tiny_run["ckpt"])
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0"):
        list(model.stream(torch.zeros(1, 2, dtype=torch.long), 2, temperature=temperature))
