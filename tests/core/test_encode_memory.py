"""Memory that follows the input: encode_iterable within the current address space + 1 MB.

A child process loads a tokenizer, warms up Python's share (the ints and
lists of one piece's ids) with a second encoder of the same vocabulary that
stays alive, then caps its address space (RLIMIT_AS) at what it uses plus
1 MB and streams a 1 MB file of varied words through ``encode_iterable`` with
a 64 KiB buffer.  Each buffer is encoded in pieces of at most
``Tokenizer._piece_chars`` characters (16K), so no list of a whole buffer's ids
is held (a 64 KiB buffer of this text is 36,000 ids: 280 KiB as a list, twice
that while ``encode`` extended its own), and the chunk caches start small and
grow no larger than their calls' inputs could fill (csrc/encode/chunk_cache.h);
a cache taken whole on first use (4-8 MiB), or one that grows with the whole
stream, does not fit.  The ids must equal the parent's ``encode`` of the whole
text, and the address space sampled every 1,024 ids must stay within 768 KiB of
the start (260-400 KiB measured: docs/bpe_core.md, "Memory").

The other tests check that encoding in pieces gives the ids of the whole.
"""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storygpt.tokenizers import EOT, WordTokenizer, train_bpe

_CHILD = r"""
import resource, sys
from storygpt.tokenizers import BPETokenizer

def vm_kib():
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmSize:")).split()[1])

tok = BPETokenizer.load(sys.argv[1])
with open(sys.argv[2], encoding="utf-8") as f:
    lines = f.readlines()  # read before the cap: the file's text is the input, not the encoder's memory
# Python's own share warmed up (its allocator keeps memory for the lists of a piece's ids) by
# another encoder of the same vocabulary, kept alive so that its caches' memory stays taken.
warm = BPETokenizer.load(sys.argv[1])
for _ in warm.encode_iterable(lines[:2000], buffer_chars=1 << 16):
    pass
tok.encode("a")
base = vm_kib()
limit = base * 1024 + (1 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
n, checksum, peak = 0, 0, base
for i in tok.encode_iterable(lines, buffer_chars=1 << 16):
    n += 1
    checksum = (checksum * 1000003 + i) % (1 << 61)
    if n % 1024 == 0:
        peak = max(peak, vm_kib())
print(n, checksum, max(peak, vm_kib()) - base)
"""


def _text(n_bytes: int) -> str:
    """Lines of words drawn from 20,000 made-up words (many distinct chunks), about n_bytes long."""
    rng = random.Random(24)
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    words = [
        "".join(rng.choice(letters[: rng.randint(6, 26)]) for _ in range(rng.randint(1, 12))) for _ in range(20_000)
    ]
    out, size = [], 0
    while size < n_bytes:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(1, 20))) + ".\n"
        out.append(line)
        size += len(line)
    return "".join(out)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_encode_iterable_within_address_space_plus_1mb(tmp_path):
    text = _text(1 << 20)
    tok = train_bpe(text[:200_000], 1000, pattern="gpt2", special_tokens=[])
    tok.save(tmp_path / "tok.json")
    (tmp_path / "text.txt").write_text(text, encoding="utf-8")
    ids = tok.encode(text)
    checksum = 0
    for i in ids:
        checksum = (checksum * 1000003 + i) % (1 << 61)
    r = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "tok.json"), str(tmp_path / "text.txt")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    n, got, grew_kib = (int(x) for x in r.stdout.split())
    assert (n, got) == (len(ids), checksum)
    assert grew_kib <= 768, f"encode_iterable took {grew_kib} KiB of address space (260-400 measured)"


_TOKS: dict = {}


def _small(pattern: str):
    """A small C++ BPE tokenizer with special tokens (one of which holds a new line)."""
    if pattern not in _TOKS:
        text = "It's  the end.\n\n  Of the\tworld's 1234567 ends!!\r\n" * 20 + "Конец света.\n" * 10
        _TOKS[pattern] = train_bpe(text, 256 + 40 + 3, pattern=pattern, special_tokens=(EOT, "<|e|>\n<|f|>", "<|x"))
    return _TOKS[pattern]


def _calls(tok, monkeypatch) -> list[str]:
    """The texts of every ``encode`` call of ``tok`` from now on."""
    seen, encode = [], tok.encode
    monkeypatch.setattr(tok, "encode", lambda text, *a, **k: seen.append(text) or encode(text, *a, **k))
    return seen


def test_buffer_encoded_in_pieces_of_at_most_piece_chars(monkeypatch):
    tok = _small("gpt2")
    words = ["It's", "the", "end", "world's", "1234567", "Конец", "света", "!!", "\n", EOT, "<|e|>\n<|f|>"]
    rng = random.Random(3)
    lines = [" ".join(rng.choice(words) for _ in range(12)) + ".\n" for _ in range(400)]
    text = "".join(lines)
    want = tok.encode(text, "all")
    monkeypatch.setattr(tok, "_piece_chars", 64)
    calls = _calls(tok, monkeypatch)
    assert list(tok.encode_iterable(lines, "all", buffer_chars=1000)) == want
    assert "".join(calls) == text
    assert len(calls) > len(text) // 64
    assert max(len(c) for c in calls) <= 64


def test_piece_without_safe_cut_is_widened_then_whole(monkeypatch):
    """No safe cut within 16 characters: the window doubles (32, 64, 128); past 8 times
    the piece size the rest of the buffer is one call."""
    tok = _small("gpt2")
    text = "ab " + "!" * 40 + " cd " + "?" * 300 + " ef gh ij\n"
    want = tok.encode(text)
    monkeypatch.setattr(tok, "_piece_chars", 16)
    calls = _calls(tok, monkeypatch)
    assert list(tok.encode_iterable([text], buffer_chars=1 << 16)) == want
    assert calls == [text[:2], text[2:46], text[46:]]


_ALPHABET = [
    "a",
    "B",
    "1",
    "'s",
    ".",
    "!",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "é",
    "中",
    "\u00a0",
    EOT,
    "<|e|>\n<|f|>",
    "<|x",
    "\ud83d",
    "\ude00",
]


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(_ALPHABET), max_size=80),
    cuts=st.lists(st.integers(0, 400), max_size=8),
    buffer=st.integers(1, 200),
    piece_chars=st.integers(1, 12),
    pattern=st.sampled_from(["simple", "gpt2", "gpt4"]),
)
def test_pieces_give_the_ids_of_the_whole(pieces, cuts, buffer, piece_chars, pattern):
    tok = _small(pattern)
    word = WordTokenizer.train(["a B 1 's . ! é 中 <|x"], vocab_size=12)
    text = "".join(pieces)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    lines = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    for t in (tok, word):
        t._piece_chars = piece_chars
        try:
            for allowed in ["all", set()]:
                want = t.encode(text, allowed_special=allowed, disallowed_special=())
                assert list(t.encode_iterable(lines, allowed, buffer, disallowed_special=())) == want
        finally:
            del t._piece_chars
