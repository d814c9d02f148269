#!/usr/bin/env python
"""Draw the held-out bits per character of training runs against FLOPs, characters seen and wall time.

    python plot.py checkpoints/shakespeare/rope-bpe-8192                 # -> that folder's loss.png
    python plot.py checkpoints/shakespeare/rope-* --out runs.png         # several runs on shared axes

Reads each run folder's metrics.jsonl (the evaluation rows pretrain.py writes);
the drawing functions are in storygpt/plot.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from storygpt.cli import ToolParser
from storygpt.helpformat import DefaultsOnceHelpFormatter


def build_parser() -> argparse.ArgumentParser:
    p = ToolParser(
        prog="plot.py",
        description="Draw the held-out loss in bits per character of one or more runs (from each run folder's "
        "metrics.jsonl) against training FLOPs, characters of training text seen and wall time, all runs on "
        "shared axes, to a PNG. Bits per character is on one scale whatever the tokenizer, so runs with "
        "different tokenizers can be compared on it.",
        formatter_class=DefaultsOnceHelpFormatter,
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run folders written by pretrain.py (a checkpoint or metrics.jsonl inside one names its folder)",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        default=None,
        help="the PNG to write. Default: RUN/loss.png for one run, runs.png in the current folder for several",
    )
    p.add_argument(
        "--x",
        default=None,
        help="comma-separated x axes, one panel each: flops (training FLOPs), chars (characters seen), "
        "elapsed (wall time in seconds). Default: flops,chars,elapsed for several runs; for one run, its loss "
        "curve as pretrain.py draws it (training loss and held-out bits per character against steps and time)",
    )
    p.add_argument(
        "--title", default=None, help="figure title (default: none for several runs, the run's name for one)"
    )
    return p


def run_folder(arg: str) -> Path:
    """A run folder from RUN: the folder itself, or the folder of a file inside it (best.pt, metrics.jsonl)."""
    path = Path(arg)
    if path.is_file():
        return path.parent
    return path


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from storygpt.plot import X_AXES, MetricsError, labels_for, plot_curves, run_curve

    axes = [a.strip() for a in (args.x or ",".join(X_AXES)).split(",") if a.strip()]
    if not axes or any(a not in X_AXES for a in axes):
        parser.error(f"--x {args.x!r}: expected a comma-separated list of {', '.join(X_AXES)}")
    folders = [run_folder(r) for r in args.runs]
    try:
        curves = [run_curve(f, label) for f, label in zip(folders, labels_for(folders), strict=True)]
        empty = [str(f) for f, c in zip(folders, curves, strict=True) if not len(c)]
        if len(empty) == len(curves):
            raise MetricsError(
                f"{', '.join(empty)}: no evaluation with held-out bits per character yet (nothing to plot)"
            )
        for name in empty:
            print(f"plot.py: warning: {name}: no evaluation yet; left out", file=sys.stderr)
        out = Path(args.out) if args.out else (folders[0] / "loss.png" if len(folders) == 1 else Path("runs.png"))
        if out.is_dir():
            raise MetricsError(f"--out {out}: is a folder; give a file name such as {out / 'runs.png'}")
        if out.suffix.lower() != ".png":
            raise MetricsError(f"--out {out}: plot.py writes PNG images; give a name ending in .png")
        title = args.title if args.title is not None else (curves[0].label if len(curves) == 1 else None)
        if len(folders) == 1 and args.x is None:  # one run: the loss curve pretrain.py writes as loss.png
            from storygpt.plot import loss_figure, metrics_path, read_metrics, save_png

            save_png(loss_figure(read_metrics(metrics_path(folders[0])), title=title), out)
        else:
            plot_curves([c for c in curves if len(c)], out, axes, title=title)
    except (FileNotFoundError, MetricsError, OSError) as e:
        print(f"plot.py: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    from storygpt.cli import run

    run(main)
