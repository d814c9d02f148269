"""Run tasks on storygpt models through lm-eval and score them (``bits.py --tasks``, ``compare.py --tasks``).

:func:`prepare` turns task names into lm-eval tasks (made tasks are made from the held-out text first)
and loads their items, so every bad name, file or line is refused before any model is scored;
:func:`run_model` scores one model on them (lm-eval's ``evaluate`` with the ``storygpt`` model class,
samples logged); :func:`compare_models` adds the scores and paired intervals (:mod:`storygpt.tasks.scores`).
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from storygpt.cli import first_line
from storygpt.tasks import TaskError, catalog, made, need_lm_eval
from storygpt.tasks.scores import LEVEL, REPLICATES, Items, paired, resample_weights, score


@dataclass
class Prepared:
    """Tasks ready to run: ``specs`` in order, the lm-eval task dicts built from them, and where made tasks
    were written (``made_dir``; a temporary folder unless ``--task-dir`` was given)."""

    specs: list[catalog.TaskSpec]
    made_dir: Path | None = None
    made_counts: dict[str, int] = field(default_factory=dict)
    _tmp: object = None


@contextlib.contextmanager
def quiet_lm_eval():
    """lm-eval's INFO/WARNING logging and its per-task request bars off (errors still shown)."""
    import datasets
    import lm_eval.api.task as task_mod

    logger = logging.getLogger("lm_eval")
    level, bar = logger.level, getattr(task_mod, "tqdm", None)
    bars_on = datasets.utils.logging.is_progress_bar_enabled()
    logger.setLevel(logging.ERROR)
    datasets.utils.logging.disable_progress_bar()
    if bar is not None:
        task_mod.tqdm = lambda it, *a, **k: it
    try:
        yield
    finally:
        logger.setLevel(level)
        if bars_on:
            datasets.utils.logging.enable_progress_bar()
        if bar is not None:
            task_mod.tqdm = bar


def prepare(
    names: Sequence[str],
    *,
    text: str | None,
    source: str,
    task_dir: str | Path | None = None,
    data_dir: str | Path | None = None,
    items: int = made.DEFAULT_ITEMS,
    seed: int = 0,
) -> Prepared:
    """The lm-eval tasks of ``names`` (canonical names, :func:`storygpt.tasks.catalog.resolve_names`).

    Made tasks: read from ``task_dir/NAME.yaml`` when there, else made from ``text`` (``items`` each,
    ``seed``) into ``task_dir`` (kept) or a temporary folder.

    Raises:
        ImportError: lm-eval is missing (the one line naming the extra).
        TaskError: a malformed task file line (``file:line``), a task whose data lm-eval cannot load.
    """
    need_lm_eval()
    out = Prepared([])
    for name in names:
        own = Path(task_dir) / f"{name}.yaml" if task_dir else None
        if own is not None and own.is_file():
            out.specs.append(catalog.made_spec(own))
        elif name in made.MADE:
            if out.made_dir is None:
                if task_dir:
                    out.made_dir = Path(task_dir)
                else:
                    out._tmp = tempfile.TemporaryDirectory(prefix="storygpt-tasks-")
                    out.made_dir = Path(out._tmp.name)
            if text is None:
                raise TaskError(f"--tasks {name}: no held-out text to make it from")
            out.made_counts.update(made.make_tasks(text, out.made_dir, [name], items=items, seed=seed, source=source))
            out.specs.append(catalog.made_spec(out.made_dir / f"{name}.yaml"))
        elif name in catalog.STANDARD:
            out.specs.append(catalog.standard_spec(name, data_dir))
        else:  # resolve_names lets no other name through
            raise TaskError(f"--tasks: unknown task {name!r}")
    for spec in out.specs:  # load every task's data now, so nothing is scored when one cannot be loaded
        spec.tasks = build_tasks(spec)
    return out


def build_tasks(spec: catalog.TaskSpec) -> dict:
    """lm-eval Task objects of ``spec`` (its data loaded).

    Raises:
        TaskError: lm-eval cannot build the task or load its data (one line naming the task and the fix).
    """
    from lm_eval.tasks import TaskManager, get_task_dict

    try:
        with quiet_lm_eval():
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                return get_task_dict(list(spec.configs), TaskManager(include_defaults=False))
    except TaskError:
        raise
    except Exception as e:  # datasets and lm-eval raise many kinds; one line naming the task and the fix
        first = first_line(e)
        hint = ""
        if spec.name in catalog.LOCAL_FILES or spec.name == "blimp":
            files = catalog.LOCAL_FILES.get(spec.name, ["blimp/PHENOMENON.jsonl"])
            hint = f"; put its published file in --task-data DIR (DIR/{files[0]})"
        raise TaskError(f"--tasks {spec.name}: lm-eval could not load it from {spec.source} ({first}){hint}") from None


@dataclass
class ModelTasks:
    """One model's per-item figures on each task and the requests cut from the left (per task)."""

    items: dict[str, Items]
    cut: dict[str, int]
    crossed: dict[str, int]


def run_model(lm, prepared: Prepared) -> ModelTasks:
    """Score one lm-eval model (a :class:`storygpt.tasks.harness.StoryGPTLM`, or any ``LM``) on every task."""
    from lm_eval.evaluator import evaluate

    items, cut, crossed = {}, {}, {}
    for spec in prepared.specs:
        c0, x0 = getattr(lm, "cut_items", 0), getattr(lm, "crossed_items", 0)
        with quiet_lm_eval():
            res = evaluate(lm, spec.tasks, log_samples=True, bootstrap_iters=0, verbosity="ERROR")
        samples = []
        for task_name in sorted(res["samples"]):  # blimp: every phenomenon, pooled in name order
            samples += [dict(s, doc_id=f"{len(samples) + int(s['doc_id'])}") for s in res["samples"][task_name]]
        from storygpt.tasks.scores import items_from_samples

        items[spec.name] = items_from_samples(samples)
        cut[spec.name] = getattr(lm, "cut_items", 0) - c0
        crossed[spec.name] = getattr(lm, "crossed_items", 0) - x0
    return ModelTasks(items, cut, crossed)


def compare_models(
    names: Sequence[str],
    results: Sequence[ModelTasks],
    *,
    replicates: int = REPLICATES,
    seed: int = 0,
    level: float = LEVEL,
) -> dict:
    """Scores of every model on every task, and each model minus the first on the same bootstrap items.

    Returns ``{task: {"models": [{name, items, bits_per_character, accuracy, accuracy_minus_chance, chance,
    cut_requests, crossed_requests, vs_first}]}}`` (estimates as ``{value, low, high, level}``).
    """
    out: dict = {}
    tasks = list(results[0].items) if results else []
    for t in tasks:
        first = results[0].items[t]
        w = resample_weights(len(first), replicates, seed)
        rows = []
        for name, r in zip(names, results):
            row = {"name": name, **score(r.items[t], w, level).to_dict()}
            row["cut_requests"] = r.cut.get(t, 0)
            row["crossed_requests"] = r.crossed.get(t, 0)
            if r is not results[0]:
                row["vs_first"] = {k: v.to_dict() for k, v in paired(first, r.items[t], w, level).items()}
            rows.append(row)
        out[t] = {"models": rows, "replicates": replicates, "level": level}
    return out
