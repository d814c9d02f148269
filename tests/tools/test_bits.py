"""Bits per character (storygpt/eval/bits.py and bits.py).

The library function is checked against an independent computation (one
target at a time, with log_softmax, the context rebuilt from the window rule
by hand) on a tiny causal model trained in the test, and against the closed
form log2(V) * tokens / characters for a model that predicts the uniform
distribution.
"""

from __future__ import annotations

import json
import math
import random

import pytest
from conftest import call_tool, one_error_line, run_tool

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402

from storygpt.eval.bits import (  # noqa: E402
    count_characters,
    evaluate_bits,
    read_documents,
    scoring_windows,
    take_characters,
    token_stream,
)
from storygpt.tokenizers import train_bpe  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


# --------------------------------------------------------------------------
# stand-ins: a character tokenizer and a tiny causal model
# --------------------------------------------------------------------------
class CharTokenizer:
    """Ids: 0 = <|endoftext|>, 1 = <unk>, then one id per known character."""

    kind = "char"

    def __init__(self, alphabet: str):
        self.chars = sorted(set(alphabet))
        self.index = {c: i + 2 for i, c in enumerate(self.chars)}
        self.eot_id, self.unk_id = 0, 1
        self.vocab_size = len(self.chars) + 2

    def encode_ordinary(self, text):
        return [self.index.get(c, self.unk_id) for c in text]

    def decode(self, ids):
        out = []
        for i in ids:
            out.append("<|endoftext|>" if i == 0 else "?" if i == 1 else self.chars[i - 2])
        return "".join(out)


class WordTokenizer:
    """Splits on white space; decode joins with one space (so new lines are lost)."""

    kind = "word"

    def __init__(self, vocab):
        self.words = ["<|endoftext|>", "<unk>"] + sorted(set(vocab))
        self.index = {w: i for i, w in enumerate(self.words)}
        self.eot_id, self.unk_id = 0, 1
        self.vocab_size = len(self.words)

    def encode_ordinary(self, text):
        return [self.index.get(w, 1) for w in text.split()]

    def decode(self, ids):
        return " ".join(self.words[i] for i in ids)


