"""storygpt.eval.heldout: per-token character positions, block losses and the tokenizer's own measures, checked
against independent computations (decoding prefixes, counting by hand); evaluate_bits' token_nats."""

from __future__ import annotations

import math

import numpy as np
import pytest

from storygpt.eval import heldout
from storygpt.eval.bits import evaluate_bits, token_stream
from storygpt.tokenizers import train_bpe
from storygpt.tokenizers.bpe import ByteTokenizer
from storygpt.tokenizers.word import WordTokenizer

DOCS = ["héllo wörld, ça va?", "second doc", "third one, the longest of the three documents"]


def prefix_char_ends(tok, doc, ids):
    """Independent oracle: characters of ``doc`` complete after each token, by decoding each prefix's bytes."""
    out = []
    for k in range(1, len(ids) + 1):
        raw = b"".join(tok.token_bytes(t) for t in ids[:k])
        out.append(len(raw.decode("utf-8", errors="ignore")))
    return out


@pytest.mark.parametrize("make", [ByteTokenizer, lambda: train_bpe(" ".join(DOCS * 20), 300)])
def test_token_char_ends_are_exact_for_byte_level_tokenizers(make):
    tok = make()
    for d in DOCS:
        ids = tok.encode_ordinary(d)
        ends, exact = heldout.token_char_ends(tok, d, ids)
        assert exact and ends.tolist() == prefix_char_ends(tok, d, ids) and ends[-1] == len(d)


def test_token_char_ends_fall_back_to_even_spread():
    tok = WordTokenizer.train(["a b c"], vocab_size=10)
    ends, exact = heldout.token_char_ends(tok, "a b zz", tok.encode_ordinary("a b zz"))
    assert not exact and ends[-1] == 6 and len(ends) == len(tok.encode_ordinary("a b zz"))


class Uniform:
    """A model whose logits are all zero: every token costs ln(vocab) nats."""

    def __init__(self, vocab):
        self.vocab = vocab

    def __call__(self, x):
        import torch

        return torch.zeros(*x.shape, self.vocab)


def test_block_losses_sum_uniform_costs_into_blocks():
    tok = ByteTokenizer()
    docs = ["a" * 25, "b" * 10]  # 25 + 1 boundary + 10 = 36 characters, every token one character (ASCII)
    n = len(token_stream(tok, docs)[0]) - 1
    token_nats = np.zeros(n)
    res = evaluate_bits(Uniform(tok.vocab_size), tok, docs, block_size=8, token_nats=token_nats)
    assert token_nats == pytest.approx(np.full(n, math.log(257)))
    assert token_nats.sum() == pytest.approx(res.nats)
    bl = heldout.block_losses(tok, docs, token_nats, block_chars=10)
    assert bl.chars == [10, 10, 10, 6] and bl.exact
    # one token per character, boundary included: 10, 10, 10, 6 tokens
    assert bl.nats == pytest.approx([10 * math.log(257)] * 3 + [6 * math.log(257)])


def test_token_nats_are_each_tokens_loss_in_stream_order():
    import torch

    tok = ByteTokenizer()
    docs = ["abcabcabc", "xyz"]
    stream = token_stream(tok, docs)[0]

    class Peaked:  # puts logit 5 on the id equal to (position mod 7): each target's cost differs
        def __call__(self, x):
            logits = torch.zeros(*x.shape, 257)
            logits[..., :7] = 0
            idx = torch.arange(x.shape[1]) % 7
            logits[:, torch.arange(x.shape[1]), idx] = 5.0
            return logits

    nats = np.zeros(len(stream) - 1)
    evaluate_bits(Peaked(), tok, docs, block_size=4, token_nats=nats)
    # by hand: window of 4 inputs from stream index b; target j = b + 1 + t has logit 5 on id t % 7
    z = math.log(256 + math.exp(5))
    for j in range(1, len(stream)):
        t = (j - 1) % 4
        want = z - (5.0 if stream[j] == t % 7 else 0.0)
        assert nats[j - 1] == pytest.approx(want, rel=1e-5)


def test_intrinsic_measures_by_hand():
    tok = ByteTokenizer()
    m = heldout.intrinsic_measures(tok, ["aab", "é"])
    # ids: a a b | 0xC3 0xA9: 5 tokens, 4 characters, 4 distinct ids of 257
    assert m["chars_per_token"] == pytest.approx(4 / 5)
    assert m["vocab_used_share"] == pytest.approx(4 / 257)
    assert m["mean_token_bytes"] == pytest.approx(1.0)
    p = np.array([2, 1, 1, 1]) / 5
    want = math.log((p**2.5).sum()) / (1 - 2.5) / math.log(257)
    assert m["renyi_efficiency"] == pytest.approx(want)


def test_fertility_of_the_held_out_text_by_hand():
    from storygpt.eval.intrinsic import fertility

    # byte tokens: words "aab" (3), "cd" (2), "é" (2 bytes): 7 tokens over 3 words; no word at all: None
    assert fertility(ByteTokenizer(), ["aab cd", "é"]) == pytest.approx(7 / 3)
    assert fertility(ByteTokenizer(), ["  ,.", "!"]) is None
