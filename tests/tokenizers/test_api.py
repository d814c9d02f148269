"""The public API (docs/api.md, issue 32 item 4): every name listed there imports, the self-contained
examples run, and every spelling of the last release still works, warns ``DeprecationWarning``
naming its replacement, and gives what the replacement gives."""

from __future__ import annotations

import importlib
import json
import re
import warnings

import pytest
from conftest import REPO, SHARED

from storygpt.tokenizers import EOT, BPETokenizer, interop, registry, train_bpe

API = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
NAMES = re.findall(r"^### `([\w.]+)`", API, flags=re.M)
TEXT = "the cat sat on the mat. the dog ate the hat! " * 40


def test_the_page_lists_the_names_the_issue_asks_for():
    for name in [
        "storygpt.tokenizers.BPETokenizer",
        "storygpt.tokenizers.WordTokenizer",
        "storygpt.tokenizers.train_bpe",
        "storygpt.tokenizers.load",
        "storygpt.tokenizers.interop.from_tiktoken",
        "storygpt.tokenizers.interop.save_hf",
        "storygpt.load_checkpoint",
        "storygpt.export.export",
    ]:
        assert name in NAMES
    assert len(NAMES) == len(set(NAMES)) >= 25


@pytest.mark.parametrize("name", NAMES)
def test_every_listed_name_imports(name):
    module, _, attr = name.rpartition(".")
    assert getattr(importlib.import_module(module), attr) is not None


def code_blocks(section: str) -> list[str]:
    """The ```python blocks of the ``## section`` of docs/api.md."""
    part = API.split(f"\n## {section}", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", part, flags=re.S)


def test_the_tokenizer_and_interop_examples_run(tmp_path, monkeypatch):
    """Run in order in one namespace, as a reader would; the files they name are made first."""
    pytest.importorskip("tiktoken")
    pytest.importorskip("tokenizers")
    if not (SHARED / "tiktoken_cache").is_dir():
        pytest.skip(f"tiktoken BPE files not found at {SHARED / 'tiktoken_cache'}")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(SHARED / "tiktoken_cache"))
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))  # the register_kind example stays here
    monkeypatch.chdir(tmp_path)
    tok = train_bpe(TEXT, 300, pattern="gpt2", special_tokens=[EOT])
    interop.save_hf(tok, tmp_path / "tokenizer.json")
    write_gpt2_files(tok, tmp_path)
    blocks = code_blocks("Tokenizers") + code_blocks("Other libraries")
    assert len(blocks) >= 20
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the examples use no deprecated spelling
        for block in blocks:
            exec(compile(block, "docs/api.md", "exec"), namespace)
    assert "mybytes" in registry.kinds()
    assert namespace["tok"].encode("the cat") == from_gpt2(tmp_path).encode("the cat")


def write_gpt2_files(tok, folder):
    """GPT-2's ``encoder.json`` and ``vocab.bpe`` for ``tok`` (ids = storygpt's, through GPT-2's byte table)."""
    table = interop.gpt2_bytes_to_unicode()

    def text(b: bytes) -> str:
        return "".join(table[x] for x in b)

    encoder = {text(b): i for i, b in tok.vocab.items()} | tok.special_tokens
    (folder / "encoder.json").write_text(json.dumps(encoder), encoding="utf-8")
    vocab = tok.vocab
    lines = ["#version: 0.2"] + [f"{text(vocab[a])} {text(vocab[b])}" for a, b, _ in tok.merges]
    (folder / "vocab.bpe").write_text("\n".join(lines) + "\n", encoding="utf-8")


def from_gpt2(folder):
    return interop.from_gpt2_files(folder / "encoder.json", folder / "vocab.bpe")


def old(replacement: str):
    """The warning an old spelling gives: a DeprecationWarning naming ``replacement``."""
    return pytest.warns(DeprecationWarning, match=re.escape(replacement))


def same(a, b) -> None:
    assert type(a) is type(b) and a.to_dict() == b.to_dict()


