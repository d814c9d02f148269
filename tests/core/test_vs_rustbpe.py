"""storygpt's trainer against rustbpe (an independent Rust implementation).

rustbpe breaks ties between equally frequent pairs by taking the smallest pair
of ids, as storygpt's ``tie_break="smallest_ids"`` does, and pre-tokenizes with
the same regular expression (it runs the pattern string of
``bpe_reference.PATTERNS`` itself), so the two must learn exactly the same
merges.  rustbpe reports only a vocabulary (token bytes -> rank); each of its
merges is recovered the way tiktoken does it: byte-pair encode the token's
bytes with the lower-ranked tokens only, which leaves exactly two parts.

Skipped when rustbpe is not installed (``pip install -e .[bench]``); the
real-text case also skips when ``../shared/corpora`` is absent.
"""

from __future__ import annotations

import random

import pytest
from conftest import CORPORA

from storygpt import _bpe
from storygpt.tokenizers import EOT
from storygpt.tokenizers.bpe_reference import PATTERNS

rustbpe = pytest.importorskip("rustbpe")

CORPUS = CORPORA / "english_literature_plus_kjv.txt"


def _rustbpe_merges(docs: list[str], vocab_size: int, pattern: str) -> list[tuple[bytes, bytes]]:
    tok = rustbpe.Tokenizer()
    tok.train_from_iterator(iter(docs), vocab_size, pattern=PATTERNS[pattern])
    ranks = {bytes(tb): r for tb, r in tok.get_mergeable_ranks()}
    by_rank = sorted(ranks, key=ranks.get)
    assert [ranks[t] for t in by_rank] == list(range(len(by_rank)))
    assert by_rank[:256] == [bytes([b]) for b in range(256)]
    merges = []
    for r in range(256, len(by_rank)):
        parts = [bytes([b]) for b in by_rank[r]]
        while len(parts) > 2:  # lowest rank below r first, leftmost on ties
            best = min(
                (
                    (ranks[parts[i] + parts[i + 1]], i)
                    for i in range(len(parts) - 1)
                    if ranks.get(parts[i] + parts[i + 1], r) < r
                ),
                default=None,
            )
            assert best is not None, f"rustbpe token {by_rank[r]!r} (rank {r}) is not a merge of lower tokens"
            i = best[1]
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        assert len(parts) == 2
        merges.append((parts[0], parts[1]))
    return merges


def _storygpt_merges(docs: list[str], vocab_size: int, pattern: str, threads: int) -> list[tuple[bytes, bytes]]:
    # the documents joined by the separator, which is a special token: the
    # same texts rustbpe sees one by one (vocab_size + 1 holds the special token)
    merges = _bpe.train(
        EOT.join(docs).encode("utf-8"),
        vocab_size=vocab_size + 1,
        pattern=pattern,
        special_tokens=[EOT.encode()],
        num_threads=threads,
    )
    vocab = [bytes([b]) for b in range(256)]
    for a, b in merges:
        vocab.append(vocab[a] + vocab[b])
    return [(vocab[a], vocab[b]) for a, b in merges]


def _first_difference(a: list, b: list) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"merge {i}: storygpt {x!r}, rustbpe {y!r}"
    return f"lengths {len(a)} (storygpt) and {len(b)} (rustbpe)"


@pytest.mark.parametrize("pattern", ["gpt2", "gpt4"])
def test_merges_identical_on_real_text(pattern):
    """First ~1.5 MB of the shared English corpus, 2,048 tokens, 1 and 2 threads."""
    if not CORPUS.is_file():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    with open(CORPUS, encoding="utf-8") as f:
        text = f.read(1_500_000)
    docs = text.split(EOT)
    assert len(docs) >= 2, "the sample should span a document separator"
    theirs = _rustbpe_merges(docs, 2048, pattern)
    assert len(theirs) == 2048 - 256
    for threads in (1, 2):
        ours = _storygpt_merges(docs, 2048, pattern, threads)
        assert ours == theirs, _first_difference(ours, theirs)


def test_merges_identical_when_ties_abound():
    """Random words over a 4-letter alphabet: many pairs share the top count at every step."""
    rng = random.Random(7)
    docs = [
        " ".join("".join(rng.choice("abcd") for _ in range(rng.randint(1, 6))) for _ in range(400)) for _ in range(5)
    ]
    theirs = _rustbpe_merges(docs, 600, "gpt2")
    ours = _storygpt_merges(docs, 600, "gpt2", 1)
    assert len(ours) > 100
    assert ours == theirs, _first_difference(ours, theirs)
