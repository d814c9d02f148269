"""Bits per byte, evaluation sets, per-character attribution, perturbations and vocabulary health
(storygpt/eval/bits.py, storygpt/data/evalsets.py, storygpt/compare/*), each against an independent computation:
counts by hand, brute-force loops over characters and bytes, closed forms."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import CORPORA

torch = pytest.importorskip("torch")

from storygpt.data.evalsets import (  # noqa: E402
    default_groups,
    heldout_work_names,
    parse_eval_args,
    read_eval_sets,
    summarize,
)
from storygpt.eval import attribution, charloss, perturb, sets, vocab_health  # noqa: E402
from storygpt.eval.bits import count_bytes, count_characters, evaluate_bits  # noqa: E402
from storygpt.tokenizers import train_bpe  # noqa: E402

LN2 = math.log(2)


class Uniform(torch.nn.Module):
    """Logits 0 everywhere: every token costs ln(V) nats."""

    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab

    def forward(self, x):
        return torch.zeros(*x.shape, self.vocab)


class CharTok:
    """One id per character (lossless): 0 eot, 1 unk."""

    def __init__(self, alphabet):
        self.chars = sorted(set(alphabet))
        self.index = {c: i + 2 for i, c in enumerate(self.chars)}
        self.eot_id, self.unk_id, self.vocab_size = 0, 1, len(self.chars) + 2

    def encode_ordinary(self, text):
        return [self.index.get(c, 1) for c in text]

    def decode(self, ids):
        return "".join("?" if i < 2 else self.chars[i - 2] for i in ids)


class LossyWordTok:
    """Lower-cases, splits on white space, <unk> for words outside a tiny vocabulary; decode joins with spaces."""

    def __init__(self, words):
        self.words = sorted(set(words))
        self.index = {w: i + 2 for i, w in enumerate(self.words)}
        self.eot_id, self.unk_id, self.vocab_size = 0, 1, len(self.words) + 2

    def encode_ordinary(self, text):
        return [self.index.get(w.lower(), 1) for w in text.split()]

    def decode(self, ids):
        return " ".join("<unk>" if i == 1 else self.words[i - 2] for i in ids)


DOCS = ["Héllo wörld,\nnaïve café.", "日本語 text 42", "Привет мир!"]


# ------------------------------------------------------------------ 1. bits per byte
def test_bytes_counted_by_hand():
    # "Héllo wörld,\nnaïve café." 24 chars, é ö ï é two bytes each: 28 bytes; "日本語 text 42": 11 chars,
    # 3 x 3 bytes + 8 = 17; "Привет мир!": 11 chars, 9 Cyrillic x 2 + 2 = 20; plus 2 boundaries
    assert count_characters(DOCS) == 24 + 11 + 11 + 2
    assert count_bytes(DOCS) == 28 + 17 + 20 + 2


@pytest.mark.parametrize("tok", [CharTok("".join(DOCS)), LossyWordTok(["hello", "text", "мир!"])])
def test_bits_per_byte_by_hand_and_denominators_from_the_text(tok):
    res = evaluate_bits(Uniform(tok.vocab_size), tok, DOCS, block_size=4)
    # the denominators are the text's, whatever the tokenizer predicts or decodes to
    assert (res.characters, res.bytes) == (48, 67)
    nats = res.tokens * math.log(tok.vocab_size)
    assert res.nats == pytest.approx(nats, rel=1e-6)
    assert res.bits_per_byte == pytest.approx(nats / (LN2 * 67), rel=1e-6)
    assert res.bits_per_character / res.bits_per_byte == pytest.approx(67 / 48, rel=1e-12)
    assert res.to_dict()["bits_per_byte"] == res.bits_per_byte


def test_lossy_tokenizer_decodes_to_other_text_but_counts_do_not_change():
    tok = LossyWordTok(["héllo", "wörld,", "text"])
    assert tok.decode(tok.encode_ordinary(DOCS[0])) != DOCS[0]  # lossy: the decode is not the text
    lossless = evaluate_bits(Uniform(60), CharTok("".join(DOCS)), DOCS, block_size=8)
    lossy = evaluate_bits(Uniform(tok.vocab_size), tok, DOCS, block_size=8)
    assert (lossy.characters, lossy.bytes) == (lossless.characters, lossless.bytes)
    assert lossy.tokens != lossless.tokens


@pytest.mark.skipif(not CORPORA.is_dir(), reason=f"shared corpora not found at {CORPORA}")
@pytest.mark.parametrize("name", ["russian_fortunes.txt", "chinese_fortunes.txt"])
def test_ratio_is_the_texts_bytes_per_character(name):
    from storygpt.eval.bits import read_documents, take_characters

    docs = take_characters(read_documents(CORPORA / name), 3000)
    tok = CharTok("".join(docs))
    res = evaluate_bits(Uniform(tok.vocab_size), tok, docs, block_size=64)
    text = "\n".join(docs)  # boundaries: one character and one byte each, like a new line
    ratio = len(text.encode("utf-8")) / len(text)
    assert ratio > 1.5  # Cyrillic about 1.8, Han about 2.7 bytes per character
    assert res.bits_per_character / res.bits_per_byte == pytest.approx(ratio, rel=1e-12)


# ------------------------------------------------------------------ 2. evaluation sets
def test_eval_args_and_bad_files(tmp_path):
    good = tmp_path / "a.txt"
    good.write_text("one\n<|endoftext|>\ntwo\n", encoding="utf-8")
    assert parse_eval_args([f"a={good}", "b=x.txt"]) == [("a", good), ("b", Path("x.txt"))]
    [s] = read_eval_sets([f"a={good}"])
    assert (s.name, s.documents) == ("a", ["one", "two"])
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9\n")
    cases = {
        f"x={tmp_path / 'missing.txt'}": "x=",
        f"e={tmp_path / 'empty.txt'}": "empty",
        f"l={tmp_path / 'latin1.txt'}": "not UTF-8",
        "noequals": "NAME=PATH",
    }
    for arg, words in cases.items():
        with pytest.raises(ValueError) as e:
            read_eval_sets([arg])
        assert words in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ValueError, match="'a' is given twice"):
        read_eval_sets([f"a={good}", f"a={good}"])


def test_default_sets_are_the_held_out_works(tmp_path):
    (tmp_path / "stats-bpe-8192.json").write_text('{"notes": ["held-out works: hamlet, sonnets"]}')
    assert heldout_work_names(tmp_path, 2) == ["hamlet", "sonnets"]
    assert heldout_work_names(tmp_path, 1) == ["hamlet"]  # a text cut short keeps its first works
    assert heldout_work_names(tmp_path, 3) is None
    assert default_groups(2, ["hamlet", "sonnets"]) == [("hamlet", [0]), ("sonnets", [1])]
    groups = default_groups(100)
    assert len(groups) == 8 and sum(len(g) for _, g in groups) == 100 and groups[0][0] == "docs-1-12"


def test_macro_and_micro_means_by_hand():
    s = {"a": {"nats": 10 * LN2, "characters": 10, "bytes": 20}, "b": {"nats": 30 * LN2, "characters": 10, "bytes": 10}}
    out = summarize({**s, "c": {"nats": 0.0, "characters": 80, "bytes": 80}})
    assert out["macro_bits_per_character"] == pytest.approx((1 + 3 + 0) / 3)
    assert out["micro_bits_per_character"] == pytest.approx(40 / 100)
    assert out["macro_bits_per_byte"] == pytest.approx((0.5 + 3 + 0) / 3)
    assert out["micro_bits_per_byte"] == pytest.approx(40 / 110)


def test_set_figures_split_one_pass_by_document():
    from storygpt.eval.measure import Text, measure_text

    tok = CharTok("".join(DOCS))
    t = Text("t", DOCS, [("first", [0]), ("rest", [1, 2])], ["d1", "d2", "d3"])
    m = measure_text(Uniform(tok.vocab_size), tok, t, per_character=True, block_size=8)
    f = m.set_figures
    # the boundary after a document belongs to it: 24 + 1 chars, 11 + 1 + 11
    assert (f["first"]["characters"], f["rest"]["characters"]) == (25, 23)
    assert (f["first"]["bytes"], f["rest"]["bytes"]) == (29, 38)
    assert f["first"]["nats"] + f["rest"]["nats"] == pytest.approx(m.result.nats, rel=1e-12)
    assert f["first"]["nats"] == pytest.approx(25 * math.log(tok.vocab_size), rel=1e-6)


def test_set_intervals_observed_values_by_hand():
    rng = np.random.default_rng(0)
    A = {k: rng.random(n) * 100 for k, n in (("x", 5), ("y", 9))}
    B = {k: rng.random(len(v)) * 100 for k, v in A.items()}
    C = {k: rng.integers(50, 60, len(v)).astype(float) for k, v in A.items()}
    iv = sets.set_intervals(A, B, C, replicates=2000)
    per = {k: (A[k].sum() - B[k].sum()) / (LN2 * C[k].sum()) for k in A}
    assert iv["sets"]["x"].diff == pytest.approx(per["x"])
    assert iv["macro"].diff == pytest.approx((per["x"] + per["y"]) / 2)
    allc = sum(C[k].sum() for k in C)
    assert iv["micro"].diff == pytest.approx(sum(A[k].sum() - B[k].sum() for k in A) / (LN2 * allc))
    for v in (iv["sets"]["x"], iv["macro"], iv["micro"]):
        assert v.low <= v.diff <= v.high


# ------------------------------------------------------------------ 3. attribution
@pytest.fixture(scope="module")
def bpe():
    return train_bpe(" ".join(DOCS) * 3, vocab_size=300, pattern="simple")


def brute_char_nats(tok, docs, token_nats):
    """Every byte of every token gets nats / bytes; every character the sum over its bytes (plain loops)."""
    out, at = [], 0
    for j, d in enumerate(docs):
        if j:
            out.append(token_nats[at])
            at += 1
        owner = []  # character index of each byte of d
        for ci, ch in enumerate(d):
            owner += [ci] * len(ch.encode("utf-8"))
        chars = [0.0] * len(d)
        pos = 0
        for t in tok.encode_ordinary(d):
            b = tok.token_bytes(t)
            for k in range(len(b)):
                chars[owner[pos + k]] += token_nats[at] / len(b)
            pos += len(b)
            at += 1
        out += chars
    return np.array(out)


def test_char_nats_equal_a_brute_force_spread(bpe):
    docs = DOCS + ["日本語日本"]
    n = sum(len(bpe.encode_ordinary(d)) for d in docs) + len(docs) - 1
    tn = np.random.default_rng(1).random(n) * 5
    got, exact = charloss.char_nats(bpe, docs, tn)
    assert exact
    # some token ends inside a character (byte-level merges of the Han text): the rule must still hold
    assert any(len(bpe.token_bytes(t)) % 3 for t in bpe.encode_ordinary("日本語日本"))
    np.testing.assert_allclose(got, brute_char_nats(bpe, docs, tn), rtol=1e-12, atol=1e-12)
    assert math.fsum(got) == pytest.approx(math.fsum(tn), rel=1e-12)


def test_lossy_tokenizer_spreads_each_document_evenly():
    tok = LossyWordTok(["héllo"])
    n = sum(len(tok.encode_ordinary(d)) for d in DOCS) + 2
    tn = np.arange(1, n + 1, dtype=float)
    got, exact = charloss.char_nats(tok, DOCS, tn)
    assert not exact and len(got) == count_characters(DOCS)
    k0 = len(tok.encode_ordinary(DOCS[0]))
    np.testing.assert_allclose(got[:24], np.full(24, tn[:k0].sum() / 24))
    assert got[24] == tn[k0]  # the boundary carries its eot


def test_classes_positions_and_frequencies_by_hand():
    docs = ["Ab 1,\nжx", "q"]
    assert [charloss.CLASSES[i] for i in charloss.char_classes(docs)] == [
        "letters", "letters", "space", "digits", "punctuation", "newline", "other scripts", "letters",
        "boundary", "letters",
    ]  # fmt: skip
    assert [charloss.POSITIONS[i] for i in charloss.word_positions(docs)] == [
        "word start", "word rest", "not in a word", "word start", "not in a word", "not in a word",
        "word start", "word rest", "not in a word", "word start",
    ]  # fmt: skip
    f = charloss.frequency_classes(docs, {"Ab": 500, "1": 3})
    assert [charloss.FREQUENCIES[i] for i in f] == [
        "frequent", "frequent", "not in a word", "rare", "not in a word", "not in a word", "unseen", "unseen",
        "not in a word", "unseen",
    ]  # fmt: skip


def test_attribution_parts_add_up_and_equal_a_brute_force_sum(bpe):
    docs = DOCS + ["The the THE 7 cats, 日本."]
    rng = np.random.default_rng(2)
    n = sum(len(bpe.encode_ordinary(d)) for d in docs) + len(docs) - 1
    ta, tb = rng.random(n) * 4, rng.random(n) * 4
    a, _ = charloss.char_nats(bpe, docs, ta)
    b, _ = charloss.char_nats(bpe, docs, tb)
    counts = {"The": 150, "the": 5}
    from storygpt.eval.measure import Text

    text_ = Text("t", docs, [("s1", [0, 1]), ("s2", [2, 3])], ["x", "y", "z", "w"])
    splits = attribution.splits_of([text_], counts)
    att = attribution.attribute(a, b, splits)
    total = (ta.sum() - tb.sum()) / LN2
    assert att["total_bits"] == pytest.approx(total, rel=1e-12, abs=1e-9)
    brute_a, brute_b = brute_char_nats(bpe, docs, ta), brute_char_nats(bpe, docs, tb)
    text = "\n".join(docs)
    for key, rows in att["splits"].items():
        assert abs(sum(r["bits"] for r in rows) - att["total_bits"]) < 1e-9
        for r in rows:  # brute force: loop over the characters and test membership by hand
            acc = 0.0
            for i in range(len(text)):
                if splits[key].names[splits[key].labels[i]] == r["part"]:
                    acc += (brute_a[i] - brute_b[i]) / LN2
            assert r["bits"] == pytest.approx(acc, rel=1e-9, abs=1e-9)
    by_set = {r["part"]: r["bits"] for r in att["splits"]["set"]}
    first = count_characters(docs[:2]) + 1  # the boundary between the sets belongs to s1
    assert by_set["s1"] == pytest.approx(math.fsum((brute_a[:first] - brute_b[:first]) / LN2), abs=1e-9)
    with pytest.raises(ValueError, match="different texts"):
        attribution.attribute(a, b[:-1], splits)


def test_passage_html_colours_each_character():
    page = attribution.passage_html("a<b", np.array([1.0, 0.0, -1.0]), "A", "B", scale=1.0)
    assert "rgb(255,0,0)" in page and "rgb(0,0,255)" in page and "&lt;" in page


# ------------------------------------------------------------------ 4. perturbations
def test_perturbations_are_seeded_and_blocks_line_up():
    docs = ['The quick brown fox jumps over the lazy dog\'s back - "twice".\nAgain the fox.'] * 3
    for kind in perturb.KINDS:
        a = perturb.perturb_documents(docs, kind, 7, 20)
        b = perturb.perturb_documents(docs, kind, 7, 20)
        assert a[0] == b[0] and a[0] != docs, kind
        new, clean_ends, noisy_ends = a
        assert clean_ends[-1] == count_characters(docs) and noisy_ends[-1] == count_characters(new)
        assert len(clean_ends) == len(noisy_ends) == 3 * -(-len(docs[0]) // 20)
    assert perturb.perturb_documents(docs, "case", 8, 20)[0] != perturb.perturb_documents(docs, "case", 7, 20)[0]
    with pytest.raises(ValueError, match="unknown perturbation 'typo'"):
        perturb.parse_kinds("typos,typo")


def test_change_interval_by_hand():
    cn, cc = np.array([10.0, 20, 30]), np.array([10.0, 10, 10])
    pn, pc = np.array([12.0, 25, 30]), np.array([11.0, 10, 9])
    iv = perturb.change_interval(cn, cc, pn, pc, replicates=500)
    assert iv.diff == pytest.approx(67 / (LN2 * 30) - 60 / (LN2 * 30))
    assert iv.low <= iv.diff <= iv.high


# ------------------------------------------------------------------ 5. vocabulary health
def test_intermediate_tokens_by_hand():
    # bytes 0..3; merges: (0,1)->4, (4,2)->5, (5,3)->6.  Token 4 occurs 1 time itself, 99 inside 5 and 6
    counts = np.array([5, 5, 5, 5, 1, 9, 90])
    merges = [(0, 1, 4), (4, 2, 5), (5, 3, 6)]
    assert vocab_health.intermediate_tokens(counts, merges).tolist() == [4, 5]  # 1/100 and 9/99 <= 0.1
    assert vocab_health.intermediate_tokens(counts, None) is None


def test_vocab_health_counts_and_norms(tmp_path):
    class Tok:
        vocab_size, merges = 6, [(0, 1, 4), (4, 2, 5)]

        def id_to_token(self, i):
            return f"t{i}"

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = torch.nn.Embedding(6, 2)
            with torch.no_grad():
                self.wte.weight.copy_(torch.tensor([[3.0, 4], [0, 1], [0, 2], [0, 3], [1, 0], [6, 8]]))

    counts = np.array([100, 100, 5, 0, 100, 0])
    h = vocab_health.vocab_health(Tok(), Model(), counts, np.array([0, 3, 3, 2, 1, 5, 5, 0]))
    assert (h["never_seen"], h["rarely_seen"]) == (2, 1)
    assert h["heldout_share_never_seen"] == 4 / 8 and h["heldout_share_rarely_seen"] == 1 / 8
    assert h["embedding_norm_never_seen"] == pytest.approx((3 + 10) / 2)
    assert h["embedding_norm_seen"] == pytest.approx((5 + 1 + 2 + 1) / 4)
    assert h["unlearned_share"] == pytest.approx(3 / 6)
    assert h["never_seen_examples"] == ["t3", "t5"]
    # a token absent from the training tokens is not blamed on the training budget
    line = vocab_health.format_health("run", h).splitlines()[0]
    assert line.startswith("run: 2 of 6 tokens never seen in training, 1 seen 1-9 times (50.0% of the vocabulary ")
    assert "never or rarely seen in the training tokens); held-out tokens through them: 50.000% never" in line
    assert "budget" not in line
