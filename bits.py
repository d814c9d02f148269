#!/usr/bin/env python3
"""Compare checkpoints in bits per character on the same held-out text.

    python bits.py checkpoints/word-rope/best.pt checkpoints/bpe-rope/best.pt

Loss per token cannot compare a word-level model with a BPE model (their
tokens are different units); bits per character can: each model encodes the
same characters with its own tokenizer, the cross-entropy of every predicted
token is added up (in nats), and the total is divided by ln 2 times the number
of characters.  The exact counting is in ``storygpt/eval/bits.py`` and
``docs/bits.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from pathlib import Path

from storygpt.cli import ToolParser, check_output, check_ranges

DEFAULT_CHARS = 2_000_000

CAVEAT = (
    "A lossy model (measured: some held-out document does not round-trip, or some token is <unk>; a "
    "word-level model, or an hf: tokenizer that lower-cases) does not have to predict what its tokenizer "
    "throws away: for a word-level model the spaces between words, new lines and other white space, and "
    "the spelling of every word outside its vocabulary (each becomes one <unk> prediction). Its bits per "
    "character is therefore a lower bound on the cost of writing the text, not a fair win over "
    "a BPE model, which predicts every character (round-trip share 1.0). Compare the unk share "
    "and round-trip columns before reading the bits column."
)

EPILOG = f"""\
what is counted:
  The text is split into documents at lines "<|endoftext|>". Each model encodes
  it with its own tokenizer as  [eot] doc1 [eot] doc2 ... [eot] docN  (documents
  as plain text: a literal "<|endoftext|>" inside one is not a control token).
  The leading eot is context only; every other token is predicted once.
  Characters = every character (Unicode code point) of every document + 1 for
  each of the N-1 document boundaries. bits/char = total nats / (ln 2 x chars).
  --chars cuts the text after exactly N characters (inside a document if need
  be); all checkpoints are measured on the same characters.

caveat:
{textwrap.fill(CAVEAT, 78, initial_indent="  ", subsequent_indent="  ")}

columns:
  name      the run folder of the checkpoint
  tokenizer the tokenizer SPEC it was trained with (e.g. tiktoken:gpt2,
            bpe:8192)
  vocab     vocabulary size (token ids, special tokens included)
  params    model parameters (all, embeddings included)
  steps     optimizer steps the checkpoint was trained for ("-": a file from
            before checkpoints recorded it)
  FLOPs     training FLOPs spent on it
  tokens    predicted tokens
  chars/tok characters per predicted token
  unk       share of predicted tokens that are <unk> (0 for BPE)
  rtrip     share of documents with decode(encode(doc)) == doc
  bits/char bits per character (lower is better)
  bits/byte bits per UTF-8 byte of the same text (bytes counted like characters:
            every byte of every document + 1 per boundary; never the tokenizer's)
  status    ok, under-trained (fewer steps than its warm-up or fewer than 3
            held-out evaluations: its bits/char says little), lossy (see the
            caveat), or both; as compare.py marks its runs

evaluation sets: each held-out work (document) of valid.txt or --text, and each
  --eval NAME=PATH file: each set's bits/char and bits/byte, their macro mean
  (each set weighs the same) and micro mean (all nats over all characters). The
  table's figures are the held-out text's. One forward pass per model per text.

--diff A B: A's bits minus B's, split by character class, position in a word,
  the word's frequency in the training text (frequent >= 100, rare, unseen), by
  document and by set; a token's loss is spread evenly over its UTF-8 bytes (see
  docs/bits.md). Per-set differences get paired bootstrap intervals.
