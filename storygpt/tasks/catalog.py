"""The task names the tools know, and the lm-eval task configs behind them.

Made tasks (:mod:`storygpt.tasks.made`): ``cloze``, ``nextline``, ``pairs`` (``made``: all three).
Standard tasks through lm-eval's own definitions: ``hellaswag``, ``arc_easy``, ``lambada``,
``blimp``; their data from ``--task-data DIR`` (:data:`LOCAL_FILES`, each line checked) or
lm-eval's own loading.  A ``--task-dir`` of task YAMLs adds names.  Details: docs/tasks.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from storygpt.tasks import TaskError
from storygpt.tasks.made import MADE

ALIASES = {"cloze": "storygpt_cloze", "nextline": "storygpt_nextline", "pairs": "storygpt_pairs"}
#: standard name -> (lm-eval task folder under lm_eval/tasks, lm-eval task name or "blimp_*")
STANDARD = {
    "hellaswag": ("hellaswag", "hellaswag"),
    "arc_easy": ("arc", "arc_easy"),
    "lambada": ("lambada", "lambada_openai"),
    "blimp": ("blimp", "blimp_*"),
}
#: the published files looked for in --task-data DIR (the first that exists); blimp: DIR/blimp/PHENOMENON.jsonl
LOCAL_FILES = {
    "hellaswag": ["hellaswag_val.jsonl", "hellaswag/hellaswag_val.jsonl"],  # rowanz/hellaswag data/
    "arc_easy": ["ARC-Easy-Test.jsonl", "ARC-Easy/ARC-Easy-Test.jsonl"],  # AI2 ARC-V1-Feb2018
    "lambada": ["lambada_test.jsonl", "lambada/lambada_test.jsonl"],  # OpenAI's lambada_test.jsonl
}
#: fields every line of a local file must have
NEEDS = {
    "hellaswag": ("ctx_a", "ctx_b", "activity_label", "endings", "label"),
    "arc_easy": ("question", "answerKey"),
    "lambada": ("text",),
    "blimp": ("sentence_good", "sentence_bad"),
    "loglikelihood": ("context", "target"),
    "multiple_choice": ("context", "choices", "label"),
}


def known_names(task_dir: str | Path | None = None) -> list[str]:
    """Every name ``--tasks`` takes."""
    own = sorted(p.stem for p in Path(task_dir).glob("*.yaml")) if task_dir and Path(task_dir).is_dir() else []
    return ["made", *ALIASES, *STANDARD, *[n for n in own if n not in MADE]]


def resolve_names(text: str, task_dir: str | Path | None = None) -> list[str]:
    """``--tasks`` as canonical names (made tasks by their lm-eval names), in order, each once.

    Raises:
        TaskError: an empty list or an unknown name (the one line lists the known ones).
    """
    out: list[str] = []
    names = [n.strip() for n in text.split(",")]
    if not any(names):
        raise TaskError("--tasks: no task named; known: " + ", ".join(known_names(task_dir)))
    known = known_names(task_dir)
    for n in names:
        if not n:
            continue
        if n == "made":
            picked = list(MADE)
        elif n in ALIASES:
            picked = [ALIASES[n]]
        elif n in MADE or n in STANDARD or n in known:
            picked = [n]
        else:
            raise TaskError(f"--tasks: unknown task {n!r}; known: {', '.join(known)}")
        out += [p for p in picked if p not in out]
    return out


# ------------------------------------------------------------------ reading jsonl
def read_jsonl(path: str | Path, needs: Sequence[str], convert: Callable[[dict], dict] | None = None) -> list[dict]:
    """The JSON objects of a jsonl file, each with the fields ``needs`` (empty lines are skipped).

    Raises:
        TaskError: ``FILE:LINE: what is wrong`` for the first malformed line; a missing or unreadable file.
    """
    path = Path(path)
    docs = []
    try:
        with open(path, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                except json.JSONDecodeError as e:
                    raise TaskError(f"{path}:{no}: not a JSON object ({e.msg} at column {e.colno})") from None
                if not isinstance(doc, dict):
                    raise TaskError(f"{path}:{no}: not a JSON object (a {type(doc).__name__})")
                missing = [k for k in needs if k not in doc]
                if missing:
                    raise TaskError(f"{path}:{no}: missing field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
                if convert is not None:
                    try:
                        doc = convert(doc)
                    except (KeyError, TypeError, ValueError, AttributeError) as e:
                        raise TaskError(f"{path}:{no}: {e}") from None
                docs.append(doc)
    except UnicodeDecodeError as e:
        raise TaskError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise TaskError(f"{path}: {e.strerror or e}") from None
    if not docs:
        raise TaskError(f"{path}: no items")
    return docs


def check_made_doc(kind: str) -> Callable[[dict], dict]:
    """A checker of one line of a made-format task: the fields' types and the label's range."""

    def check(doc: dict) -> dict:
        if not isinstance(doc["context"], str):
            raise ValueError("context must be a string")
        if kind == "loglikelihood":
            if not isinstance(doc["target"], str) or not doc["target"]:
                raise ValueError("target must be a non-empty string")
        else:
            ch = doc["choices"]
            if not isinstance(ch, list) or len(ch) < 2 or not all(isinstance(c, str) and c for c in ch):
                raise ValueError("choices must be a list of two or more non-empty strings")
            lab = doc["label"]
            if isinstance(lab, bool) or not isinstance(lab, int) or not 0 <= lab < len(ch):
                raise ValueError(f"label must be an index into choices (0..{len(ch) - 1}), got {lab!r}")
        return doc

    return check


def arc_from_ai2(doc: dict) -> dict:
    """An ARC line in AI2's published shape (``question: {stem, choices: [{text, label}]}``) in the shape of
    the Hugging Face ``allenai/ai2_arc`` rows lm-eval's ``arc_easy`` reads; a line already in that shape as is."""
    q = doc["question"]
    if isinstance(q, str):
        return doc
    return {
        "id": doc.get("id", ""),
        "question": q["stem"],
        "choices": {"text": [c["text"] for c in q["choices"]], "label": [c["label"] for c in q["choices"]]},
        "answerKey": doc["answerKey"],
    }


