"""sample.py: seeded, streamed, prompt as plain text, stop at <|endoftext|>, unknown words shown."""

from __future__ import annotations

import io
import math

import pytest

torch = pytest.importorskip("torch")

import test_bits as kit  # noqa: E402  (make_run, story_docs, write_docs)
from conftest import call_tool, one_error_line  # noqa: E402

from storygpt import sample  # noqa: E402  (what sample.py writes a sample with)

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    kit.real_pieces()
    root = tmp_path_factory.mktemp("sample")
    data_dir = root / "data" / "stories"
    data_dir.mkdir(parents=True)
    train = kit.story_docs(60, 1)
    kit.write_docs(data_dir / "valid.txt", kit.story_docs(3, 2))
    return {
        kind: kit.make_run(root / f"{kind}-run", kind, data_dir, "stories", train, steps=10) for kind in ("word", "bpe")
    }


def run(*argv):
    """``python sample.py ARGV``: its exit status, stdout and stderr (sample.py's main run in this process,
    conftest.call_tool; test_a_reader_that_stops_early_gets_no_traceback starts a real process)."""
    done = call_tool("sample", *argv)
    return done.returncode, done.stdout, done.stderr


def run_all(*argvs):
    """:func:`run` for each argument list."""
    return [run(*argv) for argv in argvs]


def test_same_seed_same_text(runs):
    for kind in ("bpe", "word"):
        args = (
            runs[kind],
            "--prompt",
            "Tom saw",
            "--max-new-tokens",
            40,
            "--temperature",
            1.0,
            "--device",
            "cpu",
            "--no-stop",
        )
        (rc1, a, _), (rc2, b, _), (rc3, c, _) = run_all(
            [*args, "--seed", 7], [*args, "--seed", 7], [*args, "--seed", 8]
        )
        assert rc1 == rc2 == rc3 == 0
        assert a == b
        assert a != c  # 40 draws from a barely trained model: another seed gives other text
        assert a.startswith("Tom saw")


def test_the_drawn_seed_is_printed_only_when_it_matters(runs):
    args = (runs["bpe"], "--prompt", "Tom saw", "--max-new-tokens", 5, "--device", "cpu", "--no-stop")
    rc, out, err = run(*args, "--temperature", 1.0)
    assert rc == 0
    seed = int(err.split("(seed ", 1)[1].split(";", 1)[0])  # "(seed N; pass --seed N to get this text again)"
    assert f"pass --seed {seed} to get this text again" in err
    assert run(*args, "--temperature", 1.0, "--seed", seed)[1] == out  # the printed seed gives the text again
    rc, greedy, err = run(*args, "--temperature", 0)
    assert rc == 0 and "seed" not in err  # greedy decoding draws nothing
    assert run(*args, "--temperature", 0)[1] == greedy


def test_unseen_name_kept_by_bpe_and_shown_as_unknown_by_word(runs):
    rc, out, err = run(
        runs["bpe"], "--prompt", "Zorblax saw a red ball", "--seed", 1, "--max-new-tokens", 5, "--device", "cpu"
    )
    assert rc == 0 and out.startswith("Zorblax saw a red ball")
    assert "unknown" not in err
    rc, out, err = run(
        runs["word"],
        "--prompt",
        "Zorblax saw a red ball",
        "--seed",
        1,
        "--max-new-tokens",
        5,
        "--device",
        "cpu",
    )
    assert rc == 0 and out.startswith("<unk> saw a red ball")
    assert "note: 1 prompt word is unknown to this word-level tokenizer and became <unk>: Zorblax" in err


def test_prompt_is_plain_text_and_num_samples(runs):
    rc, out, _ = run(
        runs["bpe"],
        "--prompt",
        "a <|endoftext|> b",
        "--max-new-tokens",
        0,
        "--num-samples",
        2,
        "--seed",
        0,
        "--device",
        "cpu",
    )
    assert rc == 0
    assert out == "--- sample 1/2 ---\na <|endoftext|> b\n--- sample 2/2 ---\na <|endoftext|> b\n"


