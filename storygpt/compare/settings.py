"""What a tokenizer comparison is (compare.py's pieces without the command line and the subprocesses).

compare.py's option values (:class:`CompareOptions`, made once by the tool from its command line), the
settings every run shares (:class:`Settings`), the SPECs, the budget and the model shape read from those
options, the FLOPs-per-token estimate that spaces the evaluations, the run folders and their
state (:class:`Run`: refused, finished, measured), the token files data.py leaves and whether they were made
with other BPE options, and the figures the report is made of (:func:`collect`, :func:`status_line`).
Problems are :class:`CompareError`, one line each.  compare.py runs the tools (storygpt.compare.toolrun).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

from storygpt.cli import show
from storygpt.compare import toolrun
from storygpt.compare.analysis import BUDGETS, SHORT, budget_kind, budget_to_train
from storygpt.compare.report import ReportError, ReportMeta, result_from_files
from storygpt.compare.report_tables import duration, human, number, sci
from storygpt.data.corpora import written_slug

#: The tokenizers of ``python compare.py`` with no SPEC (docs/compare.md gives the time on 2 CPU cores).
DEFAULT_SPECS = ("byte", "bpe:512", "bpe:2048", "bpe:8192", "word:10000")
#: The default budget: training FLOPs per run (docs/compare.md explains the choice).
DEFAULT_BUDGET_FLOPS = 5e12
#: The default model shape (pretrain.py's "small" preset and its defaults before presets).
DEFAULT_SHAPE = {"n_layer": 3, "n_head": 4, "n_embd": 96, "block_size": 128}
#: Held-out characters bits.py measures per run (0: the whole validation split, so that each held-out work
#: of the corpus is an evaluation set of its own; on Shakespeare 4 works, 528,114 characters).
DEFAULT_BITS_CHARS = 0
#: The noisy copies of the held-out text every run is measured on (compare.py --perturb; "none": no copies).
DEFAULT_PERTURB = "typos,case,spaces,unicode"
#: Evaluations per run aimed at when compare.py chooses --eval-interval (FLOPs budgets).
EVALS_PER_RUN = 10
#: pretrain.py's windows per optimizer step when --batch-size is not given (for the estimate only).
PRETRAIN_BATCH = 16
#: summary.json stop reasons that mean "the budget is spent" (None: still running or interrupted).
FINISHED = ("flops", "chars", "tokens", "minutes", "max_steps")

#: Settings that do not change training: left out of the settings' key and of the refusal of a run folder.
MEASUREMENT = ("data_dir", "bits_chars", "block_chars", "perturb", "eval")


class CompareError(Exception):
    """A problem reported in one line: ``compare.py: error: MESSAGE``."""


@dataclass(frozen=True)
class CompareOptions:
    """The values of compare.py's options (compare.py makes one from its command line; the library never
    sees the command line).  Names are compare.py's flags' dest names; the defaults are compare.py's own
    where this module knows them, else None (not given).  ``pretrain_args``/``data_args``: one string each,
    split with shlex; ``task_names``: the resolved --tasks (None: no tasks section); ``no_bars``: no progress
    bar or progress lines (several runs at once)."""

    specs: tuple = ()
    report: str | None = None
    reports_dir: str = "reports"
    out_dir: str = "checkpoints/compare"
    budget_flops: str | None = None
    budget_chars: str | None = None
    budget_tokens: str | None = None
    minutes: str | None = None
    preset: str | None = None
    n_layer: int | None = None
    n_head: int | None = None
    n_embd: int | None = None
    block_size: int | None = None
    batch_size: int | None = None
    learned: bool = False
    seed: int = 1337
    seeds: int = 1  # with seeds_auto: MAX, the most seeds a tokenizer may get
    seeds_auto: bool = False  # --seeds auto[:MAX] (storygpt.compare.seeds_auto)
    seed_plan: tuple | None = None  # ((SPEC, seed, round), ...): exactly these runs (--seeds auto, --rerun)
    dry_run: bool = False  # --dry-run: print the plan (storygpt.compare.preflight), write nothing
    halving: bool = False  # --halving: drop the clearly worse tokenizers between budgets (storygpt.halving)
    halving_margin: float = 0.0  # bits/char by which a tokenizer must be worse than the best to be dropped
    halving_plan: tuple | None = None  # ((SPEC, budgets), ...): each SPEC at its first N budgets (a round, --rerun)
    recipe: str | None = None
    eval_interval: int | None = None
    pretrain_args: str = ""
    corpus: str = "shakespeare"
    train_file: str | None = None
    valid_file: str | None = None
    valid_fraction: float | None = None
    sdist: str | None = None
    name: str | None = None
    data_root: str = "data"
    data_args: str = ""
    bits_chars: int = DEFAULT_BITS_CHARS
    block_chars: int = 2000
    eval: tuple = ()
    perturb: str | None = DEFAULT_PERTURB
    bits_per_byte: bool = False
    device: str | None = None
    threads: int = 0
    verbose: bool = False
    no_bars: bool = False
    # where the runs train (storygpt.compare.executors)
    jobs: int | None = None
    executor: str = "local"
    ray_address: str | None = None
    ray_gpus: float = 0
    slurm_partition: str | None = None
    slurm_time: int = 60
    slurm_gpus: int = 0
    slurm_cpus: int = 1
    slurm_param: tuple = ()
    slurm_cluster: str = "slurm"
    retries: int = 2
    sizes: str | None = None
    log: str | None = None
    # compare.py --tasks (storygpt.tasks.report_section)
    task_names: tuple | None = None
    task_items: int | None = None
    task_data: str | None = None


@dataclass
class Settings:
    """What every run of one comparison shares (each run adds its budget and seed); stored in each run
    folder's compare.json.  Runs with equal settings share a folder of runs (:meth:`key`), so a sweep
    reuses the runs of earlier sweeps; a run folder made with other settings is refused
    (:func:`check_run_folder`).
    """

    corpus: str
    data_dir: str
    position: str
    preset: str | None
    shape: list  # pretrain.py flags: --preset and/or the shape flags
    batch_size: int | None
    bits_chars: int
    pretrain_args: list
    data_args: list
    forwarded: list = field(default_factory=list)  # pretrain.py flags forwarded from compare.py's (FORWARDED)
    block_chars: int = 2000  # bits.py --block-chars (another one only measures the runs again)
    #: the parts of the forwarded recipe (storygpt/model/recipes.py), so that runs made before a recipe's
    #: default changed (e.g. modern's soft-cap, on until 2026-12-02) are never reused as runs of the new one
    recipe_parts: dict = field(default_factory=dict)
    perturb: str | None = None  # bits.py --perturb kinds, comma-separated (None: no noisy copies)
    eval: list = field(default_factory=list)  # bits.py --eval NAME=PATH sets besides the held-out works

    def key(self) -> str:
        """``cfg-`` and 8 hex digits of the sha256 of the training settings (not data_dir, not bits_chars)."""
        import hashlib

        d = {k: v for k, v in asdict(self).items() if k not in MEASUREMENT}
        return "cfg-" + hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:8]

    def differences(self, other: dict) -> list[str]:
        """The training settings that differ from ``other`` (a stored :meth:`asdict`), as ``name: stored -> now``.

        ``data_dir`` (the same folder may be named relatively or absolutely; the corpus name is compared),
        ``bits_chars`` and ``block_chars`` (another value only measures the runs again) are left out.
        """
        mine = asdict(self)
        out = []
        for k, v in mine.items():
            if k in MEASUREMENT:
                continue
            if other.get(k, [] if k == "forwarded" else None) != v:
                out.append(f"{k}: {other.get(k)!r} -> {v!r}")
        return out


def parse_specs(texts: list[str]) -> list:
    """Parsed SPECs, in order (:func:`check_compared` refuses a repeated one).

    Raises:
        CompareError: an unknown or malformed SPEC (data.py's message).
    """
    from storygpt.tokenizers.spec import SpecError, parse_spec

    try:
        return [parse_spec(t) for t in texts]
    except SpecError as e:
        raise CompareError(str(e)) from None


def check_compared(texts: list[str], specs: list, budgets: list[float], sizes: list | None = None) -> None:
    """Refuse a comparison with nothing to compare, before any work: a tokenizer given twice (``bpe`` and
    ``bpe:8192`` are one tokenizer; repeats are ``--seeds``), or one tokenizer at one budget (and one size).

    Raises:
        CompareError: naming the SPECs.
    """
    for i, s in enumerate(specs):
        if s in specs[:i]:
            first = texts[specs.index(s)]
            given = f"{first} is given twice" if first == texts[i] else f"{first} and {texts[i]} are one tokenizer"
            raise CompareError(f"{given} ({s}): to train a tokenizer several times use --seeds N")
    if len(specs) == 1 and len(budgets) < 2 and len(sizes or []) < 2:
        raise CompareError(
            f"{texts[0]} alone at one budget: nothing to compare it with; give two or more SPECs, or several "
            "budgets (e.g. --budget-flops 1e12,3e12)"
        )


def parse_budget_list(flag: str, text: str) -> list[float]:
    """``"1e12,3e12,1e13" -> [1e12, 3e12, 1e13]``: positive finite numbers, no repeats, in the order given.

    Raises:
        CompareError: naming the flag and the value that cannot work.
    """
    values = []
    for part in str(text).split(","):
        try:
            v = float(part)
        except ValueError:
            raise CompareError(f"{flag} {text}: {part.strip()!r} is not a number") from None
        if not (math.isfinite(v) and v > 0):
            raise CompareError(f"{flag} must be a positive number, got {part.strip() or repr(part)}")
        if v in values:
            raise CompareError(f"{flag} {text}: {part.strip()} is given twice")
        values.append(v)
    return values


def budget_of(options: CompareOptions) -> tuple[str, list[float]]:
    """The one kind of budget given (key of :data:`BUDGETS`) and its values, ascending (a sweep when several:
    the same runs and report whatever order it was typed in); FLOPs by default.

    Raises:
        CompareError: several kinds of budget, or a value that is not a positive finite number.
    """
    given = [k for k in BUDGETS if getattr(options, k) is not None]
    if len(given) > 1:
        flags = ", ".join(BUDGETS[k][0] for k in given)
        raise CompareError(f"give one budget, not several ({flags}): every tokenizer gets the same one")
    if not given:
        return "budget_flops", [DEFAULT_BUDGET_FLOPS]
    key = given[0]
    return key, sorted(parse_budget_list(BUDGETS[key][0], getattr(options, key)))


def budget_label(key: str, value: float) -> str:
    """``("budget_flops", 6e12) -> "flops6e12"`` (for folder names)."""
    return f"{SHORT[key]}{number(value)}"


def corpus_name(name: str | None, train_file: str | None, corpus: str) -> str:
    """The corpus folder name data.py will use (``--name``, else the --train-file stem, else the corpus)."""
    if name:
        return name
    if train_file:
        return Path(train_file).stem
    return corpus


def given_shape(options: CompareOptions) -> dict:
    """The shape flags given (n_layer, n_head, n_embd, block_size; those not given left out)."""
    return {k: getattr(options, k) for k in DEFAULT_SHAPE if getattr(options, k) is not None}


def shape_of(preset_name: str | None, explicit: dict) -> dict | None:
    """n_layer, n_head, n_embd, block_size of the runs (``explicit``: the shape flags given, which win over
    the preset), or None when a --preset cannot be looked up here."""
    if preset_name is None:
        return {**DEFAULT_SHAPE, **explicit}
    try:
        from storygpt.model.presets import preset  # pretrain.py's presets
    except ImportError:
        return None
    try:
        base = preset(preset_name)
    except ValueError as e:
        raise CompareError(f"--preset: {e}") from None
    return {k: base[k] for k in DEFAULT_SHAPE} | explicit


def shape_flags(preset_name: str | None, explicit: dict) -> list[str]:
    """pretrain.py's model flags: --preset and the shape flags given (``explicit``; or the default shape)."""
    flags = []
    if preset_name is not None:
        flags += ["--preset", preset_name]
    for k, default in DEFAULT_SHAPE.items():
        v = explicit.get(k)
        if v is None and preset_name is None:
            v = default
        if v is not None:
            flags += [f"--{k.replace('_', '-')}", str(v)]
    return flags


def model_words(
    shape: dict | None, *, learned: bool, preset_name: str | None, batch_size: int | None, pretrain_args: str
) -> str:
    """The model shape in words, for the report."""
    pos = "learned positions" if learned else "rotary positions"
    if shape is None:
        return f"preset {preset_name}, {pos}"
    words = (
        f"{shape['n_layer']} layer{'s' if shape['n_layer'] != 1 else ''}, {shape['n_head']} "
        f"head{'s' if shape['n_head'] != 1 else ''}, width {shape['n_embd']}, "
        f"context {shape['block_size']} tokens, {pos}"
    )
    if preset_name:
        words = f"preset {preset_name}: {words}"
    if batch_size:
        words += f", {batch_size} windows per step"
    if pretrain_args.strip():
        words += f"; pretrain.py {pretrain_args.strip()}"
    return words


def estimate_flops_per_token(shape: dict, vocab_size: int) -> float:
    """Training FLOPs per token by docs/training.md's formula (6 N + attention + output layer).

    Only used to space the evaluations; the budget itself is counted by pretrain.py.
    """
    L, d, T = shape["n_layer"], shape["n_embd"], shape["block_size"]
    return 6 * 12 * L * d * d + 12 * L * T * d + 6 * d * vocab_size


def estimate_steps(
    budget: tuple[str, float], shape: dict | None, vocab_size: int | None, batch: int, chars_per_token: float | None
) -> float | None:
    """Optimizer steps a run will take within ``budget`` (None when it cannot be known: a wall-clock budget,
    an unknown shape or vocabulary)."""
    key, value = budget
    if shape is None:
        return None
    tokens_per_step = batch * shape["block_size"]
    if key == "budget_flops" and vocab_size is not None:
        return value / (estimate_flops_per_token(shape, vocab_size) * tokens_per_step)
    if key == "budget_tokens":
        return value / tokens_per_step
    if key == "budget_chars" and chars_per_token:
        return value / (chars_per_token * tokens_per_step)
    return None


def eval_interval_for(
    budget: tuple[str, float],
    shape: dict | None,
    vocab_size: int | None,
    chars_per_token: float | None = None,
    *,
    given: int | None = None,
    batch_size: int | None = None,
) -> int | None:
    """--eval-interval for one run: the user's (``given``), or about :data:`EVALS_PER_RUN` evaluations when its steps can
    be estimated (FLOPs and tokens budgets; characters with the training split's ``chars_per_token``), every
    step when it has fewer steps than that; None (pretrain.py's default) otherwise."""
    if given is not None:
        return given
    steps = estimate_steps(budget, shape, vocab_size, batch_size or PRETRAIN_BATCH, chars_per_token)
    if steps is None:
        return None
    return max(1, int(steps // EVALS_PER_RUN))


def train_chars_per_token(data_dir: Path, slug: str) -> float | None:
    """Characters per token of the training split, from data.py's ``stats-SLUG.json`` (None when absent)."""
    slug = written_slug(data_dir, slug)
    split = ((read_json_or_none(data_dir / f"stats-{slug}.json") or {}).get("splits") or {}).get("train")
    value = split.get("chars_per_token") if isinstance(split, dict) else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def budget_warning(
    spec: str, budget: tuple[str, float], steps: float | None, warmup: int, min_evals: int
) -> str | None:
    """The warning compare.py prints before training when ``budget`` gives ``spec`` fewer optimizer steps
    than its warm-up (it will be marked under-trained), with the budget that gives it twice the warm-up."""
    if steps is None or steps >= warmup:
        return None
    key, value = budget
    want = max(2 * warmup, min_evals)
    return (
        f"warning: {spec} gets about {steps:.0f} optimizer steps from {BUDGETS[key][0]} {number(value)}, fewer than "
        f"its {warmup} warm-up steps: it will be marked under-trained and never named best; "
        f"{BUDGETS[key][0]} {number(budget_to_train(value, steps, warmup))} would give it about {want} steps"
    )


# ------------------------------------------------------------------ runs
@dataclass
class Run:
    """One tokenizer's run of the comparison."""

    spec: object  # storygpt.tokenizers.spec.TokenizerSpec
    slug: str
    folder: Path
    log: Path
    budget: tuple = ("budget_flops", DEFAULT_BUDGET_FLOPS)  # (key of BUDGETS, value)
    seed: int = 1337
    size: str | None = None  # the model preset of an isoFLOP sweep (--sizes); None: the comparison's one shape
    round: int = 1  # the seed round that added it (--seeds auto; 1 for a fixed plan)
    pause: bool = False  # a --halving trunk: trained to its branches' decay starts only (storygpt.train.branch)

    @property
    def label(self) -> str:
        """``bpe:512 @1e12 s1337``: SPEC, (size,) budget, seed (for progress lines)."""
        size = f" {self.size}" if self.size else ""
        return f"{self.spec}{size} @{number(self.budget[1])} s{self.seed}"


def token_files(data_dir: Path, slug: str) -> list[Path]:
    """The files data.py writes for one tokenizer (contract in docs/design.md; a word vocabulary smaller than
    asked: named by the size it has, :func:`storygpt.data.corpora.written_slug`)."""
    slug = written_slug(data_dir, slug)
    return [data_dir / f"{n}-{slug}.{ext}" for n, ext in (("train", "bin"), ("valid", "bin"), ("tokenizer", "json"))]


def read_json_or_none(path: Path) -> dict | None:
    """The JSON object in ``path``, or None when it is missing, unreadable, not JSON or not an object."""
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
        for name, mine, theirs in (
            ("budget", list(run.budget), stored.get("budget")),
            ("seed", run.seed, stored.get("seed")),
        ):
            if theirs is not None and theirs != mine:
                diff.append(f"{name}: {theirs!r} -> {mine!r}")
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
    """True when bits.json is newer than the final checkpoint and measured --bits-chars characters in blocks of
    --block-chars, with the same --perturb kinds and --eval sets."""
    bits, ckpt = run.folder / "bits.json", run.folder / "ckpt.pt"
    if read_json_or_none(bits) is None or not ckpt.is_file():
        return False
    stored = read_json_or_none(run.folder / "compare.json") or {}
    if stored.get("measured_chars", settings.bits_chars) != settings.bits_chars:
        return False
    if stored.get("measured_perturb") != settings.perturb or stored.get("measured_eval", []) != settings.eval:
        return False  # measured before these noisy copies or sets were asked for
    row = ((read_json_or_none(bits) or {}).get("results") or [{}])[0]
    if row.get("block_chars") != settings.block_chars or not row.get("block_nats"):
        return False  # measured before block losses were recorded, or with other blocks
    return bits.stat().st_mtime >= ckpt.stat().st_mtime


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
    stats = read_json_or_none(data_dir / f"stats-{written_slug(data_dir, slug)}.json") or {}
    if stats.get("kind") != "bpe":
        return None
    want = bpe_options(data_args)
    diff = [f"{k} {stats.get(k)!r} (this comparison: {v!r})" for k, v in want.items() if stats.get(k) != v]
    return ", ".join(diff) or None


def vocab_size_of(data_dir: Path, slug: str) -> int | None:
    """The vocabulary size of ``data_dir/tokenizer-SLUG.json``, or None when it cannot be loaded."""
    from storygpt.checkpoint import load_tokenizer

    try:
        return load_tokenizer(data_dir / f"tokenizer-{written_slug(data_dir, slug)}.json").vocab_size
    except (OSError, ValueError):
        return None


def status_line(i: int, n: int, run: Run, what: str, seconds: float | None = None) -> str:
    """compare.py's line for run ``i`` of ``n``: ``what`` was done, its summary.json and bits.json figures, ``seconds``."""
    head = f"[{i}/{n}] {run.label:<24}"
    s = read_json_or_none(run.folder / "summary.json") or {}
    b = read_json_or_none(run.folder / "bits.json") or {}
    row = (b.get("results") or [{}])[0]
    parts, why = [what], "paused: a --halving trunk" if run.pause else "not finished: interrupted"
    if s:
        parts.append(
            f"{s.get('steps', 0):,} steps, {human(s.get('tokens'))} tokens, {human(s.get('chars'))} chars, "
            f"{sci(s.get('flops'))} FLOPs, {duration(s.get('elapsed'))} training "
            + (f"(stopped by {s['stop_reason']})" if s.get("stop_reason") else f"({why})")
        )
    if row.get("bits_per_character") is not None:
        parts.append(f"held-out {row['bits_per_character']:.4f} bits/char")
    if seconds is not None:
        parts.append(f"{duration(seconds)} in all")
    return head + " " + " | ".join(parts)


def collect(runs: list[Run]):
    """Each run's :class:`storygpt.compare.report.RunResult` and curve; checks they share the held-out characters."""
    from storygpt.plot import MetricsError, run_curve

    results, curves = [], []
    for run in runs:
        try:
            curve = run_curve(run.folder, str(run.spec))
            budget = (budget_label(*run.budget), run.budget[1])
            results.append(result_from_files(str(run.spec), run.slug, run.folder, len(curve), budget))
            curves.append(curve)
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


def report_meta(
    options: CompareOptions, settings, report, corpus, data_dir, shape, results, argv, seeds, budget_values, root: Path
):
    """The :class:`~storygpt.compare.report.ReportMeta` of a comparison: its settings, held-out text, budget, hardware
    and provenance (``root``: the repository, for its commit), from compare.py's options and the results."""
    bits = read_json_or_none(Path(results[0].run_dir) / "bits.json") or {}
    n = bits.get("characters", results[0].heldout_chars)
    text_path = Path(bits.get("text", data_dir / "valid.txt"))
    source = show(text_path)  # relative to the working directory when below it
    blocks = f"; the bootstrap's blocks: {options.block_chars:,} characters"
    if settings.bits_chars == 0 or n < settings.bits_chars:
        heldout = f"all {n:,} characters of {source}, the same for every tokenizer{blocks}"
    else:
        heldout = f"the first {n:,} characters of {source}, the same for every tokenizer{blocks}"
    key = BUDGETS[budget_key_of(results)]
    unit = key[2]
    budget = f"{', '.join(number(v) for v in budget_values)} {unit}" + (
        " (equal compute)" if unit == "training FLOPs" else ""
    )
    threads = sorted({r.threads for r in results if r.threads is not None})
    procs = sorted({r.processes for r in results if r.processes is not None}) or [1]
    dtypes = sorted({r.dtype for r in results if r.dtype})
    devices = sorted({r.device for r in results if r.device})
    hardware = (
        f"{'/'.join(map(str, threads)) or '?'} thread{'s' if threads != [1] else ''} x "
        f"{'/'.join(map(str, procs))} process{'es' if procs != [1] else ''} per run"
        + (f", {', '.join(devices)}" if devices else "")
        + (f", {', '.join(dtypes)}" if dtypes else "")
    )
    env = toolrun.environment(root)
    env["heldout_sha256"] = toolrun.sha256_file(text_path) if text_path.is_file() else None
    return ReportMeta(
        name=report,
        corpus=corpus,
        data_dir=str(data_dir),
        model=model_words(
            shape,
            learned=options.learned,
            preset_name=options.preset,
            batch_size=options.batch_size,
            pretrain_args=options.pretrain_args,
        ),
        budget=budget,
        heldout=heldout,
        command=shlex.join(["python", "compare.py", *argv]),
        notes=[],
        seeds=seeds,
        budgets=budget_values,
        hardware=hardware,
        recipe=options.recipe,
        argv=argv,
        provenance=env,
        measurement={k: getattr(settings, k) for k in ("bits_chars", "block_chars", "perturb", "eval")},
    )


def budget_key_of(results) -> str:
    """The budget kind of the report's runs (their label's prefix)."""
    return budget_kind(results[0].budget)


def measurement_flags(done, argv: list[str]) -> list[str]:
    """compare.py flags, put after the report's ``argv``, that measure as its ``meta.measurement`` records
    (``None``: a report from before 2026-12-05, measured by the defaults of then, the first 100,000 characters
    and no noisy copies, where ``argv`` does not give the flag, abbreviated or not).  --eval sets are in argv.

    Raises:
        ValueError: a field of the wrong type or range (the message names it).
    """
    if done is None:
        given = {a.split("=")[0] for a in argv if a.startswith("--")}
        flags = []
        for flag, then in (("--bits-chars", "100000"), ("--perturb", "none")):
            if not any(len(g) > 3 and flag.startswith(g) for g in given):
                flags += [flag, then]
        return flags
    if not isinstance(done, dict):
        raise ValueError(f"is not an object: {done!r}")
    flags = []
    for key, flag in (("bits_chars", "--bits-chars"), ("block_chars", "--block-chars")):
        v = done.get(key)
        if v is None and key == "block_chars":
            continue
        if not isinstance(v, int) or isinstance(v, bool) or v < (0 if key == "bits_chars" else 1):
            raise ValueError(f"{key} {v!r} is not a {'non-negative' if key == 'bits_chars' else 'positive'} integer")
        flags += [flag, str(v)]
    perturb = done.get("perturb")
    if perturb is not None and not isinstance(perturb, str):
        raise ValueError(f"perturb {perturb!r} is not a string of kinds")
    from storygpt.eval.perturb import parse_kinds

    try:
        parse_kinds(perturb)
    except ValueError as e:
        raise ValueError(f"perturb: {e}") from None
    return flags + ["--perturb", perturb or "none"]
