"""``compare.py --tasks NAME[,NAME]``: the tasks section of a comparison's report.

After the runs are trained and measured, each run's final checkpoint (``ckpt.pt``) is scored on the tasks
(:mod:`storygpt.tasks.run`; the made tasks are made from the corpus's held-out ``valid.txt`` and kept in
``reports/NAME/tasks/`` so lm-eval can run them itself).  A run's per-item figures are kept in its folder
(``tasks.json``) and reused while the tasks, their items and the checkpoint are unchanged.  The section
(appended to report.md; the figures in ``reports/NAME/tasks.json``) gives, per run: bits per character of
the correct answer and character-normalised accuracy with 95% paired bootstrap intervals over items,
each run minus the report's first run on the same items, and Spearman's rank correlation across the
runs between held-out bits per character and each task score, stated as what it is on so few runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from storygpt.tasks import TaskError, catalog, made

TASKS_FILE = "tasks.json"


def add_arguments(p) -> None:
    g = p.add_argument_group("tasks (needs lm-eval: pip install -e .[tasks] or pip install lm-eval)")
    g.add_argument(
        "--tasks",
        metavar="NAME[,NAME]",
        help="after the runs, score each final model on tasks through lm-evaluation-harness and add a section "
        "to the report: made from the held-out text (cloze, nextline, pairs; 'made' = all three) or standard "
        "(hellaswag, arc_easy, lambada, blimp, with --task-data); bits per character of the correct answer and "
        "character-normalised accuracy with paired bootstrap intervals, and their rank correlation with "
        "held-out bits per character across the runs",
    )
    g.add_argument(
        "--task-items",
        type=int,
        default=made.DEFAULT_ITEMS,
        metavar="N",
        help=f"items per made task (default {made.DEFAULT_ITEMS:,})",
    )
    g.add_argument(
        "--task-data",
        metavar="DIR",
        help="local files of the standard tasks in their published formats (see bits.py --help)",
    )


def check_task_flags(tasks: str | None, *, items: int, task_data: str | None) -> list | None:
    """The task names of compare.py's ``--tasks`` (None when not given), every task flag checked before any
    work.

    Raises:
        TaskError: a bad task flag, in one line (compare.py stops with it, exit 2).
    """
    if tasks is None:
        if task_data:
            raise TaskError("--task-data needs --tasks")
        return None
    if items < 1:
        raise TaskError(f"--task-items must be at least 1, got {items}")
    if task_data and not Path(task_data).is_dir():
        raise TaskError(f"--task-data {task_data}: no such folder")
    names = catalog.resolve_names(tasks)
    from storygpt.tasks import need_lm_eval

    try:
        need_lm_eval()
    except ImportError as e:
        raise TaskError(str(e)) from None
    return names


def _key(names, items: int, task_data, valid: Path, text: str, ckpt: Path) -> dict:
    return {
        "tasks": list(names),
        "items": items,
        "seed": 0,
        "text": str(valid),
        "text_chars": len(text),
        "task_data": str(task_data) if task_data else None,
        "checkpoint_mtime_ns": ckpt.stat().st_mtime_ns,
    }


def score_runs(
    runs, data_dir: Path, report_dir: Path, device: str, threads: int | None, *, names, items: int, task_data=None
):
    """Each run's :class:`storygpt.tasks.run.ModelTasks` (reused from its ``tasks.json`` when unchanged) and
    the task specs: the tasks ``names``, ``items`` items per made task, ``task_data`` (compare.py --task-data).

    Raises:
        TaskError: bad task input (before any run is scored).
    """
    import torch

    from storygpt import load_checkpoint
    from storygpt.atomic import write_text
    from storygpt.eval.bits import read_documents
    from storygpt.tasks.harness import StoryGPTLM
    from storygpt.tasks.run import ModelTasks, prepare, run_model
    from storygpt.tasks.scores import Items

    valid = data_dir / "valid.txt"
    text = "\n\n".join(read_documents(valid))
    prepared = prepare(names, text=text, source=str(valid), task_dir=None, data_dir=task_data, items=items)
    made_names = [n for n in names if n in made.MADE]
    if made_names:  # the made tasks, kept beside the report for lm-eval itself (the same items: seeded)
        made.make_tasks(text, report_dir / "tasks", made_names, items=items, source=str(valid))
    if device == "cpu":
        from storygpt.runtime import usable_cores

        torch.set_num_threads(threads or usable_cores())
    out = []
    for i, run in enumerate(runs, 1):
        ckpt = run.folder / "ckpt.pt"
        key = _key(names, items, task_data, valid, text, ckpt)
        cached = None
        try:
            doc = json.loads((run.folder / TASKS_FILE).read_text(encoding="utf-8"))
            if doc.get("key") == key:
                cached = ModelTasks(
                    {t: Items.from_dict(v) for t, v in doc["items"].items()}, doc["cut"], doc["crossed"]
                )
        except (OSError, ValueError, KeyError, TypeError):
            cached = None
        if cached is not None:
            print(f"[{i}/{len(runs)}] {run.label:<24} tasks done before", flush=True)
            out.append(cached)
            continue
        print(f"[{i}/{len(runs)}] {run.label:<24} tasks ...", flush=True)
        try:
            model, tok, _ = load_checkpoint(ckpt, device=device)
        except (OSError, ValueError) as e:  # CheckpointError is a ValueError: one line naming the file
            raise TaskError(f"--tasks: {run.label}: {e}") from None
        res = run_model(StoryGPTLM(model=model, tokenizer=tok, device=device), prepared)
        doc = {
            "key": key,
            "items": {t: v.to_dict() for t, v in res.items.items()},
            "cut": res.cut,
            "crossed": res.crossed,
        }
        write_text(run.folder / TASKS_FILE, json.dumps(doc) + "\n")
        out.append(res)
    return out, prepared.specs


def _cell(e: dict | None, digits: int, signed: bool = False) -> str:
    if e is None:
        return "–"
    f = f"{{:{'+' if signed else ''}.{digits}f}}"
    return f"{f.format(e['value'])} [{f.format(e['low'])}, {f.format(e['high'])}]"


def correlations(heldout: list[float], scores: dict) -> list[dict]:
    """Spearman's rho (and its exact two-sided p for up to 8 runs) between held-out bits/char and each task's
    bits/char of the answer and accuracy, across the runs."""
    from storygpt.eval.stats import spearman, spearman_p_exact

    out = []
    for task, s in scores.items():
        for what, key in (("bits/char of the answer", "bits_per_character"), ("accuracy", "accuracy")):
            ys = [r[key]["value"] for r in s["models"]]
            rho = spearman(heldout, ys) if len(ys) >= 2 else math.nan
            p = spearman_p_exact(heldout, ys) if 3 <= len(ys) <= 8 else None
            out.append({"task": task, "score": what, "rho": rho, "p_exact": p, "runs": len(ys)})
    return out


def section(labels: list[str], heldout: list[float], specs, scores: dict, corr: list[dict]) -> list[str]:
    """The report.md lines of the tasks section."""
    n = len(labels)
    lines = [
        "## Tasks (lm-evaluation-harness)",
        "",
        "Each run's final model scored on tasks through lm-eval (`storygpt/tasks/`): per run, **bits per "
        "character of the correct answer** (the continuous score; lower is better; divided by characters, the "
        "same for every tokenizer) and **accuracy** (multiple choice: the most likely choice per character; "
        "cloze: greedy decoding gives the word), each with a 95% bootstrap interval over items. The differences "
        f"are each run minus the first (`{labels[0]}`) on the same resampled items (paired). 'cut': requests "
        "longer than the model's context, cut from the left. The made tasks' files are in `tasks/` (lm-eval "
        "runs them with `--include_path`).",
        "",
    ]
    for spec in specs:
        s = scores[spec.name]
        chance = f"chance {spec.chance:.3f}" if spec.chance is not None else "accuracy = greedy decoding"
        lines += [f"### {spec.name} ({s['models'][0]['items']:,} items from `{spec.source}`; {chance})", ""]
        lines.append(
            "| run | held-out bits/char | bits/char (answer) | accuracy | acc − chance | Δ bits/char vs first | Δ accuracy vs first | cut |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for label, h, r in zip(labels, heldout, s["models"]):
            vs = r.get("vs_first") or {}
            lines.append(
                f"| `{label}` | {h:.4f} | {_cell(r['bits_per_character'], 4)} | {_cell(r['accuracy'], 3)} | "
                f"{_cell(r['accuracy_minus_chance'], 3, True)} | {_cell(vs.get('bits_per_character'), 4, True)} | "
                f"{_cell(vs.get('accuracy'), 3, True)} | {r['cut_requests']:,} |"
            )
        lines.append("")
    lines += ["### Rank correlation with held-out bits per character", ""]
    if n < 3:
        lines += [f"Not given: {n} run{'s' if n != 1 else ''}; a rank correlation needs at least 3.", ""]
        return lines
    lines.append(f"Spearman's rho across the {n} runs (exact two-sided p over all {math.factorial(n):,} orderings):")
    lines.append("")
    for c in corr:
        p = "" if c["p_exact"] is None else f", p = {c['p_exact']:.3f}"
        rho = "undefined (one side constant)" if math.isnan(c["rho"]) else f"{c['rho']:+.2f}"
        lines.append(f"- {c['task']}, {c['score']}: rho = {rho}{p}")
    lines += [
        "",
        f"What this is: how alike {n} runs of one corpus, model shape and budget are ordered by held-out bits "
        f"per character and by each task score. With {n} runs a perfect rank correlation arises by chance with "
        f"probability {2 / math.factorial(n):.3f}; it does not show that a task predicts held-out bits per "
        "character, or the other way round, for other runs, shapes or budgets. (bits/char of the answer should "
        "correlate positively with held-out bits/char; accuracy, negatively.)",
        "",
    ]
    return lines


def add_task_section(
    runs,
    results,
    report_dir: Path,
    data_dir: Path,
    device: str | None,
    threads,
    *,
    names,
    items: int = made.DEFAULT_ITEMS,
    task_data=None,
) -> str:
    """Score the runs on the tasks ``names`` (see :func:`score_runs`), append the section to
    ``report_dir/report.md`` and write ``report_dir/tasks.json``; returns the section's text.

    Raises:
        TaskError: bad task input.
    """
    from storygpt.atomic import write_text
    from storygpt.runtime import resolve_device
    from storygpt.tasks.run import compare_models

    device = resolve_device(device or "auto")
    per_run, specs = score_runs(
        runs, data_dir, report_dir, device, threads, names=names, items=items, task_data=task_data
    )
    labels = [r.label for r in runs]
    heldout = [float(r.bits_per_char) for r in results]
    scores = compare_models(labels, per_run)
    corr = correlations(heldout, scores)
    text = "\n".join(section(labels, heldout, specs, scores, corr))
    md = report_dir / "report.md"
    write_text(md, md.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + text)
    doc = {
        "runs": labels,
        "heldout_bits_per_char": heldout,
        "tasks": {s.name: {"source": s.source, "chance": s.chance} for s in specs},
        "scores": scores,
        "rank_correlations": corr,
    }
    write_text(report_dir / TASKS_FILE, json.dumps(doc, indent=2) + "\n")
    return text