# ------------------------------------------------------------------ lm-eval configs
@dataclass
class TaskSpec:
    """One task to run: its display ``name``, the lm-eval configs (dicts) of its parts (several for blimp),
    and where its items come from."""

    name: str
    configs: list[dict] = field(default_factory=list)
    source: str = ""
    chance: float | None = None  # accuracy of guessing (multiple choice: mean 1 / choices; None: no choice)
    tasks: dict | None = None  # the lm-eval Task objects, once built (storygpt.tasks.run.build_tasks)


def _lm_eval_task_dir(folder: str) -> Path:
    import lm_eval.tasks

    return Path(lm_eval.tasks.__file__).parent / folder


def _dataset_of(docs: list[dict], split: str):
    import datasets

    return lambda **_: datasets.DatasetDict({split: datasets.Dataset.from_list(docs)})


def _with_docs(cfg: dict, docs: list[dict]) -> dict:
    """``cfg`` reading ``docs`` (no download, no cache files) as its evaluation split; zero-shot."""
    split = cfg.get("test_split") or cfg.get("validation_split") or "test"
    out = dict(cfg)
    for k in ("dataset_path", "dataset_name", "dataset_kwargs"):
        out.pop(k, None)
    out.update(custom_dataset=_dataset_of(docs, split), training_split=None, fewshot_split=None, num_fewshot=0)
    if cfg.get("test_split"):
        out.update(test_split=split, validation_split=None)
    else:
        out["validation_split"] = split
    return out


def made_spec(yaml_path: Path) -> TaskSpec:
    """A task in the made format (``NAME.yaml`` beside ``NAME.jsonl``): its items read and checked by storygpt."""
    from lm_eval.tasks._yaml_loader import load_yaml

    try:
        cfg = load_yaml(yaml_path, resolve_func=True)
    except Exception as e:  # yaml errors of every kind: one line naming the file
        raise TaskError(
            f"{yaml_path}: not an lm-eval task YAML ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
        ) from None
    kind = cfg.get("output_type")
    if kind not in ("loglikelihood", "multiple_choice"):
        raise TaskError(f"{yaml_path}: output_type {kind!r}; the task files take loglikelihood or multiple_choice")
    data = yaml_path.with_suffix(".jsonl")
    docs = read_jsonl(data, NEEDS[kind], check_made_doc(kind))
    chance = None if kind == "loglikelihood" else sum(1 / len(d["choices"]) for d in docs) / len(docs)
    return TaskSpec(cfg.get("task", yaml_path.stem), [_with_docs(cfg, docs)], str(data), chance)


def standard_spec(name: str, data_dir: str | Path | None) -> TaskSpec:
    """lm-eval's own config of standard task ``name``, on local files from ``data_dir`` where they are.

    Raises:
        TaskError: a malformed local file (``file:line``).
    """
    from lm_eval.tasks._yaml_loader import load_yaml

    folder, task = STANDARD[name]
    root = _lm_eval_task_dir(folder)
    if name == "blimp":
        phen = sorted(Path(data_dir).glob("blimp/*.jsonl")) if data_dir else []
        configs = []
        for p in phen:
            yml = root / f"{p.stem}.yaml"
            if not yml.is_file():
                raise TaskError(f"{p}: no BLiMP phenomenon {p.stem!r} in lm-eval's blimp tasks")
            configs.append(_with_docs(load_yaml(yml, resolve_func=True), read_jsonl(p, NEEDS["blimp"])))
        if not configs:  # lm-eval's whole blimp group, from wherever it loads it
            configs = [
                load_yaml(y, resolve_func=True) for y in sorted(root.glob("*.yaml")) if not y.name.startswith("_")
            ]
            return TaskSpec(name, configs, "lm-eval's blimp data (Hugging Face nyu-mll/blimp)", 0.5)
        return TaskSpec(name, configs, str(Path(data_dir) / "blimp"), 0.5)
    cfg = load_yaml(root / f"{task}.yaml", resolve_func=True)
    local = (
        next((Path(data_dir) / f for f in LOCAL_FILES[name] if (Path(data_dir) / f).is_file()), None)
        if data_dir
        else None
    )
    chance = {"hellaswag": 0.25, "arc_easy": None, "lambada": None}[name]
    if local is None:
        return TaskSpec(name, [cfg], f"lm-eval's {cfg.get('dataset_path')} data", chance)
    docs = read_jsonl(local, NEEDS[name], arc_from_ai2 if name == "arc_easy" else None)
    if name == "arc_easy":
        chance = sum(1 / len(d["choices"]["text"]) for d in docs) / len(docs)
    return TaskSpec(name, [_with_docs(cfg, docs)], str(local), chance)