"""


def is_lossy(round_trip_share: float, unknown_share: float) -> bool:
    """A measured model is lossy when some held-out document does not come back from its tokens or some token is
    ``<unk>``: its bits per character then leaves part of the text out (whatever the tokenizer's kind)."""
    return round_trip_share < 1.0 or unknown_share > 0.0


def build_parser() -> argparse.ArgumentParser:
    ap = ToolParser(
        prog="bits.py",
        description="Measure checkpoints in bits per character on the same held-out text, side by side.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "checkpoints",
        nargs="*",
        metavar="CKPT",
        help="checkpoint files (checkpoints/RUN/best.pt or ckpt.pt) or run folders (best.pt is used, else ckpt.pt)",
    )
    ap.add_argument(
        "--text",
        metavar="FILE",
        help="measure on this UTF-8 file (documents separated by lines '<|endoftext|>') instead of the "
        "validation split <data_dir>/valid.txt of the corpus the checkpoints were trained on",
    )
    from storygpt.eval.sections import add_arguments

    add_arguments(ap)
    ap.add_argument(
        "--chars",
        type=int,
        default=DEFAULT_CHARS,
        metavar="N",
        help=f"measure the first N characters of the text (default {DEFAULT_CHARS:,}; all of it when shorter; "
        "0 = all of it)",
    )
    ap.add_argument(
        "--stride",
        type=int,
        default=None,
        metavar="S",
        help="step between windows in tokens (default: the model's context length, i.e. back-to-back windows); "
        "smaller values overlap windows so each token after the first window gets at least "
        "context-S tokens of context; every token is still predicted once",
    )
    ap.add_argument(
        "--batch-size",
        type=int,
        default=None,
        metavar="B",
        help="windows per forward pass (default: 8192 input tokens' worth, e.g. 64 windows of 128)",
    )
    ap.add_argument(
        "--dtype",
        choices=("auto", "float32", "bfloat16", "float16"),
        default="auto",
        help="compute dtype (autocast; the cross-entropy is float32 either way). auto: as pretrain.py, bfloat16 "
        "on CUDA (float16 where unsupported) and on a CPU with native bfloat16, else float32 (bfloat16 agrees "
        "with float32 within 0.0001 bits/char on the checkpoints measured in docs/bits.md)",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=0,
        metavar="N",
        help="torch CPU threads (default 0 = time one batch on 1 thread and on all usable cores, keep the faster)",
    )
    ap.add_argument(
        "--device",
        default="auto",
        help="torch device: auto (cuda, then mps, then cpu), cpu, cuda, cuda:1, mps (default auto)",
    )
    ap.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="FILE",
        help="one JSON object (the text measured and one record per checkpoint: name, tokenizer, vocab_size, "
        "parameters, tokens, characters_per_token, unknown_share, round_trip_share, bits_per_character, ...): "
        "--json alone prints it instead of the table; --json FILE writes it to FILE (atomically) and prints "
        "the table as well. Put --json after the checkpoints (or write --json=FILE)",
    )
    ap.add_argument(
        "--block-chars",
        type=int,
        default=None,
        metavar="N",
        help="with --json: also record the cross-entropy of every block of N held-out characters (the blocks "
        "compare.py's paired bootstrap resamples) and the tokenizer's own measures "
        "(Renyi efficiency, vocabulary share used, mean token bytes)",
    )
    ap.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress output (by default a tqdm bar on a terminal, else a line per model and per 10%% on stderr)",
    )
    from storygpt.tasks.tool import add_arguments as add_task_arguments

    add_task_arguments(ap)
    return ap


