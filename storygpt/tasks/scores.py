"""Task scores that are fair to every tokenizer, with paired bootstrap intervals over items.

Per item (:func:`items_from_samples`, from lm-eval's logged samples): ``nats`` and ``chars`` of the
correct answer, ``correct`` (multiple choice: highest log-likelihood per character, ties share the
credit; cloze: greedy decoding gives it) and ``chance``.  Per model and task: bits per character
of the correct answer and accuracy, with percentile bootstrap intervals over items (Efron and
Tibshirani 1993; :data:`REPLICATES` replicates), paired across models (Koehn 2004).

Why per character and not lm-eval's ``acc_norm``/``argmax``: docs/tasks.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LN2 = math.log(2)
REPLICATES = 2000
LEVEL = 0.95


@dataclass
class Items:
    """Per-item figures of one model on one task (arrays of the same length, in the task's item order)."""

    nats: np.ndarray
    chars: np.ndarray
    correct: np.ndarray
    chance: np.ndarray

    def __len__(self) -> int:
        return len(self.nats)

    def to_dict(self) -> dict:
        return {
            "nats": [float(x) for x in self.nats],
            "chars": [int(x) for x in self.chars],
            "correct": [int(x) for x in self.correct],
            "chance": [None if math.isnan(x) else float(x) for x in self.chance],
        }

    @classmethod
    def from_dict(cls, d: dict) -> Items:
        return cls(
            np.asarray(d["nats"], dtype=np.float64),
            np.asarray(d["chars"], dtype=np.int64),
            np.asarray(d["correct"], dtype=np.float64),
            np.asarray([np.nan if x is None else x for x in d["chance"]], dtype=np.float64),
        )


def _gold_index(target, choices: Sequence[str]) -> int:
    if isinstance(target, (list, tuple)):
        target = target[0]
    if isinstance(target, (int, np.integer)) and not isinstance(target, bool):
        return int(target)
    if isinstance(target, str):
        s = target.strip()
        if s.lstrip("-").isdigit():
            return int(s)
        for i, c in enumerate(choices):
            if c.strip() == s:
                return i
    raise ValueError(f"cannot tell the correct choice from target {target!r}")


def items_from_samples(samples: Sequence[dict]) -> Items:
    """Per-item figures from lm-eval's logged samples of one loglikelihood or multiple_choice task (the
    ``samples[task]`` list of ``lm_eval.evaluator.evaluate(..., log_samples=True)``), in ``doc_id`` order.

    Raises:
        ValueError: a sample of another output type (no ``(context, continuation)`` arguments).
    """
    nats, chars, correct, chance = [], [], [], []
    for s in sorted(samples, key=lambda s: int(s["doc_id"])):
        args = s["arguments"]
        if not args or len(args[0]) < 2:
            raise ValueError(
                "the task scores no (context, continuation) pairs: only loglikelihood and multiple_choice tasks"
            )
        conts = [a[1] for a in args]
        lls = [float(r[0]) for r in s["filtered_resps"]][: len(conts)]
        if len(conts) == 1:  # a single continuation (cloze, LAMBADA): right when greedy decoding gives it
            gold, right, ch = 0, bool(s["filtered_resps"][0][1]), float("nan")
        else:
            gold = _gold_index(s["target"], conts)
            per_char = np.asarray([ll / max(len(c), 1) for ll, c in zip(lls, conts)])
            best = np.flatnonzero(per_char == per_char.max())
            right, ch = (1.0 / len(best) if gold in best else 0.0), 1.0 / len(conts)
        nats.append(-lls[gold])
        chars.append(len(conts[gold]))
        correct.append(float(right))
        chance.append(ch)
    return Items(np.asarray(nats), np.asarray(chars, dtype=np.int64), np.asarray(correct), np.asarray(chance))


@dataclass
class Estimate:
    """A figure and its bootstrap interval (``low <= high``) at ``level``."""

    value: float
    low: float
    high: float
    level: float = LEVEL

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "level": self.level}

    def text(self, digits: int = 4, signed: bool = False) -> str:
        f = f"{{:{'+' if signed else ''}.{digits}f}}"
        return f"{f.format(self.value)} [{f.format(self.low)}, {f.format(self.high)}]"


def resample_weights(n: int, replicates: int = REPLICATES, seed: int = 0) -> np.ndarray:
    """(replicates, n) counts: how often each item is drawn in each bootstrap replicate (the same for every
    model of a comparison: the pairing)."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=replicates).astype(np.float64)


def _interval(value: float, reps: np.ndarray, level: float) -> Estimate:
    reps = reps[np.isfinite(reps)]
    lo, hi = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2]) if len(reps) else (math.nan, math.nan)
    return Estimate(float(value), float(lo), float(hi), level)


def bits_of(items: Items, w: np.ndarray | None = None):
    """Bits per character of the correct answers (one value; with weights ``w`` (R, n), one per replicate)."""
    if w is None:
        return float(items.nats.sum() / (LN2 * items.chars.sum()))
    return (w @ items.nats) / (LN2 * (w @ items.chars))


def accuracy_of(items: Items, w: np.ndarray | None = None):
    if w is None:
        return float(items.correct.mean())
    return (w @ items.correct) / w.sum(axis=1)


@dataclass
class TaskScore:
    """One model on one task: bits per character of the correct answer, accuracy, accuracy minus chance
    (None without choices), each with its interval."""

    items: int
    bits: Estimate
    accuracy: Estimate
    above_chance: Estimate | None
    chance: float | None

    def to_dict(self) -> dict:
        return {
            "items": self.items,
            "bits_per_character": self.bits.to_dict(),
            "accuracy": self.accuracy.to_dict(),
            "accuracy_minus_chance": None if self.above_chance is None else self.above_chance.to_dict(),
            "chance": self.chance,
        }


def score(items: Items, w: np.ndarray, level: float = LEVEL) -> TaskScore:
    """The scores of one model on one task, with intervals from the bootstrap weights ``w``."""
    bits = _interval(bits_of(items), bits_of(items, w), level)
    acc_reps = accuracy_of(items, w)
    acc = _interval(accuracy_of(items), acc_reps, level)
    above, chance = None, None
    if not np.isnan(items.chance).any():
        chance = float(items.chance.mean())
        chance_reps = (w @ items.chance) / w.sum(axis=1)
        above = _interval(acc.value - chance, acc_reps - chance_reps, level)
    return TaskScore(len(items), bits, acc, above, chance)


def paired(a: Items, b: Items, w: np.ndarray, level: float = LEVEL) -> dict[str, Estimate]:
    """``b`` minus ``a`` on the same items: bits per character and accuracy, with paired intervals.

    Raises:
        ValueError: the two were not measured on the same number of items.
    """
    if len(a) != len(b):
        raise ValueError(f"the two models were scored on different items ({len(a)} and {len(b)})")
    return {
        "bits_per_character": _interval(bits_of(b) - bits_of(a), bits_of(b, w) - bits_of(a, w), level),
        "accuracy": _interval(accuracy_of(b) - accuracy_of(a), accuracy_of(b, w) - accuracy_of(a, w), level),
    }
