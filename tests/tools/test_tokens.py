"""tokens.py (issue 44): tokenizer measures on text alone, checked against tiktoken's and Hugging Face's own counts,
brute-force word counts and a hand computation; every bad input is one line before any work; the sweep's prefix
property; the outputs."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import regex
from conftest import CORPORA, REPO, SHARED, call_tool, needs_cache, needs_cpp

from storygpt.data.corpora import read_documents
from storygpt.eval import intrinsic
from storygpt.eval.intrinsic import encode_text, make_text, measure
from storygpt.tokenizers import build_tokenizer, train_bpe

EOT = "<|endoftext|>"
MADE = [
    "Hello, world! The quick brown fox jumps over the lazy dog. 12345 don't",
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "你好，世界。床前明月光，疑是地上霜。カタカナとひらがな",
    "tabs\tand  spaces\n\nnew lines <|endoftext|> inside a document, é ü ß 🙂",
]


def write_docs(path: Path, docs) -> Path:
    path.write_text(f"\n{EOT}\n".join(docs) + "\n", encoding="utf-8")
    return path


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


@pytest.fixture
def made(tmp_path) -> Path:
    return write_docs(tmp_path / "made.txt", MADE)


# ------------------------------------------------------------------ counts against the libraries' own
@needs_cache
@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_tiktoken_rows_count_what_tiktoken_counts(tmp_path, made, name):
    import tiktoken

    enc = tiktoken.get_encoding(name)
    texts = {"made": made}
    for f in ("english_literature_plus_kjv.txt", "russian_fortunes.txt", "chinese_fortunes.txt"):
        if (CORPORA / f).is_file():  # the shared corpora where present (the made text always), 300k characters each
            docs, size = [], 0
            for d in read_documents(CORPORA / f):
                docs.append(d[: 300_000 - size])
                size += len(docs[-1])
                if size >= 300_000:
                    break
            texts[f.split("_")[0]] = write_docs(tmp_path / f, docs)
    out = tmp_path / "out"
    args = [a for n, p in texts.items() for a in ("--eval", f"{n}={p}")]
    done = call_tool("tokens", f"tiktoken:{name}", *args, "--out", out)
    assert done.returncode == 0, done.stderr
    rows = {r["text"]: r for r in results(out)["rows"]}
    tok = build_tokenizer(f"tiktoken:{name}") if name == "gpt2" else None  # cl100k's takes seconds to build
    for n, p in texts.items():
        docs = read_documents(p)
        want = sum(len(enc.encode_ordinary(d)) for d in docs)
        assert rows[n]["tokens"] == want, n
        assert rows[n]["round_trip"] == "exact"
        assert rows[n]["chars"] == sum(map(len, docs))
        # storygpt's C++ path gives the same count as tiktoken's own batch path
        if tok is not None:
            assert int(encode_text(tok, make_text(n, str(p), docs)).ids.size) == want


def test_hf_row_counts_what_the_tokenizers_library_counts(tmp_path, made):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=[EOT], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    hf.train_from_iterator(MADE * 3, trainer)
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    out = tmp_path / "out"
    plain = write_docs(tmp_path / "plain.txt", MADE[:3])  # no literal <|endoftext|>: the library reads it as special
    done = call_tool("tokens", f"hf:{path}", "--eval", f"made={plain}", "--out", out)
    assert done.returncode == 0, done.stderr
    (row,) = results(out)["rows"]
    want = sum(len(e.ids) for e in hf.encode_batch(MADE[:3], add_special_tokens=False))
    assert row["tokens"] == want
    assert tokenizers.__version__


# ------------------------------------------------------------------ measures against brute force / by hand
CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]")


def brute_words(doc: str) -> list[tuple[int, int]]:
    """(start, end) byte spans of the words of one document, character by character (the rule, read plainly)."""
    spans, start, prev = [], None, ""
    pos = 0
    for ch in doc + "\0":
        n = len(ch.encode("utf-8"))
        word = bool(regex.fullmatch(r"\w", ch)) and ch != "\0"
        if start is not None and (not word or CJK.fullmatch(ch) or (prev and CJK.fullmatch(prev))):
            spans.append((start, pos))
            start = None
        if word and start is None:
            start = pos
        prev = ch
        pos += n
    return spans


@needs_cpp
def test_fertility_and_split_share_against_a_brute_force_count():
    tok = train_bpe(iter(MADE * 2), 300)
    text = make_text("made", "-", MADE)
    row = measure(tok, text, encode_text(tok, text))
    per_word = []
    for d in MADE:
        ids = tok.encode_ordinary(d)
        pieces, pos = [], 0
        for t in ids:
            b = len(tok.token_bytes(t))
            pieces.append((pos, pos + b))
            pos += b
        for ws, we in brute_words(d):
            per_word.append(sum(1 for s, e in pieces if s < we and e > ws))
    assert row["words"] == len(per_word)
    assert row["fertility"] == pytest.approx(sum(per_word) / len(per_word))
    assert row["split_share"] == pytest.approx(sum(c >= 2 for c in per_word) / len(per_word))
    assert row["tokens"] == sum(len(tok.encode_ordinary(d)) for d in MADE)


def test_chinese_words_are_single_characters():
    text = make_text("zh", "-", ["床前明月光，abc 你好"])
    assert text.words == 5 + 1 + 2


@needs_cpp
def test_renyi_efficiency_by_hand():
    """The byte tokenizer on "aaab": p = (3/4, 1/4); H_2.5 = log(p1^2.5 + p2^2.5) / (1 - 2.5); / log |V|."""
    tok = build_tokenizer("byte")
    text = make_text("t", "-", ["aaab"])
    row = measure(tok, text, encode_text(tok, text))
    h = math.log(0.75**2.5 + 0.25**2.5) / (1 - 2.5)
    assert row["renyi_efficiency"] == pytest.approx(h / math.log(tok.vocab_size))
    assert row["vocab_used_share"] == pytest.approx(2 / tok.vocab_size)
    assert row["chars_per_token"] == 1.0 and row["fertility"] == 4.0 and row["split_share"] == 1.0


@needs_cpp
def test_premium_per_character_and_parallel(tmp_path):
    en = write_docs(tmp_path / "en.txt", ["ab ab", "cd"])
    ru = write_docs(tmp_path / "ru.txt", ["абаб", "вг"])
    out = tmp_path / "o"
    done = call_tool("tokens", "byte", "--eval", f"en={en}", "--eval", f"ru={ru}", "--reference", "en", "--out", out)
    assert done.returncode == 0, done.stderr
    rows = {r["text"]: r for r in results(out)["rows"]}
    assert rows["ru"]["premium"] == pytest.approx((12 / 6) / (7 / 7))
    assert "per character, texts not parallel" in done.stdout
    done = call_tool(
        "tokens", "byte", "--eval", f"en={en}", "--eval", f"ru={ru}", "--reference", "en", "--parallel", "--out", out
    )
    assert done.returncode == 0, done.stderr
    assert results(out)["rows"][1]["premium"] == pytest.approx(12 / 7)
    assert "parallel (Petrov et al. 2023 parity)" in (out / "report.md").read_text()


def test_lossy_tokenizer_gives_a_marked_row(tmp_path):
    train = write_docs(tmp_path / "train.txt", ["the cat sat on the mat"] * 3)
    text = write_docs(tmp_path / "t.txt", ["the zebra sat"])
    out = tmp_path / "o"
    done = call_tool("tokens", "word:10", "--train-file", train, "--eval", f"t={text}", "--out", out)
    assert done.returncode == 0, done.stderr
    (row,) = results(out)["rows"]
    assert row["round_trip"] == "lossy: 1 of 1 documents" and row["unk_share"] > 0
    assert "[lossy]" in done.stdout


# ------------------------------------------------------------------ bad input: one line, before any work
def bad_inputs(tmp_path, made):
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    latin = tmp_path / "latin1.txt"
    latin.write_bytes(b"caf\xe9 ok\n")
    ev = ["--eval", f"made={made}"]
    return [
        (["byte", "--eval", f"e={empty}"], f"text e: {empty}: the file is empty"),
        (["byte", "--eval", f"l={latin}"], "at byte offset 3"),
        (["byte", "--eval", f"m={tmp_path / 'nope.txt'}"], "nope.txt: no such file"),
        (["byte", *ev, "--eval", f"made={made}"], "the text name made is given twice"),
        (["byte", *ev, "--reference", "fr"], "--reference fr: no text of that name"),
        (["bpe", *ev, "--train-file", made, "--vocab-sweep", "100,512"], "bpe needs the 256 byte tokens"),
        (["bpe", *ev, "--train-file", made, "--vocab-sweep", "512,300"], "sizes must increase, but 300 follows 512"),
        (["nosuch:3", *ev], "unknown tokenizer SPEC 'nosuch:3'"),
        (["bpe", *ev, "--data", tmp_path / "d"], "run `python data.py` first"),
        (["byte", "--data", tmp_path / "d"], "valid.txt: no such file; run `python data.py` first"),
        (["byte", *ev, "--eval", "noequals"], "--eval noequals: expected NAME=PATH"),
        # the training text, before any work (before: a folder was "no such file"; empty or not UTF-8, exit 1 after
        # the texts were read); --vocab-sweep's sizes named as --vocab-sweep, not --vocab-size
        (["bpe", *ev, "--train-file", tmp_path], f"training text {tmp_path}: is a folder, not a text file"),
        (["bpe", *ev, "--train-file", empty], f"training text {empty}: the file is empty (no text in it)"),
        (["bpe", *ev, "--train-file", latin], f"training text {latin}: not UTF-8 text (byte offset 3: "),
        (["bpe", *ev, "--train-file", made, "--vocab-sweep", "0,512"], "--vocab-sweep must be a positive whole"),
        (["bpe", *ev, "--train-file", made, "--vocab-sweep", "100,512"], "--vocab-sweep=100 is too small: bpe"),
    ]


def test_every_bad_input_is_one_line_and_writes_nothing(tmp_path, made):
    out = tmp_path / "out"
    for argv, words in bad_inputs(tmp_path, made):
        done = call_tool("tokens", *argv, "--out", out)
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("tokens.py: error: "), done.stderr
        assert words in done.stderr, (words, done.stderr)
        assert not out.exists()
        assert not list(tmp_path.glob(".out.*"))


def test_a_missing_optional_package_names_the_extra(tmp_path, made, monkeypatch):
    monkeypatch.setitem(intrinsic.OPTIONAL, "tiktoken", "no_such_package_storygpt")
    done = call_tool("tokens", "tiktoken:gpt2", "--eval", f"made={made}", "--out", tmp_path / "o")
    assert done.returncode == 2
    assert "tokenizer SPEC tiktoken:gpt2 needs the optional package no_such_package_storygpt" in done.stderr
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ the sweep
@needs_cpp
def test_bpe_prefix_of_a_larger_training_is_the_smaller_training():
    from storygpt.eval.vocab_sweep import bpe_prefix

    docs = read_documents(CORPORA / "russian_fortunes.txt")[:400] if CORPORA.is_dir() else MADE * 20
    large = train_bpe(iter(docs), 700, special_tokens=("<pad>", EOT))
    for v in (300, 450):
        small = train_bpe(iter(docs), v, special_tokens=("<pad>", EOT))
        prefix = bpe_prefix(large, v)
        assert prefix.merges == small.merges and prefix.special_tokens == small.special_tokens
        assert prefix.encode_ordinary(docs[0]) == small.encode_ordinary(docs[0])


@needs_cpp
def test_sweep_writes_both_charts(tmp_path, made):
    train = write_docs(tmp_path / "train.txt", MADE * 5)
    out = tmp_path / "o"
    done = call_tool(
        "tokens", "bpe:320", "byte", "--train-file", train, "--eval", f"m={made}", "--vocab-sweep", "270,300,320",
        "--n-embd", "8", "--out", out,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for f in ("report.md", "results.csv", "results.json", "tokens.png", "sweep.png"):
        assert (out / f).stat().st_size > 0, f
    (s,) = results(out)["sweeps"]
    assert s["prefix"] and s["embedding_parameters"][0] == s["vocab_sizes"][0] * 8 * 2  # untied by default
    ys = s["tokens_per_1k_chars"]["m"]
    assert all(b <= a for a, b in zip(ys, ys[1:]))
    assert (out / "tokens.png").read_bytes()[:4] == b"\x89PNG"


def test_parallel_mo_writes_aligned_files(tmp_path):
    """Parallel text: ../shared/parallel/ if present, else made from the system's .mo files, else skipped."""
    shared = SHARED / "parallel"
    if (shared / "en.txt").is_file():
        folder = shared
    else:
        sys.path.insert(0, str(REPO / "benchmarks"))
        import parallel_mo

        names = [n for n in ("apt", "grep") if all(
            (parallel_mo.LOCALE / lang / "LC_MESSAGES" / f"{n}.mo").is_file() for lang in ("ru", "zh_CN")
        )]  # fmt: skip
        if not names:
            pytest.skip(f"no parallel text: neither {shared} nor ru and zh_CN apt.mo/grep.mo under /usr/share/locale")
        folder = tmp_path / "par"
        parallel_mo.write_parallel(folder, names)
    docs = {lang: read_documents(folder / f"{lang}.txt") for lang in ("en", "ru", "zh")}
    assert len({len(d) for d in docs.values()}) == 1 and len(docs["en"]) > 10
    assert np.mean([any("\u4e00" <= c <= "\u9fff" for c in d) for d in docs["zh"]]) > 0.5
    assert np.mean([any("\u0400" <= c <= "\u04ff" for c in d) for d in docs["ru"]]) > 0.5


