"""export.py and storygpt.export against the real libraries: transformers, safetensors, gguf, llama.cpp.

Oracles: Hugging Face ``transformers`` (stock ``GPT2LMHeadModel`` / ``GPTNeoXForCausalLM`` and
``AutoTokenizer``, no custom code), llama.cpp's ``gguf`` reader, plain ``tiktoken``, and, in a
``slow`` test, llama.cpp itself through the compiled llama.cpp of ``llama-cpp-cffi`` when it is installed.  The models
are tiny GPTs with random weights (perturbed so that LayerNorm gains and biases are not 1 and 0
and the logits are far apart) saved through storygpt's own ``save_checkpoint``.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import REPO, one_error_line, run_tool

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install -e .[interop])")
pytest.importorskip("safetensors", reason="safetensors is not installed (pip install -e .[interop])")

from export_cases import (  # noqa: E402
    BLOCK,
    CORPUS_FILES,
    PROMPT,
    SAMPLE_DOCS,
    STEPS,
    check_generate_stops_at_end_of_text,
    check_same_logits_and_greedy_tokens,
    docs_of,
    ending_documents,
    load_hf,
    needs_corpora,
    random_gpt,
    save,
    texts_for_tests,
    tokenizers_for_tests,
)

from storygpt.checkpoint import CheckpointError  # noqa: E402
from storygpt.export import ExportError, choose_architecture, export  # noqa: E402
from storygpt.export.arch import GPT2, GPT_NEOX, rotary_row_order  # noqa: E402
from storygpt.model import GPTConfig  # noqa: E402
from storygpt.tokenizers import EOT  # noqa: E402
from storygpt.tokenizers.interop import save_hf, save_tiktoken  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _one_thread(one_torch_thread):
    """Tiny models: one torch thread is faster than two on a busy machine (and fair to it)."""


@pytest.fixture(scope="module")
def texts() -> dict:
    """Training text for the tokenizers and held-out text for the logits (the shared corpora when present)."""
    return texts_for_tests()


@pytest.fixture(scope="module")
def tokenizers(texts) -> dict:
    return tokenizers_for_tests(texts)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, tokenizers, texts) -> dict:
    """For learned and rope (BPE) and word (learned): the storygpt model, its checkpoint and its HF export."""
    root = tmp_path_factory.mktemp("export")
    out = {}
    for name, tok_name, position in (("learned", "bpe", "learned"), ("rope", "bpe", "rope"), ("word", "word", "rope")):
        tok = tokenizers[tok_name]
        model = random_gpt(tok, position)
        prompt = torch.tensor([[tok.eot_id, *tok.encode_ordinary(texts["held"])[: PROMPT - 1]]])
        model = ending_documents(model, prompt, tok.eot_id)
        ckpt = save(model, tok, root / f"{name}.pt")
        res = export(ckpt, root / f"{name}-hf")
        out[name] = {"model": model, "tok": tok, "ckpt": ckpt, "hf": root / f"{name}-hf", "res": res, "prompt": prompt}
    return out


# ------------------------------------------------------------------------------- the architecture table
def test_the_table_picks_gpt2_for_learned_and_gpt_neox_for_rope():
    assert choose_architecture(GPTConfig(position="learned")) is GPT2
    assert choose_architecture(GPTConfig(position="rope", dropout=0.1, rope_theta=500.0)) is GPT_NEOX


def test_a_field_the_table_does_not_know_is_refused_by_name():
    @dataclass
    class NewConfig(GPTConfig):
        parallel_residual: bool = field(default=True)

    with pytest.raises(ExportError, match=r"GPTConfig\.parallel_residual = True: the exporter does not know this"):
        choose_architecture(NewConfig())
    cfg = GPTConfig()
    object.__setattr__(cfg, "position", "alibi")  # a value GPTConfig would refuse today
    with pytest.raises(ExportError, match=r"GPTConfig\.position = 'alibi' has no exact equivalent"):
        choose_architecture(cfg)


def test_rotary_row_order_turns_pairs_into_halves():
    """storygpt rotates (2i, 2i+1), GPT-NeoX (i, i + d/2): rows (0, 2, 4, 1, 3, 5) for d = 6."""
    assert rotary_row_order(6).tolist() == [0, 2, 4, 1, 3, 5]


@pytest.mark.parametrize("name", ["learned", "rope", "word"])
def test_hf_export_has_the_same_logits_and_greedy_tokens(exported, texts, name):
    cls = {"learned": "GPT2LMHeadModel"}.get(name, "GPTNeoXForCausalLM")
    check_same_logits_and_greedy_tokens(exported[name], texts["held"], cls)


@pytest.mark.parametrize("name", ["learned", "rope"])
def test_hf_generate_stops_at_end_of_text(exported, name):
    check_generate_stops_at_end_of_text(exported[name])  # generation_config.json's eos_token_id ends it


def test_hf_folder_files_and_config(exported):
    e = exported["rope"]
    names = sorted(p.name for p in e["hf"].iterdir())
    assert names == sorted(e["res"]["files"])
    cfg = json.loads((e["hf"] / "config.json").read_text())
    tok = e["tok"]
    assert cfg["architectures"] == ["GPTNeoXForCausalLM"] and cfg["tie_word_embeddings"] is True
    assert (cfg["eos_token_id"], cfg["pad_token_id"], cfg["max_position_embeddings"]) == (tok.eot_id, tok.pad_id, BLOCK)
    gen = json.loads((e["hf"] / "generation_config.json").read_text())
    assert gen["eos_token_id"] == tok.eot_id
    from safetensors import safe_open

    with safe_open(str(e["hf"] / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
        qkv = f.get_tensor("gpt_neox.layers.0.attention.query_key_value.weight")
    assert "lm_head.weight" not in keys and "embed_out.weight" not in keys  # tied, stored once
    # head 1's query rows: storygpt's rows 16..31 of c_attn in the order (0, 2, ..., 14, 1, 3, ..., 15)
    mine = e["model"].state_dict()["blocks.0.attn.c_attn.weight"]
    assert torch.equal(qkv[48:64], mine[16:32][rotary_row_order(16)])
    assert torch.equal(qkv[80:96], mine[64 + 16 : 64 + 32])  # head 1's value rows, unpermuted


@pytest.mark.parametrize("name", ["learned", "word"])
def test_autotokenizer_roles_and_padding(exported, name):
    e = exported[name]
    _, ht = load_hf(e["hf"])
    tok = e["tok"]
    assert ht.eos_token == ht.bos_token == EOT and ht.eos_token_id == tok.eot_id
    assert ht.pad_token == "<pad>" and ht.pad_token_id == tok.pad_id
    assert ht.model_max_length == BLOCK
    batch = ht(["the cat", "the cat sat on the mat"], padding=True)
    short = [tok.eot_id, *tok.encode("the cat")]  # <|endoftext|> first, as the model was trained
    assert batch["input_ids"][0] == short + [tok.pad_id] * (len(batch["input_ids"][1]) - len(short))
    assert batch["attention_mask"][0] == [1] * len(short) + [0] * (len(batch["input_ids"][1]) - len(short))
    if name == "word":
        assert ht.unk_token == "<unk>" and ht("zzqxv")["input_ids"] == [tok.eot_id, tok.unk_id]


def check_corpora_ids(folder: Path, tok, limit: int | None) -> int:
    ht = transformers.AutoTokenizer.from_pretrained(folder)
    n = 0
    for path in CORPUS_FILES:
        docs = docs_of(path, limit)
        theirs = ht(docs)["input_ids"]
        for d, ids in zip(docs, theirs):
            assert ids == [tok.eot_id, *tok.encode(d, allowed_special="all")], (path.name, d[:80])
            n += 1
        joined = f"\n{EOT}\n".join(docs[:5])  # end-of-text between documents is the special token
        assert ht(joined, add_special_tokens=False)["input_ids"] == tok.encode(joined, allowed_special="all")
    return n


@needs_corpora
@pytest.mark.parametrize("name", ["learned", "word"])
def test_autotokenizer_gives_the_same_ids_on_the_shared_corpora(exported, name):
    assert check_corpora_ids(exported[name]["hf"], exported[name]["tok"], SAMPLE_DOCS) == SAMPLE_DOCS * len(
        CORPUS_FILES
    )


@pytest.mark.slow
@needs_corpora
@pytest.mark.parametrize("name", ["learned", "word"])
def test_autotokenizer_gives_the_same_ids_on_every_document(exported, name):
    assert check_corpora_ids(exported[name]["hf"], exported[name]["tok"], None) > 25_000


# ------------------------------------------------------------------------------- bad input
def test_destination_rules_and_nothing_half_written(exported, tmp_path, monkeypatch):
    ckpt = exported["learned"]["ckpt"]
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match=r"out: folder exists and is not empty \(--force replaces it\)"):
        export(ckpt, out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]

    import storygpt.export.card as card

    def broken(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(card, "model_card", broken)  # the last file written
    with pytest.raises(OSError, match="No space left"):
        export(ckpt, out, force=True)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]  # the old folder is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left
    monkeypatch.undo()
    export(ckpt, out, force=True)
    assert "keep.txt" not in {p.name for p in out.iterdir()} and (out / "model.safetensors").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    empty = tmp_path / "empty"
    empty.mkdir()
    export(ckpt, empty)  # an empty folder needs no --force
    export(ckpt, tmp_path / "new" / "deeper")  # missing folders above OUT are created
    assert (tmp_path / "new" / "deeper" / "config.json").is_file()
    from storygpt.atomic import file_mode

    assert {(p / "model.safetensors").stat().st_mode & 0o777 for p in (out, empty)} == {file_mode()}
    assert out.stat().st_mode & 0o777 == (tmp_path / "new").stat().st_mode & 0o777  # as mkdir makes it
    with pytest.raises(ExportError, match="is not a folder"):
        export(ckpt, out / "config.json", force=True)
    with pytest.raises(ExportError, match="unknown format 'onnx'"):
        export(ckpt, tmp_path / "x", fmt="onnx")


def test_not_a_checkpoint_is_one_line(tmp_path):
    bad = tmp_path / "notes.pt"
    bad.write_text("hello")
    with pytest.raises(CheckpointError, match="not a checkpoint file"):
        export(bad, tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="no best.pt or ckpt.pt in run folder"):
        export(tmp_path, tmp_path / "out2")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.pt"]


def test_force_never_replaces_the_run_being_exported(tokenizers, tmp_path):
    run = tmp_path / "runs" / "rope-bpe"
    run.mkdir(parents=True)
    best = save(random_gpt(tokenizers["bpe"], "rope"), tokenizers["bpe"], run / "best.pt")
    (run / "ckpt.pt").write_bytes(best.read_bytes())
    before = sorted(p.name for p in run.iterdir())
    for source, out, fmt in (
        (run, run, "hf"),  # OUT is the run folder
        (run, tmp_path / "runs", "hf"),  # OUT holds the run folder
        (best, best, "gguf"),  # OUT is the checkpoint file
        (best, run / "ckpt.pt", "gguf"),  # OUT is the run's other checkpoint
    ):
        with pytest.raises(ExportError, match="holds the checkpoint being exported"):
            export(source, out, fmt=fmt, force=True)
    assert sorted(p.name for p in run.iterdir()) == before
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["rope-bpe"]


def test_tokenizer_kinds_without_an_hf_form_are_refused(exported, tmp_path):
    from storygpt.export.tokenizer import tokenizer_json

    class Odd:
        kind = "sentencepiece"

    with pytest.raises(ExportError, match="a 'sentencepiece' tokenizer has no exact Hugging Face tokenizer.json form"):
        tokenizer_json(Odd())


def test_cli_exports_and_refuses_in_one_line(exported, tmp_path, capsys):
    ckpt = exported["learned"]["ckpt"]
    done = run_tool("export", ckpt, tmp_path / "hf")
    assert done.returncode == 0, done.stderr
    assert "(hf, gpt2): config.json, generation_config.json, model.safetensors" in done.stdout
    spec = importlib.util.spec_from_file_location("export_cli", REPO / "export.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    for argv, end in (
        ([ckpt, tmp_path / "hf"], "hf: folder exists and is not empty (--force replaces it)"),
        ([tmp_path / "hf" / "config.json", tmp_path / "x"], "config.json: not a checkpoint file"),
        ([ckpt, tmp_path, "--format", "gguf"], f"{tmp_path}: is a folder (a GGUF export is one file"),
    ):
        assert cli.main([str(a) for a in argv]) == 2
        assert end in one_error_line(capsys.readouterr().err, "export.py")


def test_cli_unwritable_target_is_one_line_and_nothing_left(exported, tmp_path, capsys, monkeypatch):
    # before: a PermissionError traceback (root ignores file modes, so the write itself is made to fail)
    import tempfile

    spec = importlib.util.spec_from_file_location("export_cli", REPO / "export.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)

    def refused(*a, dir=None, **k):
        raise PermissionError(13, "Permission denied", str(dir))

    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    out = tmp_path / "ro" / "hf"
    assert cli.main([str(exported["word"]["ckpt"]), str(out)]) == 1
    line = one_error_line(capsys.readouterr().err, "export.py")
    assert f"cannot write {out}: Permission denied ({tmp_path / 'ro'})" in line
    assert list(tmp_path.iterdir()) == []  # the folder made above OUT is removed again


def test_cli_checks_its_paths_before_importing_torch(tmp_path, capsys, monkeypatch):
    """A wrong CKPT or OUT is refused by ``check_paths`` before the exporter (and torch) is imported."""
    from storygpt.export.destination import check_paths

    spec = importlib.util.spec_from_file_location("export_cli", REPO / "export.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    run = tmp_path / "run"
    run.mkdir()
    (run / "best.pt").write_bytes(b"not read")  # only its path is checked
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    (tmp_path / "m.gguf").write_text("x")
    for argv, end in (
        ([tmp_path / "nope.pt", tmp_path / "o"], f"checkpoint not found: {tmp_path / 'nope.pt'}"),
        ([full, tmp_path / "o"], f"no best.pt or ckpt.pt in run folder {full}"),
        ([run, full], f"{full}: folder exists and is not empty (--force replaces it)"),
        ([run, tmp_path / "m.gguf", "--format", "gguf"], f"{tmp_path / 'm.gguf'}: file exists (--force replaces it)"),
        ([run, run, "--force"], f"{run}: holds the checkpoint being exported ({run / 'best.pt'}); choose another OUT"),
    ):
        assert cli.main([str(a) for a in argv]) == 2
        assert one_error_line(capsys.readouterr().err, "export.py").endswith(end)
    assert check_paths(run, tmp_path / "new", "gguf", False) == (run / "best.pt", tmp_path / "new")
    monkeypatch.chdir(tmp_path)
    for out in ("", ".", str(tmp_path.parent)):  # before: --force moved the working folder aside, then failed
        with pytest.raises(ExportError, match="is the working folder or holds it; choose another OUT"):
            check_paths(run, out, "hf", True)
    probe = (
        "import runpy, sys; sys.argv = sys.argv[1:]; main = runpy.run_path(sys.argv[0])['main']; "
        "print(main(sys.argv[1:]), 'torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(REPO / "export.py"), str(run), str(full)], capture_output=True, text=True
    )
    assert done.stdout.split() == ["2", "False"], done.stderr


# ------------------------------------------------------------------------------- GGUF
def read_gguf(path: Path):
    g = pytest.importorskip("gguf", reason="gguf is not installed (pip install -e .[interop])")
    r = g.GGUFReader(str(path))
    tensors = {t.name: torch.from_numpy(t.data.copy()).reshape([int(n) for n in reversed(t.shape)]) for t in r.tensors}

    def field_value(name):
        f = r.fields[name]
        if len(f.data) == 1:
            v = f.parts[f.data[0]]
            return bytes(v).decode() if f.types[0] == g.GGUFValueType.STRING else v.tolist()[0]
        return [bytes(f.parts[i]).decode() if f.types[-1] == g.GGUFValueType.STRING else f.parts[i][0] for i in f.data]

    return tensors, field_value


@pytest.mark.parametrize("name", ["learned", "rope"])
def test_gguf_tensors_and_metadata_read_back(exported, tmp_path, name):
    e = exported[name]
    out = tmp_path / f"{name}.gguf"
    res = export(e["ckpt"], out, fmt="gguf")
    assert res["architecture"] == {"learned": "gpt2", "rope": "gptneox"}[name]
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]
    tensors, value = read_gguf(out)
    sd, tok, cfg = e["model"].state_dict(), e["tok"], e["model"].config
    arch = res["architecture"]
    assert value("general.architecture") == arch
    assert value(f"{arch}.block_count") == cfg.n_layer and value(f"{arch}.embedding_length") == cfg.n_embd
    assert value(f"{arch}.context_length") == BLOCK and value(f"{arch}.attention.head_count") == cfg.n_head
    assert value("tokenizer.ggml.model") == "gpt2" and value("tokenizer.ggml.pre") == "llama-bpe"
    assert value("tokenizer.ggml.eos_token_id") == tok.eot_id
    assert len(value("tokenizer.ggml.tokens")) == tok.vocab_size
    expected_names = {"token_embd.weight", "output.weight", "output_norm.weight", "output_norm.bias"}
    for i in range(cfg.n_layer):
        for t in ("attn_norm", "attn_qkv", "attn_output", "ffn_norm", "ffn_up", "ffn_down"):
            expected_names |= {f"blk.{i}.{t}.weight", f"blk.{i}.{t}.bias"}
    if name == "learned":
        expected_names.add("position_embd.weight")
    assert set(tensors) == expected_names
    assert torch.equal(tensors["token_embd.weight"], sd["wte.weight"])
    assert torch.equal(tensors["output.weight"], sd["wte.weight"])
    assert torch.equal(tensors["blk.1.ffn_up.weight"], sd["blocks.1.mlp.c_fc.weight"])  # (out, in) as torch
    assert torch.equal(tensors["blk.1.attn_norm.bias"], sd["blocks.1.ln_1.bias"])
    qkv = sd["blocks.0.attn.c_attn.weight"]
    if name == "rope":  # llama.cpp: [all q; all k; all v], each head's q/k rows in GPT-NeoX's rotary order
        assert value("gptneox.rope.dimension_count") == cfg.head_dim
        assert value("gptneox.use_parallel_residual") is False
        order = torch.cat([h * 16 + rotary_row_order(16) for h in range(2)])
        qkv = torch.cat((qkv[:32][order], qkv[32:64][order], qkv[64:]))
    else:
        assert torch.equal(tensors["position_embd.weight"], sd["wpe.weight"])
    assert torch.equal(tensors["blk.0.attn_qkv.weight"], qkv)


def test_gguf_refusals(exported, tokenizers, tmp_path):
    with pytest.raises(ExportError, match="a WordLevel tokenizer has no llama.cpp equivalent"):
        export(exported["word"]["ckpt"], tmp_path / "word.gguf", fmt="gguf")
    simple = save(random_gpt(tokenizers["simple"], "rope"), tokenizers["simple"], tmp_path / "simple.pt")
    with pytest.raises(ExportError, match="llama.cpp has no pre-tokenizer for storygpt's 'simple' split pattern"):
        export(simple, tmp_path / "simple.gguf", fmt="gguf")
    with pytest.raises(ExportError, match="is a folder"):
        export(simple, tmp_path, fmt="gguf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["simple.pt"]


def llama_cpp_or_skip():
    """llama.cpp's C API from the package llama-cpp-cffi (tests/tools/llama_cpp_run.py), or a skip naming it."""
    from llama_cpp_run import LlamaCppMissing, load_llama_cpp

    try:
        load_llama_cpp()
    except LlamaCppMissing as e:
        pytest.skip(f"llama.cpp itself is not run: {e}")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["learned", "rope"])
