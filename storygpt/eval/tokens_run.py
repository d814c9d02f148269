"""The work behind ``tokens.py``: check everything first, then make the tokenizers, measure, and sweep.

:func:`check_plan` refuses bad input in one line before any work (nothing written); :func:`make_tokenizer`
trains a trained kind on the training text the way ``data.py`` does (:func:`storygpt.data.prepare.train_tokenizer`),
reusing the tokenizer file ``data.py`` wrote into the corpus folder (``DATA/NAME/tokenizer-SLUG.json``) when the
training text is that folder's ``train.txt``; :func:`measure_all` gives one row per tokenizer x text.
"""

from __future__ import annotations

import codecs
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from storygpt.data.corpora import written_slug
from storygpt.data.docstream import check_text_file
from storygpt.eval.intrinsic import Text, encode_text, load_text, measure, missing_optional
from storygpt.eval.vocab_sweep import check_sizes
from storygpt.tokenizers.base import missing_package, require
from storygpt.tokenizers.interop import is_rank_file_path
from storygpt.tokenizers.interop_tiktoken import get_encoding
from storygpt.tokenizers.spec import SpecError, build_tokenizer, parse_spec

#: the bytes of the training text check_plan reads: white space only (in a file no longer) or not UTF-8 is refused
EMPTY_CHECK_BYTES = 1 << 16


class PlanError(ValueError):
    """Bad input, in one line naming the text, SPEC or flag."""


@dataclass
class Plan:
    """What ``tokens.py`` was asked, checked: SPEC strings, texts (read), the training text, the sweep."""

    specs: list[str]
    texts: list[Text]
    train_file: Path | None
    corpus_folder: Path | None
    sweep_sizes: list[int]
    reference: str | None
    parallel: bool


def parse_eval(item: str) -> tuple[str, str]:
    """``NAME=PATH`` -> ``(NAME, PATH)``.

    Raises:
        PlanError: no ``=``, or an empty NAME or PATH.
    """
    name, sep, path = item.partition("=")
    if not sep or not name.strip() or not path:
        raise PlanError(f"--eval {item}: expected NAME=PATH (e.g. --eval ru=russian.txt)")
    return name.strip(), path


def check_plan(
    specs: Sequence[str],
    evals: Sequence[tuple[str, str]],
    data_folder: str | os.PathLike,
    train_file: str | os.PathLike | None,
    sweep_sizes: Sequence[int],
    reference: str | None,
    parallel: bool,
) -> Plan:
    """Everything checked before any work: every SPEC (and its optional package and file), every text (missing,
    empty, not UTF-8, a NAME given twice), ``reference`` naming a text, the sweep's sizes, the training text.

    Args:
        evals: ``(NAME, PATH)`` pairs; none: the corpus's held-out text ``DATA/valid.txt`` (as data.py writes it).
        data_folder: the corpus folder data.py writes (``data/shakespeare``).

    Raises:
        PlanError: the first problem, in one line.
    """
    folder = Path(data_folder)
    for s in specs:
        try:
            spec = parse_spec(s)
            _ = spec.slug  # a missing hf:/file: file
        except (SpecError, FileNotFoundError) as e:
            raise PlanError(str(e)) from None
        package = missing_optional(spec.kind)
        if package is not None:
            raise PlanError(missing_package(package, f"tokenizer SPEC {s}"))
    if len(set(map(str, map(parse_spec, specs)))) < len(specs):
        raise PlanError(f"a tokenizer SPEC is given twice: {' '.join(specs)}")
    if not evals:
        valid = folder / "valid.txt"
        if not valid.is_file():
            raise PlanError(f"{valid}: no such file; run `python data.py` first (or give --eval NAME=PATH)")
        evals = [(folder.name, str(valid))]
    names = [n for n, _ in evals]
    for n in names:
        if names.count(n) > 1:
            raise PlanError(f"--eval {n}=...: the text name {n} is given twice")
    if reference is not None and reference not in names:
        raise PlanError(f"--reference {reference}: no text of that name (the texts: {', '.join(names)})")
    texts = []
    for n, p in evals:
        try:
            texts.append(load_text(n, p))
        except (OSError, ValueError) as e:
            raise PlanError(f"text {n}: {e}") from None
    if parallel:
        if reference is None:
            raise PlanError("--parallel compares each text with --reference NAME: give it")
        counts = {t.name: len(t.documents) for t in texts}
        if len(set(counts.values())) > 1:
            raise PlanError(f"--parallel: the texts are not parallel, their document counts differ: {counts}")
    try:
        sweepable = [s for s in specs if parse_spec(s).is_trained]
        if sweep_sizes:
            if not sweepable:
                raise SpecError("--vocab-sweep needs a trained SPEC (bpe, superbpe, unigram, wordpiece, spm-*)")
            for s in sweepable:
                check_sizes(s, sweep_sizes)
    except SpecError as e:
        raise PlanError(str(e)) from None
    train = None
    if train_file is not None:
        train = Path(train_file)
    elif sweepable or any(parse_spec(s).is_trained for s in specs):
        train = folder / "train.txt"
    if train is not None and train_file is None and not train.is_file():
        raise PlanError(f"training text {train}: run `python data.py` first (trained SPECs: {' '.join(sweepable)})")
    if train is not None:  # a folder or an empty file: refused here, not after the texts are measured
        try:
            check_text_file(train)
        except FileNotFoundError as e:
            raise PlanError(f"training text {e} (trained SPECs: {' '.join(sweepable)})") from None
        with open(train, "rb") as f:
            head = f.read(EMPTY_CHECK_BYTES + 1)
        if len(head) <= EMPTY_CHECK_BYTES and not head.strip():
            raise PlanError(f"training text {train}: the file is empty (no text in it)")
        try:  # its start: a file that is not text at all is refused before any work
            codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) <= EMPTY_CHECK_BYTES)
        except UnicodeDecodeError as e:
            raise PlanError(f"training text {train}: not UTF-8 text (byte offset {e.start}: {e.reason})") from None
    return Plan(list(specs), texts, train, folder, list(sweep_sizes), reference, parallel)