class ProgressLines:
    """Progress for a non-terminal stderr (a log file, a pipe): a line when a model starts and at each 10%."""

    def __init__(self, name: str, stream=None):
        import time

        self.name, self.stream, self.t0, self.next = name, stream or sys.stderr, time.perf_counter(), 10
        print(f"bits.py: {name}: measuring", file=self.stream, flush=True)

    def __call__(self, done: int, total: int) -> None:
        import time

        pct = 100 * done // total
        if pct >= self.next:
            self.next = (pct // 10 + 1) * 10
            elapsed = time.perf_counter() - self.t0
            print(
                f"bits.py: {self.name}: {pct}% ({done:,} of {total:,} tokens, {elapsed:.1f} s)",
                file=self.stream,
                flush=True,
            )


class ProgressBar:
    """A tqdm bar over the predicted tokens of one model."""

    def __init__(self, name: str):
        from tqdm.auto import tqdm

        self.bar = tqdm(desc=name, unit="tok", unit_scale=True, leave=False)

    def __call__(self, done: int, total: int) -> None:
        self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        self.bar.close()


def load_text(args, loaded) -> tuple[list[str], str]:
    """The documents every checkpoint is measured on, and a description of them.

    Raises:
        ValueError: checkpoints trained on different held-out text without --text.
        FileNotFoundError: a missing --text file or validation split.
    """
    from storygpt.eval.bits import read_characters

    n = args.chars if args.chars > 0 else None
    if args.text:
        docs = read_characters(args.text, n)
        return docs, str(args.text)
    sources = []
    for path, (_, _, ckpt) in loaded.items():
        data_dir = ckpt.get("data_dir")
        corpus = ckpt.get("corpus", "?")
        if not data_dir:
            raise ValueError(
                f"checkpoint {path} does not record the corpus it was trained on (no data_dir); pass --text FILE"
            )
        valid = Path(data_dir) / "valid.txt"
        if not valid.is_file():
            raise FileNotFoundError(
                f"checkpoint {path} was trained on corpus {corpus!r} but its validation split {valid} is missing; "
                f"run data.py for that corpus again or pass --text FILE"
            )
        sources.append((path, corpus, valid))
    texts = {}
    for _path, _corpus, valid in sources:
        key = str(valid.resolve())
        if key not in texts:
            texts[key] = read_characters(valid, n)
    if len(texts) > 1:
        first = texts[next(iter(texts))]
        if any(t != first for t in texts.values()):
            lines = "\n".join(f"  {p}: corpus {c!r}, {v}" for p, c, v in sources)
            raise ValueError(
                "the checkpoints were trained on different corpora, so their held-out texts differ and "
                f"their bits per character would not be comparable:\n{lines}\n"
                "measure them separately, or pass --text FILE to measure all of them on the same text"
            )
    docs = next(iter(texts.values()))
    return docs, str(sources[0][2])


def status_of(under_trained: str | None, lossy: bool, known: bool = True) -> str:
    """``ok``, ``under-trained``, ``lossy`` or both, as compare.py's table marks its runs; ``-`` when the
    checkpoint predates the record of its training (``known`` False) and is not lossy."""
    flags = [f for f, on in (("under-trained", under_trained), ("lossy", lossy)) if on]
    return ", ".join(flags) or ("ok" if known else "-")


def run_name(path: Path, all_paths: list[Path]) -> str:
    name = path.parent.name or str(path.parent)
    if sum(1 for p in all_paths if (p.parent.name or str(p.parent)) == name) > 1:
        name = f"{name}/{path.name}"
    return name


def format_table(rows: list[dict]) -> str:
    head = [
        "name",
        "tokenizer",
        "vocab",
        "params",
        "steps",
        "FLOPs",
        "tokens",
        "chars/tok",
        "unk",
        "rtrip",
        "bits/char",
        "bits/byte",
        "status",
    ]
    body = []
    for r in rows:
        body.append(
            [
                r["name"],
                r["spec"],
                f"{r['vocab_size']:,}",
                f"{r['parameters'] / 1e6:.2f}M",
                "-" if r.get("steps") is None else f"{r['steps']:,}",
                "-" if r.get("train_flops") is None else f"{r['train_flops']:.3g}",
                f"{r['tokens']:,}",
                f"{r['characters_per_token']:.3f}",
                f"{r['unknown_share']:.2%}",
                f"{r['round_trip_share']:.2f}",
                f"{r['bits_per_character']:.4f}",
                f"{r['bits_per_byte']:.4f}",
                r["status"],
            ]
        )
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(b) for b in body])


