"""``compare.py --seeds auto[:MAX]``: seed rounds added only where the tokenizers' order is still open (issue 45).

Round 1 trains every tokenizer with 2 seeds (SEED, SEED+1); after each round the group-sequential paired
t-test of :mod:`storygpt.eval.sequential` (O'Brien-Fleming-type Lan-DeMets alpha spending over the looks,
Bonferroni over the K(K-1)/2 pairs, family-wise alpha 0.05) compares every open tokenizer with the current
best; the next round adds one seed to the best and to those whose difference from it is undecided, none to
those decided worse.  It stops when every pair is decided or MAX seeds are reached.  Each round is one call of
compare.py's run order (:func:`storygpt.compare.run.compare`) with an explicit plan of runs
(``CompareOptions.seed_plan``: ``((SPEC, seed, round), ...)``), so finished runs are reused and an interrupted
comparison continues with the same command; the report gets a section saying which round added each seed
and the verdict, and results.json a ``seeds_auto`` object.  Lossy and under-trained tokenizers (never named
best, storygpt.compare.analysis) stay at round 1 and out of the test.  One budget and one model shape only.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, replace
from pathlib import Path

from storygpt.atomic import write_text
from storygpt.eval.sequential import BETTER, FIRST_SEEDS, WORSE, decide

#: MAX of ``--seeds auto`` without ``:MAX``.
DEFAULT_MAX = 6
#: The family-wise error rate and the spending function of the test (fixed before the first seed).
ALPHA, SPENDING = 0.05, "obrien-fleming"
METHOD = (
    "group-sequential paired t-test on the per-seed bits/char differences, O'Brien-Fleming-type Lan-DeMets "
    "alpha spending over the seed rounds, Bonferroni over the pairs, family-wise alpha 0.05 "
    "(storygpt/eval/sequential.py)"
)
PROG = "compare.py"


# ------------------------------------------------------------------ the command line's values
def parse_seeds(text: str, most: int) -> tuple[int, bool]:
    """``--seeds TEXT`` as ``(seeds, auto)``: ``"3" -> (3, False)``, ``"auto" -> (DEFAULT_MAX, True)``,
    ``"auto:8" -> (8, True)`` (with auto, ``seeds`` is MAX).  A plain number is range-checked by the caller.

    Raises:
        ValueError: one line naming --seeds: not a number nor auto[:MAX], or MAX below 2 or above ``most``.
    """
    text = str(text).strip()
    if text.lstrip("+-").isdigit():
        return int(text), False
    head, colon, tail = text.partition(":")
    if head != "auto" or (colon and not tail.strip()):
        raise ValueError(f"--seeds {text}: give a number of seeds (e.g. 3), auto or auto:MAX (e.g. auto:6)")
    if not colon:
        return DEFAULT_MAX, True
    try:
        n = int(tail)
    except ValueError:
        raise ValueError(f"--seeds {text}: MAX must be a whole number of seeds, e.g. auto:6") from None
    if n < FIRST_SEEDS:
        raise ValueError(f"--seeds {text}: auto needs a maximum of at least {FIRST_SEEDS} seeds")
    if n > most:
        raise ValueError(f"--seeds {text}: auto may go to at most {most} seeds")
    return n, True


def plan_text(plan) -> str:
    """The plan ``((SPEC, seed, round), ...)`` as compare.py's ``--seed-plan`` value (JSON)."""
    return json.dumps([list(p) for p in plan], separators=(",", ":"))