class TinyCausal(nn.Module):
    """Causal: the logits at t depend on ids[:t+1] only (running mean of embeddings + position)."""

    def __init__(self, vocab, block_size=8, dim=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(block_size, dim)
        self.head = nn.Linear(2 * dim, vocab)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        e = self.tok(idx)
        mean = e.cumsum(1) / torch.arange(1, T + 1, device=idx.device)[None, :, None]
        h = torch.cat([mean, e + self.pos(torch.arange(T, device=idx.device))[None]], dim=-1)
        logits = self.head(torch.tanh(h))
        loss = None
        if targets is not None:
            loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss


class Uniform(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab

    def forward(self, idx):
        return torch.zeros(*idx.shape, self.vocab)


DOCS = [
    "the cat sat on the mat.\nthe dog sat on the log.",
    "a bird sang; the cat slept.",
    "one more story about the mat and the dog.",
]


def fit(model, opt, data, block_size: int, steps: int):
    """``steps`` steps of ``opt`` on 8 random windows of ``data`` (1-D token tensor) each; returns ``model``."""
    for _ in range(steps):
        starts = torch.randint(0, len(data) - block_size - 1, (8,))
        x = torch.stack([data[s : s + block_size] for s in starts])
        y = torch.stack([data[s + 1 : s + block_size + 1] for s in starts])
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def trained_model(tok, block_size=8, steps=30):
    torch.manual_seed(0)
    model = TinyCausal(tok.vocab_size, block_size)
    stream, _ = token_stream(tok, DOCS)
    data = torch.from_numpy(stream)
    return fit(model, torch.optim.Adam(model.parameters(), lr=3e-2), data, block_size, steps)


def direct_nats(model, ids, block_size, stride):
    """Independent oracle: one target at a time, context rebuilt from the window rule."""
    total = 0.0
    model.eval()
    with torch.no_grad():
        for j in range(1, len(ids)):
            if j <= block_size:
                begin = 0
            else:  # the first window whose last target is >= j
                begin = math.ceil((j - block_size) / stride) * stride
            ctx = torch.tensor([ids[begin:j]])
            logp = torch.log_softmax(model(ctx)[0][0, -1].double(), dim=-1)
            total -= float(logp[ids[j]])
    return total


# --------------------------------------------------------------------------
# text handling
# --------------------------------------------------------------------------
def test_read_documents_drops_separator_lines_and_their_new_lines(tmp_path):
    # bits.py reads the text with data.py's parser (storygpt.data.corpora), re-exported by storygpt.eval.bits
    text = (
        "first doc\r\nline two\n<|endoftext|>\nsecond\n <|endoftext|> \n\n<|endoftext|>\nthird <|endoftext|> inline\n"
    )
    (tmp_path / "t.txt").write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert read_documents(tmp_path / "t.txt") == ["first doc\nline two", "second", "third <|endoftext|> inline"]
    (tmp_path / "one.txt").write_text("no separator\n\n")
    assert read_documents(tmp_path / "one.txt") == ["no separator\n"]


def test_take_characters_counts_one_per_boundary():
    docs = ["abcde", "fghij", "klm"]
    assert count_characters(docs) == 5 + 5 + 3 + 2
    assert take_characters(docs, 3) == ["abc"]
    assert take_characters(docs, 5) == ["abcde"]
    assert take_characters(docs, 6) == ["abcde"]  # a boundary with nothing after it is not kept
    assert take_characters(docs, 7) == ["abcde", "f"]
    assert count_characters(take_characters(docs, 10)) == 10
    assert take_characters(docs, 1000) == docs
    assert take_characters(docs, None) == docs
    with pytest.raises(ValueError, match="positive"):
        take_characters(docs, 0)


def test_read_documents_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        read_documents(tmp_path / "nope.txt")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe broken")
    with pytest.raises(ValueError, match="bad.txt"):
        read_documents(bad)
    empty = tmp_path / "empty.txt"
    empty.write_text("<|endoftext|>\n")
    with pytest.raises(ValueError, match="empty.txt"):
        read_documents(empty)


@pytest.mark.parametrize("n,block,stride", [(1, 4, 4), (10, 4, 4), (13, 4, 3), (9, 4, 1), (3, 8, 2), (20, 5, 5)])
def test_windows_predict_every_target_once(n, block, stride):
    seen = []
    for begin, end, first in scoring_windows(n, block, stride):
        assert 0 < end - begin <= block
        seen.extend(range(max(first, begin + 1), end + 1))
    assert seen == list(range(1, n + 1))


def test_windows_reject_bad_stride():
    with pytest.raises(ValueError, match="stride"):
        list(scoring_windows(10, 4, 5))
    with pytest.raises(ValueError, match="stride"):
        list(scoring_windows(10, 4, 0))


def test_token_stream_layout():
    tok = CharTokenizer("abc")
    stream, per_doc = token_stream(tok, ["ab", "c"])
    assert stream.tolist() == [0, 2, 3, 0, 4]
    assert per_doc == [[2, 3], [4]]


# --------------------------------------------------------------------------
# the measurement
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def char_model():
    tok = CharTokenizer("".join(DOCS))
    return tok, trained_model(tok, 8)


@pytest.mark.parametrize("stride", [None, 3])
def test_bits_of_a_trained_model_equal_a_direct_computation(stride, char_model):
    tok, model = char_model
    block = 8
    res = evaluate_bits(model, tok, DOCS, block_size=block, stride=stride, batch_size=3)
    stream, _ = token_stream(tok, DOCS)
    ids = stream.tolist()
    nats = direct_nats(model, ids, block, stride or block)
    chars = sum(len(d) for d in DOCS) + len(DOCS) - 1
    assert res.tokens == len(ids) - 1 == chars  # a character tokenizer: one token per character
    assert res.characters == chars
    assert math.isfinite(res.bits_per_character)
    assert res.nats == pytest.approx(nats, rel=1e-5)
    assert res.bits_per_character == pytest.approx(nats / (math.log(2) * chars), rel=1e-5)
    # training did something: below the uniform distribution's log2(V)
    assert res.bits_per_character < math.log2(tok.vocab_size)
    assert model.training is False  # direct_nats left it in eval mode; evaluate_bits keeps the mode
    model.train()
    evaluate_bits(model, tok, DOCS[:1], block_size=block)
    assert model.training is True


def test_batch_size_does_not_change_the_result(char_model):
    tok, model = char_model
    a = evaluate_bits(model, tok, DOCS, block_size=8, batch_size=1)
    b = evaluate_bits(model, tok, DOCS, block_size=8, batch_size=64)
    assert a.nats == pytest.approx(b.nats, rel=1e-6)


@pytest.mark.parametrize("stride", [16, 5])
def test_gpt_batched_output_layer_in_pieces_equals_one_window_at_a_time(stride, monkeypatch):
    # a GPT takes the batched path (hidden states, output layer in row blocks); the oracle is the plain
    # forward() one window at a time, and the per-target direct computation
    GPT, GPTConfig = real_pieces()[:2]
    import storygpt.eval.bits as ev

    tok = CharTokenizer("".join(DOCS))
    torch.manual_seed(1)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=2, n_head=2, n_embd=32, position="rope"))
    docs = DOCS * 4
    one = evaluate_bits(lambda x: model(x)[0], tok, docs, block_size=16, stride=stride, batch_size=1)
    monkeypatch.setattr(ev, "LOGITS_PER_CHUNK", 7 * tok.vocab_size)  # row blocks of 7 that straddle the windows
    batched = evaluate_bits(model, tok, docs, block_size=16, stride=stride, batch_size=5)
    assert batched.tokens == one.tokens
    assert batched.nats == pytest.approx(one.nats, rel=1e-6, abs=0)
    stream, _ = token_stream(tok, docs)
    assert batched.nats == pytest.approx(direct_nats(model, stream.tolist(), 16, stride), rel=1e-6)
    # progress is reported after every batch, ending at all targets
    seen = []
    evaluate_bits(
        model, tok, docs, block_size=16, stride=stride, batch_size=5, progress=lambda d, t: seen.append((d, t))
    )
    assert seen[-1] == (batched.tokens, batched.tokens) and all(a < b for (a, _), (b, _) in zip(seen, seen[1:]))


