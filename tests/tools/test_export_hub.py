"""What a user of the exported Hugging Face folder meets: the start token, greedy generation through the stock
``pipeline("text-generation")``, decoding, SuperBPE, the model card.

Oracles: storygpt itself (``sample.py``'s :func:`storygpt.sample.write_sample` at temperature 0,
``WordTokenizer.decode``, ``encode``) against stock ``transformers`` and ``tokenizers``.  The models are tiny
``modern`` GPTs trained for a few dozen steps on the test corpus, saved through storygpt's ``save_checkpoint``.
"""

from __future__ import annotations

import io
import json
import random

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install -e .[interop])")
pytest.importorskip("safetensors", reason="safetensors is not installed (pip install -e .[interop])")
tokenizers_lib = pytest.importorskip("tokenizers", reason="tokenizers is not installed (pip install -e .[interop])")

from export_cases import (  # noqa: E402
    BLOCK,
    CORPUS_FILES,
    docs_of,
    load_hf,
    random_gpt,
    save,
    texts_for_tests,
)

from storygpt.export import export  # noqa: E402
from storygpt.model.recipes import ARCH, RECIPES  # noqa: E402
from storygpt.sample import write_sample  # noqa: E402
from storygpt.tokenizers import (  # noqa: E402
    EOT,
    WordTokenizer,
    train_bpe,  # noqa: E402
)
from storygpt.tokenizers.superbpe_train import train_superbpe  # noqa: E402

MODERN = {k: RECIPES["modern"][k] for k in ARCH}
#: Straight and curly quotes, brackets, dashes, CJK, numbers: every one of WordTokenizer.decode's rules.
RULES_TEXT = (
    'He said "hello world" and \'twas (so) - yes / no — well… 3.14 is 100% «oui» “quoted” ‘single’ '
    "東京に行く。 ，好！ .\" \"' '\" ( [ { } ] ) ¿qué? ¡ay! don't"
)


def trained(tok, text: str, steps: int = 40, seed: int = 0):
    """A tiny ``modern`` GPT trained ``steps`` AdamW steps on ``text`` (so that greedy text is not noise)."""
    model = random_gpt(tok, "rope", seed=seed, **MODERN)
    ids = torch.tensor(tok.encode(text, allowed_special="all"))
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        starts = torch.randint(0, len(ids) - BLOCK - 1, (8,), generator=g)
        x = torch.stack([ids[s : s + BLOCK] for s in starts])
        y = torch.stack([ids[s + 1 : s + BLOCK + 1] for s in starts])
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


@pytest.fixture(scope="module", autouse=True)
def _one_thread(one_torch_thread):
    """Tiny models: one torch thread is faster than two on a busy machine (and fair to it)."""


@pytest.fixture(scope="module")
def texts() -> dict:
    return texts_for_tests()


@pytest.fixture(scope="module")
def exported(tmp_path_factory, texts) -> dict:
    """bpe, word and superbpe tokenizers, each with a tiny trained model, its checkpoint and its HF export."""
    root = tmp_path_factory.mktemp("hub")
    train = texts["train"]
    toks = {
        "bpe": train_bpe(train, 360, pattern="gpt4"),
        "word": WordTokenizer.train([*train.split(EOT), *[RULES_TEXT] * 20], vocab_size=700),
        "superbpe": train_superbpe(train, 460, 340),
    }
    out = {}
    for name, tok in toks.items():
        model = trained(tok, train)
        ckpt = root / f"{name}.pt"
        save(model, tok, ckpt)
        res = export(ckpt, root / f"{name}-hf")
        out[name] = {"model": model, "tok": tok, "ckpt": ckpt, "hf": res["path"], "res": res}
    return out


@pytest.mark.parametrize("name", ["bpe", "superbpe"])
def test_pipeline_greedy_text_is_sample_py_at_temperature_0(exported, texts, name):
    """``pipeline("text-generation")`` with no start token given by hand prints what sample.py prints."""
    e = exported[name]
    tok, prompt = e["tok"], "Once upon a time, the king said"
    assert 1 + len(tok.encode_ordinary(prompt)) + 30 <= BLOCK  # within the context (storygpt would crop it)
    mine = write_sample(
        e["model"], tok, tok.encode_ordinary(prompt), max_new_tokens=30, temperature=0, heal=False,
        stop=tok.eot_id, out=io.StringIO(),
    )  # fmt: skip
    model, ht = load_hf(e["hf"])
    generate = transformers.pipeline("text-generation", model=model, tokenizer=ht)
    theirs = generate(prompt, max_new_tokens=30, do_sample=False)[0]["generated_text"]
    assert len(mine) > len(prompt) + 20  # the model wrote something
    assert theirs == mine
    # the ids: tok(text) starts with <|endoftext|>, then greedy generation gives sample.py's tokens
    ids = ht(prompt, return_tensors="pt")
    assert ids["input_ids"][0].tolist() == [tok.eot_id, *tok.encode_ordinary(prompt)]
    g = model.generate(**ids, max_new_tokens=30, do_sample=False)[0].tolist()
    assert tok.decode(g[1:]) == mine


