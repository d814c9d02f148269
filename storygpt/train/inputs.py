"""What a run reads: the token files of a corpus folder, training batches and the held-out slice."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from storygpt.cli import show
from storygpt.data.corpora import written_slug
from storygpt.train.runfolder import RunError


def fixed_windows(n_tokens: int, window: int, count: int) -> np.ndarray:
    """Start offsets of ``count`` evenly spaced windows of ``window + 1`` tokens (deterministic)."""
    last = n_tokens - window - 1
    starts = np.linspace(0, last, num=max(1, count)).round().astype(np.int64)
    return np.unique(starts)


def windows_to_batch(data, starts: np.ndarray, window: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets ``(B, window)`` int64 on ``device`` for windows of ``data`` starting at ``starts``."""
    arr = np.asarray(data[starts[:, None] + np.arange(window + 1)], dtype=np.int64)
    t = torch.from_numpy(arr)
    t = t.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else t.to(device)
    return t[:, :-1], t[:, 1:]


@dataclass(frozen=True)
class HeldOut:
    """A fixed held-out slice, encoded once: the bits-per-character text of storygpt.eval.bits.

    ``stream`` is ``[eot] enc(d_1) [eot] ... enc(d_n)`` (:func:`storygpt.eval.bits.token_stream`) of the
    first ``--eval-chars`` characters of valid.txt; every token after the first is predicted once, in
    back-to-back windows of ``block_size`` (``windows``: :func:`storygpt.eval.bits.scoring_windows`).
    """

    stream: torch.Tensor
    characters: int
    windows: list
    bytes: int = 0
    #: the evaluation sets of this text (storygpt/data/evalsets.py): names, the set of each predicted token,
    #: and each set's characters and bytes (a boundary belongs to the document before it)
    set_names: tuple = ()
    set_of_target: np.ndarray | None = None
    set_chars: tuple = ()
    set_bytes: tuple = ()
    #: the --eval NAME=PATH texts, each a HeldOut of one set
    extra: tuple = ()

    @property
    def tokens(self) -> int:
        return len(self.stream) - 1


def encode_heldout(tokenizer, docs: list[str], block_size: int, groups: list[tuple[str, list[int]]]) -> HeldOut:
    """Encode documents into a :class:`HeldOut` whose sets are ``groups`` ``[(name, [document indices])]``."""
    from storygpt.data.evalsets import document_units, target_documents
    from storygpt.eval.bits import count_bytes, count_characters, scoring_windows, token_stream

    stream, _ = token_stream(tokenizer, docs)
    windows = list(scoring_windows(len(stream) - 1, block_size))
    set_of_doc = np.zeros(len(docs), dtype=np.int64)
    for k, (_, idx) in enumerate(groups):
        set_of_doc[idx] = k
    chars, byts = document_units(docs)
    return HeldOut(
        torch.from_numpy(stream),
        count_characters(docs),
        windows,
        bytes=count_bytes(docs),
        set_names=tuple(name for name, _ in groups),
        set_of_target=set_of_doc[target_documents(tokenizer, docs)],
        set_chars=tuple(int(chars[idx].sum()) for _, idx in groups),
        set_bytes=tuple(int(byts[idx].sum()) for _, idx in groups),
    )


class SetNameError(ValueError):
    """An --eval NAME that is already the name of a set of the held-out text."""


def heldout_slice(tokenizer, valid_txt: Path, eval_chars: int, block_size: int, eval_sets=()) -> HeldOut:
    """Read, cut and encode the held-out slice; its sets are its held-out works (storygpt/data/evalsets.py).
    ``eval_sets`` (storygpt.data.evalsets.EvalSet, already read) become its ``extra`` texts.

    Raises:
        FileNotFoundError / ValueError: naming ``valid_txt`` (missing, not UTF-8, no text).
        SetNameError: an ``eval_sets`` name that is already one of the held-out works' names.
    """
    from storygpt.data.evalsets import default_groups, heldout_work_names
    from storygpt.eval.bits import read_characters

    docs = read_characters(valid_txt, eval_chars)
    groups = default_groups(len(docs), heldout_work_names(valid_txt.parent, len(docs)))
    held = {name for name, _ in groups}
    for s in eval_sets:  # one name per figure in metrics.jsonl: an --eval set must not replace a held-out one
        if s.name in held:
            raise SetNameError(
                f"--eval {s.name}={s.path}: {s.name!r} is already a set of the held-out text "
                f"({', '.join(sorted(held))}); choose another NAME"
            )
    h = encode_heldout(tokenizer, docs, block_size, groups)
    extra = tuple(
        encode_heldout(tokenizer, s.documents, block_size, [(s.name, list(range(len(s.documents))))]) for s in eval_sets
    )
    return dataclasses.replace(h, extra=extra)


