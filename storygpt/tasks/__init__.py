"""Downstream tasks that are fair to every tokenizer, run through lm-evaluation-harness (issue 34).

* :mod:`storygpt.tasks.scoring`: log-likelihoods under a storygpt model (the boundary rule, items cut
  from the left); no lm-eval needed.
* :mod:`storygpt.tasks.harness`: the lm-eval model class ``storygpt`` (imports lm-eval).
* :mod:`storygpt.tasks.made`: cloze, next-line choice and minimal pairs made from any held-out text,
  written in lm-eval's task format (YAML + jsonl).
* :mod:`storygpt.tasks.catalog`: the task names the tools know (made and standard), their files.
* :mod:`storygpt.tasks.scores`: bits per character of the correct answer, character-normalised
  accuracy and their paired bootstrap intervals over items.
* :mod:`storygpt.tasks.run`: run tasks on checkpoints; :mod:`storygpt.tasks.tool`: ``bits.py --tasks``
  (``compare.py --tasks``: :mod:`storygpt.compare.tasks_section`).
"""

from __future__ import annotations

EXTRA_HINT = "pip install -e .[tasks]"


class TaskError(ValueError):
    """Bad task input (an unknown name, a malformed task file line); the message is the one line to show."""


def need_lm_eval():
    """Import lm-eval, or raise ImportError whose message is the one line naming the extra to install."""
    try:
        import lm_eval  # noqa: F401
    except ImportError:
        raise ImportError(
            f"the tasks need lm-eval (lm-evaluation-harness), which is not installed: {EXTRA_HINT}"
        ) from None
    return lm_eval
