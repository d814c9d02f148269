"""The README stays a short user's guide (issue 47): at most 150 lines, and every path it names exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_is_at_most_150_lines():
    n = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= 150, f"README.md has {n} lines; move details to docs/"


def test_every_repository_path_the_readme_names_exists():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"\b((?:docs|scripts|benchmarks)/[\w./-]+\.(?:md|sh|py|png))", text))
    assert len(named) >= 10
    missing = sorted(p for p in named if not (ROOT / p).is_file())
    assert not missing, f"README.md names missing files: {missing}"
