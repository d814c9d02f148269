"""``report.md`` of the comparison: its sections, from the verdict per budget to the provenance.

:func:`render_markdown` puts them together; the numbers come from :mod:`storygpt.analysis`
(groups, verdicts, sweeps, correlations), the tables from :mod:`storygpt.report_tables`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from storygpt.report_tables import duration, markdown_table, number, sci

#: What a word-level model's bits per character leaves out (shown in the report).
WORD_NOTE = (
    "A word-level model is not charged for everything in the text: its tokenizer drops the white space "
    "between words (spaces, new lines), so the model never predicts it, and every word outside the "
    "vocabulary becomes a single <unk> prediction however long the word is. Its bits per character is "
    "therefore a lower bound on the cost of writing the held-out text, not a fair win over the byte-level "
    "tokenizers, which predict every character and give the text back exactly (round trip 1.00). Read "
    "the unk and round-trip columns before the bits/char column (docs/bits.md)."
)


def _interval(iv) -> str:
    if iv is None:
        return "no interval (no block losses)"
    return f"{iv.diff:+.4f} [{iv.low:+.4f}, {iv.high:+.4f}]"


def summary_section(gs, v, several_seeds: bool) -> list[str]:
    """One budget: mean (and spread) per tokenizer, the difference from the best with its interval, and the
    sentence that names a winner or says which tokenizers cannot be told apart."""
    lines = [
        "| tokenizer | runs | mean bits/char | spread (sd over seeds) | minus the best, 95% interval | status |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for g in sorted(gs, key=lambda g: g.mean):
        if v.best is None:
            diff = "no interval (no run can be named best)"
        else:
            diff = "(best)" if v.best is g else _interval(v.intervals.get(g.spec))
        spread = "-" if g.spread is None else f"{g.spread:.4f}"
        flags = [f for f, on in (("under-trained", g.under_trained), ("lossy", g.lossy)) if on]
        lines.append(f"| `{g.spec}` | {len(g.runs)} | {g.mean:.4f} | {spread} | {diff} | {', '.join(flags) or 'ok'} |")
    lines.append("")
    if v.best is None:
        lines.append("No tokenizer can be named best: every run is under-trained or lossy.")
    elif v.winner is not None and not [g for g in gs if g is not v.best and g.eligible]:
        lines.append(
            f"Only one tokenizer can be named here: `{v.winner}` ({v.best.mean:.4f}); nothing to compare it with."
        )
    elif v.winner is not None:
        others = [g.spec for g in gs if g is not v.best and g.eligible]
        lines.append(
            f"**Lowest held-out bits per character: `{v.winner}`** ({v.best.mean:.4f}); its difference from "
            + (", ".join(f"`{s}`" for s in others) if others else "no other eligible tokenizer")
            + " has a 95% interval that excludes zero."
        )
    else:
        lines.append(
            f"No winner: the lowest mean is `{v.best.spec}` ({v.best.mean:.4f}), but the 95% interval of its "
            "difference from " + ", ".join(f"`{s}`" for s in v.tied) + " includes zero (or could not be computed): "
            "this comparison cannot tell them apart."
        )
    if v.ineligible:
        lines.append(
            "Never named best here: "
            + ", ".join(f"`{s}`" for s in v.ineligible)
            + " (under-trained or lossy; see the status column)."
        )
    if not several_seeds:
        lines.append(
            "With one seed per tokenizer the interval resamples the held-out text only; it says nothing about "
            "how another training seed would do (`--seeds 3` adds that)."
        )
    return lines


def sweep_section(sw) -> list[str]:
    """Budget sweep: the fitted curves (or why there are none) and the crossovers."""
    from storygpt.stats import PowerLawFit

    lines = ["## Bits per character against compute", "", "![bits/char against training FLOPs](bpc_vs_compute.png)", ""]
    lines.append("| tokenizer | fit L(C) = E + A C^-alpha | E | alpha | range of C fitted |")
    lines.append("|---|---|---:|---:|---:|")
    for spec, fit in sw.fits.items():
        if isinstance(fit, PowerLawFit):
            e = f"{fit.E:.3f}" + (f" +- {fit.E_se:.3f}" if fit.E_se is not None else "")
            a = f"{fit.alpha:.3f}" + (f" +- {fit.alpha_se:.3f}" if fit.alpha_se is not None else "")
            how = f"{fit.n} points" + (
                ", as many parameters as budgets: it passes through the means, no uncertainty"
                if fit.E_se is None
                else ", +- one standard error from the residuals"
            )
            if fit.at_bound:
                how += "; alpha at the edge of its search range: no power law fits these points, not drawn"
                e, a = "-", f"{fit.alpha:.3f} (edge)"
            lines.append(f"| `{spec}` | {how} | {e} | {a} | {sci(fit.c_min)} .. {sci(fit.c_max)} |")
        else:
            lines.append(f"| `{spec}` | {fit} | - | - | - |")
    lines += [
        "",
        "The curves are drawn only over the compute they were fitted on; E is the curve's limit at infinite "
        "compute, an extrapolation far outside the data, not a prediction.",
        "",
    ]
    if sw.crossovers:
        for a, b, lo, hi, c in sw.crossovers:
            lines.append(
                f"- `{a}` and `{b}` change order between budgets {number(lo)} and {number(hi)} "
                f"(about {sci(c)} FLOPs, linear in log compute between the two means)."
            )
    else:
        lines.append("- No two tokenizers change order between the budgets (by their mean bits/char).")
    return lines + [""]


def intrinsic_section(gs, correlations) -> list[str]:
    """The tokenizers' own measures on the held-out text and their rank correlation with bits/char."""
    lines = [
        "## The tokenizers by themselves",
        "",
        "| tokenizer | chars/token | Renyi efficiency (alpha 2.5) | vocabulary used | mean token bytes | mean bits/char |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for g in sorted(gs, key=lambda g: g.mean):
        r = g.runs[0]
        fmt = lambda x, f: "-" if x is None else format(x, f)  # noqa: E731
        lines.append(
            f"| `{g.spec}` | {r.chars_per_token:.3f} | {fmt(r.renyi_efficiency, '.3f')} | "
            f"{fmt(r.vocab_used_share, '.1%')} | {fmt(r.mean_token_bytes, '.2f')} | {g.mean:.4f} |"
        )
    lines.append("")
    if correlations:
        n = correlations[0].n
        lines.append(
            f"Spearman's rank correlation with the mean bits/char over the {n} lossless tokenizers (exact "
            "permutation p-value: the share of the orderings of the tokenizers that correlate at least as strongly):"
        )
        lines.append("")
        for c in correlations:
            name = c.measure.replace("_", " ")
            if math.isnan(c.rho):
                lines.append(f"- {name}: the same for every tokenizer, no rank correlation")
                continue
            p = "-" if c.p is None else f"{c.p:.2f}"
            lines.append(f"- {name}: rho {c.rho:+.2f} (p {p})")
        lines += [
            "",
            f"This is what it is: {n} tokenizers, one corpus, one small model and budget. With {n} points a "
            f"perfect rank correlation arises by chance with probability {2 / math.factorial(n):.3f}; it does "
            "not show that the measure predicts bits/char elsewhere (Zouhar et al. 2023 report their correlation "
            "over many more tokenizers, on translation).",
        ]
    else:
        lines.append("Rank correlations need at least 3 lossless tokenizers with these measures.")
    return lines + [""]


def provenance_section(meta) -> list[str]:
    p = meta.provenance
    lines = ["## Provenance", ""]
    for k in ("storygpt", "commit", "dirty", "torch", "python", "platform", "heldout_sha256"):
        if k in p:
            lines.append(f"- {k.replace('_', ' ')}: `{p[k]}`")
    lines += [
        "",
        "Per run (results.json, `provenance` and the columns of results.csv): the commit, torch version, device, "
        "dtype, threads and processes it was trained with, every pretrain.py flag (learning rate, batch, warm-up, "
        "seed, recipe), the fingerprints of its token files, FLOPs per token, steps, tokens, characters, wall and "
        f"CPU time. `python compare.py --rerun {'reports/' + meta.name}` trains every run again in new run folders "
        "and compares the figures.",
        "",
    ]
    return lines


def budgets_of(gs) -> list:
    return sorted({g.budget for g in gs}, key=lambda b: (b is None, b or 0))


def verdict_sections(results: Sequence, several_seeds: bool) -> list[str]:
    """Markdown lines of the verdict per budget (a "## Budget B" heading each when there are several, else
    "## Result"): what report.md puts first and compare.py prints when it ends."""
    from storygpt import analysis

    gs = analysis.groups(results)
    budgets = budgets_of(gs)
    lines = []
    for b in budgets:
        bg = [g for g in gs if g.budget == b]
        lines += [f"## Budget {number(b)}" if len(budgets) > 1 else "## Result", ""]
        lines += summary_section(bg, analysis.verdict(bg), several_seeds) + [""]
    return lines


def render_markdown(results: Sequence, meta) -> str:
    """``report.md`` of ``results`` (:class:`~storygpt.report.RunResult`) and ``meta``
    (:class:`~storygpt.report.ReportMeta`): the settings, the verdict per budget, the sweep, the tokenizers'
    measures, every run."""
    from storygpt import analysis

    gs = analysis.groups(results)
    lines = [
        f"# Tokenizer comparison: {meta.name}",
        "",
        f"- corpus: `{meta.corpus}` ({meta.data_dir})",
        f"- model: {meta.model}",
        f"- budget per run: {meta.budget}",
        f"- seeds per tokenizer: {len(meta.seeds) or 1}"
        + (f" ({', '.join(map(str, meta.seeds))})" if meta.seeds else ""),
        f"- held-out text: {meta.heldout}",
    ]
    if meta.hardware:
        lines.append(f"- hardware: {meta.hardware}")
    if meta.command:
        lines.append(f"- command: `{meta.command}`")
    if results:
        lines.append(f"- training wall time, all runs: {duration(sum(r.elapsed for r in results))}")
    lines.append("")
    budgets = budgets_of(gs)
    lines += verdict_sections(results, several_seeds=len(meta.seeds) > 1)
    sw = analysis.sweep(gs)
    if sw is not None:
        lines += sweep_section(sw)
    last = [g for g in gs if g.budget == budgets[-1]]
    lines += intrinsic_section(last, analysis.intrinsic_correlations(last))
    lines += ["## Every run", "", markdown_table(results), ""]
    lines += [
        "![held-out bits per character against training FLOPs](bpc_vs_flops.png)",
        "",
        "![final held-out bits per character against vocabulary size](bpc_vs_vocab.png)",
        "![held-out characters per token against vocabulary size](chars_per_token_vs_vocab.png)",
        "",
        "The same curves against characters seen and wall time: [curves.png](curves.png). Every row, with more "
        "columns: [results.csv](results.csv), [results.json](results.json).",
        "",
        "## How to read it",
        "",
        "- **minus the best, 95% interval**: this tokenizer's mean bits/char minus the best one's, with a paired "
        "bootstrap interval: the held-out characters are cut into fixed-size blocks (the same blocks for every "
        "model), and 10,000 times the blocks are drawn with replacement, once for both models, and the seeds of "
        "each tokenizer with replacement (Koehn 2004; Efron and Tibshirani 1993). A winner is named only when "
        "every eligible tokenizer's interval excludes zero (docs/compare.md).",
        "- **status**: `under-trained` (fewer optimizer steps than the learning-rate warm-up, or fewer than "
        f"{analysis.MIN_EVALS} evaluations) and `lossy` (a held-out document that does not round-trip, or `<unk>` "
        "tokens: measured, whatever the tokenizer's kind) runs are shown but never named best.",
        "- **params**: the token embedding and the output layer (a layer of its own in the default `modern` "
        "recipe; tied to the embedding and counted once with `--recipe gpt2`; plus the position embedding with "
        "learned positions) + everything else. The vocabulary changes only the first part.",
        "- **held-out chars/token**: characters of the held-out text per token of this tokenizer.",
        "- **tokens seen, chars seen, FLOPs, wall time**: what the training run consumed (FLOPs per token = "
        "6 x non-embedding parameters + attention + output layer, docs/training.md).",
        "- **held-out bits/char**: the final model's cross-entropy on the held-out characters, summed over its "
        "own tokens and divided by ln 2 x the characters (bits.py, docs/bits.md); lower is better and the "
        "figure is comparable across tokenizers. The curves use pretrain.py's held-out slice (the start of the "
        "same text, `--eval-chars` characters).",
        "- **unk**: share of the held-out tokens that are `<unk>`; **round trip**: share of held-out "
        "documents that decode back to exactly their text.",
        "",
    ]
    if any(r.lossy for r in results):
        lines += ["## What lossy models do not predict", "", WORD_NOTE, ""]
    lines += provenance_section(meta)
    if meta.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in meta.notes]
    return "\n".join(lines).rstrip("\n") + "\n"
