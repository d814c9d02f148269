"""Tasks through lm-evaluation-harness: the ``storygpt`` model class, the stock ``hf`` model on an export, the
made task files run by lm-eval itself, the standard tasks' own definitions on tiny fixtures in their published
formats (no downloads), and ``bits.py --tasks`` with its bad input."""

from __future__ import annotations

import json
import math
import re
import sys

import pytest
import torch
from conftest import call_tool, one_error_line

pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install -e .[tasks])")
transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install -e .[interop])")

from export_cases import save  # noqa: E402

from storygpt.model import GPT, GPTConfig  # noqa: E402
from storygpt.tasks import catalog, made, scoring  # noqa: E402
from storygpt.tasks.run import prepare, run_model  # noqa: E402
from storygpt.tokenizers import train_bpe  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VERSE = "\n".join(
    f"Then {w} came to the {x} at night {i}, and spoke of the {y}" + ("" if i % 5 else "\n\nKing.")
    for i, (w, x, y) in enumerate(
        (("Hamlet", "castle", "ghost"), ("Horatio", "river", "king"), ("Laertes", "grave", "sword")) * 40
    )
)
ITEMS = 8


def random_gpt(tok, seed: int, block: int = 256) -> GPT:
    """Rotary positions, weights perturbed by N(0, 0.3) so that log-likelihoods are far apart (export_cases')."""
    torch.manual_seed(seed)
    m = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=block, n_layer=2, n_head=2, n_embd=32, position="rope"))
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return m.eval()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("tasks")
    tok = train_bpe(VERSE, 320, pattern="gpt4")
    text = root / "valid.txt"
    text.write_text(VERSE + "\n", encoding="utf-8")
    ckpts = []
    for seed in (0, 1):
        (root / f"m{seed}").mkdir()
        ckpts.append(save(random_gpt(tok, seed), tok, root / f"m{seed}" / "best.pt"))
    short = random_gpt(tok, 2, block=16)  # a context the made items do not fit in
    return {"root": root, "tok": tok, "text": text, "ckpts": ckpts, "short": short}


def lm_of(setup, i: int):
    from storygpt import load_checkpoint
    from storygpt.tasks.harness import StoryGPTLM

    model, tok, _ = load_checkpoint(setup["ckpts"][i])
    return StoryGPTLM(model=model, tokenizer=tok)


def oracle(lm, pairs):
    return [
        ll for ll, _ in scoring.loglikelihood(scoring.Scorer(lm.model, lm.scorer.block_size), lm.tokenizer, pairs)[0]
    ]


def test_the_storygpt_class_through_lm_eval_scores_the_made_items(setup, tmp_path):
    prep = prepare(list(made.MADE), text=VERSE, source="verse", task_dir=tmp_path, items=ITEMS)
    lm = lm_of(setup, 0)
    res = run_model(lm, prep)
    assert lm.cut_items == 0
    docs = {n: [json.loads(x) for x in (tmp_path / f"{n}.jsonl").read_text().splitlines()] for n in made.MADE}
    cloze = oracle(lm, [(d["context"], d["target"]) for d in docs["storygpt_cloze"]])
    assert list(-res.items["storygpt_cloze"].nats) == pytest.approx(cloze, abs=1e-4)
    assert list(res.items["storygpt_cloze"].chars) == [len(d["target"]) for d in docs["storygpt_cloze"]]
    for name, delim in (("storygpt_nextline", "\n"), ("storygpt_pairs", "")):
        gold = oracle(lm, [(d["context"], delim + d["choices"][d["label"]]) for d in docs[name]])
        assert list(-res.items[name].nats) == pytest.approx(gold, abs=1e-4)
        # character-normalised accuracy, from every choice's log-likelihood
        right = []
        for d in docs[name]:
            lls = oracle(lm, [(d["context"], delim + c) for c in d["choices"]])
            per = [ll / len(delim + c) for ll, c in zip(lls, d["choices"])]
            best = [i for i, x in enumerate(per) if x == max(per)]
            right.append(1 / len(best) if d["label"] in best else 0.0)
        assert list(res.items[name].correct) == right
    assert min(cloze) < -3


def test_items_longer_than_the_context_are_cut_and_counted(setup, tmp_path):
    from storygpt.tasks.harness import StoryGPTLM

    prep = prepare(["storygpt_cloze"], text=VERSE, source="verse", task_dir=tmp_path, items=ITEMS)
    lm = StoryGPTLM(model=setup["short"], tokenizer=setup["tok"])
    res = run_model(lm, prep)
    assert res.cut["storygpt_cloze"] == ITEMS  # every context is longer than 16 tokens
    assert all(math.isfinite(x) for x in res.items["storygpt_cloze"].nats)


