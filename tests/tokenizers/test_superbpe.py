"""SuperBPE (issue 21): the C++ core against the plain-Python reference, export to Hugging Face, files, SPECs.

Oracles: ``superbpe_reference`` (merge for merge, id for id), stock Hugging Face ``tokenizers``
(ids of the exported ``tokenizer.json``), ``bpe_reference`` (stage 1 is ordinary BPE).
"""

from __future__ import annotations

import pytest
from conftest import CORPORA, needs_corpora
from hypothesis import given, settings
from hypothesis import strategies as st

from storygpt.tokenizers import EOT, interop, load, parse_spec
from storygpt.tokenizers import bpe_reference as ref
from storygpt.tokenizers import superbpe_reference as sref
from storygpt.tokenizers.bpe import load_cpp
from storygpt.tokenizers.registry import kinds
from storygpt.tokenizers.spec import SpecError
from storygpt.tokenizers.superbpe import SuperBPETokenizer
from storygpt.tokenizers.superbpe_train import train_superbpe

CORPUS_FILES = sorted(CORPORA.glob("*.txt")) if CORPORA.is_dir() else []
SPECIALS = ("<pad>", EOT)


def corpus_slice(path, n_bytes: int) -> bytes:
    """The first ``n_bytes`` of a shared corpus, cut back to whole UTF-8 characters."""
    return path.read_bytes()[:n_bytes].decode("utf-8", errors="ignore").encode("utf-8")


# ----------------------------------------------------------------------------- the stage-2 pattern
def test_superword_chunks_known_answer():
    text = b"To be, or not to be: that is the question.  Whether 'tis nobler!?\n\nAy... there"
    assert ref.pretokenize(text, "superword") == [
        b"To be, or not to be:",
        b" that is the question.",
        b"  Whether 'tis nobler!?",
        b"\n\n",
        b"Ay...",
        b" there",
    ]
    assert load_cpp().pretokenize(text, "superword") == ref.pretokenize(text, "superword")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.text(alphabet=" ab.!?;:,\n\r\t\u00e9\u4e2d", max_size=200).map(str.encode))
def test_superword_chunks_match_reference(data):
    assert load_cpp().pretokenize(data, "superword") == ref.pretokenize(data, "superword")


# ----------------------------------------------------------------------------- training
def test_stage1_is_bpe_and_stage2_spans_words():
    text = ("of the king. of the queen! " * 40 + "in the hall; on the hill:\n") * 5
    merges, n1 = sref.train(text, 290, 280, "gpt2", ["<|endoftext|>"])
    assert n1 == 280 - 256 - 1 and len(merges) == 290 - 256 - 1
    assert merges[:n1] == ref.train(text, 280, "gpt2", ["<|endoftext|>"])
    tok_bytes = ref.encoder_from_merges(merges).vocab
    stage2 = [tok_bytes[256 + i] for i in range(n1, len(merges))]
    assert any(b" " in t.strip(b" ") for t in stage2), stage2  # a superword: white space inside
    assert not any(b". " in t or b"\n" in t[:-1] for t in stage2)  # never across sentence ends or lines


@settings(max_examples=40, deadline=None)
@given(
    text=st.text(alphabet="ab c.\n!?d\u00e9", min_size=0, max_size=300),
    vocab=st.integers(262, 300),
    share=st.floats(0.0, 0.99),
    pattern=st.sampled_from(["simple", "gpt2", "gpt4", "o200k"]),
    tie_break=st.sampled_from(["smallest_ids", "largest_bytes"]),
)
def test_cpp_training_matches_reference_on_generated_text(text, vocab, share, pattern, tie_break):
    t = 257 + int(share * (vocab - 258))
    want = sref.train(text, vocab, t, pattern, [EOT], 1, tie_break)
    got = load_cpp().superbpe_train(
        text.encode(),
        vocab_size=vocab,
        transition=t,
        pattern=pattern,
        special_tokens=[EOT.encode()],
        tie_break=tie_break,
    )
    assert (list(got[0]), got[1]) == want


@needs_corpora
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_cpp_matches_reference_on_shared_corpora(path):
    """Merge for merge and id for id on 60 kB of each shared corpus (gpt4 stage 1, V=420, T=360)."""
    data = corpus_slice(path, 60_000)
    cpp = train_superbpe(data, 420, 360, pattern="gpt4", special_tokens=SPECIALS)
    want, n1 = sref.train(data, 420, 360, "gpt4", [s.encode() for s in SPECIALS])
    assert [m[:2] for m in cpp.merges] == [tuple(m) for m in want] and cpp.stage1_merges == n1
    reference = ref.encoder_from_merges(want, pattern="superword")
    held_out = path.read_bytes()[60_000:90_000].decode("utf-8", errors="ignore")
    assert cpp.encode_ordinary(held_out) == reference.encode(held_out.encode())


