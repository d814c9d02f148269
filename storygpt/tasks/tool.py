"""``bits.py --tasks NAME[,NAME]``: the flags, their checks and the table (the work is :mod:`storygpt.tasks.run`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from storygpt.tasks import TaskError, catalog, made


def add_arguments(ap) -> None:
    g = ap.add_argument_group("tasks (needs lm-eval: pip install -e .[tasks] or pip install lm-eval)")
    g.add_argument(
        "--tasks",
        metavar="NAME[,NAME]",
        help="score the checkpoints on tasks through lm-evaluation-harness instead of measuring bits per "
        "character of the text: made from the held-out text (cloze, nextline, pairs; 'made' = all three) or "
        "standard (hellaswag, arc_easy, lambada, blimp: lm-eval's own task definitions, on --task-data files "
        "or lm-eval's own data loading). Per model and task: bits per character of the correct answer (lower "
        "is better) and character-normalised accuracy, each with a 95%% paired bootstrap interval over items, "
        "and each model minus the first on the same items",
    )
    g.add_argument(
        "--task-dir",
        metavar="DIR",
        help="folder for the made tasks' lm-eval files (NAME.yaml + NAME.jsonl; kept, so lm-eval can run them "
        "itself with --include_path DIR); a task whose files are already there is read, not made again, and "
        "other task YAMLs there in the same format are known by their names (default: a temporary folder)",
    )
    g.add_argument(
        "--task-data",
        metavar="DIR",
        help="local files of the standard tasks in their published formats: DIR/hellaswag_val.jsonl, "
        "DIR/ARC-Easy-Test.jsonl, DIR/lambada_test.jsonl, DIR/blimp/PHENOMENON.jsonl (without one, lm-eval "
        "loads the data itself: the Hugging Face datasets cache, or a download)",
    )
    g.add_argument(
        "--task-items",
        type=int,
        default=made.DEFAULT_ITEMS,
        metavar="N",
        help=f"items per made task (default {made.DEFAULT_ITEMS:,}; fewer when the text has fewer)",
    )
    g.add_argument("--task-seed", type=int, default=0, metavar="S", help="seed of the made tasks (default 0)")


def check_task_flags(tasks: str | None, *, items: int, task_dir: str | None, task_data: str | None) -> list | None:
    """The task names of bits.py's ``--tasks`` (None when not given), every task flag checked before anything
    is loaded (bits.py checks that --task-dir can be written first).

    Raises:
        TaskError: a bad task flag, in one line (bits.py stops with it, exit 2).
    """
    if tasks is None:
        for flag, value in (("--task-dir", task_dir), ("--task-data", task_data)):
            if value:
                raise TaskError(f"{flag} needs --tasks")
        return None
    if items < 1:
        raise TaskError(f"--task-items must be at least 1, got {items}")
    if task_data and not Path(task_data).is_dir():
        raise TaskError(f"--task-data {task_data}: no such folder")
    names = catalog.resolve_names(tasks, task_dir)
    from storygpt.tasks import need_lm_eval

    try:
        need_lm_eval()
    except ImportError as e:
        raise TaskError(str(e)) from None
    return names


def run(
    paths,
    loaded,
    docs,
    source: str,
    device: str,
    run_name,
    *,
    names: list,
    task_dir: str | None = None,
    task_data: str | None = None,
    items: int = made.DEFAULT_ITEMS,
    seed: int = 0,
    threads: int | None = None,
    dtype: str = "auto",
    progress: bool = True,
) -> dict:
    """Score every loaded checkpoint on the tasks ``names``; returns the report (see :func:`format_report`).

    ``task_dir``, ``task_data``, ``items``, ``seed``: bits.py's --task-* flags; ``threads``: its --threads
    (None or 0: every usable core on a CPU); ``dtype``: its --dtype; ``progress``: a line on stderr per model.

    Raises:
        TaskError (ValueError): bad task input, found before any model is scored.
    """
    import torch

    from storygpt.tasks.harness import StoryGPTLM
    from storygpt.tasks.run import compare_models, prepare, run_model

    text = "\n\n".join(docs) if docs else None
    prepared = prepare(names, text=text, source=source, task_dir=task_dir, data_dir=task_data, items=items, seed=seed)
    if device == "cpu":  # tiny models: bits.py's --threads, else every usable core
        from storygpt.runtime import usable_cores

        torch.set_num_threads(threads or usable_cores())
    labels, results = [], []
    for p in paths:
        model, tok, _ = loaded[p]
        name = run_name(p, paths)
        if progress:
            print(f"bits.py: {name}: scoring {len(prepared.specs)} task(s)", file=sys.stderr, flush=True)
        lm = StoryGPTLM(model=model, tokenizer=tok, device=device, dtype="float32" if dtype == "auto" else dtype)
        results.append(run_model(lm, prepared))
        labels.append(name)
        loaded[p] = (None, tok, loaded[p][2])
        del model, lm
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    report = {
        "text": source,
        "device": device,
        "tasks": {s.name: {"source": s.source, "chance": s.chance} for s in prepared.specs},
        "made": {
            "folder": str(task_dir) if task_dir else None,
            "seed": seed,
            "items": prepared.made_counts,
        },
        "scores": compare_models(labels, results),
        "items": {n: {t: it.to_dict() for t, it in r.items.items()} for n, r in zip(labels, results)},
    }
    return report


def _est(e: dict | None, digits: int = 4, signed: bool = False) -> str:
    if e is None:
        return "-"
    f = f"{{:{'+' if signed else ''}.{digits}f}}"
    return f"{f.format(e['value'])} [{f.format(e['low'])}, {f.format(e['high'])}]"


def format_report(report: dict) -> str:
    """The tables: one per task, a row per model."""
    out = []
    for task, s in report["scores"].items():
        info = report["tasks"][task]
        rows = s["models"]
        chance = info.get("chance")
        head = f"task {task}: {rows[0]['items']:,} items from {info['source']}"
        head += (
            f"; chance accuracy {chance:.3f}" if chance is not None else "; accuracy = greedy decoding gives the answer"
        )
        out.append(head)
        cols = ["model", "bits/char (answer)", "accuracy", "acc - chance", "vs first: d bits/char", "d accuracy", "cut"]
        body = []
        for r in rows:
            vs = r.get("vs_first") or {}
            body.append(
                [
                    r["name"],
                    _est(r["bits_per_character"]),
                    _est(r["accuracy"], 3),
                    _est(r["accuracy_minus_chance"], 3, True),
                    _est(vs.get("bits_per_character"), 4, True),
                    _est(vs.get("accuracy"), 3, True),
                    f"{r['cut_requests']:,}",
                ]
            )
        widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(cols)]
        fmt = lambda cells: "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        )
        out += [fmt(cols), fmt(["-" * w for w in widths]), *map(fmt, body), ""]
    out.append(
        "intervals: 95% percentile bootstrap over items, the same resampled items for every model (paired); "
        "'vs first' is each model minus the first; 'cut': requests longer than the model's context, cut from the left"
    )
    return "\n".join(out)


def write_json(path: str, report: dict) -> None:
    from storygpt.atomic import write_text

    write_text(path, json.dumps(report, indent=2) + "\n")