def test_llama_cpp_gives_storygpts_logits_greedy_tokens_and_ids(exported, texts, tmp_path, name):
    """llama.cpp b4965 on the GGUF export: logits within its GELU's error, the same 50 greedy tokens, the same ids.

    llama.cpp's gpt2 and gptneox graphs compute GELU as the tanh approximation through a float16 table, storygpt
    the exact erf GELU (docs/export.md): a few 1e-3 apart on models like these (logits up to about 9); with
    llama.cpp's GELU put into storygpt's model the rest is that table's float16 rounding, 6.5e-4 at a few
    positions where a value falls on the other side of a float16 rounding boundary (most agree to 1e-5)."""
    llama_cpp_or_skip()
    import numpy as np
    from llama_cpp_run import LlamaCpp, LlamaCppGELU

    e = exported[name]
    out = tmp_path / f"{name}.gguf"
    export(e["ckpt"], out, fmt="gguf")
    llm = LlamaCpp(str(out), n_ctx=BLOCK)
    tok, model = e["tok"], e["model"]
    ids = [tok.eot_id, *tok.encode_ordinary(texts["held"])[: BLOCK - 1]]
    theirs = llm.logits(ids)
    with torch.no_grad():
        mine = model(torch.tensor([ids]))[0][0].numpy()
        with LlamaCppGELU(model):
            approx = model(torch.tensor([ids]))[0][0].numpy()
    assert np.abs(mine - theirs).max() <= 1e-2
    assert np.abs(approx - theirs).max() <= 1e-3
    assert np.median(np.abs(approx - theirs).max(axis=1)) <= 1e-4
    prompt = e["prompt"][0].tolist()
    want = model.generate(e["prompt"], STEPS, temperature=0)[0, PROMPT:].tolist()
    assert llm.greedy(prompt, STEPS) == want
    assert tok.eot_id in want  # ending_documents: llama.cpp stops the document where storygpt does
    docs = [d for path in CORPUS_FILES for d in docs_of(path, SAMPLE_DOCS)] or [texts["held"]]
    for d in docs:
        assert llm.tokenize(d) == tok.encode(d, allowed_special="all"), d[:80]
    joined = f"\n{EOT}\n".join(docs[:5])  # <|endoftext|> in the text is the special token
    assert llm.tokenize(joined) == tok.encode(joined, allowed_special="all")
    llm.close()


