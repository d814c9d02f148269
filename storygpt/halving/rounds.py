"""``compare.py --halving``'s rounds: the budgets of a sweep one at a time, only the tokenizers still in.

Round j trains every tokenizer still in at the j-th smallest budget (each seed), through one call of compare.py's
run order (:func:`storygpt.compare.run.compare`) with an explicit plan (``CompareOptions.halving_plan``:
``((SPEC, N), ...)``, each SPEC at its first N budgets).  Under wsd each tokenizer and seed has one trunk, the
largest budget's run folder: it is trained only to the decay start of the round's budget and paused there
(``pretrain.py --pause-after-branches``), the budget's run branches from it (storygpt.train.branch), and the
next round resumes the trunk, so a tokenizer that goes on continues its run instead of starting again.  After
each round :func:`storygpt.halving.rule.drops` reads the report's verdict at that budget.  An interrupted sweep
continues with the same command (finished runs and paused trunks are reused).  Under cosine nothing is shared:
each budget trains from step 0, and the report's note says so.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from storygpt.atomic import write_text
from storygpt.halving.rule import Drop, drop_line, drops, section, summary

PROG = "compare.py"
#: summary.json's counter of each budget kind (the unit of a budget's value)
UNIT = {"budget_flops": "flops", "budget_tokens": "tokens", "budget_chars": "chars"}


# ------------------------------------------------------------------ the plan
def plan_text(plan: dict) -> str:
    """``{SPEC: N}`` as compare.py's hidden ``--halving-plan`` value (JSON)."""
    return json.dumps([[k, n] for k, n in plan.items()], separators=(",", ":"))


def parse_plan(text: str) -> tuple:
    """``--halving-plan JSON`` back to ``((SPEC, N), ...)``.

    Raises:
        ValueError: one line naming --halving-plan: not JSON, or an entry that is not [SPEC, N >= 1].
    """
    try:
        rows = json.loads(text)
    except ValueError as e:
        raise ValueError(f"--halving-plan is not JSON: {e}") from None
    if not isinstance(rows, list) or not rows:
        raise ValueError("--halving-plan must be a non-empty list of [SPEC, budgets]")
    for row in rows:
        ok = isinstance(row, list) and len(row) == 2 and isinstance(row[0], str)
        if not ok or not isinstance(row[1], int) or isinstance(row[1], bool) or row[1] < 1:
            raise ValueError(f"--halving-plan entry {row!r} is not [SPEC, budgets >= 1]")
    if len({row[0] for row in rows}) < len(rows):
        raise ValueError("--halving-plan names a SPEC twice")
    return tuple((k, n) for k, n in rows)


def check_halving(options) -> tuple[list[str], str, list[float]]:
    """The SPECs (as compare.py names them), the budget kind and the sorted budgets of a --halving sweep.

    Raises:
        CompareError: fewer than 2 budgets or tokenizers, --seeds auto, --sizes, or a bad SPEC or budget.
    """
    from storygpt.compare.settings import DEFAULT_SPECS, CompareError, budget_of, parse_specs

    key, values = budget_of(options)
    if len(set(values)) < 2:
        raise CompareError(
            "--halving drops tokenizers between the budgets of a sweep: give at least 2 budgets, "
            "e.g. --budget-flops 1e12,2e12,5e12"
        )
    if options.seeds_auto:
        raise CompareError("--halving goes with a fixed --seeds N, not --seeds auto")
    if options.sizes:
        raise CompareError("--halving compares tokenizers at one model shape, not --sizes")
    names = [str(s) for s in parse_specs(list(options.specs or DEFAULT_SPECS))]
    if len(names) < 2:
        raise CompareError("--halving needs at least 2 tokenizers to drop any")
    return names, key, sorted(set(values))


# ------------------------------------------------------------------ the rounds
def compare_halving(options, argv: list[str], compare) -> int:
    """compare.py with ``--halving`` (``options.halving`` set): the rounds of the module's docstring, each through
    ``compare(options, argv)``; with ``options.halving_plan`` given (``--rerun``) that plan in one call; with
    ``options.dry_run`` the first round and the full grid (the most it can train).  Returns the exit status."""
    from storygpt.compare.preflight import report_name
    from storygpt.compare.settings import CompareError

    try:
        names, key, budgets = check_halving(options)
        options = replace(options, report=options.report or report_name(options) + "-halving")
    except CompareError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    report_dir = Path(options.reports_dir) / options.report
    if options.dry_run and options.halving_plan is None:
        label = budget_text(key)
        print(
            f"--halving: round 1 trains every tokenizer at {label(budgets[0])}; each later round only those not "
            f"dropped; the plan below is the most it can train (none dropped: the full grid)",
            flush=True,
        )
        return compare(options, argv)
    if options.halving_plan is not None:  # --rerun: the report's own plan, replayed (--dry-run: its plan only)
        rc = compare(options, argv)
        return (
            rc
            if rc or options.dry_run
            else finish(report_dir, key, budgets, dict(options.halving_plan), options.halving_margin)
        )
    plan = {name: 1 for name in names}
    dropped: list[Drop] = []
    label = budget_text(key)
    for j in range(1, len(budgets) + 1):
        still_in = [k for k in names if k not in {d.spec for d in dropped}]
        plan.update({k: j for k in still_in})
        rc = compare(replace(options, halving_plan=tuple(plan.items())), argv)
        if rc:
            return rc
        if j == len(budgets):
            return finish(report_dir, key, budgets, plan, options.halving_margin, dropped)
        verdict = verdict_at(report_dir, budgets[j - 1])
        new = drops(verdict, still_in, options.halving_margin)
        dropped += new
        going = [k for k in still_in if k not in {d.spec for d in new}]
        print(
            f"\nhalving: at {label(budgets[j - 1])}, "
            + (f"best {verdict['best']}; " if verdict.get("best") else "no fair best (under-trained or lossy runs); ")
            + (f"dropped {'; '.join(drop_line(d, label) for d in new)}; " if new else "none dropped; ")
            + f"{', '.join(going)} go on to {label(budgets[j])}",
            flush=True,
        )