def test_uniform_model_gives_log2_vocab_times_tokens_per_character():
    text = "the cat sat on the mat\nand the dog sat on a log\n"
    docs = [text, "a dog and a cat", "zebra on the mat"]
    word = WordTokenizer("the cat sat on mat and dog a log".split())
    char = CharTokenizer("the cat sat on mat and dog a log\n")
    chars = count_characters(docs)
    for tok in (word, char):
        res = evaluate_bits(Uniform(tok.vocab_size), tok, docs, block_size=4)
        tokens = sum(len(tok.encode_ordinary(d)) for d in docs) + len(docs) - 1
        assert res.tokens == tokens
        assert res.characters == chars
        assert res.bits_per_character == pytest.approx(
            math.log2(tok.vocab_size) * tokens / chars, rel=1e-6
        )  # float32 log-softmax
    # unknown share: "zebra" is the one word outside the word vocabulary
    res = evaluate_bits(Uniform(word.vocab_size), word, docs, block_size=4)
    assert res.unknown_tokens == 1
    assert res.unknown_share == pytest.approx(1 / res.tokens)


def test_round_trip_share():
    docs = ["one line only", "two\nlines", "tabs\tand  double spaces"]
    word = WordTokenizer("one line only two lines tabs and double spaces".split())
    res = evaluate_bits(Uniform(word.vocab_size), word, docs, block_size=4)
    assert res.round_trip_documents == 1 and res.round_trip_share == pytest.approx(1 / 3)
    char = CharTokenizer("".join(docs))
    res = evaluate_bits(Uniform(char.vocab_size), char, docs, block_size=4)
    assert res.round_trip_share == 1.0


