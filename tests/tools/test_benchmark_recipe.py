"""benchmarks/recipe.py's flags: one-line refusals before any run, and --help that lists every variant's flags."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import REPO


@pytest.fixture(scope="module")
def recipe():
    spec = importlib.util.spec_from_file_location("bench_recipe", REPO / "benchmarks" / "recipe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "argv, line",
    [
        (["--multiples", "nan"], "argument --multiples: must be a finite number above 0, got nan"),
        (["--multiples", "1e400"], "argument --multiples: must be a finite number above 0, got 1e400"),
        (["--multiples", "1", "0"], "argument --multiples: must be a finite number above 0, got 0"),
        (["--presets", "nosuch"], "argument --presets: invalid choice: 'nosuch'"),
        (["--tokenizer", "bogus:1"], "--tokenizer bogus:1: unknown tokenizer SPEC 'bogus:1'"),
        (["--seeds", "-1"], "--seeds must be in 0 .. 9223372036854775807, got -1"),
        (["--multiples", "abc"], "argument --multiples: must be a finite number above 0, got abc"),
        (["--jobs", "0"], "--jobs must be at least 1, got 0"),
        (["--variants", "nosuch"], "argument --variants: invalid choice: 'nosuch'"),
    ],
)
def test_bad_flags_are_one_line(recipe, argv, line, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        recipe.parse(["--data", str(tmp_path), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and err[0].startswith("recipe.py: error: ") and line in err[0], err


def test_a_missing_tokenizer_file_names_it(recipe, capsys, tmp_path):
    with pytest.raises(SystemExit):
        recipe.parse(["--data", str(tmp_path)])
    assert f"{tmp_path}/tokenizer-bpe-8192.json: no such tokenizer file" in capsys.readouterr().err


def test_help_explains_every_flag_and_variant(recipe):
    text = recipe.build_parser().format_help()
    for action in recipe.build_parser()._actions:
        assert action.help, action.option_strings
    for name, flags in recipe.VARIANTS.items():
        assert f"  {name:<21} {' '.join(flags)}" in text


def test_a_corrupt_tokenizer_file_and_a_file_for_out_are_one_line(recipe, capsys, tmp_path):
    (tmp_path / "tokenizer-byte.json").write_text("garbage")
    with pytest.raises(SystemExit):
        recipe.parse(["--data", str(tmp_path), "--tokenizer", "byte"])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"recipe.py: error: {tmp_path}/tokenizer-byte.json: ")
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit):
        recipe.parse(["--data", str(tmp_path), "--tokenizer", "byte", "--out", str(tmp_path / "file")])
    assert capsys.readouterr().err.strip() == f"recipe.py: error: --out {tmp_path / 'file'}: not a folder"
