"""Every tokenizer kind through the tools: data.py --tokenizer SPEC -> checkpoint -> bits.py, sample.py.

Kinds: bpe, word, byte, tiktoken:gpt2 (needs tiktoken and ../shared/tiktoken_cache), hf:PATH (a
WordPiece and a Unigram tokenizer.json trained here with Hugging Face ``tokenizers``), file:PATH,
unigram and spm-unigram (needs sentencepiece).
The checkpoint carries the whole tokenizer: it still loads after the original file is deleted.
The tools' ``main`` run in the test's process (conftest.call_tool: exit status and output as a subprocess gives them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import CACHE, HAVE_TIKTOKEN, call_tool

from storygpt.data.corpora import written_slug
from storygpt.tokenizers import from_dict, load, parse_spec, train_bpe

try:
    import sentencepiece  # noqa: F401

    HAVE_SENTENCEPIECE = True
except ImportError:
    HAVE_SENTENCEPIECE = False

WORDS = "the cat sat on a mat and a dog ran to the old tree where children played all day long".split()


def tiny_corpus(path: Path) -> Path:
    import random

    rng = random.Random(0)
    docs = []
    for d in range(12):
        sents = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 10))).capitalize() + "." for _ in range(20)]
        docs.append(f"Story {d}: " + " ".join(sents) + "\nThe end, Zorblax said.")
    path.write_text("\n<|endoftext|>\n".join(docs) + "\n", encoding="utf-8")
    return path


def hf_files(tmp: Path, corpus: Path) -> dict[str, Path]:
    """A WordPiece (BERT-style, lower-casing) and a Unigram (Metaspace) tokenizer.json."""
    tokenizers = pytest.importorskip("tokenizers", reason="Hugging Face tokenizers not installed (pip install .[test])")
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    text = corpus.read_text(encoding="utf-8").split("\n<|endoftext|>\n")
    wp = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wp.normalizer = normalizers.BertNormalizer(lowercase=True)
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wp.decoder = decoders.WordPiece()
    wp.train_from_iterator(text, trainers.WordPieceTrainer(vocab_size=120, special_tokens=["[UNK]", "[PAD]"]))
    uni = tokenizers.Tokenizer(models.Unigram())
    uni.pre_tokenizer = pre_tokenizers.Metaspace()
    uni.decoder = decoders.Metaspace()
    uni.train_from_iterator(
        text, trainers.UnigramTrainer(vocab_size=90, special_tokens=["<unk>", "<|endoftext|>"], unk_token="<unk>")
    )
    out = {"wordpiece": tmp / "wordpiece.json", "unigram": tmp / "unigram.json"}
    wp.save(str(out["wordpiece"]))
    uni.save(str(out["unigram"]))
    return out


def specs(tmp: Path, corpus: Path) -> list[str]:
    hf = hf_files(tmp, corpus)

    own = tmp / "own-tokenizer.json"
    train_bpe(corpus.read_text(encoding="utf-8"), 280, pattern="o200k").save(own)
    out = ["bpe:300", "word:60", "byte", f"hf:{hf['wordpiece']}", f"hf:{hf['unigram']}", f"file:{own}"]
    if CACHE.is_dir() and HAVE_TIKTOKEN:
        out.append("tiktoken:gpt2")
    # one kind per training library (wordpiece and spm-bpe differ only in the trainer: tested in
    # test_tokenizers_trained_kinds.py); tokenizers is installed here (hf_files skips without it)
    out.append("unigram:300")
    if HAVE_SENTENCEPIECE:
        out.append("spm-unigram:400")
    return out


def tiny_checkpoint(path: Path, tok, data_dir: Path) -> Path:
    """An untrained 1-layer GPT for ``tok`` saved with the keys pretrain.py writes."""
    import torch

    from storygpt.checkpoint import save_checkpoint
    from storygpt.model import GPT, GPTConfig

    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=1, n_head=2, n_embd=16, position="rope")
    path.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(
        path,
        {
            "model": GPT(cfg).state_dict(),
            "config": cfg.to_dict(),
            "tokenizer": tok.to_dict(),
            "data_dir": str(data_dir),
            "corpus": data_dir.name,
        },
    )
    return path


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """data.py --tokenizer SPEC for every kind on one tiny corpus."""
    tmp = tmp_path_factory.mktemp("kinds")
    corpus = tiny_corpus(tmp / "tiny.txt")
    out = {}
    for spec in specs(tmp, corpus):
        argv = ["--tokenizer", spec, "--train-file", str(corpus), "--out", str(tmp / "data"), "--quiet"]
        done = call_tool("data", *argv, "--threads", "1", "--valid-fraction", "0.25")
        assert done.returncode == 0, (spec, done.stderr)
        # the files' slug: word:60 on this corpus is named by the size it has (storygpt.data.corpora.written_slug)
        out[spec] = written_slug(tmp / "data" / "tiny", parse_spec(spec).slug)
    return tmp, tmp / "data" / "tiny", out


def test_data_py_writes_slug_files_for_every_kind(prepared):
    from storygpt.data.binfile import read_tokens

    tmp, folder, slugs = prepared
    valid = (folder / "valid.txt").read_text(encoding="utf-8")
    for spec, slug in slugs.items():
        tok = load(folder / f"tokenizer-{slug}.json")
        stats = json.loads((folder / f"stats-{slug}.json").read_text(encoding="utf-8"))
        asked = parse_spec(spec)
        if slug == asked.slug:
            assert stats["spec"] == str(asked) and stats["vocab_size"] == tok.vocab_size
        else:  # a word vocabulary smaller than asked: the spec and files name the size it has
            assert stats["spec"] == f"word:{tok.vocab_size}" and stats["slug_requested"] == asked.slug
        ids = read_tokens(folder / f"valid-{slug}.bin", tok)
        assert int(ids.max()) < tok.vocab_size and tok.eot_id in ids.tolist()
        if spec.startswith(
            ("bpe", "byte", "tiktoken", "file", "unigram", "wordpiece", "spm-")
        ):  # lossless kinds give the documents back
            assert tok.decode(ids.tolist()) == valid.rstrip("\n").replace("\n<|endoftext|>\n", "<|endoftext|>")
        share = stats["splits"]["valid"]["unk_share"]
        assert (share is None) == (tok.unk_id is None), spec  # unk reported only where the kind has one
    assert slugs["byte"] == "byte" and load(folder / "tokenizer-byte.json").vocab_size == 257


def test_bits_and_sample_for_every_kind(prepared):
    tmp, folder, slugs = prepared
    ckpts = []
    for slug in slugs.values():
        tok = load(folder / f"tokenizer-{slug}.json")
        ckpts.append(tiny_checkpoint(tmp / "ck" / slug / "best.pt", tok, folder))
    # the checkpoints carry their tokenizers whole: the hf files may go
    for spec in slugs:
        if spec.startswith("hf:"):
            os.remove(spec[3:])
    done = call_tool("bits", *ckpts, "--json", "--no-progress", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)["results"]
    assert len(records) == len(ckpts)
    by_kind = {}
    for r, spec in zip(records, slugs):
        by_kind[spec] = r
        assert r["bits_per_character"] > 0
    assert by_kind["byte"]["round_trip_share"] == 1.0 and by_kind["byte"]["unknown_share"] == 0
    wordpiece = next(s for s in slugs if "wordpiece" in s)
    assert by_kind[wordpiece]["round_trip_share"] < 1.0  # lower-cased: it cannot give the text back
    argvs = [[ck, "--prompt", "The cat", "--max-new-tokens", "4", "--device", "cpu"] for ck in ckpts]
    for done in (call_tool("sample", *argv) for argv in argvs):
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip()


def test_checkpoint_tokenizer_dict_rebuilds_every_kind(prepared):
    tmp, folder, slugs = prepared
    for slug in slugs.values():
        tok = load(folder / f"tokenizer-{slug}.json")
        again = from_dict(json.loads(json.dumps(tok.to_dict())))
        text = "The cat sat, Zorblax said."
        assert again.encode_ordinary(text) == tok.encode_ordinary(text)
        assert again.fingerprint() == tok.fingerprint()


def test_pretrain_and_bits_for_every_kind(prepared):
    tmp, folder, slugs = prepared
    tiny = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "4"]
    # the hf files were removed by the test above in a full run; hf is covered there
    kept = [spec for spec in slugs if not spec.startswith("hf:")]
    outs = [tmp / "pt" / parse_spec(spec).slug for spec in kept]
    argvs = [
        ["--tokenizer", s, "--data", folder, "--out-dir", o, "--max-steps", "2", *tiny] for s, o in zip(kept, outs)
    ]
    for spec, done in zip(kept, (call_tool("pretrain", *argv) for argv in argvs)):
        assert done.returncode == 0, (spec, done.stderr)
    runs = [next(out.rglob("best.pt")) for out in outs]
    done = call_tool("bits", *runs, "--json", "--no-progress", "--device", "cpu")
    assert done.returncode == 0, done.stderr