def test_lm_eval_itself_runs_the_made_task_files(setup, tmp_path, monkeypatch):
    """The YAML + jsonl as written, through lm-eval's TaskManager and its own json loader (no storygpt reader)."""
    import datasets
    from lm_eval.evaluator import evaluate
    from lm_eval.tasks import TaskManager

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    made.make_tasks(VERSE, tmp_path / "t", items=ITEMS, source="verse")
    tm = TaskManager(include_path=str(tmp_path / "t"), include_defaults=False)
    assert set(made.MADE) <= set(tm.all_tasks)
    lm = lm_of(setup, 0)
    stock = evaluate(lm, tm.load(list(made.MADE))["tasks"], log_samples=True, bootstrap_iters=0)
    ours = run_model(lm, prepare(list(made.MADE), text=VERSE, source="verse", task_dir=tmp_path / "t", items=ITEMS))
    from storygpt.tasks.scores import items_from_samples

    for name in made.MADE:
        assert list(items_from_samples(stock["samples"][name]).nats) == pytest.approx(
            list(ours.items[name].nats), abs=1e-4
        )  # the same requests, batched in another order: float32 rounding


def test_the_hf_export_with_lm_evals_hf_model_gives_the_same_loglikelihoods(setup, tmp_path):
    pytest.importorskip("accelerate", reason="lm-eval's hf model needs accelerate")
    from lm_eval.api.registry import get_model

    from storygpt.export import export

    export(setup["ckpts"][0], tmp_path / "hf")
    prep = prepare(list(made.MADE), text=VERSE, source="verse", task_dir=tmp_path, items=ITEMS)
    mine = run_model(lm_of(setup, 0), prep)
    hf = get_model("hf")(
        pretrained=str(tmp_path / "hf"), device="cpu", dtype="float32", add_bos_token=True, batch_size=4
    )
    theirs = run_model(hf, prep)
    for name in made.MADE:
        a, b = mine.items[name], theirs.items[name]
        assert abs(a.nats - b.nats).max() <= 1e-4, name  # float32, the same tokens
        assert list(a.correct) == list(b.correct), name
        assert a.nats.min() > 1.0  # not trivially equal


