"""Every tool's --help speaks to a user: no issue numbers and no pointers into storygpt's source."""

import re

import pytest
from conftest import call_tool


@pytest.mark.parametrize("tool", ["data", "pretrain", "bits", "sample", "export", "compare", "plot"])
def test_help_names_no_issue_and_no_source_file(tool):
    shown = call_tool(tool, "--help")
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "usage:" in text
    assert not re.search(r"\bissue \d", text), re.search(r".{60}\bissue \d.{20}", text)
    assert "storygpt/" not in text, text[max(0, text.find("storygpt/") - 80) : text.find("storygpt/") + 40]