def test_bad_model_output_is_reported():
    tok = CharTokenizer("abc")
    with pytest.raises(ValueError, match="logits of shape"):
        evaluate_bits(lambda x: torch.zeros(x.shape[0], 5), tok, ["abcabc"], block_size=4)
    with pytest.raises(ValueError, match="outside the model's vocabulary"):
        evaluate_bits(Uniform(2), tok, ["abcabc"], block_size=4)
    with pytest.raises(ValueError, match="no text"):
        evaluate_bits(Uniform(5), tok, ["", ""], block_size=4)


# --------------------------------------------------------------------------
# bits.py with real checkpoints (tokenizers, GPT and checkpoint loading)
# --------------------------------------------------------------------------
def story_docs(n, seed):
    """Little stories with several lines each (so the word tokenizer cannot round-trip them)."""
    rng = random.Random(seed)
    names = ["Tom", "Lily", "Sam", "Mia", "Ben"]
    verbs = ["saw", "found", "liked", "lost", "painted"]
    things = ["a red ball", "the big dog", "a small cat", "the old tree", "a blue kite"]
    feel = ["fun", "sad", "good", "strange"]
    docs = []
    for _ in range(n):
        lines = [
            f"{rng.choice(names)} {rng.choice(verbs)} {rng.choice(things)}. It was {rng.choice(feel)}!"
            for _ in range(rng.randint(2, 4))
        ]
        docs.append("\n".join(lines))
    return docs


def write_docs(path, docs):
    path.write_text("\n<|endoftext|>\n".join(docs) + "\n", encoding="utf-8")


def real_pieces():
    try:
        from storygpt.checkpoint import save_checkpoint
        from storygpt.model import GPT, GPTConfig
        from storygpt.tokenizers import BPETokenizer, WordTokenizer
    except ImportError as e:  # the model/tokenizer modules have not landed in this checkout
        pytest.skip(f"storygpt model/tokenizers not available: {e}")
    return GPT, GPTConfig, BPETokenizer, WordTokenizer, save_checkpoint


def make_run(folder, kind, data_dir, corpus, train_docs, *, steps=15, block_size=16, zero_head=False, seed=0):
    """A tiny rotary GPT trained for a few steps; saved as folder/best.pt with the keys pretrain.py writes."""
    GPT, GPTConfig, BPETokenizer, WordTokenizer, save_checkpoint = real_pieces()
    text = "\n".join(train_docs)
    if kind == "bpe":
        tok = train_bpe(text, vocab_size=300, pattern="simple")
    else:
        tok = WordTokenizer.train(train_docs, vocab_size=40)
    ids = [tok.eot_id]
    for d in train_docs:
        ids += tok.encode_ordinary(d) + [tok.eot_id]
    data = torch.tensor(ids)
    torch.manual_seed(seed)
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=block_size, n_layer=1, n_head=2, n_embd=32, position="rope")
    model = GPT(cfg)
    fit(model, torch.optim.AdamW(model.parameters(), lr=1e-2), data, block_size, steps)
    if zero_head:
        with torch.no_grad():
            model.lm_head.weight.zero_()  # logits exactly 0: the uniform distribution
    folder.mkdir(parents=True, exist_ok=True)
    save_checkpoint(
        folder / "best.pt",
        {
            "model": model.state_dict(),
            "config": cfg.to_dict(),
            "tokenizer": tok.to_dict(),
            "data_dir": str(data_dir),
            "corpus": corpus,
        },
    )
    return folder / "best.pt"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    real_pieces()
    root = tmp_path_factory.mktemp("bits")
    data_dir = root / "data" / "stories"
    data_dir.mkdir(parents=True)
    train, valid = story_docs(60, 1), story_docs(3, 2)
    write_docs(data_dir / "train.txt", train)
    write_docs(data_dir / "valid.txt", valid)
    runs = {kind: make_run(root / "ck" / f"{kind}-run", kind, data_dir, "stories", train) for kind in ("word", "bpe")}
    return dict(root=root, data_dir=data_dir, train=train, valid=valid, runs=runs)


