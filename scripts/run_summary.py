#!/usr/bin/env python3
"""Print the summary table of training runs from their run folders' summary.json (what the README shows).

    python scripts/run_summary.py checkpoints/shakespeare/rope-word-10000 checkpoints/shakespeare/rope-bpe-8192

One Markdown row per run: run folder, parameters, optimizer steps, tokens seen, tokens per second,
held-out loss (nats per token, the last evaluation) and held-out bits per character (the best
evaluation), as pretrain.py wrote them.  An under-trained run (fewer steps than its warm-up, or fewer
than 3 evaluations; pretrain.py records why) is named below the table.  scripts/main_job.sh prints it
at its end.  Exit status 2, one line, for a folder without a readable summary.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HEAD = (
    "run",
    "parameters",
    "steps",
    "tokens seen",
    "tokens/s",
    "held-out loss (nats/token)",
    "held-out bits/char (best)",
)


def read_summary(folder: Path) -> dict:
    """``folder/summary.json`` as a dict.

    Raises:
        ValueError: no such file, not JSON, or a field of the table missing (the file is named).
    """
    path = Path(folder) / "summary.json"
    try:
        s = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file (is {folder} a run folder pretrain.py wrote?)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: cannot read it: {e}") from None
    missing = [k for k in ("params", "steps", "tokens") if not isinstance(s, dict) or k not in s]
    if missing:
        raise ValueError(f"{path}: no {', '.join(missing)} (not a summary.json of pretrain.py)")
    return s


def _number(v, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def summary_table(folders: list[Path]) -> str:
    """The Markdown table of the runs in ``folders`` (in that order), then a line per under-trained run.

    Raises:
        ValueError: as :func:`read_summary`.
    """
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    notes = []
    for folder in folders:
        s = read_summary(folder)
        cells = [
            f"`{folder}`",
            _number(s["params"], ","),
            _number(s["steps"], ","),
            _number(s["tokens"], ","),
            _number(s.get("tokens_per_sec"), ",.0f"),
            _number(s.get("val_loss"), ".4f"),
            _number(s.get("best_val_bpc"), ".4f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
        if s.get("under_trained"):
            notes.append(f"under-trained: {folder}: {s['under_trained']}")
    return "\n".join(lines + notes)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="run_summary.py",
        description="Print the summary table (Markdown) of training runs from their run folders' summary.json.",
    )
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folders written by pretrain.py")
    args = p.parse_args(argv)
    try:
        print(summary_table([Path(r) for r in args.runs]))
    except ValueError as e:
        print(f"run_summary.py: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