def parse_plan(text: str) -> tuple:
    """``--seed-plan JSON`` back to ``((SPEC, seed, round), ...)``.

    Raises:
        ValueError: one line naming --seed-plan: not JSON, or an entry that is not [SPEC, seed >= 0, round >= 1].
    """
    try:
        rows = json.loads(text)
    except ValueError as e:
        raise ValueError(f"--seed-plan is not JSON: {e}") from None
    if not isinstance(rows, list) or not rows:
        raise ValueError("--seed-plan must be a non-empty list of [SPEC, seed, round]")
    out = []
    for row in rows:
        ok = isinstance(row, list) and len(row) == 3 and isinstance(row[0], str)
        ok = ok and all(isinstance(v, int) and not isinstance(v, bool) for v in row[1:])
        if not ok or row[1] < 0 or row[2] < 1:
            raise ValueError(f"--seed-plan entry {row!r} is not [SPEC, seed >= 0, round >= 1]")
        out.append((row[0], row[1], row[2]))
    return tuple(out)


def planned_runs(runs: list, plan) -> list:
    """The runs of ``runs`` (every SPEC x seed of the grid) that ``plan`` names, each with its seed round,
    in the grid's order.

    Raises:
        CompareError: a plan entry that is no run of the grid (another SPEC, a seed beyond MAX).
    """
    from storygpt.compare.settings import CompareError

    rounds = {(spec, seed): r for spec, seed, r in plan}
    out = [replace(run, round=rounds[(str(run.spec), run.seed)]) for run in runs if (str(run.spec), run.seed) in rounds]
    if len(out) != len(rounds):
        have = {(str(r.spec), r.seed) for r in runs}
        spec, seed = next(k for k in rounds if k not in have)
        raise CompareError(f"the seed plan names {spec} with seed {seed}, which is no run of this comparison")
    return out


def rerun_flags(doc: dict, argv_auto: bool) -> list[str]:
    """compare.py flags that make ``--rerun`` train a report's own plan: ``--seed-plan`` from its results'
    (spec, seed, seed_round) when the report was made with --seeds auto (``argv_auto``), else none (a fixed
    --seeds N trains the same grid again; a report from before seed rounds were recorded counts every
    seed as round 1, which a fixed plan is).

    Raises:
        ValueError: a result whose spec, seed or seed_round is missing or of the wrong type (named).
    """
    if not argv_auto:
        return []
    plan = []
    for i, r in enumerate(doc.get("results", [])):
        spec, seed, rnd = r.get("spec"), r.get("seed"), r.get("seed_round", 1)
        if not isinstance(spec, str) or not isinstance(seed, int) or not isinstance(rnd, int) or rnd < 1:
            raise ValueError(f"results[{i}] has no spec, seed and seed_round to reproduce the --seeds auto plan")
        plan.append((spec, seed, rnd))
    return ["--seed-plan", plan_text(plan)]


# ------------------------------------------------------------------ the decision after a round
def decision_of(results: list[dict], max_seeds: int):
    """The test on the rows of a results.json: ``(decision or None, ineligible)``.

    ``ineligible``: SPEC -> why it is left out (lossy, under-trained); ``None`` decision when fewer than 2
    tokenizers are left.  Seeds are taken in ascending order (the order they were added).
    """
    bpc: dict[str, list] = {}
    ineligible: dict[str, str] = {}
    for r in sorted(results, key=lambda r: r["seed"]):
        bpc.setdefault(r["spec"], []).append(r["bits_per_char"])
        if r.get("lossy"):
            ineligible[r["spec"]] = "lossy: never named best"
        elif r.get("under_trained"):
            ineligible.setdefault(r["spec"], "under-trained: never named best")
    order = list(dict.fromkeys(r["spec"] for r in results))
    tested = {k: bpc[k] for k in order if k not in ineligible}
    if len(tested) < 2:
        return None, ineligible
    return decide(tested, max_seeds, alpha=ALPHA, spending=SPENDING), ineligible


def check_auto(options) -> list[str]:
    """The SPECs of an auto comparison, as compare.py names them (``str`` of the parsed SPEC).

    Raises:
        CompareError: a sweep of budgets or --sizes (the test compares tokenizers at one budget and shape),
            or a bad SPEC or budget.
    """
    from storygpt.compare.settings import DEFAULT_SPECS, CompareError, budget_of, parse_specs

    _, values = budget_of(options)
    if len(values) > 1 or options.sizes:
        what = "several budgets" if len(values) > 1 else "--sizes"
        raise CompareError(
            f"--seeds auto compares tokenizers at one budget and one model shape, not {what}: give one, or a fixed --seeds N"
        )
    return [str(s) for s in parse_specs(list(options.specs or DEFAULT_SPECS))]