# ------------------------------------------------------------------ standard tasks, published formats
def write_standard_fixtures(d):
    (d / "blimp").mkdir(parents=True)
    hs = [
        {
            "ind": i,
            "activity_label": "Cooking",
            "ctx_a": f"A man puts the {x} in a pan.",
            "ctx_b": "then he",
            "ctx": "",
            "endings": [f"stirs the {x}.", "sings a song.", "rides a horse.", "paints a wall."],
            "label": i % 4,
            "split": "val",
            "split_type": "indomain",
            "source_id": "x",
        }
        for i, x in enumerate(["egg", "rice", "soup"])
    ]
    (d / "hellaswag_val.jsonl").write_text("".join(json.dumps(r) + "\n" for r in hs))
    arc = [
        {
            "id": f"q{i}",
            "question": {
                "stem": f"What does the {x} do at night?",
                "choices": [
                    {"text": "It sleeps.", "label": "A"},
                    {"text": "It sings.", "label": "B"},
                    {"text": "It flies.", "label": "C"},
                ],
            },
            "answerKey": "ABC"[i],
        }
        for i, x in enumerate(["cat", "bird", "owl"])
    ]
    (d / "ARC-Easy-Test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in arc))
    lam = [{"text": f"Then {w} came to the castle and spoke of the {w}"} for w in ("Hamlet", "Horatio", "ghost")]
    (d / "lambada_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lam))
    for phen in ("adjunct_island", "anaphor_gender_agreement"):
        rows = [
            {
                "sentence_good": "Then Hamlet came to the castle.",
                "sentence_bad": "Then came Hamlet to the castle.",
                "field": "syntax",
                "linguistics_term": phen,
                "UID": phen,
                "pairID": str(k),
            }
            for k in range(2)
        ]
        (d / "blimp" / f"{phen}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return hs, arc, lam


def test_standard_tasks_run_lm_evals_own_definitions_on_published_files(setup, tmp_path):
    hs, arc, lam = write_standard_fixtures(tmp_path / "data")
    done = call_tool(
        "bits",
        str(setup["ckpts"][0]),
        "--text",
        str(setup["text"]),
        "--tasks",
        "hellaswag,arc_easy,lambada,blimp",
        "--task-data",
        str(tmp_path / "data"),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    rep = json.loads(done.stdout)
    items = rep["items"]["m0"]
    assert {t: len(v["nats"]) for t, v in items.items()} == {"hellaswag": 3, "arc_easy": 3, "lambada": 3, "blimp": 4}
    lm = lm_of(setup, 0)
    # the pairs lm-eval's own templates make (lm_eval/tasks/*/ YAML and utils.py), written out by hand here
    want = {
        "hellaswag": [(f"Cooking: {r['ctx_a']} Then he", " " + r["endings"][r["label"]]) for r in hs],
        "arc_easy": [
            (f"Question: {r['question']['stem']}\nAnswer:", " " + r["question"]["choices"][i]["text"])
            for i, r in enumerate(arc)
        ],
        "lambada": [(r["text"].rsplit(" ", 1)[0], " " + r["text"].rsplit(" ", 1)[1]) for r in lam],
        "blimp": [("", " Then Hamlet came to the castle.")] * 4,
    }
    for t, pairs in want.items():
        assert [-x for x in items[t]["nats"]] == pytest.approx(oracle(lm, pairs), abs=1e-5), t
        assert items[t]["chars"] == [len(c) for _, c in pairs], t
    assert rep["tasks"]["hellaswag"]["chance"] == 0.25 and rep["tasks"]["arc_easy"]["chance"] == pytest.approx(1 / 3)


# ------------------------------------------------------------------ the tool
def test_bits_py_tasks_scores_two_models_with_paired_intervals(setup, tmp_path):
    out = tmp_path / "tasks.json"
    done = call_tool(
        "bits",
        *map(str, setup["ckpts"]),
        "--text",
        str(setup["text"]),
        "--tasks",
        "made",
        "--task-items",
        str(ITEMS),
        "--task-dir",
        str(tmp_path / "t"),
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    rep = json.loads(out.read_text())
    assert set(rep["scores"]) == set(made.MADE)
    for t in made.MADE:
        rows = rep["scores"][t]["models"]
        assert [r["name"] for r in rows] == ["m0", "m1"] and rows[0]["items"] == ITEMS
        for r in rows:
            b = r["bits_per_character"]
            assert b["low"] <= b["value"] <= b["high"]
            n, c = rep["items"][r["name"]][t]["nats"], rep["items"][r["name"]][t]["chars"]
            assert b["value"] == pytest.approx(sum(n) / (math.log(2) * sum(c)))
        d = rows[1]["vs_first"]["bits_per_character"]
        assert d["value"] == pytest.approx(
            rows[1]["bits_per_character"]["value"] - rows[0]["bits_per_character"]["value"]
        )
    assert rep["scores"]["storygpt_pairs"]["models"][0]["accuracy_minus_chance"] is not None
    assert rep["scores"]["storygpt_cloze"]["models"][0]["accuracy_minus_chance"] is None
    assert "task storygpt_nextline" in done.stdout and "vs first" in done.stdout
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == sorted(
        f"{n}.{e}" for n in made.MADE for e in ("jsonl", "yaml")
    )


def test_unknown_task_is_one_line_listing_the_known_ones(setup, tmp_path):
    done = call_tool(
        "bits",
        str(setup["ckpts"][0]),
        "--text",
        str(setup["text"]),
        "--tasks",
        "cloze,squad",
        "--json",
        str(tmp_path / "x.json"),
    )
    assert done.returncode == 2
    line = one_error_line(done.stderr, "bits.py")
    assert "'squad'" in line and all(
        n in line for n in ("cloze", "nextline", "pairs", "hellaswag", "arc_easy", "lambada", "blimp")
    )
    assert not (tmp_path / "x.json").exists()


def test_a_malformed_task_file_line_is_named_by_file_and_line(setup, tmp_path):
    d = tmp_path / "t"
    made.make_tasks(VERSE, d, ["storygpt_nextline"], items=5, source="verse")
    path = d / "storygpt_nextline.jsonl"
    lines = path.read_text().splitlines()
    for bad, what in (
        ('{"context": "a", "choices": ["x"', "not a JSON object"),
        ('{"context": "a", "label": 0}', "missing field choices"),
        ('{"context": "a", "choices": ["x", "y"], "label": 2}', "label must be an index"),
    ):
        path.write_text("\n".join(lines[:2] + [bad] + lines[3:]) + "\n")
        done = call_tool(
            "bits",
            str(setup["ckpts"][0]),
            "--text",
            str(setup["text"]),
            "--tasks",
            "nextline",
            "--task-dir",
            str(d),
            "--json",
            str(tmp_path / "x.json"),
        )
        assert done.returncode == 2
        line = one_error_line(done.stderr, "bits.py")
        assert f"{path}:3:" in line and what in line, line
        assert not (tmp_path / "x.json").exists()


def test_missing_lm_eval_is_one_line_naming_the_extra(setup, monkeypatch):
    monkeypatch.setitem(sys.modules, "lm_eval", None)
    done = call_tool("bits", str(setup["ckpts"][0]), "--text", str(setup["text"]), "--tasks", "cloze")
    assert done.returncode == 2
    assert one_error_line(done.stderr, "bits.py").endswith(
        "which is not installed: pip install -e .[tasks] (or pip install lm-eval)"
    )


def test_nothing_else_imports_lm_eval_at_module_level():
    from pathlib import Path

    root = Path(catalog.__file__).resolve().parents[1]
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if re.search(r"^(import lm_eval|from lm_eval)", p.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert offenders == ["tasks/harness.py"]