def test_the_training_spellings_of_the_last_release(tmp_path):
    kw = dict(pattern="gpt4", special_tokens=("<pad>", EOT), min_frequency=2)
    new = train_bpe(TEXT, 320, **kw)
    with old("storygpt.tokenizers.train_bpe(text_or_files"):
        same(BPETokenizer.train(TEXT, 320, **kw), new)
    with old("storygpt.tokenizers.train_bpe(text_or_files"):  # positional, as the last release took them
        same(BPETokenizer.train(TEXT, 320, "gpt4", ("<pad>", EOT), 2), new)
    f = tmp_path / "a.txt"
    f.write_text(TEXT, encoding="utf-8")
    with old("train_bpe(text_or_files"):
        same(BPETokenizer.train([f], 320, **kw), train_bpe([f], 320, **kw))

    docs = TEXT.split(". ")
    with old("storygpt.tokenizers.train_bpe(iter(texts)"):
        same(BPETokenizer.train_from_iterator(docs, 320, **kw), train_bpe(iter(docs), 320, **kw))
    with pytest.raises(TypeError, match="not a single text"), pytest.warns(DeprecationWarning):
        BPETokenizer.train_from_iterator(TEXT, 320)

    counts = {" cat": 30, " hat": 20, " the": 50, "the": 5}
    with old("storygpt.tokenizers.train_bpe(counts"):
        same(BPETokenizer.train_from_counts(counts, 262, "gpt4"), train_bpe(counts, 262, "gpt4"))
    stages = []
    with old("train_bpe(counts"):  # the last release's positional progress (7th argument)
        BPETokenizer.train_from_counts(
            counts, 262, "gpt4", ("<pad>", EOT), 1, "smallest_ids", lambda *a: stages.append(a)
        )
    assert stages and {s for s, _, _ in stages} <= {"count", "merge"}  # taken as progress, not as num_threads
    with pytest.raises(TypeError, match="counts must be a mapping"), pytest.warns(DeprecationWarning):
        BPETokenizer.train_from_counts(["a"], 270)


def test_the_interop_spellings_of_the_last_release(tmp_path):
    pytest.importorskip("tiktoken")
    pytest.importorskip("tokenizers")
    tok = train_bpe(TEXT, 300, pattern="gpt2", special_tokens=[EOT])
    sample = "the cat ate the mat, dogs! " * 3

    with old("storygpt.tokenizers.interop.save_tiktoken(tok, path)"):
        tok.save_tiktoken(tmp_path / "old.tiktoken")
    interop.save_tiktoken(tok, tmp_path / "new.tiktoken")
    assert (tmp_path / "old.tiktoken").read_bytes() == (tmp_path / "new.tiktoken").read_bytes()
    with old("storygpt.tokenizers.interop.from_tiktoken("):
        from_old = BPETokenizer.from_tiktoken(tmp_path / "old.tiktoken", pattern="gpt2")
    same(from_old, interop.from_tiktoken(tmp_path / "new.tiktoken", pattern="gpt2"))
    with old("storygpt.tokenizers.interop.to_tiktoken(tok)"):
        enc = tok.to_tiktoken()
    assert enc.encode(sample) == interop.to_tiktoken(tok).encode(sample) == tok.encode(sample)

    with old("storygpt.tokenizers.interop.save_hf(tok, path)"):
        tok.save_hf(tmp_path / "old" / "tokenizer.json")
    interop.save_hf(tok, tmp_path / "new" / "tokenizer.json")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        assert (tmp_path / "old" / name).read_bytes() == (tmp_path / "new" / name).read_bytes()
    with old("storygpt.tokenizers.interop.from_hf(path)"):
        same(
            BPETokenizer.from_hf(tmp_path / "old" / "tokenizer.json"),
            interop.from_hf(tmp_path / "new" / "tokenizer.json"),
        )

    write_gpt2_files(tok, tmp_path)
    with old("storygpt.tokenizers.interop.from_gpt2_files("):
        same(BPETokenizer.from_gpt2_files(tmp_path / "encoder.json", tmp_path / "vocab.bpe"), from_gpt2(tmp_path))
    assert from_gpt2(tmp_path).encode(sample) == tok.encode(sample)


def test_an_old_spelling_keeps_its_errors():
    """A bad argument through an old spelling is refused as through the new one (after the warning)."""
    with pytest.raises(ValueError, match="unknown pre-tokenization pattern 'nope'"), pytest.warns(DeprecationWarning):
        BPETokenizer.train(TEXT, 300, pattern="nope")
    with pytest.raises(FileNotFoundError), pytest.warns(DeprecationWarning):
        BPETokenizer.from_hf("/no/such/tokenizer.json")
