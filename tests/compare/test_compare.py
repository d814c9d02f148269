"""compare.py: the report from run folders, skipping and resuming runs, one-line errors, bits.py --json FILE.

compare.py's main runs in the test's process (conftest.call_tool: exit status and output as a subprocess gives
them).  Most tests build run folders by hand (tests/fake_runs.py: summary.json, bits.json, metrics.jsonl as
pretrain.py and bits.py write them, docs/design.md) and run compare.py with a fault of tests/tool_faults.py
in place of its subprocess runner (``record_tools`` records each command
and leaves fake files, ``tool_fails``), so no model is trained.  The pure helpers are tested from
storygpt.compare.settings.  One test runs the real pipeline (data.py -> pretrain.py -> bits.py) on a tiny corpus;
it needs pretrain.py --tokenizer and --budget-flops and data.py --tokenizer.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from conftest import REPO, call_tool, one_error_line, tool_parser
from fake_runs import FLOPS, write_fake_run

from storygpt.compare.settings import (
    CompareError,
    CompareOptions,
    Settings,
    budget_label,
    budget_warning,
    estimate_flops_per_token,
    estimate_steps,
    eval_interval_for,
    given_shape,
    parse_budget_list,
    shape_of,
)
from storygpt.model.recipes import RECIPES

pytest.importorskip("matplotlib")

sys.path.insert(0, str(REPO / "tests" / "tools"))  # test_bits.py lives with the tools' tests

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def compare(tmp_path: Path, *argv, fault: str | None = None) -> subprocess.CompletedProcess:
    """``python compare.py ARGV`` in ``tmp_path`` (through ``fault`` when one is named), run in this process
    (conftest.call_tool: the exit status and output a subprocess gives)."""
    return call_tool("compare", *argv, cwd=tmp_path, fault=fault)


def recorded(path: Path) -> list[tuple[str, list[str]]]:
    """The commands the ``record_tools`` fault wrote to ``path``: (tool, arguments after its path), in order."""
    if not path.exists():
        return []
    return [(r["tool"], r["args"]) for r in map(json.loads, path.read_text().splitlines())]


def error_line(done: subprocess.CompletedProcess) -> str:
    """The one ``compare.py: error: ...`` line of a run that failed with exit status 2 (nothing else on stderr)."""
    assert done.returncode == 2, (done.stdout, done.stderr)
    line = one_error_line(done.stderr, "compare.py")
    assert done.stderr == line + "\n", done.stderr
    return line


def assert_png(path: Path) -> None:
    import matplotlib.image

    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 1000, path
    img = matplotlib.image.imread(str(path))
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100, path


# ------------------------------------------------------------------ fake run folders
@pytest.fixture
def layout(tmp_path):
    """compare.py's working folder (``cwd``, tmp_path), a tiny corpus file, the argv of a 3-tokenizer
    comparison (one thread: no probe), and ``record``: the file the ``record_tools`` fault writes."""
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("one two three\n<|endoftext|>\nfour five six\n<|endoftext|>\nseven eight\n")
    argv = [
        "byte",
        "bpe:512",
        "word:200",
        "--train-file",
        str(corpus),
        "--budget-flops",
        str(FLOPS),
        "--threads",
        "1",
        "--block-chars",
        "1000",
        "--jobs",
        "1",
    ]
    return dict(
        cwd=tmp_path,
        argv=argv,
        report=tmp_path / "reports" / "tiny-flops1e11",
        data=tmp_path / "data" / "tiny",
        record=tmp_path / "tools.jsonl",
    )


def run_folders(cwd: Path) -> list[Path]:
    """The run folders under every folder of runs (``checkpoints/compare/cfg-*/tiny``)."""
    return sorted((cwd / "checkpoints" / "compare").glob("cfg-*/tiny/*"))


def fake(layout, *extra: str, name: str = "tools.jsonl") -> tuple[subprocess.CompletedProcess, list]:
    record = layout["cwd"] / name
    done = compare(layout["cwd"], *layout["argv"], *extra, fault=f"record_tools:{record}")
    return done, recorded(record)


def test_a_report_folder_that_cannot_be_written_is_one_error(layout):
    # before: a PermissionError traceback from the atomic writer of report.md
    assert fake(layout)[0].returncode == 0
    err = error_line(compare(layout["cwd"], *layout["argv"], fault="read_only_report"))
    assert err.startswith("compare.py: error: cannot write the report in ")
    assert err.endswith(f"{layout['report'].name}: Permission denied; the runs are finished, run again")


def test_report_and_nothing_rerun(layout):
    done, calls = fake(layout)
    assert done.returncode == 0, done.stderr
    # data for every tokenizer before any training, then train + measure each run
    assert [t for t, _ in calls] == ["data.py"] * 3 + ["pretrain.py", "bits.py"] * 3
    for _, cmd in calls[3::2]:
        assert cmd[cmd.index("--threads") + 1] == "1" and cmd[cmd.index("--seed") + 1] == "1337"
        assert cmd[cmd.index("--budget-flops") + 1] == "1e+11" and cmd[-1] == "--force"
    assert calls[4][1][calls[4][1].index("--block-chars") + 1] == "1000"
    # by default all of valid.txt (each held-out work a set) and the four noisy copies
    assert calls[4][1][calls[4][1].index("--chars") + 1] == "0"
    assert "--perturb=typos,case,spaces,unicode" in calls[4][1]
    again, calls = fake(layout, name="again.jsonl")
    assert again.returncode == 0 and calls == [] and again.stdout.count("done before") == 3
    # other blocks (or another --bits-chars) only measure the runs again
    blocks, calls = fake(layout, "--block-chars", "2500", name="blocks.jsonl")
    assert blocks.returncode == 0 and [t for t, _ in calls] == ["bits.py"] * 3
    assert json.loads((layout["report"] / "results.json").read_text())["results"][0]["block_characters"] == [2500] * 2
    # so do other --perturb kinds: runs measured with the copies are measured again without them
    clean, calls = fake(layout, "--block-chars", "2500", "--perturb", "none", name="clean.jsonl")
    assert clean.returncode == 0 and [t for t, _ in calls] == ["bits.py"] * 3
    assert not [a for _, c in calls for a in c if a.startswith("--perturb")]
    assert "## Robustness" not in (layout["report"] / "report.md").read_text()
    fake(layout, name="back.jsonl")  # back to blocks of 1000 for the checks below

    rep = layout["report"]
    for name in ("bpc_vs_flops.png", "bpc_vs_vocab.png", "chars_per_token_vs_vocab.png", "curves.png"):
        assert_png(rep / name)
    rows = list(csv.DictReader((rep / "results.csv").open()))
    assert [r["spec"] for r in rows] == ["byte", "bpe:512", "word:200"]
    assert [int(r["vocab_size"]) for r in rows] == [258, 512, 200]
    assert [float(r["bits_per_char"]) for r in rows] == [2.61, 2.43, 1.95]
    assert [r["lossy"] for r in rows] == ["False", "False", "True"] and {r["under_trained"] for r in rows} == {"False"}
    assert all(re.fullmatch(r"\d+", r["chars"]) and re.fullmatch(r"\d+", r["tokens"]) for r in rows)  # integers
    assert "block_nats" not in rows[0]
    doc = json.loads((rep / "results.json").read_text())
    assert doc["meta"]["budget"] == "1e11 training FLOPs (equal compute)" and doc["meta"]["seeds"] == [1337]
    r0 = doc["results"][0]
    assert r0["seed"] == 1337 and r0["warmup_steps"] == 20 and r0["evals"] == 11 and len(r0["block_nats"]) == 5
    assert r0["provenance"]["pretrain_args"]["lr"] == 3e-3 and "commit" in r0["provenance"]
    assert r0["provenance"]["command"][:2] == ["pretrain.py", "--data"]
    assert doc["meta"]["provenance"]["storygpt"] and doc["meta"]["argv"][:3] == ["byte", "bpe:512", "word:200"]
    (v,) = doc["verdicts"]
    # word:200 has the lowest bits/char but is lossy (measured): never best; bpe:512 beats byte on every block
    assert v["best"] == v["winner"] == "bpe:512" and v["ineligible"] == ["word:200"]
    assert v["intervals"]["byte"]["low"] == pytest.approx(0.18) == v["intervals"]["byte"]["high"]
    md = (rep / "report.md").read_text()
    where = "at 1e11 training FLOPs, 3 layers, width 96 (336k non-embedding parameters), recipe modern"
    assert f"**Lowest held-out bits per character {where}: `bpe:512`** (2.4300)" in md
    assert "- recipe: modern (pretrain.py --recipe" in md
    assert "Never named best here: `word:200`" in md and "What lossy models do not predict" in md
    assert "1 thread x 1 process per run, cpu, float32" in md
    table = [ln for ln in md.splitlines() if ln.startswith("| `") and ln.count("|") > 12]
    cells = [c.strip() for c in table[1].strip("|").split("|")]
    assert cells[:4] == ["`bpe:512`", "flops1e11", "1337", "512"] and cells[13] == "2.4300" and cells[16] == "ok"
    assert [c.strip() for c in table[2].strip("|").split("|")][16] == "lossy"
    assert "## The tokenizers by themselves" in md and "Renyi efficiency (alpha 2.5)" in md
    assert (  # word:200 is lossy: 2 are left
        "Too few tokenizers for a rank correlation: this report has 2 lossless tokenizers (1 lossy left out)" in md
    )


def test_no_lossy_run_no_lossy_section(layout):
    argv = ["byte", "bpe:512", *layout["argv"][3:]]
    done = compare(layout["cwd"], *argv, fault=f"record_tools:{layout['record']}")
    assert done.returncode == 0, done.stderr
    md = (layout["cwd"] / "reports" / "tiny-flops1e11" / "report.md").read_text()
    assert "| lossy |" not in md and "What lossy models do not predict" not in md


def test_seeds_sweep_fit_and_reuse(layout):
    argv = ["bpe:512", "bpe:520", *layout["argv"][3:]]
    argv[argv.index("--budget-flops") + 1] = "1e11,2e11,4e11"
    record = layout["cwd"] / "first.jsonl"
    done = compare(layout["cwd"], *argv, "--seeds", "2", fault=f"record_tools:{record}")
    assert done.returncode == 0, done.stderr
    calls = recorded(record)
    trained = [c for t, c in calls if t == "pretrain.py"]
    assert len(trained) == 2 * 3 * 2
    assert sorted({c[c.index("--seed") + 1] for c in trained}) == ["1337", "1338"]
    rep = layout["cwd"] / "reports" / "tiny-flops1e11-2e11-4e11-2seeds"
    assert_png(rep / "bpc_vs_compute.png")
    doc = json.loads((rep / "results.json").read_text())
    # bits/char = b + 0.01 (seed - 1337) + 0.2 ((1e11 / C)^0.5 - 1): alpha 0.5, E = b - 0.2 + 0.005
    fit = doc["fits"]["bpe:512"]
    assert fit["alpha"] == pytest.approx(0.5, rel=1e-3) and fit["E"] == pytest.approx(2.43 - 0.2 + 0.005, abs=1e-3)
    assert fit["n"] == 6 and fit["alpha_se"] is not None
    for v in doc["verdicts"]:  # bpe:520 is 0.002 behind, within its block noise: no winner
        assert v["best"] == "bpe:512" and v["winner"] is None and v["tied"] == ["bpe:520"]
        assert v["intervals"]["bpe:520"]["low"] < 0 < v["intervals"]["bpe:520"]["high"]
    md = (rep / "report.md").read_text()
    assert "No winner" in md and "cannot tell them apart" in md and "## Budget 2e11" in md
    assert "an extrapolation far outside the data" in md and "| `bpe:512` | 2 | 2.4350 | 0.0071 |" in md

    # a bigger sweep later reuses every finished run (same settings: the same folder of runs)
    argv[argv.index("--budget-flops") + 1] = "1e11,2e11,4e11,8e11"
    second = layout["cwd"] / "second.jsonl"
    done = compare(layout["cwd"], *argv, "--seeds", "2", fault=f"record_tools:{second}")
    assert done.returncode == 0, done.stderr
    trained = [c for t, c in recorded(second) if t == "pretrain.py"]
    assert [c[c.index("--budget-flops") + 1] for c in trained] == ["8e+11"] * 4
    assert done.stdout.count("done before") == 12


@pytest.mark.parametrize(
    "given, name",
    [
        ({}, "shakespeare-flops5e12"),
        ({"seeds": 2, "sizes": "tiny,small"}, "shakespeare-flops5e12-sizes-tiny-small-2seeds"),  # was: no sizes
        ({"sizes": "base,tiny"}, "shakespeare-flops5e12-sizes-tiny-base"),  # smallest first
        ({"budget_flops": "2e12,1e12", "seeds": 2}, "shakespeare-flops1e12-2e12-2seeds"),  # was: flops2e12-1e12
        ({"budget_tokens": "3e6", "seeds": 4, "seeds_auto": True, "name": "tiny"}, "tiny-tokens3e6-auto4seeds"),
        ({"minutes": "2,0.5", "train_file": "my/own.txt"}, "own-minutes0.5-2"),
    ],
)
def test_report_name_holds_budgets_ascending_sizes_and_seeds(given, name):
    from storygpt.compare.preflight import report_name

    assert report_name(CompareOptions(**given)) == name


def test_report_name_refuses_bad_sizes_and_budgets():
    from storygpt.compare.preflight import report_name

    with pytest.raises(CompareError, match="--sizes: unknown preset 'huge'"):
        report_name(CompareOptions(sizes="tiny,huge"))
    with pytest.raises(CompareError, match="--budget-flops 1e12,x: 'x' is not a number"):
        report_name(CompareOptions(budget_flops="1e12,x"))


def test_a_sweep_typed_in_another_order_is_the_same_report_and_runs(layout):
    argv = [*layout["argv"]]
    argv[argv.index("--budget-flops") + 1] = "2e11,1e11"
    assert fake(layout, name="first.jsonl")[0].returncode == 0  # the layout's one budget: 1e11
    done = compare(layout["cwd"], *argv, fault=f"record_tools:{layout['cwd'] / 'second.jsonl'}")
    assert done.returncode == 0, done.stderr
    assert "-> reports/tiny-flops1e11-2e11" in done.stdout and done.stdout.count("done before") == 3
    doc = json.loads((layout["cwd"] / "reports" / "tiny-flops1e11-2e11" / "results.json").read_text())
    assert [r["budget"] for r in doc["results"]] == ["flops1e11", "flops2e11"] * 3  # each tokenizer's, ascending
    argv[argv.index("--budget-flops") + 1] = "1e11,2e11"
    done = compare(layout["cwd"], *argv, fault=f"record_tools:{layout['cwd'] / 'third.jsonl'}")
    assert done.returncode == 0 and done.stdout.count("done before") == 6  # nothing trained again
    assert sorted(p.name for p in (layout["cwd"] / "reports").iterdir()) == ["tiny-flops1e11", "tiny-flops1e11-2e11"]


def test_interrupted_run_is_resumed_and_nothing_finished_retrained(layout):
    done, _ = fake(layout)
    assert done.returncode == 0, done.stderr
    (folder,) = [p for p in run_folders(layout["cwd"]) if p.name == "rope-bpe-512-flops1e11-s1337"]
    write_fake_run(folder, "bpe:512", stop_reason=None)  # interrupted
    done, calls = fake(layout, name="second.jsonl")
    assert done.returncode == 0, done.stderr
    assert [t for t, _ in calls] == ["pretrain.py", "bits.py"] and calls[0][1][-1] == "--resume"
    assert re.search(r"\[2/3\] bpe:512 @1e11 s1337 +resumed \d+s, measured \d+s \|", done.stdout)


def test_under_trained_runs_are_warned_before_training_and_never_best(layout):
    argv = ["byte", "bpe:512", *layout["argv"][3:], "--pretrain-args=--warmup-steps 20"]  # modern's own is 5
    argv[argv.index("--budget-flops") : argv.index("--budget-flops") + 2] = ["--budget-tokens", "20480"]
    done = compare(layout["cwd"], *argv, fault=f"record_tools:{layout['record']}")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    warn = "warning: byte gets about 10 optimizer steps from --budget-tokens 2.05e4, fewer than its 20 warm-up steps"
    assert warn in out and out.index(warn) < out.index("[1/2]")
    assert "--budget-tokens 8.19e4 would give it about 40 steps" in out
    md = (layout["cwd"] / "reports" / "tiny-tokens2.05e4" / "report.md").read_text()
    assert "No tokenizer can be named best at 2.05e4 training tokens, 3 layers, width 96 (336k non-embedding " in md
    assert "recipe modern: every run is under-trained or lossy. About --budget-tokens 8.19e4 would train" in md
    assert md.count("under-trained") >= 3
    assert md.count("no interval (no run can be named best)") == 2  # before: "(no block losses)", which was false
    assert "No tokenizer can be named best" in out  # the console's verdict too


WHERE_9E10 = "at 9e10 training FLOPs, 3 layers, width 96 (336k non-embedding parameters), recipe modern"


def test_an_under_trained_lower_run_leaves_no_fair_verdict(layout):
    """Issue 36.1: at 9e10 FLOPs byte gets 20 steps (trained) and bpe:512 19, one short of its 20 warm-up steps
    (under-trained) with the lower bits/char.  Before: byte was "(best)" and "Only one tokenizer can be named
    here: `byte`"; now no run is named best, bpe:512 is named with the budget that trains it (9e10 x 40 / 19)."""
    argv = ["byte", "bpe:512", *layout["argv"][3:]]
    argv[argv.index("--budget-flops") + 1] = "9e10"
    done = compare(layout["cwd"], *argv, fault=f"record_tools:{layout['record']}")
    assert done.returncode == 0, done.stderr
    rep = layout["cwd"] / "reports" / "tiny-flops9e10"
    (v,) = json.loads((rep / "results.json").read_text())["verdicts"]
    assert v["best"] is None and v["winner"] is None and v["unfair"] == ["bpe:512"]
    assert v["budget_needed"] == pytest.approx(9e10 * 40 / 19)
    md = (rep / "report.md").read_text()
    sentence = (
        f"**No fair verdict {WHERE_9E10}**: `bpe:512` (2.4408) is lower but under-trained, so no run is named "
        "best. About --budget-flops 1.89e11 would train it."
    )
    for text in (md, done.stdout):
        assert sentence in text
        assert "(best)" not in text and "Only one tokenizer" not in text and "Lowest held-out" not in text