def test_data_py_tokenizer_file_is_reused_not_retrained(tmp_path, monkeypatch):
    """Issue 44: a trained SPEC whose tokenizer file data.py wrote into the corpus folder is loaded from it."""
    from storygpt.data import prepare
    from storygpt.eval import tokens_run
    from storygpt.tokenizers.spec import parse_spec

    folder = tmp_path / "corpus"
    folder.mkdir()
    write_docs(folder / "train.txt", MADE * 3)
    write_docs(folder / "valid.txt", MADE[:2])
    plan = tokens_run.check_plan(["bpe:300"], [], folder, None, [], None, False)
    saved = folder / f"tokenizer-{parse_spec('bpe:300').slug}.json"
    other = train_bpe(iter([d[::-1] for d in MADE] * 3), 300)  # not what training on train.txt gives
    other.save(saved)
    before = saved.stat().st_mtime_ns
    calls = []
    real = prepare.train_tokenizer
    monkeypatch.setattr(prepare, "train_tokenizer", lambda *a, **k: calls.append(a) or real(*a, **k))
    tok, _, _, how = tokens_run.make_tokenizer("bpe:300", plan)
    assert how == f"data.py's {saved}" and calls == []
    assert saved.stat().st_mtime_ns == before
    probe = MADE[0][::-1] + MADE[0]
    assert tok.encode_ordinary(probe) == other.encode_ordinary(probe)
    saved.unlink()  # without the file it is trained, and differs from the file's
    tok2, _, _, how2 = tokens_run.make_tokenizer("bpe:300", plan)
    assert len(calls) == 1 and how2 == f"trained on {folder / 'train.txt'}"
    assert tok2.encode_ordinary(probe) != other.encode_ordinary(probe)


def test_tiktoken_offline_is_one_line_naming_the_cache(monkeypatch, tmp_path):
    """A new user's finding: tokens.py tiktoken:gpt2 offline printed urllib3's raw error; now the one line
    data.py gives, the whole first line of the reason kept (storygpt.tokenizers.interop_tiktoken.get_encoding)."""
    tiktoken = pytest.importorskip("tiktoken")
    from storygpt.eval import tokens_run
    from storygpt.tokenizers.interop_base import InteropError

    url = "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe"

    def offline(name):
        raise ConnectionError(f"Max retries exceeded with url: {url} (Name or service not known)\nsecond line")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(InteropError) as e:
        tokens_run.make_tokenizer("tiktoken:gpt2", plan=None)
    msg = str(e.value)
    assert "\n" not in msg and url in msg and f"TIKTOKEN_CACHE_DIR={tmp_path} does not hold them" in msg
    assert msg.startswith("tiktoken:gpt2 needs OpenAI's BPE files")
