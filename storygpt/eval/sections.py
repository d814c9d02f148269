"""The optional sections of bits.py (and compare.py's report): attribution of a difference (--diff),
robustness to noise (--perturb) and vocabulary health (--vocab-health), each from the losses of
storygpt/eval/measure.py (no extra forward pass but the perturbed texts' own)."""

from __future__ import annotations

import math
from pathlib import Path


def add_arguments(ap) -> None:
    """bits.py's flags of these sections (an argument group of ``ap``)."""
    g = ap.add_argument_group("where the difference comes from (docs/attribution.md)")
    g.add_argument(
        "--eval",
        action="append",
        metavar="NAME=PATH",
        help="also measure on this named evaluation set (a UTF-8 file of documents separated by lines "
        "'<|endoftext|>'); repeatable. The held-out text (valid.txt or --text) stays the main figure, its "
        "documents (held-out works) its sets; every set gets its figure, plus their macro and micro means",
    )
    g.add_argument(
        "--diff",
        nargs=2,
        metavar=("A", "B"),
        help="also measure checkpoints A and B (if not listed) and split A's bits minus B's by character class, "
        "word position, word frequency in the training text, document and set, with paired intervals per set",
    )
    g.add_argument(
        "--html",
        metavar="FILE",
        help="with --diff: write an HTML page colouring the first --html-chars characters by A - B per character",
    )
    g.add_argument("--html-chars", type=int, default=4000, metavar="N", help="characters shown by --html (4000)")
    g.add_argument(
        "--perturb",
        metavar="KINDS",
        help="also measure a noisy copy of each text: comma-separated kinds of typos,case,spaces,unicode "
        "(docs/attribution.md; 10%% of words/spaces/look-alikes changed); prints the change in bits/char per model "
        "with a paired 95%% interval",
    )
    g.add_argument(
        "--save-losses",
        metavar="FILE",
        help="with one checkpoint: write its per-character losses (.npz: nats per character of every text, the "
        "texts' sha256, the sets' character ranges) for compare.py's attribution",
    )
    g.add_argument("--perturb-seed", type=int, default=0, metavar="N", help="seed of --perturb (default 0)")
    g.add_argument(
        "--vocab-health",
        action="store_true",
        help="per run: tokens never or rarely seen in its training .bin file and their share of the held-out "
        "tokens, embedding norms of unseen against seen tokens, tokens only used as steps towards longer merges",
    )


def training_word_counts(meta_a: dict, meta_b: dict) -> tuple[dict | None, str]:
    """Word counts of the training text A and B were trained on (train.txt of their corpus folder), or
    None with the reason when it is missing or differs between them."""
    from storygpt.data.docstream import iter_documents
    from storygpt.eval.charloss import count_words

    da, db = meta_a.get("data_dir"), meta_b.get("data_dir")
    if not da or not (Path(da) / "train.txt").is_file():
        return None, "no train.txt for A"
    if db and Path(db).resolve() != Path(da).resolve():
        ta, tb = Path(da) / "train.txt", Path(db) / "train.txt"
        if not tb.is_file() or ta.read_bytes() != tb.read_bytes():
            return None, "A and B were trained on different training texts"
    return count_words(iter_documents(Path(da) / "train.txt")), str(Path(da) / "train.txt")


def diff_section(name_a, name_b, texts, ma, mb, counts, block_chars, html_path, html_chars) -> tuple[str, dict]:
    """Attribution of A - B over all texts, per-set intervals, the HTML page; (printed text, JSON)."""
    import numpy as np

    from storygpt.eval.attribution import attribute, format_attribution, passage_html, splits_of
    from storygpt.eval.measure import set_char_ranges
    from storygpt.eval.sets import block_sums, format_intervals, set_intervals

    for t, a, b in zip(texts, ma, mb):
        if len(a.char_nats) != len(b.char_nats) or a.result.characters != b.result.characters:
            raise ValueError(f"--diff: {name_a} and {name_b} were measured on different texts ({t.name}); refused")
    a_all = np.concatenate([m.char_nats for m in ma])
    b_all = np.concatenate([m.char_nats for m in mb])
    att = attribute(a_all, b_all, splits_of(texts, counts))
    A, B, C = {}, {}, {}
    for t, a, b in zip(texts, ma, mb):
        for name, (lo, hi) in set_char_ranges(t).items():
            A[name], C[name] = block_sums(a.char_nats[lo:hi], block_chars)
            B[name] = block_sums(b.char_nats[lo:hi], block_chars)[0]
    iv = set_intervals(A, B, C)
    lines = [
        format_attribution(att, name_a, name_b),
        "",
        format_intervals(iv, name_a, name_b),
        f"  (each side is one checkpoint, one seed: the intervals resample held-out blocks of {block_chars:,} "
        "characters, so they cover the text's variation, not seeds'; compare.py runs seeds)",
    ]
    if not (ma[0].exact and mb[0].exact):
        lines.append("note: a lossy tokenizer's losses are spread evenly over each document (splits are rough)")
    if html_path:
        from storygpt.atomic import write_text

        text = "\n".join(texts[0].documents)[:html_chars]
        d = (ma[0].char_nats[: len(text)] - mb[0].char_nats[: len(text)]) / math.log(2)
        write_text(html_path, passage_html(text, d, name_a, name_b))
        lines.append(f"wrote {html_path}")
    iv_json = {
        k: (None if v is None else vars(v))
        for k, v in {**iv["sets"], "macro": iv["macro"], "micro": iv["micro"]}.items()
    }
    return "\n".join(lines), {"a": name_a, "b": name_b, **att, "intervals": iv_json}