def test_a_run_left_alone_by_an_under_trained_one_is_not_best():
    """Issue 36.1, the other case: the under-trained run is higher, but without it one run is left: no verdict."""
    from types import SimpleNamespace

    from storygpt.compare import analysis

    def run(spec, bpc, steps):
        return SimpleNamespace(
            spec=spec, bits_per_char=bpc, under_trained=steps < 20, lossy=False, steps=steps, warmup_steps=20,
            evals=5, budget_value=1e11, budget="flops1e11", block_nats=None, block_characters=None,
        )  # fmt: skip

    gs = analysis.groups([run("byte", 2.6, 30), run("bpe:512", 2.9, 10)])
    v = analysis.verdict(gs)
    assert v.best is None and v.unfair == ["bpe:512"] and v.budget_needed == pytest.approx(4e11)
    gs = analysis.groups([run("byte", 2.6, 30), run("bpe:512", 2.9, 10), run("bpe:520", 2.7, 30)])
    v = analysis.verdict(gs)  # two trained runs: a fair verdict between them; the higher under-trained one waits
    assert v.best.spec == "byte" and v.unfair == [] and v.ineligible == ["bpe:512"]


def test_every_ranking_names_its_budget_model_recipe_and_the_budgets_where_it_holds(layout):
    """Issue 36.2: at 9e10 there is no fair verdict, at 2e11 and 4e11 bpe:512 < byte: the order holds at those
    two budgets of the sweep, and each sentence says so with its budget, model size and recipe."""
    argv = ["byte", "bpe:512", *layout["argv"][3:]]
    argv[argv.index("--budget-flops") + 1] = "9e10,2e11,4e11"
    done = compare(layout["cwd"], *argv, fault=f"record_tools:{layout['record']}")
    assert done.returncode == 0, done.stderr
    md = (layout["cwd"] / "reports" / "tiny-flops9e10-2e11-4e11" / "report.md").read_text()
    assert "- recipe: modern (pretrain.py --recipe, docs/training.md)" in md
    verdicts = [ln for ln in md.splitlines() if ln.startswith(("**Lowest", "**No fair", "No winner", "No tokenizer"))]
    assert [v.split(":")[0] for v in verdicts] == [
        f"**No fair verdict {WHERE_9E10}**",
        f"**Lowest held-out bits per character {WHERE_9E10.replace('9e10', '2e11')}",
        f"**Lowest held-out bits per character {WHERE_9E10.replace('9e10', '4e11')}",
    ]
    holds = "This order (`bpe:512` < `byte`, by mean) holds at budgets 2e11, 4e11 (of 9e10, 2e11, 4e11)."
    assert md.count(holds) == 2 and done.stdout.count(holds) == 2