def chars_per_token(data_dir: Path, slug: str, train_tokens: int) -> float:
    """Characters per training token, counted as bits per character counts them.

    ``(characters + documents - 1) / tokens`` of the training split (a document boundary is one
    character, and its eot one token), from ``stats-<slug>.json`` (data.py), else from train.txt.

    Raises:
        RunError: neither file is there.
    """
    from storygpt.eval.bits import count_characters, read_documents

    stats = data_dir / f"stats-{written_slug(data_dir, slug)}.json"
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
        s = json.loads(stats.read_text(encoding="utf-8"))["splits"]["train"]
        return (int(s["characters"]) + int(s["documents"]) - 1) / int(s["tokens"])
    try:
        return count_characters(read_documents(data_dir / "train.txt")) / train_tokens
    except (OSError, ValueError) as e:
        raise RunError(f"{stats} is missing and so is a readable train.txt ({e}); run data.py again") from None


def data_command(data_dir: Path, spec) -> str:
    """The data.py command line that writes the token files of SPEC ``spec`` into ``data_dir``
    (``python data.py --bpe`` for the default corpus folder and ``bpe:8192``)."""
    words = ["python data.py"]
    if data_dir.name == "tinystories":
        words.append("--corpus tinystories")
    elif data_dir.name != "shakespeare":
        words.append(f"--train-file FILE --name {data_dir.name}")
    if data_dir.parent.absolute() != Path("data").absolute():
        words.append(f"--out {show(data_dir.parent)}")
    words.append("--bpe" if str(spec) == "bpe:8192" else f"--tokenizer {spec}")
    return " ".join(words)


def load_data(data_dir: Path, spec, block_size: int):
    """The tokenizer and memmapped training tokens of SPEC ``spec`` in ``data_dir``.

    Raises:
        RunError: a missing folder or file (naming it, and the tokenizers the folder does hold), a token
            file of another tokenizer, ids outside the vocabulary, fewer tokens than one window.
    """
    from storygpt.checkpoint import load_tokenizer
    from storygpt.data import read_tokens
    from storygpt.data.binfile import max_id

    if data_dir.is_file():
        raise RunError(f"--data {show(data_dir)}: is a file, not a folder (give the corpus folder data.py wrote)")
    if not data_dir.is_dir():
        raise RunError(
            f"--data {show(data_dir)}: no such folder; run `{data_command(data_dir, spec)}` first to write it"
        )
    slug = written_slug(data_dir, spec.slug)  # word:50000 on 3,000 distinct words: word-3000
    tok_path, train_path = data_dir / f"tokenizer-{slug}.json", data_dir / f"train-{slug}.bin"
    if not tok_path.is_file():
        have = sorted(p.name[len("tokenizer-") : -len(".json")] for p in data_dir.glob("tokenizer-*.json"))
        hint = f"; it holds the token files of: {', '.join(have)} (pass --tokenizer with one of those)" if have else ""
        raise RunError(f"{show(tok_path)} not found; run `{data_command(data_dir, spec)}` to write it{hint}")
    try:
        tokenizer = load_tokenizer(tok_path)
        train = read_tokens(train_path, tokenizer)
    except IsADirectoryError as e:
        raise RunError(f"{show(e.filename or train_path)}: is a folder, not a token file; run data.py again") from None
    except (OSError, ValueError) as e:
        raise RunError(str(e)) from None
    # a corrupt body would crash the embedding; read in blocks, so the memmap's pages stay out of memory
    if len(train) and max_id(train_path) >= tokenizer.vocab_size:
        pos = int(np.argmax(train >= tokenizer.vocab_size))
        raise RunError(
            f"{show(train_path)}: token id {int(train[pos])} at position {pos:,} is outside the vocabulary "
            f"(vocab_size {tokenizer.vocab_size}); the file is corrupt, run data.py again"
        )
    if len(train) < block_size + 1:
        raise RunError(
            f"{show(train_path)} has {len(train)} tokens, fewer than one training window "
            f"(block_size + 1 = {block_size + 1}); use a smaller --block-size"
        )
    return tokenizer, train