def run_bits(*argv):
    """``python bits.py ARGV``: its exit status, stdout and stderr (bits.py's main run in this process,
    conftest.call_tool; test_bits_ctrl_c starts a real process)."""
    done = call_tool("bits", *argv)
    return done.returncode, done.stdout, done.stderr


def test_cli_equals_a_direct_computation(corpus):
    from storygpt import load_checkpoint

    rc, out, err = run_bits(
        corpus["runs"]["word"], corpus["runs"]["bpe"], "--json", "--device", "cpu", "--batch-size", "3"
    )
    assert rc == 0, err
    report = json.loads(out)
    valid = corpus["valid"]
    chars = sum(len(d) for d in valid) + len(valid) - 1  # the documented count, from the documents written
    assert report["characters"] == chars and report["documents"] == len(valid)
    rows = {r["name"]: r for r in report["results"]}
    assert set(rows) == {"word-run", "bpe-run"}
    for kind in ("word", "bpe"):
        row = rows[f"{kind}-run"]
        model, tok, _ = load_checkpoint(corpus["runs"][kind], "cpu")
        ids = [tok.eot_id]
        for i, d in enumerate(valid):
            ids += ([tok.eot_id] if i else []) + tok.encode_ordinary(d)
        nats = direct_nats(model, ids, 16, 16)
        assert row["tokens"] == len(ids) - 1
        assert row["parameters"] == sum(p.numel() for p in model.parameters())
        assert math.isfinite(row["bits_per_character"])
        assert row["nats"] == pytest.approx(nats, rel=1e-4)
        assert row["bits_per_character"] == pytest.approx(nats / math.log(2) / chars, rel=1e-4)
        doc_tokens = sum(len(tok.encode_ordinary(d)) for d in valid)  # end-of-document tokens not counted
        assert row["characters_per_token"] == pytest.approx(sum(len(d) for d in valid) / doc_tokens)
    # BPE round-trips every document; the word tokenizer loses the new lines
    assert rows["bpe-run"]["round_trip_share"] == 1.0 and rows["bpe-run"]["unknown_share"] == 0.0
    assert rows["word-run"]["round_trip_share"] < 1.0


def test_cli_uniform_model_gives_log2_vocab(corpus, tmp_path):
    ck = make_run(
        tmp_path / "uniform-bpe", "bpe", corpus["data_dir"], "stories", corpus["train"], steps=0, zero_head=True
    )
    rc, out, err = run_bits(ck, "--json", "--device", "cpu", "--chars", 200)
    assert rc == 0, err
    row = json.loads(out)["results"][0]
    assert row["characters"] in (199, 200)
    assert row["bits_per_character"] == pytest.approx(
        math.log2(row["vocab_size"]) * row["tokens"] / row["characters"], rel=1e-6
    )


def test_cli_table_and_caveat(corpus):
    from storygpt import load_checkpoint

    rc, out, err = run_bits(corpus["runs"]["word"].parent, corpus["runs"]["bpe"], "--device", "cpu")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("text: ") and "valid.txt" in lines[0]
    header = lines[1].split()
    assert header == [
        *("name", "tokenizer", "vocab", "params", "steps", "FLOPs", "tokens", "chars/tok", "unk", "rtrip"),
        "bits/char",
        "bits/byte",
        "status",
    ]
    assert lines[3].split()[0] == "word-run" and lines[4].split()[0] == "bpe-run"
    # files without the record of their training: steps and FLOPs unknown; the word model is lossy
    # files without a SPEC: KIND:VOCAB
    for line, kind in ((lines[3], "word"), (lines[4], "bpe")):
        vocab = load_checkpoint(corpus["runs"][kind], "cpu")[1].vocab_size
        assert line.split()[1:3] == [f"{kind}:{vocab}", str(vocab)]
    assert lines[3].split()[4:6] == ["-", "-"] and lines[3].split()[-1] == "lossy"
    assert lines[4].split()[4:6] == ["-", "-"] and lines[4].split()[-1] == "-"
    assert "does not have to predict" in out  # the word-level caveat


