"""The held-out split of a file of documents, chosen and applied in two streaming passes.

The split is :func:`storygpt.data.corpora.split_documents`'s, document for
document: the ``k = round(n * valid_fraction)`` documents (clamped to
``[1, n - 1]``) with the smallest ``sha256(f"{index}:" + text)`` are held out,
both sides keep file order, and a corpus of one document is cut at a line
boundary.  :func:`plan_split` reads the file once and keeps 8 bytes of each
document's key (8 bytes per document: 2.7 M documents take 22 MB); when keys tie
on those 8 bytes at the cut, the tied documents' full keys are computed in one
more pass, so the choice is exact.  :func:`iter_split` reads the file again and
says for each document which side it is on.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .corpora import split_single
from .docstream import DocumentFile, OnBytes

#: Bytes of each document's sha256 key kept in memory by plan_split.
KEY_BYTES = 8


def document_key(index: int, doc: str) -> bytes:
    """The sort key of ``split_documents``: ``sha256(f"{index}:" + doc)`` (32 bytes)."""
    return hashlib.sha256(f"{index}:".encode() + doc.encode("utf-8", "surrogatepass")).digest()


@dataclass
class SplitPlan:
    """Which documents of a file are held out.

    Attributes:
        documents: documents in the file.
        characters: their characters in all.
        held: sorted indices (int64) of the held-out documents; empty when ``single``.
        single: the file is one document, to be cut at a line boundary.
        valid_fraction: the fraction asked for.
    """

    documents: int
    characters: int
    held: np.ndarray
    single: bool
    valid_fraction: float


def _check_fraction(valid_fraction: float) -> None:
    if not 0 < valid_fraction <= 0.5:
        raise ValueError(f"valid_fraction must be in (0, 0.5], got {valid_fraction}")


def plan_split(docs: DocumentFile, valid_fraction: float = 0.1, on_bytes: OnBytes = None) -> SplitPlan:
    """Read ``docs`` once and choose the held-out documents (``split_documents``'s choice).

    Args:
        docs: the corpus file.
        valid_fraction: share of documents to hold out, in (0, 0.5].
        on_bytes: progress callback, file bytes consumed.

    Returns:
        The plan for :func:`iter_split`.

    Raises:
        ValueError: a bad fraction; the file's errors (:func:`~storygpt.data.docstream.iter_documents`).
    """
    _check_fraction(valid_fraction)
    keys = array("Q")
    characters = 0
    first = None  # kept while it may be the only document, to check now that it can be cut
    for i, doc in enumerate(docs.iter(on_bytes)):
        keys.append(int.from_bytes(document_key(i, doc)[:KEY_BYTES], "big"))
        characters += len(doc)
        first = doc if i == 0 else None
    n = len(keys)
    if n == 1:
        try:
            split_single(first, valid_fraction)
        except ValueError as e:
            raise ValueError(f"{docs.path}: {e}") from None
        return SplitPlan(1, characters, np.zeros(0, dtype=np.int64), True, valid_fraction)
    k = min(n - 1, max(1, round(n * valid_fraction)))
    held = _smallest(np.frombuffer(keys, dtype=np.uint64), k, docs)
    return SplitPlan(n, characters, held, False, valid_fraction)


def _smallest(prefix: np.ndarray, k: int, docs: DocumentFile) -> np.ndarray:
    """Sorted indices of the k smallest (key, index), given the keys' first bytes ``prefix``."""
    order = np.argsort(prefix, kind="stable")
    cut = prefix[order[k - 1]]
    if k == prefix.size or prefix[order[k]] != cut:
        return np.sort(order[:k]).astype(np.int64)
    below = np.flatnonzero(prefix < cut)
    tied = set(np.flatnonzero(prefix == cut).tolist())
    full = {i: document_key(i, d) for i, d in enumerate(docs) if i in tied}  # one more pass, rare
    chosen = sorted(tied, key=lambda i: (full[i], i))[: k - below.size]
    return np.sort(np.concatenate([below, np.array(chosen, dtype=np.int64)])).astype(np.int64)


def iter_split(docs: DocumentFile, plan: SplitPlan, on_bytes: OnBytes = None) -> Iterator[tuple[str, str]]:
    """``("train" | "valid", document)`` for each document of ``docs`` in file order, as ``plan`` says.

    Raises:
        ValueError: the file no longer holds the documents the plan was made from (it
            changed between the passes; the file is named); the file's errors.
    """
    if plan.single:
        (doc,) = list(docs.iter(on_bytes))  # a single document is held whole: it must be cut in two
        try:
            train, valid = split_single(doc, plan.valid_fraction)
        except ValueError as e:
            raise ValueError(f"{docs.path}: {e}") from None
        yield "train", train[0]
        yield "valid", valid[0]
        return
    held = plan.held.tolist()
    j = n = 0
    for i, doc in enumerate(docs.iter(on_bytes)):
        n += 1
        if j < len(held) and held[j] == i:
            j += 1
            yield "valid", doc
        else:
            yield "train", doc
    if n != plan.documents:
        raise ValueError(
            f"{docs.path}: the file changed while it was being read ({n:,} documents now, "
            f"{plan.documents:,} before); run again"
        )