@pytest.mark.parametrize(
    "specs, message",
    [
        (["bpe:512", "bpe:512"], "bpe:512 is given twice (bpe:512): to train a tokenizer several times use --seeds N"),
        (["bpe", "byte", "bpe:8192"], "bpe and bpe:8192 are one tokenizer (bpe:8192): to train a tokenizer several"),
        (["byte"], "byte alone at one budget: nothing to compare it with; give two or more SPECs, or several budgets"),
        (["byte", "--seeds", "3"], "byte alone at one budget: nothing to compare it with"),
    ],
)
def test_a_repeated_or_lone_spec_is_refused_before_any_work(specs, message, tmp_path):
    """Issue 36.3: before, bpe:8192 bpe:8192 dropped the repeat and trained 6 minutes to say "nothing to compare
    it with".  Now one line, exit 2, no tool run, nothing written."""
    record = tmp_path / "tools.jsonl"
    err = error_line(compare(tmp_path, *specs, fault=f"record_tools:{record}"))
    assert err == f"compare.py: error: {message}" or message in err, err
    assert list(tmp_path.iterdir()) == []  # no tool ran (tools.jsonl), no data/, checkpoints/ or reports/


def test_one_spec_at_several_budgets_is_a_comparison(layout):
    argv = ["bpe:512", *layout["argv"][3:]]
    argv[argv.index("--budget-flops") + 1] = "1e11,2e11"
    done = compare(layout["cwd"], *argv, fault=f"record_tools:{layout['record']}")
    assert done.returncode == 0, done.stderr
    assert [t for t, _ in recorded(layout["record"])].count("pretrain.py") == 2


