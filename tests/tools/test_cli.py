"""storygpt.cli: the flag-table parser and the range checks every tool's errors go through."""

from __future__ import annotations

import pytest

from storygpt.cli import check_ranges, table_parser

GROUPS = {
    "g": [
        ("--steps", int, 5, "steps"),
        ("--rate", float, 0.5, "rate"),
        ("--seed", int, None, "seed"),
        ("--fast", None, False, "go fast"),
        ("--mode", str, "a", "mode"),
    ]
}
RANGES = {"steps": (1, None), "rate": (0, None, "strict"), "seed": (0, 9)}


def parse(argv):
    parser = table_parser("t.py", "test", GROUPS, {"--mode": ["a", "b"]})
    args = parser.parse_args(argv)
    check_ranges(parser, args, RANGES)
    return args


def test_defaults_and_values():
    args = parse([])
    assert (args.steps, args.rate, args.seed, args.fast, args.mode) == (5, 0.5, None, False, "a")
    args = parse(["--steps", "1", "--rate", "1e-9", "--seed", "9", "--fast", "--mode", "b"])
    assert (args.steps, args.rate, args.seed, args.fast, args.mode) == (1, 1e-9, 9, True, "b")


def test_suppressed_defaults_give_only_the_flags_on_the_command_line():
    parser = table_parser("t.py", "test", GROUPS, {}, suppress_defaults=True)
    assert vars(parser.parse_args(["--rate", "2", "--fast"])) == {"rate": 2.0, "fast": True}


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--steps", "0"], "t.py: error: --steps must be >= 1, got 0"),
        (["--rate", "0"], "t.py: error: --rate must be > 0, got 0.0"),
        (["--rate", "-1"], "t.py: error: --rate must be > 0, got -1.0"),
        (["--rate", "nan"], "t.py: error: --rate must be a finite number, got nan"),
        (["--rate", "inf"], "t.py: error: --rate must be a finite number, got inf"),
        (["--seed", "-1"], "t.py: error: --seed must be in 0 .. 9, got -1"),
        (["--seed", "10"], "t.py: error: --seed must be in 0 .. 9, got 10"),
        (["--mode", "c"], "t.py: error: argument --mode: invalid choice: 'c' (choose from "),
    ],
)
def test_out_of_range_is_one_error_line(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        parse(argv)
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(message)


def test_show_prints_paths_relative_to_the_working_directory_when_below_it(tmp_path, monkeypatch):
    from storygpt.cli import show

    monkeypatch.chdir(tmp_path)
    assert show(tmp_path / "runs" / "a" / "ckpt.pt") == "runs/a/ckpt.pt"
    assert show("runs/a") == "runs/a"
    assert show(tmp_path) == "."
    assert show(tmp_path.parent / "elsewhere") == str(tmp_path.parent / "elsewhere")
