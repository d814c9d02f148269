"""unigram:V, wordpiece:V (Hugging Face ``tokenizers`` trainers), sp:PATH, spm-unigram:V, spm-bpe:V
(``sentencepiece``): ids against the libraries used directly, round trips, storage, bad input."""

from __future__ import annotations

import json
import sys

import pytest

from storygpt.tokenizers import build_tokenizer, from_dict, load, parse_spec
from storygpt.tokenizers.registry import SpecError

pytest.importorskip("tokenizers", reason="Hugging Face tokenizers not installed (pip install .[test])")

WORDS = "the cat sat on a mat and a dog ran to the old tree where children played all day long".split()
DOCS = [
    f"Story {d}: " + " ".join(WORDS[(d * 7 + i) % len(WORDS)] for i in range(60)) + ".\nThe end, Zorblax said."
    for d in range(30)
]
#: Characters the training documents never hold (accents, CJK, emoji, tabs), doubled spaces.
UNSEEN = "  Héllo\twörld ☃ 你好 😀\n\nThe  cat sat.  "


def hf_oracle(model: str, docs, vocab_size: int):
    """The same Unigram/WordPiece setup as storygpt's, built here directly with the library."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    specials = ["<unk>", "<pad>", "<|endoftext|>"]
    if model == "unigram":
        tok = Tokenizer(models.Unigram())
        trainer = trainers.UnigramTrainer(
            vocab_size=vocab_size, special_tokens=specials, unk_token="<unk>", initial_alphabet=alphabet,
            show_progress=False,
        )  # fmt: skip
    else:
        tok = Tokenizer(models.WordPiece(unk_token="<unk>", continuing_subword_prefix="\u2581"))
        trainer = trainers.WordPieceTrainer(
            vocab_size=vocab_size, special_tokens=specials, initial_alphabet=alphabet,
            continuing_subword_prefix="\u2581", show_progress=False,
        )  # fmt: skip
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.train_from_iterator(docs, trainer)
    return tok


def words(text: str) -> list[str]:
    from tokenizers import pre_tokenizers

    return [w for w, _ in pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True).pre_tokenize_str(text)]


def viterbi_ids(model: dict, text: str) -> list[int]:
    """Unigram encoding written out (Kudo 2018): per word, the segmentation of highest total log-probability."""
    score = {p: (i, s) for i, (p, s) in enumerate(model["vocab"])}
    ids = []
    for w in words(text):
        best = [(0.0, [])] + [None] * len(w)
        for end in range(1, len(w) + 1):
            for start in range(end):
                piece = w[start:end]
                if best[start] is not None and piece in score:
                    cand = (best[start][0] + score[piece][1], best[start][1] + [score[piece][0]])
                    if best[end] is None or cand[0] > best[end][0]:
                        best[end] = cand
        ids += best[-1][1]
    return ids


def greedy_ids(model: dict, text: str) -> list[int]:
    """WordPiece encoding written out (Devlin et al. 2019): per word, longest known piece first,
    continuation pieces carrying the prefix."""
    vocab, prefix = model["vocab"], model["continuing_subword_prefix"]
    ids = []
    for w in words(text):
        start = 0
        while start < len(w):
            end = len(w)
            while (prefix if start else "") + w[start:end] not in vocab:
                end -= 1
            ids.append(vocab[(prefix if start else "") + w[start:end]])
            start = end
    return ids


TEXTS = ["The cat sat on a mat and a dog ran to the old tree.", DOCS[5], UNSEEN, "Zorblax said: 12345!!"]


def test_unigram_is_the_library_trainer_and_viterbi():
    tok = build_tokenizer("unigram:600", DOCS)
    model = tok.to_dict()["tokenizer_json"]["model"]
    assert (model["type"], model["unk_id"]) == ("Unigram", 0)
    # the same pieces as the library trained directly (their ids: ordered by piece after the specials)
    oracle = json.loads(hf_oracle("unigram", DOCS, 600).to_str())["model"]["vocab"]
    assert [p for p, _ in model["vocab"]] == [p for p, _ in oracle[:3]] + sorted(p for p, _ in oracle[3:])
    assert tok.vocab_size == len(oracle)
    for text in TEXTS:
        assert tok.encode(text) == viterbi_ids(model, text)


def test_wordpiece_is_the_library_trainer_and_greedy():
    tok = build_tokenizer("wordpiece:600", DOCS)
    model = tok.to_dict()["tokenizer_json"]["model"]
    assert model["type"] == "WordPiece" and tok.vocab_size == len(model["vocab"]) == 600
    from tokenizers import pre_tokenizers

    for c in pre_tokenizers.ByteLevel.alphabet():  # every word can be covered
        assert c in model["vocab"] and "\u2581" + c in model["vocab"]
    for text in TEXTS:
        assert tok.encode(text) == greedy_ids(model, text)


@pytest.mark.parametrize("kind", ["unigram", "wordpiece"])
def test_hf_trained_round_trip_and_storage(kind, tmp_path):
    tok = build_tokenizer(f"{kind}:600", DOCS)
    assert tok.special_tokens == {"<unk>": 0, "<pad>": 1, "<|endoftext|>": 2}
    assert (tok.unk_id, tok.pad_id, tok.eot_id) == (0, 1, 2)
    # lossless: nothing unknown, even for characters the training text never held
    ids = tok.encode(UNSEEN)
    assert tok.unk_id not in ids
    assert tok.decode(ids) == UNSEEN
    ids = tok.encode("a<|endoftext|>b", allowed_special="all")
    assert 2 in ids and tok.decode(ids) == "a<|endoftext|>b"
    # saved like hf: ones (the whole tokenizer.json), loaded through the registry
    tok.save(tmp_path / "t.json")
    assert json.loads((tmp_path / "t.json").read_text())["kind"] == "hf"
    again = load(tmp_path / "t.json")
    for text in TEXTS:
        assert again.encode(text) == tok.encode(text) == from_dict(tok.to_dict()).encode(text)


# ----------------------------------------------------------------------------- sentencepiece
spm = pytest.importorskip("sentencepiece", reason="sentencepiece not installed (pip install .[test])")


@pytest.mark.parametrize("model_type", ["unigram", "bpe"])
def test_spm_trained_matches_processor(model_type, tmp_path):
    tok = build_tokenizer(f"spm-{model_type}:400", DOCS)
    assert tok.kind == "sp"
    assert tok.special_tokens == {"<pad>": 1, "<|endoftext|>": 2}
    assert (tok.unk_id, tok.pad_id, tok.eot_id) == (0, 1, 2)
    assert 260 < tok.vocab_size <= 400
    # deterministic: a second training gives the same model, byte for byte
    assert build_tokenizer(f"spm-{model_type}:400", DOCS).to_dict() == tok.to_dict()
    # the .model file read by sp:PATH and by sentencepiece itself give the same ids
    model = tmp_path / "m.model"
    model.write_bytes(tok._proto)
    proc = spm.SentencePieceProcessor(model_file=str(model))
    sp = build_tokenizer(f"sp:{model}")
    for text in (DOCS[3], UNSEEN, "The cat sat."):
        assert sp.encode(text) == tok.encode(text) == proc.encode(text)
        assert tok.decode(tok.encode(text)) == text  # byte fallback: lossless
    # byte fallback: the emoji is its 4 UTF-8 bytes
    assert [proc.id_to_piece(i) for i in proc.encode("😀")][-4:] == ["<0xF0>", "<0x9F>", "<0x98>", "<0x80>"]
    ids = tok.encode("a<|endoftext|>b", allowed_special="all")
    assert 2 in ids and tok.decode(ids) == "a<|endoftext|>b"
    # token bytes: the text again, plus the dummy-prefix space
    ids = tok.encode("Héllo 😀<|endoftext|>", allowed_special="all")
    assert b"".join(tok.token_bytes(i) for i in ids) == " Héllo 😀<|endoftext|>".encode()
    # the file carries the model: loads after the .model file is gone
    tok.save(tmp_path / "t.json")
    model.unlink()
    assert load(tmp_path / "t.json").encode(UNSEEN) == proc.encode(UNSEEN)


def test_long_documents_reach_the_trainer_in_pieces():
    from storygpt.tokenizers.spm import sentences

    doc = "ab\n" * 5 + "x" * 25 + "\nend"
    pieces = list(sentences(["short", doc], limit=8))
    assert pieces == ["short", "ab\nab\n", "ab\nab\n", "ab\n"] + ["xx"] * 9 + ["xxxxxxx\n", "end"]
    assert "".join(pieces[1:]) == doc


def test_sp_model_without_eot_gets_one_more_id(tmp_path):
    proto = spm.SentencePieceTrainer
    import io

    out = io.BytesIO()
    proto.train(sentence_iterator=iter(DOCS), model_writer=out, vocab_size=60, minloglevel=2, num_threads=1)
    path = tmp_path / "plain.model"
    path.write_bytes(out.getvalue())
    tok = build_tokenizer(f"sp:{path}")
    n = spm.SentencePieceProcessor(model_file=str(path)).get_piece_size()
    assert tok.eot_id == n and tok.vocab_size == n + 1
    assert tok.decode(tok.encode("the cat<|endoftext|>", allowed_special="all")).endswith("<|endoftext|>")


def test_bad_input(tmp_path, monkeypatch):
    with pytest.raises(SpecError, match="'spm-unigram:ab'"):
        parse_spec("spm-unigram:ab")
    with pytest.raises(SpecError, match="unknown tokenizer SPEC 'spm-char:10'"):
        parse_spec("spm-char:10")
    for spec in ("spm-unigram:100", "spm-bpe:259", "unigram:100", "wordpiece:514"):
        with pytest.raises(ValueError, match=spec):
            build_tokenizer(spec, DOCS)
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"this is not a sentencepiece model")
    with pytest.raises(ValueError, match=f"{bad}: not a SentencePiece model file"):
        build_tokenizer(f"sp:{bad}")
    with pytest.raises(FileNotFoundError, match="missing.model"):
        build_tokenizer(f"sp:{tmp_path / 'missing.model'}")
    monkeypatch.setitem(sys.modules, "sentencepiece", None)
    with pytest.raises(ImportError, match="optional package sentencepiece"):
        build_tokenizer("spm-bpe:400", DOCS)
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(ImportError, match="optional package tokenizers"):
        build_tokenizer("unigram:400", DOCS)
