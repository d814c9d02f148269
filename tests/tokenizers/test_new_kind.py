"""A new tokenizer kind is one ``register_kind`` call (issue 32 item 2): a toy kind registered here, in the
test only, works in data.py, pretrain.py, bits.py and export.py and shows its help line, with no other file
touched.  A second toy without ``export`` is refused by export.py in one line naming the kinds it can write."""

from __future__ import annotations

import json

import pytest
from conftest import call_tool

from storygpt.checkpoint import read_checkpoint, save_checkpoint
from storygpt.tokenizers import ByteTokenizer, SpecError, io, load, parse_spec, registry
from storygpt.tokenizers.interop import to_hf_dict

TINY = [
    "--recipe",
    "gpt2",
    "--n-layer",
    "1",
    "--n-head",
    "2",
    "--n-embd",
    "16",
    "--block-size",
    "16",
    "--batch-size",
    "4",
]


class ToyTokenizer(ByteTokenizer):
    """The 256 bytes and <|endoftext|> under a kind of its own ("toy" in its files)."""

    kind = "toy"

    @classmethod
    def from_spec(cls, arg, train_docs, options):
        return cls()

    def to_dict(self) -> dict:
        return {**super().to_dict(), "kind": "toy"}

    @classmethod
    def from_dict(cls, d: dict, backend: str = "cpp"):
        if d.get("kind") != "toy":
            raise io.TokenizerFileError(f"expected a 'toy' tokenizer, got {d.get('kind')!r}")
        return cls(backend=backend)


class NoExportToy(ToyTokenizer):
    kind = "toy-noexport"

    def to_dict(self) -> dict:
        return {**super().to_dict(), "kind": "toy-noexport"}

    @classmethod
    def from_dict(cls, d: dict, backend: str = "cpp"):
        return cls(backend=backend)


@pytest.fixture
def toy_kinds(monkeypatch):
    """The two toy kinds, registered for this test only (the registry's table is put back afterwards)."""
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))
    registry.register_kind("toy", ToyTokenizer, help="a toy: the 256 bytes under another name", export=to_hf_dict)
    registry.register_kind("toy-noexport", NoExportToy, help="a toy that export.py cannot write")


def test_a_kind_registered_once_works_in_every_tool(toy_kinds, tmp_path):
    corpus = tmp_path / "tiny.txt"
    docs = [f"Story {d}: the cat sat on the mat, and the dog ran home. Zorblax said hi." * 3 for d in range(8)]
    corpus.write_text("\n<|endoftext|>\n".join(docs) + "\n", encoding="utf-8")

    for tool in ("data", "pretrain"):  # the help line, from the registry
        shown = call_tool(tool, "--help")
        assert shown.returncode == 0 and "toy (a toy: the 256 bytes under another name)" in " ".join(
            shown.stdout.split()
        ), shown.stdout
    with pytest.raises(
        SpecError, match=r"^unknown tokenizer SPEC 'toyy': expected one of bpe\[:VOCAB\], .*, toy, toy-noexport$"
    ):
        parse_spec("toyy")

    done = call_tool("data", "--tokenizer", "toy", "--train-file", corpus, "--out", tmp_path / "data", "--quiet")
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "data" / "tiny"
    tok = load(folder / "tokenizer-toy.json")
    assert type(tok) is ToyTokenizer and json.loads((folder / "stats-toy.json").read_text())["spec"] == "toy"

    out = tmp_path / "ck"
    done = call_tool("pretrain", "--tokenizer", "toy", "--data", folder, "--out-dir", out, "--max-steps", "3", *TINY)
    assert done.returncode == 0, done.stderr
    runs = {"toy": next(out.rglob("best.pt")), "toy-noexport": tmp_path / "noexport.pt"}
    ckpt = read_checkpoint(runs["toy"])  # the same model with the other toy's tokenizer (same ids)
    save_checkpoint(runs["toy-noexport"], {**ckpt, "tokenizer": NoExportToy().to_dict()})
    done = call_tool("bits", runs["toy"], "--json", "--no-progress", "--device", "cpu")
    assert done.returncode == 0, done.stderr
    (record,) = json.loads(done.stdout)["results"]
    assert record["bits_per_character"] > 0 and record["round_trip_share"] == 1.0

    done = call_tool("export", runs["toy"], tmp_path / "hf")
    assert done.returncode == 0, done.stderr
    written = json.loads((tmp_path / "hf" / "tokenizer.json").read_text(encoding="utf-8"))
    assert written["model"] == to_hf_dict(ByteTokenizer())["model"]

    done = call_tool("export", runs["toy-noexport"], tmp_path / "hf2")
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert "a 'toy-noexport' tokenizer has no exact Hugging Face tokenizer.json form" in line
    assert "exportable kinds: bpe, superbpe, word, hf, toy" in line
    assert not (tmp_path / "hf2").exists()