def compare_auto(options, argv: list[str], compare) -> int:
    """compare.py with ``--seeds auto:MAX`` (``options.seeds`` is MAX, ``options.seeds_auto`` set): seed rounds
    as the module's docstring says, each through ``compare(options, argv)`` (compare.py's run order) with the
    round's plan; with ``options.seed_plan`` given (``--rerun``) that plan only.  Returns the exit status."""
    from storygpt.compare.preflight import report_name
    from storygpt.compare.settings import CompareError

    try:
        names = check_auto(options)
        report = options.report or report_name(options)
    except CompareError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    options = replace(options, report=report)
    report_dir = Path(options.reports_dir) / report
    if options.seed_plan is not None:  # --rerun: the report's own plan, whatever the new figures say
        rc = compare(options, argv)
        return rc or finish(report_dir, options.seeds, fixed=True)
    plan = [(name, options.seed + i, 1) for name in names for i in range(FIRST_SEEDS)]
    rnd = 1
    while True:
        rc = compare(replace(options, seed_plan=tuple(plan)), argv)
        if rc:
            return rc
        doc = json.loads((report_dir / "results.json").read_text(encoding="utf-8"))
        dec, _ = decision_of(doc["results"], options.seeds)
        if dec is None or dec.done:
            return finish(report_dir, options.seeds)
        rnd += 1
        have = {k: sum(1 for p in plan if p[0] == k) for k in names}
        added = [(k, options.seed + have[k], rnd) for k in dec.need_seed]
        plan += added
        worse = [k for k, s in dec.status.items() if s == WORSE]
        print(
            f"\nseeds auto: after {dec.seeds} seeds, "
            + (f"decided worse than {dec.best}: {', '.join(worse)}; " if worse else "")
            + f"undecided: {', '.join(k for k in dec.need_seed if k != dec.best)}; round {rnd} adds "
            + ", ".join(f"seed {s} of {k}" for k, s, _ in added),
            flush=True,
        )


def finish(report_dir: Path, max_seeds: int, fixed: bool = False) -> int:
    """Add the seed rounds and the verdict to the report (report.md's section, results.json's ``seeds_auto``)
    and print the verdict; returns 0."""
    doc = json.loads((report_dir / "results.json").read_text(encoding="utf-8"))
    results = doc["results"]
    dec, ineligible = decision_of(results, max_seeds)
    summary = summarize(results, dec, ineligible, max_seeds, fixed)
    doc["seeds_auto"] = summary
    write_text(report_dir / "results.json", json.dumps(doc, indent=2) + "\n")
    md = (report_dir / "report.md").read_text(encoding="utf-8").rstrip("\n")
    write_text(report_dir / "report.md", md + "\n\n" + "\n".join(section(summary)) + "\n")
    print(f"\n{verdict_line(summary)}")
    print(
        f"seeds: {summary['runs']} runs, {summary['flops']:.3g} training FLOPs: {summary['flops_share']:.0%} of --seeds {max_seeds}'s"
    )
    return 0