def test_settings_change_makes_new_runs(layout):
    done, _ = fake(layout)
    assert done.returncode == 0, done.stderr
    before = run_folders(layout["cwd"])
    done, calls = fake(layout, "--report", "deeper", "--n-layer", "4", name="deeper.jsonl")
    assert done.returncode == 0, done.stderr
    assert [t for t, _ in calls].count("pretrain.py") == 3  # new runs, in another folder of runs
    assert len(run_folders(layout["cwd"])) == 2 * len(before)


def test_a_change_of_a_recipes_parts_names_another_folder_of_runs():
    """Runs of modern with its old soft-cap are not reused as runs of today's modern (same --recipe flag)."""
    same = dict(corpus="shakespeare", data_dir="d", position="rope", preset=None, shape=[], batch_size=None)
    same |= dict(bits_chars=0, pretrain_args=[], data_args=[], forwarded=["--recipe", "modern"])
    old = Settings(**same, recipe_parts={**RECIPES["modern"], "logit_softcap": 15.0})
    new = Settings(**same, recipe_parts=dict(RECIPES["modern"]))
    assert old.key() != new.key()
    assert new.differences(asdict(old)) == [f"recipe_parts: {asdict(old)['recipe_parts']!r} -> {RECIPES['modern']!r}"]


def test_rerun_trains_again_in_new_folders(layout):
    done, _ = fake(layout)
    assert done.returncode == 0, done.stderr
    record = layout["cwd"] / "rerun.jsonl"
    done = compare(layout["cwd"], "--rerun", str(layout["report"]), fault=f"record_tools:{record}")
    assert done.returncode == 0, done.stderr
    trained = [c for t, c in recorded(record) if t == "pretrain.py"]
    assert len(trained) == 3 and all(
        str(Path("checkpoints/compare/rerun")) in c[c.index("--out-dir") + 1] for c in trained
    )
    assert "byte flops1e11 1337" in done.stdout and "+0.0000" in done.stdout
    assert (layout["cwd"] / "reports" / "tiny-flops1e11-rerun" / "report.md").is_file()
    measured = [c for t, c in recorded(record) if t == "bits.py"]
    assert all(c[c.index("--chars") + 1] == "0" and "--perturb=typos,case,spaces,unicode" in c for c in measured)