def perturb_rows(model_name, tok, texts, clean, kinds, seed, block_chars, measure) -> list[dict]:
    """Per kind: clean and perturbed bits/char of one model over all texts, the change and its interval."""
    import numpy as np

    from storygpt.eval.perturb import change_interval, perturb_documents, sums_by_ends

    rows = []
    for kind in kinds:
        cn, cc, pn, pc = [], [], [], []
        for t, m in zip(texts, clean):
            docs, clean_ends, noisy_ends = perturb_documents(t.documents, kind, seed, block_chars)
            noisy = measure(t.__class__(t.name, docs, t.sets, t.doc_names))
            cn.append(sums_by_ends(m.char_nats, clean_ends))
            cc.append(np.diff(np.concatenate([[0], clean_ends])))
            pn.append(sums_by_ends(noisy.char_nats, noisy_ends))
            pc.append(np.diff(np.concatenate([[0], noisy_ends])))
        blocks = [np.concatenate(x) for x in (cn, cc, pn, pc)]
        clean_bpc = float(blocks[0].sum() / (math.log(2) * blocks[1].sum()))
        noisy_bpc = float(blocks[2].sum() / (math.log(2) * blocks[3].sum()))
        iv = change_interval(*blocks) if len(blocks[0]) >= 2 else None  # one block: no interval
        rows.append(
            {
                "name": model_name,
                "perturbation": kind,
                "clean_bits_per_character": clean_bpc,
                "perturbed_bits_per_character": noisy_bpc,
                "change": noisy_bpc - clean_bpc,
                "low": None if iv is None else iv.low,
                "high": None if iv is None else iv.high,
                "blocks": {
                    k: v.tolist() for k, v in zip(("clean_nats", "clean_chars", "noisy_nats", "noisy_chars"), blocks)
                },
            }
        )
    return rows


def format_perturbed(rows: list[dict], seed: int) -> str:
    lines = [f"robustness (--perturb-seed {seed}): bits/char clean -> perturbed, change [95% paired interval]"]
    w = max(len(r["name"]) for r in rows)
    for r in rows:
        lines.append(
            f"  {r['name'].ljust(w)}  {r['perturbation']:<8} {r['clean_bits_per_character']:.4f} -> "
            f"{r['perturbed_bits_per_character']:.4f}  {r['change']:+.4f} "
            + ("(one block: no interval)" if r["low"] is None else f"[{r['low']:+.4f}, {r['high']:+.4f}]")
        )
    return "\n".join(lines)


def run_vocab_health(model, tok, meta, texts) -> dict:
    """storygpt.eval.vocab_health for one run: its training .bin file, held-out tokens, embeddings.

    Raises:
        FileNotFoundError: the run's corpus folder or its train-SLUG.bin is missing.
    """
    import numpy as np

    from storygpt.data import read_header
    from storygpt.eval.bits import token_stream
    from storygpt.eval.vocab_health import token_counts, vocab_health

    data_dir = meta.get("data_dir")
    match = None
    for b in sorted(Path(data_dir).glob("train-*.bin")) if data_dir else []:
        try:
            if read_header(b)["fingerprint"] == tok.fingerprint()[:32]:
                match = b
                break
        except (OSError, ValueError, KeyError, AttributeError):
            continue
    if match is None:
        raise FileNotFoundError(
            f"--vocab-health: no training token file of this tokenizer in {data_dir} (run data.py for it)"
        )
    counts = token_counts(match, tok.vocab_size)
    held = np.concatenate([token_stream(tok, t.documents)[0][1:] for t in texts])
    return {"train_file": str(match), **vocab_health(tok, model, counts, held)}


def format_extras(rows, set_names, perturbed, seed, health, diff_text) -> str:
    """What bits.py prints after its table: the sets, robustness, vocabulary health and --diff sections
    (each preceded by an empty line; "" when none was measured)."""
    from storygpt.eval.measure import format_sets
    from storygpt.eval.vocab_health import format_health

    parts = []
    if len(set_names) > 1:
        parts.append(format_sets(rows, set_names))
    if perturbed:
        parts.append(format_perturbed(perturbed, seed))
    if health:
        parts.append("vocabulary health:\n" + "\n".join(format_health(n, h) for n, h in health.items()))
    if diff_text:
        parts.append(diff_text)
    return "".join(f"\n{p}\n" for p in parts)
