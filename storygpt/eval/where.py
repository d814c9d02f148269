"""compare.py's report sections on where the difference comes from (issue 33): evaluation sets,
attribution, robustness and vocabulary health, from each run's bits.json record (bits.py --json with
--block-chars, --perturb, --vocab-health) and per-character losses (bits.py --save-losses).

Every section compares the best tokenizer (lowest mean bits per character over its seeds) against each
of the others.  Seeds: block losses and per-character losses are averaged over a tokenizer's seeds
before the paired bootstrap resamples the blocks (per set: storygpt/eval/sets.py, which also
resamples seeds when the per-seed blocks are given).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from storygpt.eval import attribution, perturb, sets


def bits_record(report: dict) -> dict:
    """One run's figures out of its bits.py --json report (one checkpoint measured): its result row with
    ``perturbations`` (its rows) and ``vocab_health`` added when measured."""
    [row] = report["results"]
    rec = dict(row)
    if "perturbations" in report:
        rec["perturbations"] = [p for p in report["perturbations"]["rows"] if p["name"] == row["name"]]
    if "vocab_health" in report:
        rec["vocab_health"] = report["vocab_health"].get(row["name"])
    return rec


def _by_spec(runs: Sequence[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in runs:
        out.setdefault(r["spec"], []).append(r)
    return out


def best_spec(runs: Sequence[dict]) -> str:
    """The tokenizer with the lowest mean bits per character over its seeds."""
    groups = _by_spec(runs)
    return min(groups, key=lambda s: float(np.mean([r["bits"]["bits_per_character"] for r in groups[s]])))


def sets_section(runs: Sequence[dict]) -> tuple[list[str], dict]:
    """Markdown lines and JSON: bits/char and bits/byte per set and tokenizer (seed means), and each
    tokenizer's difference from the best per set, macro and micro, with paired intervals (seeds resampled).
    Runs without per-set blocks (bits.py --block-chars) are left out."""
    groups = _by_spec(runs)
    if not runs or not all(r["bits"].get("sets") for r in runs):
        return [], {}
    if not all("block_nats" in s for r in runs for s in r["bits"]["sets"].values()):
        return [], {}
    best = best_spec(runs)
    names = list(runs[0]["bits"]["sets"])
    lines = ["## Evaluation sets", "", "bits/char (bits/byte), the mean over seeds:", ""]
    lines.append("| set | " + " | ".join(groups) + " |")
    lines.append("|---|" + "---|" * len(groups))
    for n in names + ["macro mean", "micro mean"]:
        cells = []
        for rs in groups.values():
            if n in names:
                c = np.mean([r["bits"]["sets"][n]["bits_per_character"] for r in rs])
                b = np.mean([r["bits"]["sets"][n]["bits_per_byte"] for r in rs])
            else:
                k = n.split()[0]
                c = np.mean([r["bits"][f"{k}_bits_per_character"] for r in rs])
                b = np.mean([r["bits"][f"{k}_bits_per_byte"] for r in rs])
            cells.append(f"{c:.4f} ({b:.4f})")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    out = {"best": best, "differences": {}}

    def blocks(rs, n):
        return np.array([r["bits"]["sets"][n]["block_nats"] for r in rs])

    chars = {n: np.array(runs[0]["bits"]["sets"][n]["block_characters"]) for n in names}
    for spec, rs in groups.items():
        if spec == best:
            continue
        iv = sets.set_intervals({n: blocks(rs, n) for n in names}, {n: blocks(groups[best], n) for n in names}, chars)
        lines += ["", f"{spec} - {best}, bits/char, 95% paired interval:", ""]
        lines.append("| set | difference | interval |")
        lines.append("|---|---|---|")
        rows = {**iv["sets"], "macro mean": iv["macro"], "micro mean": iv["micro"]}
        for n, v in rows.items():
            lines.append(
                f"| {n} | " + ("- | too short |" if v is None else f"{v.diff:+.4f} | [{v.low:+.4f}, {v.high:+.4f}] |")
            )
        out["differences"][spec] = {n: (None if v is None else vars(v)) for n, v in rows.items()}
    return lines, out


def mean_losses(paths: Sequence[Path]) -> tuple[np.ndarray, str, dict[str, tuple[int, int]], bool]:
    """The per-character losses of a tokenizer's seeds (bits.py --save-losses files) averaged, with the
    texts' sha256, the set ranges and whether every spreading was exact.

    Raises:
        ValueError: the files hold losses of different texts.
    """
    loaded = [np.load(p) for p in paths]
    digests = {str(x["text_sha256"]) for x in loaded}
    if len(digests) != 1:
        raise ValueError(f"{', '.join(map(str, paths))}: losses of different texts; measure them on the same text")
    ranges = {str(n): (int(a), int(b)) for n, (a, b) in zip(loaded[0]["set_names"], loaded[0]["set_ranges"])}
    nats = np.mean([x["char_nats"] for x in loaded], axis=0)
    return nats, digests.pop(), ranges, all(bool(x["exact"]) for x in loaded)


def attribution_section(runs: Sequence[dict], texts, train_counts, html_dir: Path | None) -> tuple[list[str], dict]:
    """Markdown lines and JSON: the best tokenizer against each other one, split by character class,
    position, word frequency in the training text, document and set (storygpt/eval/attribution.py);
    an HTML page per pair in ``html_dir``.  ``texts``: the measured texts (storygpt.eval.measure.Text).

    Raises:
        ValueError: runs measured on different texts.
    """
    groups = _by_spec(runs)
    if not runs or not all(r.get("losses") for r in runs):
        return [], {}
    best = best_spec(runs)
    means = {s: mean_losses([r["losses"] for r in rs]) for s, rs in groups.items()}
    if len({m[1] for m in means.values()}) != 1:
        raise ValueError("the runs' per-character losses are of different texts: attribution refused")
    splits = attribution.splits_of(texts, train_counts)
    lines = ["## Where the difference comes from", ""]
    lines.append(
        "Each token's loss spread evenly over its UTF-8 bytes, a character's loss the sum over its bytes "
        "(docs/attribution.md); the losses are the mean over seeds. Positive: the tokenizer spends more "
        f"bits than {best}. Each split's parts add up to the total."
    )
    out = {"best": best, "pairs": {}}
    text = "\n".join(texts[0].documents) if texts else ""
    for spec in groups:
        if spec == best:
            continue
        att = attribution.attribute(means[spec][0], means[best][0], splits)
        out["pairs"][spec] = att
        lines += [
            "",
            f"### {spec} - {best}: {att['total_bits']:+,.0f} bits ({att['bits_per_character']:+.4f} bits/char)",
        ]
        if not (means[spec][3] and means[best][3]):
            lines.append("(a lossy tokenizer: its losses are spread evenly over each document; splits are rough)")
        for key, rows in att["splits"].items():
            if key == "document" and len(rows) > 12:
                continue
            lines += ["", f"by {key}:", "", "| part | characters | bits | share of \\|bits\\| |", "|---|---|---|---|"]
            for r in rows:
                lines.append(f"| {r['part']} | {r['characters']:,} | {r['bits']:+,.1f} | {r['share']:.1%} |")
        if html_dir is not None and text:
            from storygpt.atomic import write_text

            n = min(4000, len(text))
            d = (means[spec][0][:n] - means[best][0][:n]) / attribution.LN2
            page = Path(html_dir) / f"attribution-{spec.replace(':', '-')}.html"
            write_text(page, attribution.passage_html(text[:n], d, spec, best))
            lines += ["", f"The first {n:,} characters coloured by the difference: {page.name}"]
    return lines, out


def robustness_section(runs: Sequence[dict]) -> tuple[list[str], dict]:
    """Markdown lines and JSON: per tokenizer and perturbation, the change in bits/char (seeds' blocks added
    up) with a paired interval over the blocks."""
    if not runs or not all(r["bits"].get("perturbations") for r in runs):
        return [], {}
    groups = _by_spec(runs)
    kinds = [p["perturbation"] for p in runs[0]["bits"]["perturbations"]]
    lines = ["## Robustness", "", "Change in bits/char from the clean to the perturbed held-out text "]
    lines[-1] += "(docs/attribution.md), 95% paired interval:"
    lines += ["", "| tokenizer | " + " | ".join(kinds) + " |", "|---|" + "---|" * len(kinds)]
    out = {}
    for spec, rs in groups.items():
        cells = []
        for k in kinds:
            rows = [next(p for p in r["bits"]["perturbations"] if p["perturbation"] == k) for r in rs]
            fields = ("clean_nats", "clean_chars", "noisy_nats", "noisy_chars")
            arr = [np.mean([np.array(p["blocks"][f], dtype=float) for p in rows], axis=0) for f in fields]
            iv = perturb.change_interval(*arr) if len(arr[0]) >= 2 else None
            change = float(arr[2].sum() / arr[3].sum() - arr[0].sum() / arr[1].sum()) / attribution.LN2
            out.setdefault(spec, {})[k] = {"change": change, **({} if iv is None else {"low": iv.low, "high": iv.high})}
            cells.append(f"{change:+.4f}" + ("" if iv is None else f" [{iv.low:+.4f}, {iv.high:+.4f}]"))
        lines.append(f"| {spec} | " + " | ".join(cells) + " |")
    return lines, out


def health_section(runs: Sequence[dict]) -> tuple[list[str], dict]:
    """Markdown lines and JSON: vocabulary health per tokenizer (seed means)."""
    if not runs or not all(r["bits"].get("vocab_health") for r in runs):
        return [], {}
    keys = (
        ("never_seen", "never seen", "{:,.0f}"),
        ("rarely_seen", "seen 1-9 times", "{:,.0f}"),
        ("unlearned_share", "not learned (share of vocabulary)", "{:.1%}"),
        ("heldout_share_never_seen", "held-out tokens never seen", "{:.3%}"),
        ("embedding_norm_seen", "embedding norm, seen", "{:.3f}"),
        ("embedding_norm_never_seen", "embedding norm, never seen", "{:.3f}"),
        ("intermediate", "only steps towards longer merges", "{:,.0f}"),
    )
    groups = _by_spec(runs)
    lines = ["## Vocabulary health", "", "Per tokenizer, the mean over seeds (docs/attribution.md):", ""]
    lines += ["| measure | " + " | ".join(groups) + " |", "|---|" + "---|" * len(groups)]
    out = {}
    for key, label, fmt in keys:
        cells = []
        for spec, rs in groups.items():
            vals = [r["bits"]["vocab_health"].get(key) for r in rs]
            v = None if any(x is None for x in vals) else float(np.mean(vals))
            out.setdefault(spec, {})[key] = v
            cells.append("-" if v is None else fmt.format(v))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines, out


def report_sections(runs: Sequence[tuple[str, object, Path]], out_dir: Path, data_dir: Path | None) -> tuple[str, dict]:
    """All four sections for compare's report.md (markdown text, "" when nothing was measured) and
    results.json (``where``).

    Args:
        runs: ``(spec, seed, run folder)`` of every run of one budget; each folder holds bits.json (bits.py
            --json) and, for attribution, losses.npz (bits.py --save-losses).
        out_dir: the report folder (the attribution pages are written there).
        data_dir: the corpus folder (its train.txt gives the word frequencies; None: no frequency split).

    Raises:
        ValueError: runs measured on different texts (attribution refused), or an unreadable bits.json.
    """
    import json

    from storygpt.eval.charloss import count_words
    from storygpt.eval.measure import load_texts

    recs = []
    for spec, seed, folder in runs:
        path = Path(folder) / "bits.json"
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: {e}") from None
        losses = Path(folder) / "losses.npz"
        recs.append(
            {"spec": spec, "seed": seed, "bits": bits_record(report), "losses": losses if losses.is_file() else None}
        )
    sections = [("sets", sets_section)]
    if recs and all(r["losses"] for r in recs):
        texts = load_texts(np.load(recs[0]["losses"]))
        train = Path(data_dir) / "train.txt" if data_dir else None
        counts = None
        if train is not None and train.is_file():
            from storygpt.data.docstream import iter_documents

            counts = count_words(iter_documents(train))
        sections.append(("attribution", lambda rs: attribution_section(rs, texts, counts, out_dir)))
    sections += [("robustness", robustness_section), ("vocab_health", health_section)]
    lines, doc = [], {}
    for key, make in sections:
        part, js = make(recs)
        if part:
            lines += [*part, ""]
            doc[key] = js
    return "\n".join(lines), doc


def write_sections(report_dir: Path, results: Sequence, data_dir: Path | None) -> bool:
    """Append the sections to ``report_dir/report.md`` and add ``where`` to its results.json (both rewritten
    atomically), for the runs of the last budget of ``results`` (storygpt.compare.report.RunResult).
    False when there was nothing to add.

    Raises:
        ValueError: see :func:`report_sections`.
    """
    import json

    from storygpt.atomic import write_text

    if not results:
        return False
    last = results[-1].budget
    runs = [(r.spec, r.seed, Path(r.run_dir)) for r in results if r.budget == last]
    text, doc = report_sections(runs, Path(report_dir), data_dir)
    if not text:
        return False
    md = Path(report_dir) / "report.md"
    body = md.read_text(encoding="utf-8")
    at = body.find("\n## Every run")
    body = body[: at + 1] + text + "\n" + body[at + 1 :] if at >= 0 else body + "\n" + text
    write_text(md, body)
    rj = Path(report_dir) / "results.json"
    if rj.is_file():
        full = json.loads(rj.read_text(encoding="utf-8"))
        full["where"] = doc
        write_text(rj, json.dumps(full, indent=2) + "\n")
    return True