def test_rerun_measures_as_the_report_did(layout):
    """A report from before the measurement was recorded (before 2026-12-05) is measured again with the
    defaults of its day: the first 100,000 characters, no noisy copies."""
    assert fake(layout)[0].returncode == 0
    path = layout["report"] / "results.json"
    doc = json.loads(path.read_text())
    assert doc["meta"]["measurement"] == dict(
        bits_chars=0, block_chars=1000, perturb="typos,case,spaces,unicode", eval=[]
    )
    del doc["meta"]["measurement"]
    path.write_text(json.dumps(doc))
    record = layout["cwd"] / "old.jsonl"
    done = compare(layout["cwd"], "--rerun", str(layout["report"]), fault=f"record_tools:{record}")
    assert done.returncode == 0, done.stderr
    measured = [c for t, c in recorded(record) if t == "bits.py"]
    assert len(measured) == 3
    assert all(
        c[c.index("--chars") + 1] == "100000" and not any(a.startswith("--perturb") for a in c) for c in measured
    )


def test_eval_interval_estimate():
    # compare.py's arguments with no flags: the shape flags, --preset, --batch-size and --eval-interval unset
    unset = ("preset", "n_layer", "n_head", "n_embd", "block_size", "batch_size", "eval_interval")
    flags = {f"--{k.replace('_', '-')}" for k in unset}
    parsed = {a["flags"][0]: a["has_default"] for a in tool_parser("compare")["actions"] if a["flags"]}
    assert {f: parsed[f] for f in flags} == dict.fromkeys(flags, False)
    options = CompareOptions()  # the library's defaults: the same unset values
    assert all(getattr(options, k) is None for k in unset)
    shape = shape_of(options.preset, given_shape(options))
    assert shape == {"n_layer": 3, "n_head": 4, "n_embd": 96, "block_size": 128}
    # 6 * 12 * 3 * 96^2 + 12 * 3 * 128 * 96 + 6 * 96 * 8192 = 1,990,656 + 442,368 + 4,718,592
    assert estimate_flops_per_token(shape, 8192) == 7_151_616
    steps = 6e12 / (7_151_616 * 16 * 128)  # 409.6
    assert eval_interval_for(("budget_flops", 6e12), shape, 8192) == int(steps // 10) == 40
    assert eval_interval_for(("budget_chars", 1e7), shape, 8192) is None  # chars/token unknown
    assert eval_interval_for(("budget_chars", 1e7), shape, 8192, 2.5) == int(1e7 / (2.5 * 2048) // 10) == 195
    assert eval_interval_for(("budget_tokens", 2048 * 25), shape, None) == 2
    assert eval_interval_for(("minutes", 5), shape, 8192) is None
    assert budget_label("budget_flops", 6e12) == "flops6e12"
    assert budget_label("minutes", 2.5) == "minutes2.5"


def test_step_estimates_and_budget_warnings():
    shape = {"n_layer": 3, "n_head": 4, "n_embd": 96, "block_size": 128}
    # chars: 1e5 / (2 chars/token x 16 x 128 tokens/step) = 24.4 steps; tokens: 4096 / 2048 = 2
    assert estimate_steps(("budget_chars", 1e5), shape, None, 16, 2.0) == pytest.approx(1e5 / 4096)
    assert estimate_steps(("budget_tokens", 4096), shape, None, 16, None) == 2
    assert estimate_steps(("minutes", 1), shape, 512, 16, None) is None
    assert budget_warning("bpe:8192", ("budget_flops", 5e11), 34.2, 20, 3) is None
    warn = budget_warning("bpe:8192", ("budget_flops", 5e11), 8.0, 20, 3)
    assert warn == (
        "warning: bpe:8192 gets about 8 optimizer steps from --budget-flops 5e11, fewer than its 20 warm-up "
        "steps: it will be marked under-trained and never named best; --budget-flops 2.5e12 would give it about "
        "40 steps"
    )
    assert parse_budget_list("--budget-flops", "1e12, 3e12,1e13") == [1e12, 3e12, 1e13]
    with pytest.raises(CompareError, match="--minutes must be a positive number, got inf"):
        parse_budget_list("--minutes", "1,inf")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bpe:512", "morpheme:300"], "unknown tokenizer SPEC 'morpheme:300'"),
        (["bpe:abc"], "VOCAB must be a positive whole number"),
        (["byte", "--budget-flops", "0"], "--budget-flops must be a positive number, got 0"),
        (["byte", "--budget-chars", "-5"], "--budget-chars must be a positive number"),
        (["byte", "--budget-flops", "nan"], "--budget-flops must be a positive number"),
        (["byte", "--budget-flops", "1e9", "--minutes", "1"], "give one budget, not several"),
        (["byte", "--bits-chars", "-1"], "--bits-chars must be >= 0"),
        (["byte", "--n-layer", "0"], "--n-layer must be >= 1, got 0"),
        (["byte", "--report", "a/b"], "--report 'a/b'"),
        (["hf:missing.json"], "no such file: missing.json"),
        (["byte", "--train-file", "nope.txt"], "--train-file nope.txt: no such file"),
        (["byte", "--seeds", "0"], "--seeds must be in 1 .. 1000, got 0"),
        (["byte", "--budget-flops", "1e12,abc"], "--budget-flops 1e12,abc: 'abc' is not a number"),
        (["byte", "--budget-flops", "1e12,1e12"], "--budget-flops 1e12,1e12: 1e12 is given twice"),
        (["byte", "--budget-chars", "1e7,-1"], "--budget-chars must be a positive number, got -1"),
        (["byte", "--bits-chars", "3000"], "--bits-chars 3000 holds fewer than 2 blocks of --block-chars 2000"),
        (["byte", "--rerun", "nowhere"], "--rerun nowhere: no results.json"),
        (["--rerun", ""], "--rerun : no results.json"),  # before: an empty path ran the whole default comparison
        (["byte", "--seeds", "1000000000"], "--seeds must be in 1 .. 1000, got 1000000000"),  # before: a silent hang
        (["byte", "--recipe", "llama"], "argument --recipe: invalid choice: 'llama' (choose from 'gpt2', 'modern')"),
        (["byte", "--eval", "x=nope.txt"], "--eval x=nope.txt: no such file"),
        (["byte", "--eval", "x=nope.txt", "--eval", "x=b.txt"], "'x' is given twice"),
        (["byte", "--perturb", "typos,shout"], "unknown perturbation 'shout'"),
        # --pretrain-args: read by pretrain.py --dry-run beside --recipe before any work (issue 37's break-it list)
        (
            ["byte", "--pretrain-args=--momentum nan"],
            "'--momentum nan': pretrain.py: error: --momentum must be a finite",
        ),
        (
            ["byte", "--recipe", "gpt2", "--pretrain-args=--momentum 0.9"],
            "pretrain.py: error: --momentum is a flag of the muon optimizer (--optimizer muon, as in --recipe modern); "
            "this run (--recipe gpt2) uses the adamw optimizer",
        ),
        (["byte", "--pretrain-args=--lr 1e-3"], "--lr is a flag of the adamw optimizer"),  # modern, the default
        (["byte", "--pretrain-args=--warmup-steps abc"], "argument --warmup-steps: invalid int value: 'abc'"),
        (
            ["byte", "--recipe", "gpt2", "--pretrain-args=--recipe modern --lr 1e-3"],
            "--pretrain-args '--recipe modern --lr 1e-3': --recipe is set by compare.py for every run; "
            "use compare.py's --recipe",
        ),
        (["byte", "--pretrain-args=--rec gpt2"], "--recipe is set by compare.py for every run"),  # an abbreviation
        (["byte", "--pretrain-args=--max-steps 3"], "--max-steps is set by compare.py for every run; use the budget"),
        (["byte", "--pretrain-args=--seed=4"], "--seed is set by compare.py for every run; use --seed and --seeds"),
        (["byte", "--pretrain-args=--n-layer 9"], "--n-layer is set by compare.py for every run; use --n-layer"),
        (
            ["byte", "--pretrain-args=--dry"],
            "--pretrain-args '--dry': --dry-run is compare.py's to decide for every run",
        ),
        (["byte", "--pretrain-args=--force"], "--force is compare.py's to decide for every run"),
        (["byte", "--pretrain-args=--help"], "'--help': pretrain.py printed no settings (a --help?)"),
        (["byte", "--pretrain-args=-h"], "'-h': pretrain.py printed no settings (a --help?)"),
        (["byte", "--pretrain-args=--", "--seeds", "0"], "--seeds must be in 1 .. 1000, got 0"),  # was AttributeError
    ],
)
def test_bad_input_is_one_line(argv, message, tmp_path):
    record = tmp_path / "tools.jsonl"
    err = error_line(compare(tmp_path, *argv, fault=f"record_tools:{record}"))
    assert message in err, err
    assert recorded(record) == []  # no tool ran
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["tools.jsonl"])  # no folder written