def budget_text(key: str):
    """budget value -> ``1e12 training FLOPs`` for a budget kind."""
    from storygpt.compare.settings import BUDGETS, number

    return lambda value: f"{number(value)} {BUDGETS[key][2]}"


def verdict_at(report_dir: Path, budget: float) -> dict:
    """The report's verdict at ``budget`` (results.json ``verdicts``; an empty one when it has none)."""
    doc = json.loads((report_dir / "results.json").read_text(encoding="utf-8"))
    return next((v for v in doc.get("verdicts", []) if v.get("budget") == budget), {})


def halving_flops(results: list[dict]) -> float:
    """Training FLOPs of the sweep's runs: each result's own (summary.json's less what a branch took over from its
    trunk, branch.json) and, for a trunk paused below the top (no result of its own), its FLOPs up to its last
    branch: fixed once the sweep is done, whatever a later full grid adds to that trunk."""
    from storygpt.train.branch import BRANCH_RECORD

    own, paused = 0.0, {}
    dirs = {Path(r["run_dir"]).resolve() for r in results}
    for r in results:
        try:
            record = json.loads((Path(r["run_dir"]) / BRANCH_RECORD).read_text(encoding="utf-8"))
            taken, trunk = float(record["flops"]), Path(record["trunk"]).resolve()
        except (OSError, ValueError, KeyError, TypeError):
            taken, trunk = 0.0, None
        own += r["flops"] - taken
        if trunk is not None and trunk not in dirs:
            paused[trunk] = max(paused.get(trunk, 0.0), taken)
    return own + sum(paused.values())


def full_grid_flops(results: list[dict], budgets: list[float], key: str) -> float:
    """Training FLOPs of every tokenizer at every budget with the same seeds, branching as compare.py would
    (storygpt.train.branch.shared_flops under wsd), from each SPEC's FLOPs and budget units per step."""
    from storygpt.train.branch import shared_flops, steps_for

    total, seen = 0.0, set()
    for r in results:
        if (r["spec"], r["seed"]) in seen:
            continue
        seen.add((r["spec"], r["seed"]))
        s = json.loads((Path(r["run_dir"]) / "summary.json").read_text(encoding="utf-8"))
        per_flops, optim = s["flops"] / s["steps"], s.get("optim") or {}
        if key in UNIT and optim.get("schedule") == "wsd":
            per = s[UNIT[key]] / s["steps"]
            total += shared_flops(budgets, per, optim["decay_fraction"])[0] / per * per_flops
        else:
            per = s[UNIT[key]] / s["steps"] if key in UNIT else 1.0
            total += sum(steps_for(b, per) for b in budgets) * per_flops
    return total


def finish(report_dir: Path, key: str, budgets: list[float], plan: dict, margin: float, dropped=None) -> int:
    """Add the halving to the report (report.md's section, results.json's ``halving`` and each run's
    ``dropped_at_budget``) and print its lines; returns 0.  ``dropped`` None (a rerun): read from the verdicts."""
    doc = json.loads((report_dir / "results.json").read_text(encoding="utf-8"))
    results = doc["results"]
    if dropped is None:  # the plan's drops: each SPEC that stops below the top, at its last budget, as measured now
        dropped = []
        for spec, n in ((k, n) for k, n in plan.items() if n < len(budgets)):
            v = verdict_at(report_dir, budgets[n - 1])
            iv = (v.get("intervals") or {}).get(spec) or {
                "diff": float("nan"),
                "low": float("nan"),
                "high": float("nan"),
                "level": 0.95,
            }
            dropped.append(Drop(spec, budgets[n - 1], v.get("best"), iv["diff"], iv["low"], iv["high"], iv["level"]))
    at = {d.spec: d.budget for d in dropped}
    for r in results:
        r["dropped_at_budget"] = at.get(r["spec"])
    flops = (halving_flops(results), full_grid_flops(results, budgets, key))
    s = summary(dropped, plan, budgets, margin, flops)
    top = verdict_at(report_dir, budgets[-1]).get("best")
    s["best_at_largest_budget"] = top
    doc["halving"] = s
    write_text(report_dir / "results.json", json.dumps(doc, indent=2) + "\n")
    label = budget_text(key)
    md = (report_dir / "report.md").read_text(encoding="utf-8").rstrip("\n")
    write_text(report_dir / "report.md", md + "\n\n" + "\n".join(section(s, top, label)) + "\n")
    print(
        f"\nhalving: best at {label(budgets[-1])}: {top}; dropped: "
        + ("; ".join(drop_line(d, label) for d in dropped) or "none")
    )
    print(f"halving: {flops[0]:.3g} training FLOPs, {s['flops_share']:.0%} of the full grid's {flops[1]:.3g}")
    return 0


def rerun_flags(doc: dict) -> list[str]:
    """compare.py flags that make ``--rerun`` of a --halving report train its own plan (``halving.plan``).

    Raises:
        ValueError: a report made with --halving whose ``halving.plan`` is missing or malformed.
    """
    h = doc.get("halving")
    if h is None:
        return []
    try:
        plan = {k: n for k, n in parse_plan(json.dumps(h.get("plan")))}
    except (ValueError, AttributeError):
        raise ValueError("results.json's halving.plan is missing or malformed: cannot reproduce the plan") from None
    return ["--halving-plan", plan_text(plan)]