# ------------------------------------------------------------------------------- save_hf / save_tiktoken
def test_save_hf_writes_the_roles_beside_tokenizer_json(tokenizers, tmp_path):
    tok = tokenizers["bpe"]
    save_hf(tok, tmp_path / "folder")
    assert sorted(p.name for p in (tmp_path / "folder").iterdir()) == [
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    fast = transformers.PreTrainedTokenizerFast.from_pretrained(tmp_path / "folder")
    assert (fast.eos_token, fast.pad_token_id) == (EOT, tok.pad_id)
    assert fast(["a", "a b c"], padding=True)["input_ids"][0][-1] == tok.pad_id
    save_hf(tok, tmp_path / "b" / "tokenizer.json")
    assert (tmp_path / "b" / "tokenizer_config.json").is_file()
    save_hf(tok, tmp_path / "c" / "mine.json")
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["mine.json"]


def test_save_tiktoken_loads_in_plain_tiktoken_with_the_three_documented_lines(tokenizers, texts, tmp_path):
    tiktoken = pytest.importorskip("tiktoken")
    tok = tokenizers["bpe"]
    path = str(tmp_path / "tok.tiktoken")
    save_tiktoken(tok, path)
    # the three lines of docs/tokenizers.md
    ranks = {base64.b64decode(t): int(r) for t, r in (ln.split() for ln in open(path, "rb") if ln.strip())}
    params = json.load(open(path + ".json"))
    enc = tiktoken.Encoding(mergeable_ranks=ranks, **params)
    text = texts["held"] + f"\n{EOT}\n" + texts["held"][:500]
    assert enc.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")
    assert params["special_tokens"] == tok.special_tokens and enc.n_vocab == tok.vocab_size


def test_an_hf_tokenizer_goes_out_without_its_post_processor(tmp_path):
    """An ``hf:`` tokenizer (here a WordPiece with a BERT-like post-processor): AutoTokenizer gives storygpt's ids."""
    tk = pytest.importorskip("tokenizers")
    from storygpt.export.tokenizer import tokenizer_json
    from storygpt.tokenizers import HFTokenizer
    from storygpt.tokenizers.interop import write_hf_files

    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "the": 3, "cat": 4, "sat": 5, "##s": 6, ".": 7}
    hf = tk.Tokenizer(tk.models.WordPiece(vocab, unk_token="[UNK]"))
    hf.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
    hf.add_special_tokens(["[CLS]", "[SEP]"])
    hf.post_processor = tk.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    tok = HFTokenizer(json.loads(hf.to_str()))
    d = tokenizer_json(tok)
    assert d["post_processor"] is None and d["model"]["type"] == "WordPiece"
    write_hf_files(d, tok, tmp_path / "hf", model_max_length=64)
    ht = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")
    text = f"the cats sat. dog{EOT}the cat"
    assert ht(text)["input_ids"] == tok.encode(text, allowed_special="all") == [3, 4, 6, 5, 7, 0, 8, 3, 4]
    assert ht.eos_token_id == tok.eot_id == 8 and ht.unk_token == "[UNK]"