def test_pretrain_args_the_recipe_takes_pass_the_check():
    from storygpt.compare.preflight import check_pretrain_args

    check_pretrain_args(["--lr", "1e-3", "--dtype", "float32"], ["--recipe", "gpt2"])
    check_pretrain_args(["--momentum", "0.9", "--eval-chars", "5000"], ["--recipe", "modern"])
    check_pretrain_args([], ["--recipe", "modern"])


def test_run_folder_from_another_corpus_is_refused(layout):
    assert fake(layout)[0].returncode == 0
    (folder,) = [p for p in run_folders(layout["cwd"]) if p.name == "rope-bpe-512-flops1e11-s1337"]
    write_fake_run(folder, "bpe:512", corpus="shakespeare")
    layout["record"].unlink()
    err = error_line(compare(layout["cwd"], *layout["argv"], fault=f"record_tools:{layout['record']}"))
    assert "holds a run on corpus 'shakespeare', not 'tiny'" in err and "rope-bpe-512" in err
    assert recorded(layout["record"]) == []  # no tool ran


def test_a_failing_tool_is_one_line(layout):
    done = compare(layout["cwd"], *layout["argv"], fault="tool_fails:data.py: error: corpus.txt: not UTF-8")
    err = error_line(done)
    assert "data.py failed for byte (exit 1): data.py: error: corpus.txt: not UTF-8 (log: " in err