def test_start_token_on_plain_calls_and_pairs(exported):
    e = exported["bpe"]
    _, ht = load_hf(e["hf"])
    tok = e["tok"]
    assert ht("the cat")["input_ids"] == [tok.eot_id, *tok.encode("the cat")]
    assert ht("the cat", add_special_tokens=False)["input_ids"] == tok.encode("the cat")
    assert ht("a", "b")["input_ids"] == [tok.eot_id, *tok.encode("a"), tok.eot_id, *tok.encode("b")]
    assert ht("")["input_ids"] == [tok.eot_id]  # an empty prompt: sample.py's start
    raw = tokenizers_lib.Tokenizer.from_file(str(e["hf"] / "tokenizer.json"))  # without transformers too
    assert raw.encode("the cat").ids == [tok.eot_id, *tok.encode("the cat")]
    config = json.loads((e["hf"] / "tokenizer_config.json").read_text())
    assert config["add_bos_token"] is True and config["add_eos_token"] is False


def test_word_export_decodes_as_storygpt_on_real_text(exported, texts):
    e = exported["word"]
    _, ht = load_hf(e["hf"])
    tok = e["tok"]
    held = [texts["held"], RULES_TEXT, f"{RULES_TEXT}\n{EOT}\n{RULES_TEXT}"]
    held += [d for p in CORPUS_FILES for d in docs_of(p, 5)]
    for text in held:
        ids = tok.encode(text, allowed_special="all")
        assert ht.decode(ids) == tok.decode(ids), text[:80]
    ids = tok.encode(texts["held"], allowed_special="all")
    assert tok.unk_id in ids and any(tok.id_to_token(i) in ".,;:!?" for i in ids)  # the rules are exercised


def test_word_export_decodes_as_storygpt_on_random_ids(exported):
    """Random id sequences, drawn mostly from the tokens of the rules' text (quotes in every parity, brackets,
    dashes, CJK, <|endoftext|> anywhere): the exported decoder gives WordTokenizer.decode's text."""
    e = exported["word"]
    tok = e["tok"]
    raw = tokenizers_lib.Tokenizer.from_file(str(e["hf"] / "tokenizer.json"))
    rules = tok.encode(f"{RULES_TEXT} {EOT}", allowed_special="all")
    rng = random.Random(0)
    for _ in range(1500):
        ids = [rng.choice(rules) if rng.random() < 0.7 else rng.randrange(tok.vocab_size) for _ in range(30)]
        ids = ids[: rng.randint(0, 30)]
        assert raw.decode(ids, skip_special_tokens=False) == tok.decode(ids), [tok.id_to_token(i) for i in ids]


def test_superbpe_export_gives_the_same_ids(exported, texts):
    e = exported["superbpe"]
    _, ht = load_hf(e["hf"])
    tok = e["tok"]
    assert any(b" " in b[1:].strip() for b in tok.vocab.values())  # a token across words
    docs = [texts["held"], texts["train"][:20_000]] + [d for p in CORPUS_FILES for d in docs_of(p, 10)]
    for d in docs:
        ids = tok.encode(d, allowed_special="all")
        assert ht(d, add_special_tokens=False)["input_ids"] == ids, d[:80]
        assert ht.decode(ids) == tok.decode(ids)


def test_model_card_names_the_run(exported):
    e = exported["bpe"]
    card = (e["hf"] / "README.md").read_text()
    assert "README.md" in e["res"]["files"]
    params = sum(p.numel() for p in e["model"].parameters())
    assert "| recipe | `modern` |" in card
    assert f"| parameters | {params:,} (" in card
    assert f"`{e['tok'].kind} (no SPEC recorded)`: bpe, {e['tok'].vocab_size:,} tokens" in card
    assert f'AutoModelForCausalLM.from_pretrained("{e["hf"]}")' in card  # the folder's path (absolute: not below cwd)
    assert "| training steps | not recorded |" in card  # save() stores no step: said, not invented


def test_model_card_load_snippet_names_the_folder_path(exported, tmp_path):
    # before: the snippet loaded from_pretrained("word") (the folder's name): a Hub id, not the folder written
    from conftest import call_tool

    done = call_tool("export", exported["word"]["ckpt"], "cards/word", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    card = (tmp_path / "cards" / "word" / "README.md").read_text()
    assert 'AutoTokenizer.from_pretrained("./cards/word")' in card
    assert 'AutoModelForCausalLM.from_pretrained("./cards/word")' in card
    assert "# word" in card  # the title stays the folder's name
    assert transformers.AutoConfig.from_pretrained(str(tmp_path / "cards" / "word")) is not None


def test_model_card_of_a_pretrain_checkpoint(exported, tmp_path):
    """A best.pt as pretrain.py writes it (spec, corpus, step, val_bpc): the card shows those values."""
    from storygpt.checkpoint import read_checkpoint, save_checkpoint

    ckpt = read_checkpoint(exported["word"]["ckpt"])
    ckpt.update(spec="word:700", corpus="shakespeare", step=1234, val_bpc=2.34567)
    config = dict(ckpt["config"])
    config["qk_norm"] = False
    config["embed_norm"] = False  # no stock architecture norms the embedding without QK-norm
    ckpt["config"] = config
    save_checkpoint(tmp_path / "best.pt", ckpt)
    res = export(tmp_path / "best.pt", tmp_path / "out")
    card = (res["path"] / "README.md").read_text()
    assert "| recipe | `modern` with qk_norm=False, embed_norm=False |" in card
    assert f"| tokenizer | `word:700`: word, {exported['word']['tok'].vocab_size:,} tokens |" in card
    assert "| training steps | 1,234 |" in card and "| held-out bits per character | 2.3457 (" in card
    assert "| corpus | `shakespeare` |" in card