def test_cli_refuses_mismatched_corpora_unless_text_given(corpus, tmp_path):
    other = tmp_path / "data" / "other"
    other.mkdir(parents=True)
    write_docs(other / "valid.txt", story_docs(3, 99))
    ck = make_run(tmp_path / "other-bpe", "bpe", other, "other", corpus["train"], steps=0)
    rc, out, err = run_bits(corpus["runs"]["bpe"], ck, "--device", "cpu")
    assert rc == 2
    assert "different corpora" in err and "'stories'" in err and "'other'" in err and "--text" in err
    text = tmp_path / "mine.txt"
    write_docs(text, story_docs(2, 5))
    rc, out, err = run_bits(corpus["runs"]["bpe"], ck, "--device", "cpu", "--text", text, "--json")
    assert rc == 0, err
    rep = json.loads(out)
    assert [r["characters"] for r in rep["results"]] == [rep["characters"]] * 2


def test_cli_bad_paths(corpus, tmp_path):
    empty = tmp_path / "empty"  # a folder without checkpoints
    empty.mkdir()
    broken = tmp_path / "broken" / "best.pt"
    broken.parent.mkdir()
    broken.write_bytes(b"not a checkpoint")
    # a checkpoint whose validation split has gone
    gone = tmp_path / "gone"
    gone.mkdir()
    ck = make_run(tmp_path / "gone-run", "word", gone, "gone", corpus["train"], steps=0)
    cases = [
        ([tmp_path / "nope.pt"], ["nope.pt"]),
        ([empty], ["no best.pt or ckpt.pt"]),
        ([corpus["runs"]["bpe"], "--text", tmp_path / "missing.txt"], ["missing.txt"]),
        ([broken, "--device", "cpu"], ["broken"]),
        ([ck, "--device", "cpu"], ["valid.txt", "--text"]),
    ]
    for (argv, words), done in zip(cases, (call_tool("bits", *argv) for argv, _ in cases)):
        assert done.returncode == 2 and all(w in done.stderr for w in words), (argv, done.stderr)


def test_cli_progress_lines_when_stderr_is_not_a_terminal(corpus):
    out = call_tool("bits", corpus["runs"]["bpe"], "--device", "cpu", "--batch-size", "1", cwd=corpus["root"])
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines[0] == "bits.py: bpe-run: measuring"
    pcts = [int(line.split(": ")[2].split("%")[0]) for line in lines[1:]]
    assert pcts[-1] == 100 and pcts == sorted(set(pcts)) and all(p >= 10 for p in pcts)
    assert len(pcts) <= 10


# --------------------------------------------------------------------------
# bits.py: bad input (on ``tiny_run``, tests/conftest.py: a corpus data.py prepared, a 2-step pretrain.py run)
# --------------------------------------------------------------------------
def test_bits_ctrl_c(tiny_run):
    # before: a KeyboardInterrupt traceback
    done = run_tool("bits", tiny_run["ckpt"], "--no-progress", fault="ctrl_c_while_measuring")
    assert done.returncode == 130
    err = done.stderr
    assert "Traceback" not in err and "bits.py: interrupted" in err


def test_bits_bad_device(tiny_run):
    # before: a RuntimeError traceback from model.to("banana")
    rc, _, err = run_bits(tiny_run["ckpt"], "--device", "banana", "--no-progress")
    assert rc == 2
    assert "--device 'banana'" in one_error_line(err, "bits.py")