class TiktokenView:
    """What the measures read of a tokenizer, from a tiktoken ``Encoding`` itself (building storygpt's BPE of
    cl100k_base from its ranks takes seconds; the ids are the same)."""

    unk_id = None

    def __init__(self, encoding):
        self.encoding = encoding
        self.vocab_size = int(encoding.n_vocab)
        self.special_tokens = dict(encoding._special_tokens)

    def token_bytes(self, token_id: int) -> bytes:
        return self.encoding.decode_single_token_bytes(int(token_id))

    def decode_bytes(self, ids) -> bytes:
        return self.encoding.decode_bytes(ids.tolist() if hasattr(ids, "tolist") else list(ids))

    def decode(self, ids) -> str:
        return self.decode_bytes(ids).decode("utf-8", errors="replace")


def make_tokenizer(spec_text: str, plan: Plan, num_threads: int = 0):
    """``(tokenizer, tiktoken Encoding or None, seconds, how)``: read, loaded from data.py's file, or trained."""
    from storygpt.data.docstream import DocumentFile
    from storygpt.data.prepare import train_tokenizer
    from storygpt.tokenizers import load

    spec = parse_spec(spec_text)
    t0 = time.perf_counter()
    if spec.kind == "tiktoken" and not is_rank_file_path(spec.arg):
        require("tiktoken", f"tokenizer SPEC {spec_text}")
        enc = get_encoding(spec.arg)  # an offline cache miss: one line
        return TiktokenView(enc), enc, time.perf_counter() - t0, "read by tiktoken"
    if not spec.is_trained:
        return build_tokenizer(spec), None, time.perf_counter() - t0, "read"
    folder = plan.corpus_folder
    saved = folder / f"tokenizer-{written_slug(folder, spec.slug)}.json" if folder else None
    if saved is not None and plan.train_file == plan.corpus_folder / "train.txt" and saved.is_file():
        return load(saved), None, time.perf_counter() - t0, f"data.py's {saved}"
    train = plan.train_file
    tok = train_tokenizer(spec, DocumentFile(train), None, num_threads=num_threads, train_txt=train)
    return tok, None, time.perf_counter() - t0, f"trained on {train}"


def measure_all(plan: Plan, num_threads: int = 0) -> tuple[list[dict], list[dict]]:
    """``(rows, tokenizers)``: one row per tokenizer x text; each tokenizer's vocabulary and how it was made."""
    rows, made = [], []
    for s in plan.specs:
        tok, enc, seconds, how = make_tokenizer(s, plan, num_threads)
        made.append({"tokenizer": s, "vocab_size": int(tok.vocab_size), "seconds": seconds, "how": how})
        for text in plan.texts:
            row = measure(tok, text, encode_text(tok, text, enc, num_threads))
            rows.append({"tokenizer": s, "vocab_size": int(tok.vocab_size), **row})
    return rows, made