def test_generation_stops_at_end_of_text(runs):
    from storygpt import load_checkpoint

    model, tok, _ = load_checkpoint(runs["bpe"], "cpu")
    eot, vocab = tok.eot_id, tok.vocab_size

    class AlwaysEot(torch.nn.Module):
        def forward(self, h):
            out = torch.zeros(*h.shape[:-1], vocab)
            out[..., eot] = 100.0
            return out

    model.lm_head = AlwaysEot()
    prompt = tok.encode_ordinary("Tom saw")
    buf = io.StringIO()
    text = sample.write_sample(model, tok, prompt, max_new_tokens=10, temperature=1.0, stop=eot, out=buf, heal=False)
    assert text == buf.getvalue() == "Tom saw"
    buf = io.StringIO()
    text = sample.write_sample(model, tok, prompt, max_new_tokens=3, temperature=1.0, stop=None, out=buf, heal=False)
    assert text == buf.getvalue() == tok.decode(prompt + [eot] * 3)


def test_pad_is_never_drawn(runs):
    from storygpt import load_checkpoint

    model, tok, _ = load_checkpoint(runs["word"], "cpu")
    pad, eot, vocab = tok.pad_id, tok.eot_id, tok.vocab_size
    assert pad is not None

    class PadThenEot(torch.nn.Module):
        def forward(self, h):
            out = torch.zeros(*h.shape[:-1], vocab)
            out[..., pad] = 100.0
            out[..., eot] = 50.0
            return out

    model.lm_head = PadThenEot()
    prompt = tok.encode_ordinary("Tom saw")
    buf = io.StringIO()
    text = sample.write_sample(model, tok, prompt, max_new_tokens=2, temperature=0, stop=None, out=buf)
    assert text == buf.getvalue() == tok.decode(prompt + [eot, eot])
    assert isinstance(model.lm_head, PadThenEot)  # the model is left as it was


def test_streaming_never_prints_half_characters(runs):
    from storygpt import load_checkpoint

    _, tok, _ = load_checkpoint(runs["bpe"], "cpu")
    text = " Zoë met 日本の猫 🐈 and said: «ça va?»"
    ids = tok.encode_ordinary(text)
    assert len(ids) > len(text.encode("utf-8")) // 2  # mostly single bytes: multi-byte characters are split
    writes = []

    class Recorder(io.StringIO):
        def write(self, s):
            writes.append(s)
            return super().write(s)

    printer = sample.StreamPrinter(tok, [], Recorder())
    for i in ids:
        printer.add(i)
    assert printer.finish() == text
    assert "".join(writes) == text
    assert not any("\ufffd" in w for w in writes)


def test_bad_arguments(runs, tmp_path):
    nope, samples, temperature = run_all(
        [tmp_path / "nope.pt", "--prompt", "x"], [runs["bpe"], "--num-samples", 0], [runs["bpe"], "--temperature", -1]
    )
    rc, _, err = nope
    assert rc == 2 and "nope.pt" in err
    rc, _, err = samples
    assert rc == 2 and "--num-samples" in err
    rc, _, err = temperature
    assert rc == 2 and "--temperature" in err


# ------------------------------------------------------------------ token healing and top-p
# A BPE tokenizer small enough to know every id: bytes 0-255, then the merges 256-261, then <pad> 262
# and <|endoftext|> 263.  "Zorblax went" encodes as Zo r b l a x " went" (259); " wenty" is 260.
HEAL_MERGES = [(b" ", b"w"), (b" w", b"e"), (b" we", b"n"), (b" wen", b"t"), (b" went", b"y"), (b"Z", b"o")]
WENT, WENTY, Y = 259, 260, ord("y")


def heal_tokenizer():
    from storygpt.tokenizers import BPETokenizer

    return BPETokenizer.from_merges(HEAL_MERGES)


class FixedLogits(torch.nn.Module):
    """An output layer that ignores the hidden state: the same logits at every position."""

    def __init__(self, logits):
        super().__init__()
        self.logits = torch.as_tensor(logits, dtype=torch.float32)

    def forward(self, h):
        return self.logits.expand(*h.shape[:-1], -1).clone()