def summarize(results: list[dict], dec, ineligible: dict, max_seeds: int, fixed: bool) -> dict:
    """The ``seeds_auto`` object of results.json (every field documented in docs/compare.md)."""
    rounds: dict[int, list] = {}
    per_spec: dict[str, list] = {}
    flops_per_run: dict[str, list] = {}
    for r in sorted(results, key=lambda r: (r.get("seed_round", 1), r["seed"])):
        rounds.setdefault(r.get("seed_round", 1), []).append([r["spec"], r["seed"]])
        per_spec.setdefault(r["spec"], []).append([r["seed"], r.get("seed_round", 1)])
        flops_per_run.setdefault(r["spec"], []).append(r["flops"])
    used = sum(sum(v) for v in flops_per_run.values())
    most = sum(max_seeds * sum(v) / len(v) for v in flops_per_run.values())
    tokenizers = {}
    for spec, seeds in per_spec.items():
        row = {"seeds": seeds, "status": "left out", "why": ineligible.get(spec)}
        if dec is not None and spec in dec.status:
            row["status"] = dec.status[spec]
            row["decided_at_seeds"] = dec.decided_at.get(spec)
            iv = dec.intervals.get(spec)
            row["minus_best"] = asdict(iv) if iv is not None else None
        tokenizers[spec] = row
    if dec is None:
        verdict = "no test: fewer than 2 tokenizers that can be named best"
    elif dec.verdict == "no winner":
        open_ = [k for k, v in dec.status.items() if v != WORSE and k != dec.best]
        verdict = f"no winner: {', '.join(open_)} undecided against {dec.best} after {dec.seeds} seeds"
    else:
        verdict = dec.verdict
    return {
        "max_seeds": max_seeds,
        "alpha": ALPHA,
        "spending": SPENDING,
        "method": METHOD,
        "plan": "the report's own plan (--rerun), the test replayed on these runs" if fixed else "adaptive",
        "rounds": [{"round": k, "added": v} for k, v in sorted(rounds.items())],
        "tokenizers": tokenizers,
        "best": None if dec is None else dec.best,
        "winner": None if dec is None else dec.winner,
        "verdict": verdict,
        "runs": len(results),
        "flops": used,
        "flops_max": most,
        "flops_share": used / most if most else 0.0,
    }


def verdict_line(summary: dict) -> str:
    """``Seeds auto verdict: best: bpe:512 (METHOD)``."""
    return f"Seeds auto verdict ({summary['method']}): {summary['verdict']}"


def section(summary: dict) -> list[str]:
    """report.md's section on the seed rounds (Markdown lines)."""
    names = {WORSE: "decided worse", BETTER: "best, decided", "undecided": "undecided", "left out": "left out"}
    lines = [
        f"## Seeds added until decided (--seeds auto:{summary['max_seeds']})",
        "",
        f"Method: {summary['method']}.  Round 1 trained {FIRST_SEEDS} seeds of every tokenizer; each later round "
        "added one seed to the best and to the tokenizers whose difference from it was undecided.",
        "",
        f"**Verdict: {summary['verdict']}** ({summary['runs']} runs, {summary['flops']:.3g} training FLOPs, "
        f"{summary['flops_share']:.0%} of the {summary['flops_max']:.3g} of --seeds {summary['max_seeds']}).",
        "",
        "| tokenizer | seeds (the round that added each) | status | decided at | minus the best, bits/char [interval] |",
        "|---|---|---|---|---|",
    ]
    for spec, row in summary["tokenizers"].items():
        seeds = ", ".join(f"{s} (round {r})" for s, r in row["seeds"])
        iv = row.get("minus_best")
        diff = f"{iv['diff']:+.4f} [{iv['low']:+.4f}, {iv['high']:+.4f}]" if iv else ""
        at = f"{row['decided_at_seeds']} seeds" if row.get("decided_at_seeds") else ""
        status = names.get(row["status"], row["status"]) + (f" ({row['why']})" if row.get("why") else "")
        if spec == summary["best"] and row["status"] == "undecided":
            status = "lowest mean, undecided"
        lines.append(f"| `{spec}` | {seeds} | {status} | {at} | {diff} |")
    lines += [
        "",
        "Rounds: "
        + "; ".join(f"{r['round']}: " + ", ".join(f"{s} s{n}" for s, n in r["added"]) for r in summary["rounds"]),
    ]
    if summary["plan"] != "adaptive":
        lines += ["", f"Plan: {summary['plan']}."]
    return lines