def test_files_are_streamed_like_text(tmp_path):
    """Training from files (read in windows, twice) equals training from the same texts."""
    lines = [f"line {i}: the {'quick' if i % 3 else 'slow'} fox, and the dog. " * (1 + i % 5) for i in range(4000)]
    text = "\n".join(lines)
    (tmp_path / "a.txt").write_text(text)
    cpp = load_cpp()
    from_file = cpp.superbpe_train(files=[str(tmp_path / "a.txt")], vocab_size=700, transition=500, pattern="gpt2")
    from_text = cpp.superbpe_train(text.encode(), vocab_size=700, transition=500, pattern="gpt2")
    assert from_file == from_text and from_file[1] == 500 - 256


# ----------------------------------------------------------------------------- the tokenizer
@pytest.fixture(scope="module")
def small_tok():
    text = ("It is the cause, it is the cause, my soul. Let me not name it to you, you chaste stars!\n") * 30
    text += "It is the east, and Juliet is the sun. Arise, fair sun, and kill the envious moon;\n" * 30
    return train_superbpe(text, 360, 330, pattern="gpt4", special_tokens=SPECIALS)


def test_tokenizer_records_stage_rule_and_loads_back(small_tok, tmp_path):
    assert small_tok.pattern == "superword" and small_tok.transition == 330 and small_tok.stage1_pattern == "gpt4"
    small_tok.save(tmp_path / "tok.json")
    back = load(tmp_path / "tok.json")
    assert isinstance(back, SuperBPETokenizer) and back.kind == "superbpe"
    assert back._encoder.stages_split and small_tok._encoder.stages_split  # the stage-split encoder
    assert (back.transition, back.stage1_pattern, back.stage1_merges) == (330, "gpt4", small_tok.stage1_merges)
    d = back.to_dict()["superbpe"]
    assert d["stage2_pattern"] == "superword" and d["stage2_regex"] == ref.PATTERNS["superword"].decode()
    assert back.fingerprint() == small_tok.fingerprint()
    text = "It is the cause, my soul.<|endoftext|>Arise, fair sun!"
    assert back.encode(text, allowed_special="all") == small_tok.encode(text, allowed_special="all")
    assert back.decode(back.encode(text, allowed_special="all")) == text


def test_reference_backend_gives_the_same_tokenizer(small_tok):
    text = ("It is the cause, it is the cause, my soul. Let me not name it to you, you chaste stars!\n") * 30
    text += "It is the east, and Juliet is the sun. Arise, fair sun, and kill the envious moon;\n" * 30
    r = train_superbpe(text, 360, 330, pattern="gpt4", special_tokens=SPECIALS, backend="reference")
    assert r.merges == small_tok.merges
    sample = "It is the cause, it is the sun.\nArise, fair moon; you chaste stars!"
    assert r.encode(sample) == small_tok.encode(sample)
    assert any(b" " in small_tok.token_bytes(i).strip() for i in small_tok.encode(sample))


def test_encode_iterable_cuts_only_at_superword_boundaries(small_tok):
    lines = ["It is the cause, it is the cause, my soul.", " Let me not name it", " to you, you chaste stars!\n"] * 200
    streamed = list(small_tok.encode_iterable(iter(lines)))
    assert streamed == small_tok.encode("".join(lines))


def test_long_chunk_encodes_like_the_reference(small_tok):
    """A 2.5 kB chunk with no sentence end or line break (the C++ encoder's long-chunk path)."""
    chunk = "it is the cause and the sun and the moon, " * 60
    reference = ref.Encoder(small_tok.merges, pattern="superword")
    assert small_tok.encode_ordinary(chunk) == reference.encode(chunk.encode())


# ----------------------------------------------------------------------------- stage-split encoding
# The C++ encoder encodes a clause as its stage-1 pieces (each through the chunk cache), checks each
# piece border, then applies the stage-2 merges (Encoder.split_stages); the reference runs the merge
# loop over the whole clause.  Indented verse teaches stage 1 runs of spaces, so that a clause
# starting with two spaces crosses a border the merge loop merges across: "  " "A"..., not " " " A...".
SPACED_TEXT = (
    "    To Athens, my lord, and see the king. A word,  Athens!  And the Athenian lord.\n"
    "        Go  to  Athens; 'tis late, and we'll see 12345 lords.  All's well.\n"
) * 20


@pytest.fixture(scope="module")
def spaced_tok():
    return train_superbpe(SPACED_TEXT, 340, 300, pattern="gpt4", special_tokens=SPECIALS)


def stage1_ids(tok, data: bytes, pattern: str) -> list[int]:
    return ref.Encoder(tok.merges[: tok.stage1_merges], pattern=pattern).encode(data)


def test_split_stages_is_taken_and_refused_when_it_cannot_hold(spaced_tok):
    assert spaced_tok._encoder.stages_split
    merges = spaced_tok.merges
    plain = load_cpp().Encoder(merges, None, "superword")
    assert not plain.stages_split
    assert "merge 0" in plain.split_stages(merges[1:3], "gpt4") and not plain.stages_split
    tied = load_cpp().Encoder(merges, None, "superword", [0] * len(merges))
    assert tied.split_stages(merges[:10], "gpt4") != "" and not tied.stages_split
    with pytest.raises(ValueError, match="pattern"):
        plain.split_stages(merges[:10], "nope")