def pick_threads(model, tok, docs, block_size: int, dtype) -> int:
    """Time one batch of the text's first windows on 1 thread and on all usable cores; the faster count."""
    import torch

    from storygpt.eval.bits import default_batch_size, window_nats
    from storygpt.runtime import autocast_for, fastest_threads, usable_cores

    cores = usable_cores()
    if cores <= 1:
        return 1
    ids = [tok.eot_id]
    for d in docs:
        ids += tok.encode_ordinary(d[: 8 * block_size])
        if len(ids) > block_size * default_batch_size(block_size):
            break
    if len(ids) < block_size + 1:
        return 1  # too little text to be worth the timing
    n = min((len(ids) - 1) // block_size, default_batch_size(block_size))
    stream = torch.tensor(ids[: n * block_size + 1])
    windows = [(i * block_size, (i + 1) * block_size, i * block_size + 1) for i in range(n)]
    with torch.inference_mode(), autocast_for("cpu", dtype):
        return fastest_threads(lambda: window_nats(model, stream, windows, batch_size=n), [1, cores])[0]


# allowed values (storygpt.cli.check_ranges); --threads 0 and --chars 0 mean "choose" and "all of it"
RANGES = {
    "stride": (1, None),
    "threads": (0, None),
    "batch_size": (1, None),
    "chars": (0, None),
    "html_chars": (1, None),
    "perturb_seed": (0, 2**32 - 1),  # numpy's seed range
    "block_chars": (1, None),
}


def texts_to_measure(args, loaded, eval_sets):
    """The texts every checkpoint is measured on (storygpt.eval.measure.Text): the held-out text (--text or
    valid.txt, its documents its sets) first, then each --eval set; and the source shown."""
    from storygpt.eval.measure import texts_of

    docs, source = load_text(args, loaded)
    texts = texts_of(docs, Path(source), named=not args.text)
    held = {name for name, _ in texts[0].sets}
    for s in eval_sets:  # one name per figure: an --eval set must not replace a set of the held-out text
        if s.name in held:
            raise ValueError(
                f"--eval {s.name}={s.path}: {s.name!r} is already a set of the held-out text "
                f"({', '.join(sorted(held))}); choose another NAME"
            )
    texts += texts_of(eval_sets=eval_sets)
    return texts, ", ".join([source, *(f"{s.name}={s.path}" for s in eval_sets)])


def check_task_arguments(parser, args) -> None:
    """Refuse bad task flags in one line (exit 2) before anything is loaded; sets ``args.task_names``."""
    from storygpt.cli import check_output
    from storygpt.tasks import TaskError
    from storygpt.tasks.tool import check_task_flags

    if args.tasks is not None and args.task_items >= 1:
        check_output(parser, "--task-dir", args.task_dir, folder=True)
    try:
        args.task_names = check_task_flags(
            args.tasks, items=args.task_items, task_dir=args.task_dir, task_data=args.task_data
        )
    except TaskError as e:
        parser.error(str(e))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_ranges(parser, args, RANGES)
    check_task_arguments(parser, args)
    if args.json not in (None, "-") and (args.json.endswith(".pt") or Path(args.json).is_dir()):
        parser.error(
            f"--json {args.json}: not a JSON file name (a checkpoint or a folder); put --json after the "
            "checkpoints to print JSON, or give --json FILE.json"
        )
    if not args.checkpoints and not args.diff:
        parser.error("give at least one checkpoint (or --diff A B)")
    if args.save_losses and (len(args.checkpoints) != 1 or args.diff):
        parser.error(f"--save-losses {args.save_losses}: give exactly one checkpoint (and no --diff)")
    if args.html and not args.diff:
        parser.error("--html colours the difference of --diff A B; give --diff")
    for flag, path in (("--json", args.json), ("--save-losses", args.save_losses), ("--html", args.html)):
        check_output(parser, flag, path)
    try:
        if args.text and Path(args.text).is_dir():
            raise FileNotFoundError(f"--text {args.text}: is a folder, not a text file")
        if args.text and not Path(args.text).is_file():
            raise FileNotFoundError(f"--text file not found: {args.text}")
        from storygpt.data.evalsets import read_eval_sets
        from storygpt.eval.perturb import parse_kinds

        kinds = parse_kinds(args.perturb)
        from storygpt.eval.bits import take_characters

        n = args.chars if args.chars > 0 else None
        eval_sets = read_eval_sets(args.eval, lambda docs: take_characters(docs, n))  # before any model loads
        import torch

        from storygpt import load_checkpoint
        from storygpt.checkpoint import data_dir_of, resolve_checkpoint, trained_of
        from storygpt.cli import show
        from storygpt.data.evalsets import summarize
        from storygpt.eval.bits import count_characters
        from storygpt.eval.measure import add_set_blocks, measure_text, save_losses
        from storygpt.eval.sections import (
            diff_section,
            format_extras,
            perturb_rows,
            run_vocab_health,
            training_word_counts,
        )
        from storygpt.runtime import pick_dtype, resolve_device

        if args.diff and resolve_checkpoint(args.diff[0]).resolve() == resolve_checkpoint(args.diff[1]).resolve():
            raise ValueError(f"--diff {args.diff[0]} {args.diff[1]}: the same checkpoint twice")
        device = resolve_device(args.device)
        paths = []
        for p in (resolve_checkpoint(p) for p in [*args.checkpoints, *(args.diff or [])]):
            if all(p.resolve() != q.resolve() for q in paths):  # the same file twice is measured once
                paths.append(p)
        loaded = {}
        for p in paths:  # on the CPU first: only the model that is being measured goes to the device
            model, tok, ckpt = load_checkpoint(str(p), device="cpu")
            meta = {"data_dir": data_dir_of(ckpt, p), "corpus": ckpt.get("corpus"), "config": ckpt.get("config")}
            meta["trained"] = trained_of(ckpt) or {}
            meta["spec"] = ckpt.get("spec")
            loaded[p] = (model, tok, meta)
            del ckpt  # the optimizer state and the rest are not needed
        texts, source = texts_to_measure(args, loaded, eval_sets)
        if args.task_names:  # --tasks: task scores instead of bits per character of the text
            from storygpt.tasks import tool as task_tool

            report = task_tool.run(
                paths,
                loaded,
                texts[0].documents,
                source,
                device,
                run_name,
                names=args.task_names,
                task_dir=args.task_dir,
                task_data=args.task_data,
                items=args.task_items,
                seed=args.task_seed,
                threads=args.threads,
                dtype=args.dtype,
                progress=args.json != "-" and not args.no_progress,
            )
            if args.json == "-":
                print(json.dumps(report, indent=2))
            else:
                if args.json is not None:
                    task_tool.write_json(args.json, report)
                print(task_tool.format_report(report))
            return 0
        n_chars = count_characters(texts[0].documents)
        n_docs = len(texts[0].documents)
        set_names = [name for t in texts for name, _ in t.sets]
        if args.json != "-":
            print(
                f"text: {show(source)}: {n_chars:,} characters in {n_docs:,} document{'s' if n_docs != 1 else ''}"
                f"{f', {len(set_names)} sets' if len(set_names) > 1 else ''}; device {device}",
                flush=True,
            )
        diff_paths = [resolve_checkpoint(p) for p in args.diff] if args.diff else []
        diff_paths = [next(q for q in paths if q.resolve() == p.resolve()) for p in diff_paths]
        per_char = bool(args.diff or kinds or args.block_chars or args.save_losses)
        kept, rows, perturbed, health = {}, [], [], {}
        block_chars = args.block_chars or 2000
        for p in paths:
            model, tok, ckpt = loaded[p]
            model.to(device)
            block_size = int((ckpt.get("config") or {}).get("block_size") or model.config.block_size)
            stride = args.stride
            if stride is not None and stride > block_size:
                raise ValueError(f"--stride {stride} is larger than the context length {block_size} of {p}")
            name = run_name(p, paths)
            dtype = pick_dtype(args.dtype, torch.device(device))
            if device == "cpu":
                torch.set_num_threads(args.threads or pick_threads(model, tok, texts[0].documents, block_size, dtype))
            progress = None
            if not args.no_progress:
                progress = ProgressBar(name) if sys.stderr.isatty() else ProgressLines(name)
            kw = dict(block_size=block_size, stride=stride, batch_size=args.batch_size, device=device, dtype=dtype)
            measured = [measure_text(model, tok, t, per_character=per_char, progress=progress, **kw) for t in texts]
            if isinstance(progress, ProgressBar):
                progress.close()
            res = measured[0].result  # the held-out text; the --eval sets are in "sets" and the means
            if not math.isfinite(res.bits_per_character):
                print(f"warning: {name}: bits per character is not finite", file=sys.stderr)
            sets = {k: v for m in measured for k, v in m.set_figures.items()}
            rows.append(
                dict(
                    name=name,
                    checkpoint=str(p),
                    corpus=ckpt.get("corpus"),
                    tokenizer=tok.kind,
                    spec=ckpt["spec"] or f"{tok.kind}:{tok.vocab_size}",  # a file from before SPECs: KIND:VOCAB
                    vocab_size=tok.vocab_size,
                    parameters=sum(t.numel() for t in model.parameters()),
                    block_size=block_size,
                    stride=stride or block_size,
                    **res.to_dict(),
                    lossy=is_lossy(res.round_trip_share, res.unknown_share),
                    sets=sets,
                    **summarize(sets),
                    steps=ckpt["trained"].get("steps"),
                    train_flops=ckpt["trained"].get("flops"),
                    under_trained=ckpt["trained"].get("under_trained"),
                )
            )
            known = "under_trained" in ckpt["trained"]
            rows[-1]["status"] = status_of(rows[-1]["under_trained"], rows[-1]["lossy"], known)
            if args.block_chars is not None:
                from storygpt.eval.heldout import block_losses, intrinsic_measures
                from storygpt.eval.intrinsic import fertility

                blocks = block_losses(tok, texts[0].documents, measured[0].token_nats, args.block_chars)
                rows[-1].update(
                    block_chars=args.block_chars,
                    block_nats=blocks.nats,
                    block_characters=blocks.chars,
                    blocks_exact=blocks.exact,
                    **{k: v for k, v in intrinsic_measures(tok, texts[0].documents).items() if k != "chars_per_token"},
                    fertility=fertility(tok, texts[0].documents),
                )
                add_set_blocks(sets, texts, measured, args.block_chars)
            if args.save_losses:
                save_losses(args.save_losses, texts, measured)
            if kinds:
                perturbed += perturb_rows(
                    name,
                    tok,
                    texts,
                    measured,
                    kinds,
                    args.perturb_seed,
                    block_chars,
                    lambda t, model=model, tok=tok: measure_text(model, tok, t, per_character=True, **kw),
                )
            if args.vocab_health:
                health[name] = run_vocab_health(model, tok, ckpt, texts)
            if p in diff_paths:
                kept[p] = measured
            del model
            loaded[p] = (None, tok, ckpt)
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
        diff_text = diff_json = None
        if args.diff:
            pa, pb = diff_paths
            counts, where = training_word_counts(loaded[pa][2], loaded[pb][2])
            diff_text, diff_json = diff_section(
                run_name(pa, paths),
                run_name(pb, paths),
                texts,
                kept[pa],
                kept[pb],
                counts,
                block_chars,
                args.html,
                args.html_chars,
            )
            diff_json["word_counts_from"] = where
            if counts is None:
                diff_text += f"\n(no split by word frequency: {where})"
    except (FileNotFoundError, ValueError, KeyError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"bits.py: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nbits.py: interrupted", file=sys.stderr)
        return 130

    report = {
        "text": source,
        "characters": n_chars,
        "documents": n_docs,
        "sets": set_names,
        "device": device,
        "results": rows,
    }
    if diff_json is not None:
        report["diff"] = diff_json
    if kinds:
        report["perturbations"] = {"kinds": kinds, "seed": args.perturb_seed, "rows": perturbed}
    if health:
        report["vocab_health"] = health
    if args.json == "-":
        print(json.dumps(report, indent=2))
    else:
        if args.json is not None:
            from storygpt.atomic import write_text

            try:
                write_text(args.json, json.dumps(report, indent=2) + "\n")
            except OSError as e:
                print(f"bits.py: error: --json {args.json}: {e.strerror or e}", file=sys.stderr)
                return 2
        print(format_table(rows))
        print(format_extras(rows, set_names, perturbed, args.perturb_seed, health, diff_text), end="")
        if any(r["lossy"] for r in rows):
            print("\n" + textwrap.fill("note: " + CAVEAT, 100))
        for r in rows:
            if r["under_trained"]:
                print(f"\nnote: {r['name']} is under-trained ({r['under_trained']}): its bits/char says little")
    return 0


if __name__ == "__main__":
    from storygpt.cli import run

    run(main)
