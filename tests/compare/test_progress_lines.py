"""compare.py's plain progress lines while a run trains and its output is not a terminal (issue 47).

A short child process (this Python) writes metrics.jsonl rows as pretrain.py does; run_tool follows it with
ProgressLines at a small interval, so the test takes about a second.
"""

from __future__ import annotations

import io
import re
import sys

from storygpt.compare import toolrun

CHILD = """
import json, sys, time
time.sleep(0.6)  # no step row yet: the lines say how long the run has waited
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"kind": "step", "step": 7, "tokens": 4096, "loss": 2.5, "elapsed": 0.6}) + "\\n")
time.sleep(0.6)
"""


def test_a_line_comes_every_interval_while_the_tool_runs(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    follow = toolrun.MetricsTail(metrics, "tokens")
    out = io.StringIO()
    lines = toolrun.ProgressLines("bpe:300", 8192, follow, file=out, every=0.25)
    rc = toolrun.run_tool([sys.executable, "-c", CHILD, str(metrics)], tmp_path / "log", False, follow, lines)
    assert rc == 0
    shown = out.getvalue().splitlines()
    assert len(shown) >= 3, shown  # 1.2 s at one line per 0.25 s (the child's start takes some of it)
    assert all(re.fullmatch(r"bpe:300: starting, \d+ s", s) for s in shown[:1]), shown
    assert "bpe:300: step 7, 4,096 tokens, loss 2.5000, 1 s (50%)" in shown, shown


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_when_stdout_is_not_a_terminal(tmp_path, monkeypatch):
    # `compare.py ... > log`: stdout a file, stderr the terminal (before: a tqdm bar on the terminal, none in the log)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(sys, "stderr", Terminal())
    follow = toolrun.MetricsTail(tmp_path / "metrics.jsonl", "tokens")
    bar = toolrun.progress_for("  word:60", 10.0, follow, "{desc}", quiet=False, unit_seconds=False)
    assert isinstance(bar, toolrun.ProgressLines) and bar.label == "word:60" and bar.every <= 10
    quiet = toolrun.progress_for("  word:60", 10.0, follow, "{desc}", quiet=True, unit_seconds=False)
    assert not isinstance(quiet, toolrun.ProgressLines)