def test_split_stages_gives_the_merge_loops_ids_across_incompatible_borders(spaced_tok):
    """A clause whose stage-1 pieces encode otherwise than the whole clause (the fall-back path)."""
    clause = b"  Athens"
    assert stage1_ids(spaced_tok, clause, "superword") != stage1_ids(spaced_tok, clause, "gpt4")
    reference = ref.Encoder(spaced_tok.merges, pattern="superword")
    plain = load_cpp().Encoder(spaced_tok.merges, None, "superword")
    for text in ["  Athens", "Go.  Athens", "x.  Athens  Athens, lord.   Athens 'tis", SPACED_TEXT[:300]]:
        want = reference.encode(text.encode())
        assert spaced_tok.encode_ordinary(text) == want == list(plain.encode(text.encode())), text
        assert spaced_tok.encode_batch([text, text], disallowed_special=()) == [want, want]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="  Aathens'ls.,;\n1é中", max_size=120))
def test_split_stages_matches_the_reference_on_generated_text(spaced_tok, text):
    reference = ref.Encoder(spaced_tok.merges, pattern="superword")
    assert spaced_tok.encode_ordinary(text) == reference.encode(text.encode())


# ----------------------------------------------------------------------------- export
@needs_corpora
def test_save_hf_gives_identical_ids_in_stock_tokenizers(tmp_path):
    tokenizers = pytest.importorskip("tokenizers", reason="Hugging Face tokenizers not installed (pip install .[test])")
    text = b"<|endoftext|>".join(corpus_slice(p, 150_000) for p in CORPUS_FILES)
    tok = train_superbpe(text, 1200, special_tokens=SPECIALS)
    assert tok.transition == 1080
    interop.save_hf(tok, tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for path in CORPUS_FILES:
        docs = [d[:20_000] for d in path.read_text(encoding="utf-8").split("\n<|endoftext|>\n")[:60]]
        want = tok.encode_batch(docs, disallowed_special=())
        got = [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]
        assert got == want, path.name
    assert hf.encode("Hi.<|endoftext|>", add_special_tokens=False).ids == tok.encode(
        "Hi.<|endoftext|>", allowed_special="all"
    )
    back = interop.from_hf(tmp_path / "tokenizer.json")
    assert back.pattern == "superword" and back.merges == tok.merges


# ----------------------------------------------------------------------------- SPECs and bad input
def test_spec_forms_and_slugs():
    assert str(parse_spec("superbpe")) == "superbpe:8192"
    spec = parse_spec("superbpe:2048:1800")
    assert spec.vocab_size == 2048 and spec.slug == "superbpe-2048-1800" and spec.is_trained
    assert parse_spec("superbpe:2048").slug == "superbpe-2048"
    assert spec.arg == (2048, 1800) and str(spec) == "superbpe:2048:1800" and parse_spec(str(spec)) == spec
    assert spec.with_vocab_size(4096).slug == "superbpe-4096"  # T back to its default, floor(0.9 V)
    row = kinds()["superbpe"]
    assert (row.arg, row.default_vocab, row.file_class) == ("vocab", 8192, SuperBPETokenizer)


@pytest.mark.parametrize(
    "text, named",
    [
        ("superbpe:2048:2048", "T=2048"),
        ("superbpe:2048:4000", "T=4000"),
        ("superbpe:2048:257", "T=257"),
        ("superbpe:258", "V=258 is too small"),  # the default T is not named: the user never typed it
        ("superbpe:100", "V >= 259"),
        ("superbpe:2048:x", "'2048:x'"),
    ],
)
def test_bad_transition_in_spec_is_one_line_naming_it(text, named):
    with pytest.raises(SpecError) as e:
        parse_spec(text)
    assert named in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("t", [400, 500, 257, 100])
def test_bad_transition_in_train_names_it_and_writes_nothing(t, tmp_path):
    with pytest.raises(ValueError, match=f"T={t}"):
        train_superbpe("a b c. " * 50, 400, t, special_tokens=SPECIALS)
    with pytest.raises(ValueError, match=f"T={t}"):
        load_cpp().superbpe_train(b"a b", vocab_size=400, transition=t, special_tokens=[b"x", b"y"])
    assert list(tmp_path.iterdir()) == []


def test_build_tokenizer_trains_the_spec():
    from storygpt.tokenizers import BuildOptions, build_tokenizer

    docs = ["To be, or not to be: that is the question. Whether 'tis nobler in the mind to suffer!\n" * 20] * 3
    tok = build_tokenizer(parse_spec("superbpe:300:280"), docs, BuildOptions(pattern="gpt2"))
    assert isinstance(tok, SuperBPETokenizer) and tok.vocab_size == 300
    assert (tok.transition, tok.stage1_pattern, tok.stage1_merges) == (280, "gpt2", 280 - 258)
    assert tok.special_tokens == {"<pad>": 298, EOT: 299}
