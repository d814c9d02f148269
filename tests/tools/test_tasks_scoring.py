"""The scorer behind the lm-eval class (storygpt/tasks/scoring.py) against brute-force sums of log-softmax over
one whole forward pass, and against bits.py's held-out measurement (no lm-eval needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from storygpt.eval.bits import evaluate_bits
from storygpt.model import GPT, GPTConfig
from storygpt.tasks import scoring
from storygpt.tokenizers import WordTokenizer, train_bpe

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXT = "the cat sat on the mat. the dog sat on the log. a cat is not a dog, and a dog is not a cat. " * 20


@pytest.fixture(scope="module")
def bpe():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the text runs out of pairs before 300: all its merges are learnt
        return train_bpe(TEXT, 300, backend="reference")


def model_for(tok, block: int = 32, seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    m = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=block, n_layer=1, n_head=2, n_embd=32, position="rope"))
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.3)  # logits far apart: the sums mean something
    return m.eval()


def brute(model, ids: list[int], first: int) -> tuple[float, bool]:
    """Sum of log p over targets ids[first:] from one forward pass of the whole sequence (must fit)."""
    with torch.no_grad():
        logits, _ = model(torch.tensor([ids[:-1]]))
    logp = torch.log_softmax(logits[0].double(), -1)
    t = torch.tensor(ids[1:])
    picked = logp[torch.arange(len(t)), t][first - 1 :]
    greedy = bool((logp.argmax(-1) == t)[first - 1 :].all())
    return float(picked.sum()), greedy


def test_a_token_crossing_the_boundary_belongs_to_the_continuation(bpe):
    ctx, cont = "the dog sat on the m", "at. the cat"
    whole = bpe.encode_ordinary(ctx + cont)
    pair = scoring.split_pair(bpe, ctx, cont)
    assert pair.crossed  # "mat" (or "m" + "at.") is merged across the boundary
    assert pair.ids == [bpe.eot_id, *whole]
    # the context tokens decode to a proper prefix of the context, the continuation covers all of cont
    head = bpe.decode(pair.ids[1 : pair.first])
    assert ctx.startswith(head) and len(head) < len(ctx)
    assert bpe.decode(pair.ids[pair.first :]).endswith(cont)
    # lm-eval's TemplateLM cut (after len(enc(context)) tokens) differs exactly here
    assert pair.first - 1 < len(bpe.encode_ordinary(ctx))


def test_no_crossing_matches_lm_evals_cut(bpe):
    ctx, cont = "the dog sat on the", " mat"
    pair = scoring.split_pair(bpe, ctx, cont)
    assert not pair.crossed
    assert pair.first - 1 == len(bpe.encode_ordinary(ctx))
    assert scoring.split_pair(bpe, "", "the cat").first == 1  # empty context: all after <|endoftext|>


@pytest.mark.parametrize("tokens_per_batch", [8, 4096])
def test_loglikelihoods_equal_a_whole_forward_pass(bpe, tokens_per_batch):
    model = model_for(bpe, block=64)
    pairs = [
        ("the cat sat on the", " mat"),
        ("a dog is not a", " cat"),
        ("", "the log."),
        ("the dog sat on the m", "at."),
    ]
    scorer = scoring.Scorer(model, 64, tokens_per_batch=tokens_per_batch)
    got, crossed = scoring.loglikelihood(scorer, bpe, pairs)
    assert crossed == 1 and scorer.cut_items == 0
    for (c, x), (ll, greedy) in zip(pairs, got):
        p = scoring.split_pair(bpe, c, x)
        want, want_greedy = brute(model, p.ids, p.first)
        assert ll == pytest.approx(want, abs=1e-4)
        assert greedy == want_greedy
    assert min(ll for ll, _ in got) < -5  # far from zero: the comparison means something


def test_long_items_are_cut_from_the_left_and_counted(bpe):
    block = 16
    model = model_for(bpe, block=block)
    ctx, cont = TEXT[:200], " cat"
    scorer = scoring.Scorer(model, block)
    ((ll, _),) = scoring.loglikelihood(scorer, bpe, [(ctx, cont)])[0]
    p = scoring.split_pair(bpe, ctx, cont)
    assert len(p.ids) - 1 > block and scorer.cut_items == 1
    kept = p.ids[-(block + 1) :]  # the last block + 1 tokens: the oldest context is dropped
    want, _ = brute(model, kept, len(kept) - (len(p.ids) - p.first))
    assert ll == pytest.approx(want, abs=1e-4)


def test_rolling_equals_bits_py_on_one_document(bpe):
    """loglikelihood_rolling predicts every token once in back-to-back windows after <|endoftext|>: on a text of
    whole windows, the same sum as bits.py's measurement of it as one document (storygpt/eval/bits.py); the last
    window of a longer text gets full context (as lm-eval's), so it then differs."""
    block = 16
    model = model_for(bpe, block=block, seed=3)
    ids = bpe.encode_ordinary(TEXT)[: 4 * block]
    doc = bpe.decode(ids)
    assert bpe.encode_ordinary(doc) == ids
    scorer = scoring.Scorer(model, block)
    (ll,) = scoring.rolling(scorer, bpe, [doc])
    res = evaluate_bits(model, bpe, [doc], block_size=block)
    assert res.tokens == 4 * block
    assert -ll == pytest.approx(res.nats, rel=1e-6)
    longer = bpe.decode(bpe.encode_ordinary(TEXT)[: 4 * block + 3])
    (ll2,) = scoring.rolling(scorer, bpe, [longer])
    want = ll + sum(brute(model, [bpe.eot_id, *bpe.encode_ordinary(longer)][-(block + 1) :], block - 2)[:1])
    assert ll2 == pytest.approx(want, abs=1e-4)


def test_any_tokenizer_kind_word_level():
    tok = WordTokenizer.train(TEXT)
    model = model_for(tok, block=32)
    scorer = scoring.Scorer(model, 32)
    ((ll, _),) = scoring.loglikelihood(scorer, tok, [("the cat sat on the", " mat")])[0]
    p = scoring.split_pair(tok, "the cat sat on the", " mat")
    assert p.ids[p.first :] == tok.encode_ordinary(" mat")
    assert ll == pytest.approx(brute(model, p.ids, p.first)[0], abs=1e-4)


def test_generate_stops_at_until(bpe):
    model = model_for(bpe, block=32)
    full = scoring.generate(model, bpe, "the cat", until=[], max_new_tokens=12, block_size=32)
    assert full  # random weights write something
    cut = full[len(full) // 2 :][:1]
    got = scoring.generate(model, bpe, "the cat", until=[cut], max_new_tokens=12, block_size=32)
    assert got == full[: full.index(cut)]


def test_windows_predict_every_target_once():
    for n, first, block in [(10, 1, 4), (10, 7, 4), (5, 1, 16), (33, 2, 8)]:
        seen = []
        for b, e, f in scoring.windows_for(n, first, block):
            assert 0 < e - b <= block and b < f <= e
            seen += list(range(f, e + 1))
        assert seen == list(range(first, n))
    assert math.isclose(scoring.nats_to_bits(math.log(2)), 1.0)
    assert np.all(np.asarray(scoring.windows_for(3, 3, 4)) == np.empty((0,)))
