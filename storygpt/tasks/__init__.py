"""Downstream tasks that are fair to every tokenizer, run through lm-evaluation-harness (docs/tasks.md).

:mod:`~storygpt.tasks.scoring` (log-likelihoods, no lm-eval needed), :mod:`~storygpt.tasks.harness`
(the lm-eval model ``storygpt``), :mod:`~storygpt.tasks.made` (tasks made from held-out text),
:mod:`~storygpt.tasks.catalog` (task names and files), :mod:`~storygpt.tasks.scores` (per-character
scores, paired intervals), :mod:`~storygpt.tasks.run` and :mod:`~storygpt.tasks.tool`
(``bits.py --tasks``).
"""

from __future__ import annotations

EXTRA_HINT = "pip install -e .[tasks] (or pip install lm-eval)"


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