def test_bits_same_checkpoint_twice_is_measured_once(tiny_run):
    # before: AttributeError: 'NoneType' object has no attribute 'to'
    alias = tiny_run["ckpt"].parent / ".." / tiny_run["ckpt"].parent.name / "ckpt.pt"
    rc, out, err = run_bits(tiny_run["ckpt"], alias, "--no-progress", "--json")
    assert rc == 0, err
    out = json.loads(out)
    assert len(out["results"]) == 1 and out["results"][0]["bits_per_character"] > 0


def test_bits_text_is_a_folder(tiny_run):
    # before: "--text file not found" for a folder that exists
    rc, _, err = run_bits(tiny_run["ckpt"], "--text", tiny_run["root"], "--no-progress")
    assert rc == 2
    assert "is a folder" in one_error_line(err, "bits.py")


def test_bits_text_file_given_as_checkpoint(tiny_run):
    # before: "cannot read checkpoint (corrupt or truncated file?): UnpicklingError: Weights only load
    # failed ... Re-running torch.load with weights_only set to False" (advice not to follow)
    rc, _, err = run_bits(tiny_run["src"])
    assert rc == 2
    msg = one_error_line(err, "bits.py")
    assert str(tiny_run["src"]) in msg and "not a checkpoint file" in msg and "weights_only" not in msg


def test_bits_shows_steps_flops_and_marks_an_under_trained_run(tiny_run):
    # before: a 2-step run was listed beside long runs with nothing to tell them apart
    from storygpt.checkpoint import read_checkpoint

    trained = read_checkpoint(tiny_run["ckpt"])["state"]
    rc, out, err = run_bits(tiny_run["ckpt"], "--no-progress", "--json")
    assert rc == 0, err
    row = json.loads(out)["results"][0]
    assert row["steps"] == trained["step"] == 2 and row["train_flops"] == trained["flops"] > 0
    assert (
        row["under_trained"].startswith("2 steps, fewer than its 20 warm-up steps") and row["status"] == "under-trained"
    )
    rc, out, err = run_bits(tiny_run["ckpt"], "--no-progress")
    assert rc == 0, err
    line = next(x for x in out.splitlines() if x.startswith("learned-bpe-300"))
    cells = line.split()
    assert cells[1:3] == ["bpe:300", "300"]  # the SPEC (was: "bpe 300", and tiktoken:gpt2 showed as "bpe 50257")
    assert cells[-1] == "under-trained" and cells[4] == "2" and cells[5] == f"{trained['flops']:.3g}"
    assert "note: learned-bpe-300 is under-trained (2 steps, fewer than its 20 warm-up steps" in out


def test_chars_per_token_means_what_data_py_means(tmp_path):
    """bits.py (and so compare.py's report) and data.py give one chars/token on the same text: the
    documents' characters per token of the documents' text, end-of-document tokens not counted."""
    from storygpt.data.prepare import encode_documents

    docs = ["the cat sat on the mat.", "a dog ran to the mat and sat.", "the end of the story."] * 3
    tok = train_bpe(iter(docs), 270)
    written = encode_documents(tok, docs, tmp_path / "val.bin")
    measured = evaluate_bits(Uniform(tok.vocab_size), tok, docs, block_size=4)
    doc_chars, doc_tokens = sum(len(d) for d in docs), sum(len(tok.encode_ordinary(d)) for d in docs)
    expected = doc_chars / doc_tokens  # not (chars + boundaries) / (tokens + end-of-document tokens)
    assert expected != pytest.approx((doc_chars + len(docs) - 1) / (doc_tokens + len(docs) - 1))
    assert written["chars_per_token"] == pytest.approx(expected)
    assert measured.characters_per_token == pytest.approx(expected)
    assert measured.to_dict()["characters_per_token"] == pytest.approx(expected)
    from storygpt.data.corpora import chars_per_token  # the one definition both use

    assert chars_per_token(doc_chars, doc_tokens) == pytest.approx(expected)