def fixed_model(vocab_size, logits):
    from storygpt.model import GPT, GPTConfig

    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=vocab_size, block_size=64, n_layer=1, n_head=2, n_embd=16, position="rope"))
    model.lm_head = FixedLogits(logits)
    return model.eval()


def test_heal_prompt_backs_off_the_last_token():
    tok = heal_tokenizer()
    ids = tok.encode_ordinary("Zorblax went")
    assert ids == [261, ord("r"), ord("b"), ord("l"), ord("a"), ord("x"), WENT]
    prefix, allowed = sample.heal_prompt(tok, ids)
    assert prefix == ids[:-1]
    assert allowed == [WENT, WENTY]  # " went" itself and the one token that extends it; no special token
    prefix, allowed = sample.heal_prompt(tok, tok.encode_ordinary("Zorblax"))
    assert allowed == [ord("x")]  # no token extends a lone "x"
    assert sample.heal_prompt(tok, []) == ([], [])


def test_healing_is_skipped_for_word_level(runs):
    from storygpt import load_checkpoint

    _, tok, _ = load_checkpoint(runs["word"], "cpu")
    ids = tok.encode_ordinary("Tom saw")
    assert sample.heal_prompt(tok, ids) == (ids, [])


def test_healing_constrains_the_first_token():
    tok = heal_tokenizer()
    logits = torch.zeros(tok.vocab_size)
    logits[Y], logits[WENT], logits[WENTY] = 10.0, 2.0, 1.0  # unhealed, the model wants "y" after " went"
    model = fixed_model(tok.vocab_size, logits)
    prompt = tok.encode_ordinary("Zorblax went")

    def write(heal, n=1, temperature=0.0, seed=0):
        g = torch.Generator().manual_seed(seed)
        buf = io.StringIO()
        text = sample.write_sample(
            model, tok, prompt, max_new_tokens=n, temperature=temperature, heal=heal, generator=g, out=buf
        )
        assert text == buf.getvalue()
        return text

    assert write(heal=False) == "Zorblax wenty"  # the reported bug: a new token glued to " went"
    assert write(heal=True) == "Zorblax went"  # greedy among {" went" (2.0), " wenty" (1.0)}
    assert write(heal=True, n=2) == "Zorblax wenty"  # only the first token is constrained

    # sampled: the first token is always " went" or " wenty", in the ratio e^2 : e^1
    idx = torch.tensor([[tok.eot_id] + prompt[:-1]])
    mask = torch.zeros(tok.vocab_size, dtype=torch.bool)
    mask[[WENT, WENTY]] = True
    firsts = [int(next(model.stream(idx, 1, temperature=1.0, seed=s, allowed=mask))[0]) for s in range(400)]
    assert set(firsts) == {WENT, WENTY}
    share = firsts.count(WENT) / len(firsts)
    expected = math.exp(2) / (math.exp(2) + math.exp(1))  # 0.731
    assert abs(share - expected) < 0.07  # 400 draws: standard error 0.022


def test_healed_prompt_prints_whole_even_inside_a_character():
    tok = heal_tokenizer()
    logits = torch.zeros(tok.vocab_size)
    logits[ord("!")] = 5.0
    model = fixed_model(tok.vocab_size, logits)
    prompt = tok.encode_ordinary("caf\u00e9")  # no merges: the last two tokens are the two bytes of e-acute
    buf = io.StringIO()
    text = sample.write_sample(model, tok, prompt, max_new_tokens=2, temperature=0.0, out=buf)
    assert text == buf.getvalue() == "caf\u00e9!"  # the backed-off byte 0xa9 comes back as the first token


def test_top_p_keeps_the_nucleus():
    from storygpt.model import GPT

    probs = torch.tensor([[0.15, 0.5, 0.05, 0.3]])  # sorted: 0.5 (id 1), 0.3 (id 3), 0.15 (id 0), 0.05 (id 2)
    logits = probs.log()
    for top_p, kept in ((0.45, [1]), (0.7, [1, 3]), (0.81, [1, 3, 0]), (1.0, [0, 1, 2, 3])):
        out = torch.softmax(GPT.filter_logits(logits, 1.0, None, top_p), dim=-1)[0]
        hand = torch.zeros(4)
        hand[kept] = probs[0, kept] / probs[0, kept].sum()
        torch.testing.assert_close(out, hand, msg=lambda m: f"top_p={top_p}: {m}")
    # top-k first, then top-p on what is left: top_k=3 drops id 2, then the nucleus of the renormalized rest
    out = torch.softmax(GPT.filter_logits(logits, 1.0, 3, 0.55), dim=-1)[0]
    # renormalized over {1, 3, 0}: 0.526, 0.316, 0.158 -> the nucleus 0.55 is {1, 3}
    torch.testing.assert_close(out, torch.tensor([0.0, 0.625, 0.0, 0.375]))


