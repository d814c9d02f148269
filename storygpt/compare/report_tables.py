"""The tables of the comparison report: number formats, the Markdown table of every run, the sweep's fitted
curves and the tokenizers' own measures.

:data:`TABLE` names each column of ``report.md``'s "Every run" table and how a
:class:`~storygpt.compare.report.RunResult` fills it; :func:`human`, :func:`sci`, :func:`duration`
and :func:`number` are the report's (and ``compare.py``'s) ways of writing numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

#: What a word-level model's bits per character leaves out (shown in the report).
WORD_NOTE = (
    "A word-level model is not charged for everything in the text: its tokenizer drops the white space "
    "between words (spaces, new lines), so the model never predicts it, and every word outside the "
    "vocabulary becomes a single <unk> prediction however long the word is. Its bits per character is "
    "therefore a lower bound on the cost of writing the held-out text, not a fair win over the byte-level "
    "tokenizers, which predict every character and give the text back exactly (round trip 1.00). Read "
    "the unk and round-trip columns before the bits/char column (docs/bits.md)."
)


def human(n: float | None, digits: int = 3) -> str:
    """``1234567 -> '1.23M'`` (k, M, G, T); None and nan -> ``'-'``."""
    if n is None or (isinstance(n, float) and not math.isfinite(n)):
        return "-"
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.{digits}g}{unit}"
    return f"{n:.{digits}g}"


def sci(x: float | None) -> str:
    """``6e12 -> '6.00e12'``; None -> ``'-'``."""
    if x is None or not math.isfinite(x):
        return "-"
    mant, exp = f"{x:.2e}".split("e")
    return f"{mant}e{int(exp)}"


def duration(seconds: float | None) -> str:
    """``192.4 -> '3m12s'``, ``42.0 -> '42s'``, ``3725 -> '1h02m'``; None -> ``'-'``."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def number(value: float) -> str:
    """``6e12 -> '6e12'``, ``2e9 -> '2e9'``, ``2.5e6 -> '2.5e6'``, ``300 -> '300'`` (3 significant digits)."""
    return re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", f"{value:.3g}")


def _params(r) -> str:
    if r.params_embedding is None or r.params_non_embedding is None:
        return human(r.params)
    return f"{human(r.params_embedding)} + {human(r.params_non_embedding)}"


#: The Markdown table of every run: header -> cell of a row.
TABLE = (
    ("tokenizer", lambda r: f"`{r.spec}`"),
    ("budget", lambda r: r.budget or "-"),
    ("seed", lambda r: "-" if r.seed is None else str(r.seed)),
    ("vocab", lambda r: f"{r.vocab_size:,}"),
    ("params (embedding + rest)", _params),
    ("held-out chars/token", lambda r: f"{r.chars_per_token:.3f}"),
    ("steps", lambda r: f"{r.steps:,}"),
    ("evals", lambda r: str(r.evals)),
    ("tokens seen", lambda r: human(r.tokens)),
    ("chars seen", lambda r: human(r.chars)),
    ("FLOPs", lambda r: sci(r.flops)),
    ("wall time", lambda r: duration(r.elapsed)),
    ("stopped by", lambda r: r.stop_reason or "-"),
    ("held-out bits/char", lambda r: f"{r.bits_per_char:.4f}"),
    ("unk", lambda r: f"{r.unk_share:.2%}"),
    ("round trip", lambda r: f"{r.round_trip_share:.2f}"),
    ("status", lambda r: status_of(r)),
)


def status_of(r) -> str:
    """``ok``, ``under-trained``, ``lossy`` or both (what keeps a run from being named best)."""
    flags = [f for f, on in (("under-trained", r.under_trained), ("lossy", r.lossy)) if on]
    return ", ".join(flags) or "ok"


def markdown_table(results: Sequence) -> str:
    """The results (:class:`~storygpt.compare.report.RunResult`) as a GitHub Markdown table, one row per run in the given order."""
    head = "| " + " | ".join(h for h, _ in TABLE) + " |"
    rule = "|" + "|".join("---" if i == 0 else "---:" for i in range(len(TABLE))) + "|"
    body = ["| " + " | ".join(cell(r) for _, cell in TABLE) + " |" for r in results]
    return "\n".join([head, rule, *body])


def sweep_section(sw) -> list[str]:
    """Budget sweep: the fitted curves (or why there are none) and the crossovers."""
    from storygpt.compare.analysis import PowerLawFit

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


def intrinsic_section(gs, correlations, lossless: int) -> list[str]:
    """The tokenizers' own measures on the held-out text and their rank correlations with bits/char
    (storygpt.eval.rankcorr; ``lossless``: how many of ``gs`` are lossless)."""
    from storygpt.eval.rankcorr import section_lines

    lines = [
        "## The tokenizers by themselves",
        "",
        "| tokenizer | tokens per word | chars/token | Renyi efficiency (alpha 2.5) | vocabulary used | mean token bytes "
        "| mean bits/char |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for g in sorted(gs, key=lambda g: g.mean):
        r = g.runs[0]
        fmt = lambda x, f: "-" if x is None else format(x, f)  # noqa: E731
        lines.append(
            f"| `{g.spec}` | {fmt(r.fertility, '.3f')} | {r.chars_per_token:.3f} | {fmt(r.renyi_efficiency, '.3f')} | "
            f"{fmt(r.vocab_used_share, '.1%')} | {fmt(r.mean_token_bytes, '.2f')} | {g.mean:.4f} |"
        )
    return lines + [""] + section_lines(correlations, lossless, len(gs))
