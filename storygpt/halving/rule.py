"""Which tokenizers ``--halving`` drops at a budget, and the report's section on them.

The rule reads the report's verdict at that budget (results.json ``verdicts``: storygpt.compare.analysis.verdict):
the best is the lowest mean bits/char of the eligible tokenizers; a tokenizer is dropped when the lower end of
the paired block-bootstrap interval of its difference from the best (95%, seeds and held-out blocks resampled:
storygpt.eval.stats.paired_bootstrap) lies above ``margin`` bits/char, i.e. it is worse by more than the margin
with the report's own confidence.  No tokenizer is dropped when the verdict names no fair best (an under-trained
run would decide it) or when a difference has no interval.  Successive halving (Jamieson and Talwalkar, 2016,
*Non-stochastic Best Arm Identification and Hyperparameter Optimization*) keeps a fixed fraction; this keeps
every tokenizer the interval cannot rule out, so a close race is not cut at random.  Each budget's interval
is read at its own level; nothing corrects for the several budgets looked at, and a tokenizer dropped at a
small budget may have won at a larger one: the report says both.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Drop:
    """A tokenizer dropped at ``budget``: its bits/char minus the best's (``diff``) and the interval, bits/char."""

    spec: str
    budget: float
    best: str
    diff: float
    low: float
    high: float
    level: float


def drops(verdict: dict, still_in: list[str], margin: float) -> list[Drop]:
    """The tokenizers of ``still_in`` that the ``verdict`` (one results.json ``verdicts`` entry) shows worse than
    its best by more than ``margin`` bits/char, in ``still_in``'s order.

    Raises:
        ValueError: a negative ``margin``.
    """
    if margin < 0:
        raise ValueError(f"--halving-margin {margin:g}: must be 0 or more bits/char")
    best = verdict.get("best")
    if best is None or verdict.get("unfair"):
        return []
    out = []
    for spec in still_in:
        iv = (verdict.get("intervals") or {}).get(spec)
        if spec != best and iv is not None and iv["low"] > margin:
            out.append(Drop(spec, verdict["budget"], best, iv["diff"], iv["low"], iv["high"], iv["level"]))
    return out


def drop_line(d: Drop, label) -> str:
    """``bpe:8192 at 1e12 FLOPs: +0.0812 [+0.0701, +0.0930] bits/char against bpe:512`` (``label``: budget -> text)."""
    return f"{d.spec} at {label(d.budget)}: {d.diff:+.4f} [{d.low:+.4f}, {d.high:+.4f}] bits/char against {d.best}"


def summary(dropped: list[Drop], plan: dict, budgets: list[float], margin: float, flops: tuple) -> dict:
    """results.json's ``halving`` object: the margin, the budgets, each SPEC's plan (how many of the budgets it
    trained), the drops and the training FLOPs against the full grid's (``flops`` = (trained, full grid))."""
    trained, full = flops
    return {
        "margin": margin,
        "budgets": budgets,
        "plan": [[spec, n] for spec, n in plan.items()],
        "dropped": [asdict(d) for d in dropped],
        "flops": trained,
        "flops_full_grid": full,
        "flops_share": trained / full if full else 0.0,
    }


def section(s: dict, best_at_top: str | None, label) -> list[str]:
    """report.md's section on the tokenizers --halving dropped (Markdown lines; ``label``: budget -> text)."""
    lines = [
        f"## Tokenizers dropped early (--halving, margin {s['margin']:g} bits/char)",
        "",
        "Each budget of the sweep was trained only by the tokenizers not clearly worse at the one before: a "
        "tokenizer was dropped when the lower end of the 95% paired interval of its difference from the best lay "
        f"above the margin. Best at the largest budget ({label(s['budgets'][-1])}): **{best_at_top or 'none'}**. "
        f"Training FLOPs {s['flops']:.3g}, {s['flops_share']:.0%} of the {s['flops_full_grid']:.3g} of the full "
        "grid (every tokenizer at every budget, branching as it would).",
        "",
    ]
    if not s["dropped"]:
        return lines + ["No tokenizer was dropped: every difference was within the margin or undecided."]
    lines += ["| tokenizer | dropped after | minus the best, bits/char [interval] | best there |", "|---|---|---|---|"]
    for d in s["dropped"]:
        diff = f"{d['diff']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]"
        lines.append(f"| `{d['spec']}` | {label(d['budget'])} | {diff} | `{d['best']}` |")
    return lines + [
        "",
        "A tokenizer dropped at a small budget could have won at a larger one (the order of tokenizers can change "
        "with compute); each interval was read at its own budget, with no correction for the several budgets "
        "looked at. Run the full grid (without --halving) to see them at every budget.",
    ]