def test_top_p_sampling_matches_a_hand_computation():
    probs = [0.15, 0.5, 0.05, 0.3]
    model = fixed_model(4, torch.tensor(probs).log())
    idx = torch.zeros(1, 1, dtype=torch.long)
    drawn = [int(t[0]) for t in model.stream(idx, 60, temperature=1.0, top_p=0.7, seed=123, use_cache=False)]
    g = torch.Generator().manual_seed(123)
    hand = torch.tensor([0.0, 0.625, 0.0, 0.375])  # the nucleus {1, 3}, renormalized
    expected = [int(torch.multinomial(hand, 1, generator=g)) for _ in range(60)]
    assert drawn == expected
    assert set(drawn) == {1, 3}


def test_sample_cli_top_p_and_no_heal(runs):
    args = (runs["bpe"], "--prompt", "Tom saw", "--max-new-tokens", 20, "--seed", 3, "--device", "cpu", "--no-stop")
    healed, plain, zero, above_one = run_all(
        [*args, "--top-p", 0.9],
        [*args, "--top-p", 0.9, "--no-heal"],
        [runs["bpe"], "--top-p", 0],
        [runs["bpe"], "--top-p", 1.5],
    )
    rc, healed, _ = healed
    assert rc == 0 and healed.startswith("Tom saw")
    rc, plain, _ = plain
    assert rc == 0 and plain.startswith("Tom saw")
    rc, _, err = zero
    assert rc == 2 and "--top-p" in err
    rc, _, err = above_one
    assert rc == 2 and "--top-p" in err


# ----------------------------------------------- bad input (on ``tiny_run``, tests/conftest.py: a 2-step pretrain.py run)
@pytest.mark.parametrize(
    "flag,value", [("--temperature", "nan"), ("--temperature", "inf"), ("--seed", str(2**70)), ("--device", "banana")]
)
def test_sample_bad_flags(tiny_run, flag, value):
    # before: tracebacks (multinomial on nan probabilities; seed overflow); for --device a misleading
    # "cannot read checkpoint (corrupt or truncated file?)"
    rc, _, err = run(
        *(
            [tiny_run["ckpt"], flag, value, "--max-new-tokens", "2", "--seed", "1"]
            if flag != "--seed"
            else [tiny_run["ckpt"], flag, value, "--max-new-tokens", "2"]
        )
    )
    assert rc == 2
    msg = one_error_line(err, "sample.py")
    assert flag in msg and "corrupt" not in msg


def test_sample_text_file_given_as_checkpoint(tiny_run):
    # before: "cannot read checkpoint (corrupt or truncated file?): UnpicklingError: Weights only load
    # failed ... Re-running torch.load with weights_only set to False" (advice not to follow)
    rc, _, err = run(tiny_run["src"])
    assert rc == 2
    msg = one_error_line(err, "sample.py")
    assert str(tiny_run["src"]) in msg and "not a checkpoint file" in msg and "weights_only" not in msg


def test_a_reader_that_stops_early_gets_no_traceback(runs):
    """``sample.py ... | head -c 5``: exit 141 (SIGPIPE) quietly, not a BrokenPipeError traceback."""
    import subprocess
    import sys

    from conftest import REPO

    tool = [sys.executable, str(REPO / "sample.py"), str(runs["bpe"]), "--max-new-tokens", "400"]
    p = subprocess.Popen([*tool, "--num-samples", "50", "--seed", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert len(p.stdout.read(5)) == 5
    p.stdout.close()  # the reader goes away
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "BrokenPipeError" not in err
