"""Bits per character (and per byte): a loss that compares models whose tokens differ.

Each model encodes the held-out documents into ``[eot] enc(d_1) [eot] ... [eot] enc(d_n)``
(``encode_ordinary``; the leading eot is context only) and predicts every other token once.
``bits per character = total nats / (ln 2 * characters)``, with characters = the documents'
code points plus one per document boundary (bytes likewise, UTF-8): the denominator comes
from the text, never from the tokenizer, so it is the same for every model.  ``stride <
block_size`` gives overlapping (sliding) windows, each token still predicted once.

The full definition, what it can and cannot compare (word-level models: a lower bound) and
the window rule: docs/bits.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

# the held-out text is read exactly as data.py writes it, by the one parser (re-exported here)
from storygpt.data.corpora import chars_per_token, read_documents  # noqa: F401


# --------------------------------------------------------------------------
# text
# --------------------------------------------------------------------------
def count_characters(documents: Sequence[str]) -> int:
    """Characters the predicted tokens cover: all characters plus one per document boundary."""
    return sum(len(d) for d in documents) + max(len(documents) - 1, 0)


def count_bytes(documents: Sequence[str]) -> int:
    """UTF-8 bytes the predicted tokens cover: all bytes plus one per document boundary (as
    :func:`count_characters` counts one character per boundary)."""
    return sum(len(d.encode("utf-8")) for d in documents) + max(len(documents) - 1, 0)


def take_characters(documents: Iterable[str], n: int | None) -> list[str]:
    """The first ``n`` characters of ``documents`` (counted as in :func:`count_characters`).

    The cut falls exactly after ``n`` characters, inside a document if need be
    (the last document is then a prefix of the original).  A boundary is only
    kept when at least one character of the next document follows it, so the
    result covers ``n`` or ``n - 1`` characters; all of the text when it is
    shorter than ``n``.  ``n=None`` keeps everything.

    Raises:
        ValueError: when ``n`` is not positive.
    """
    if n is None:
        return [d for d in documents if d]
    if n <= 0:
        raise ValueError(f"the number of characters must be positive, got {n}")
    out: list[str] = []
    left = n
    for d in documents:
        if not d:
            continue
        if out:
            if left <= 1:  # room for the boundary but not for a character after it
                break
            left -= 1
        piece = d[:left]
        out.append(piece)
        left -= len(piece)
        if left == 0:
            break
    return out


def read_characters(path, n: int | None) -> list[str]:
    """``take_characters(read_documents(path), n)``, reading the file only up to its ``n``-th character.

    The documents are streamed (:func:`storygpt.data.docstream.iter_documents`, 1 MiB blocks), so the
    first ``n`` characters of a large held-out text cost memory for the documents they fall in, not
    the file.
    ``n=None``: the whole file, as :func:`read_documents` reads it.

    Raises:
        FileNotFoundError: no such file, or a folder.
        ValueError: ``n`` not positive; the file empty, or not UTF-8 in the part read (byte offset named).
    """
    from storygpt.data.docstream import iter_documents

    if n is None:
        return take_characters(read_documents(path), None)
    if n <= 0:
        raise ValueError(f"the number of characters must be positive, got {n}")
    docs = iter_documents(path)
    try:
        return take_characters(docs, n)
    finally:
        docs.close()  # the file is closed now, not when the generator is collected


# --------------------------------------------------------------------------
# tokens
# --------------------------------------------------------------------------
def token_stream(tokenizer: Any, documents: Sequence[str]) -> tuple[np.ndarray, list[list[int]]]:
    """Encode ``documents`` into ``[eot] enc(d_1) [eot] ... [eot] enc(d_n)``.

    Returns:
        ``(stream, per_document_ids)``: ``stream`` is an int64 array of length
        ``1 + sum(len(ids_i)) + n - 1``; ``per_document_ids[i]`` the ids of
        ``documents[i]`` (from ``encode_ordinary``).

    Raises:
        ValueError: when the tokenizer has no ``eot_id``.
    """
    eot = getattr(tokenizer, "eot_id", None)
    if eot is None:
        raise ValueError("the tokenizer has no end-of-text token (eot_id is None)")
    per_doc = [[int(t) for t in tokenizer.encode_ordinary(d)] for d in documents]
    parts: list[list[int]] = [[int(eot)]]
    for i, ids in enumerate(per_doc):
        if i:
            parts.append([int(eot)])
        parts.append(ids)
    stream = np.fromiter((t for p in parts for t in p), dtype=np.int64)
    return stream, per_doc


def scoring_windows(n_targets: int, block_size: int, stride: int | None = None) -> Iterator[tuple[int, int, int]]:
    """Windows that predict each of ``n_targets`` tokens exactly once.

    The stream has ``n_targets + 1`` tokens; target ``j`` (``1 <= j <=
    n_targets``) is stream token ``j``, predicted from tokens ``< j``.

    Yields:
        ``(begin, end, first_scored)``: the window's inputs are stream tokens
        ``begin .. end-1`` (at most ``block_size``), its targets stream tokens
        ``begin+1 .. end``, and the targets ``>= first_scored`` are the ones it
        scores (the earlier ones were scored by an earlier window).

    Raises:
        ValueError: for a non-positive ``block_size`` or a ``stride`` outside
        ``1 .. block_size``.
    """
    if block_size <= 0:
        raise ValueError(f"block_size must be positive, got {block_size}")
    stride = block_size if stride is None else stride
    if not 1 <= stride <= block_size:
        raise ValueError(f"--stride must be between 1 and the context length {block_size}, got {stride}")
    scored = 0  # targets 1..scored are done
    begin = 0
    while scored < n_targets:
        end = min(begin + block_size, n_targets)
        yield begin, end, scored + 1
        scored = end
        begin += stride


# --------------------------------------------------------------------------
# the measurement
# --------------------------------------------------------------------------
@dataclass
class BitsResult:
    """What :func:`evaluate_bits` measured.

    Attributes:
        nats: total cross-entropy over the predicted tokens (natural log).
        tokens: predicted tokens (the stream minus its leading eot).
        characters: characters covered (see the module docstring).
        bytes: UTF-8 bytes covered (see the module docstring; the document boundaries one each).
        unknown_tokens: predicted tokens equal to the tokenizer's ``unk_id``.
        documents: documents measured.
        round_trip_documents: documents ``d`` with ``decode(encode_ordinary(d)) == d``.
    """

    nats: float
    tokens: int
    characters: int
    unknown_tokens: int
    documents: int
    round_trip_documents: int
    bytes: int = 0

    @property
    def bits_per_character(self) -> float:
        return self.nats / (math.log(2) * self.characters)

    @property
    def bits_per_byte(self) -> float:
        return self.nats / (math.log(2) * self.bytes)

    @property
    def nats_per_token(self) -> float:
        return self.nats / self.tokens

    @property
    def characters_per_token(self) -> float | None:
        """The documents' characters per token of their text: the boundaries (one character and one
        end-of-document token each) are not counted, as in data.py (:func:`storygpt.data.corpora.chars_per_token`)."""
        return chars_per_token(self.characters, self.tokens, max(self.documents - 1, 0))

    @property
    def unknown_share(self) -> float:
        return self.unknown_tokens / self.tokens

    @property
    def round_trip_share(self) -> float:
        return self.round_trip_documents / self.documents

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(
            bits_per_character=self.bits_per_character,
            bits_per_byte=self.bits_per_byte,
            nats_per_token=self.nats_per_token,
            characters_per_token=self.characters_per_token,
            unknown_share=self.unknown_share,
            round_trip_share=self.round_trip_share,
        )
        return d


def _logits_of(out: Any):
    """Accept a model returning logits or a tuple/list whose first item is the logits."""
    if isinstance(out, (tuple, list)):
        out = out[0]
    return out


#: windows per forward pass by default: about this many input tokens per pass
TOKENS_PER_BATCH = 8192
#: the output layer and the cross-entropy run on row blocks of at most this many logits (8 MiB of float32),
#: so no large temporary is allocated and freed per pass (on Linux each one costs page faults)
LOGITS_PER_CHUNK = 2**21


def default_batch_size(block_size: int) -> int:
    """Windows per forward pass when none is given: :data:`TOKENS_PER_BATCH` input tokens, at least one window."""
    return max(1, TOKENS_PER_BATCH // block_size)


def _nll_rows(model: Callable, x, y):
    """Cross-entropy (nats, float32) of every target of the batch ``x`` -> ``y`` (B, T), flattened to (B*T,).

    A :class:`storygpt.model.GPT` (anything with ``hidden_states`` and ``lm_head``) has its output
    layer applied in row blocks of :data:`LOGITS_PER_CHUNK` logits; any other model is called whole.
    """
    import torch
    import torch.nn.functional as F

    B, T = x.shape
    if hasattr(model, "hidden_states") and hasattr(model, "lm_head"):
        h = model.hidden_states(x).reshape(B * T, -1)
        vocab = model.lm_head.weight.shape[0]
        rows = max(1, LOGITS_PER_CHUNK // vocab)
        logit_blocks = (model.lm_head(h[i : i + rows]) for i in range(0, B * T, rows))
    else:
        logits = _logits_of(model(x))
        if logits.dim() != 3 or logits.shape[:2] != x.shape:
            raise ValueError(
                f"the model returned logits of shape {tuple(logits.shape)} for inputs of shape "
                f"{tuple(x.shape)}; expected (B, T, vocab_size)"
            )
        vocab = logits.shape[-1]
        flat = logits.reshape(B * T, vocab)
        rows = max(1, LOGITS_PER_CHUNK // vocab)
        logit_blocks = (flat[i : i + rows] for i in range(0, B * T, rows))
    if int(y.max()) >= vocab:
        raise ValueError(
            f"token id {int(y.max())} is outside the model's vocabulary of {vocab}: "
            "the tokenizer does not belong to this model"
        )
    yf = y.reshape(-1)
    out, start = [], 0
    for block in logit_blocks:
        n = block.shape[0]
        out.append(F.cross_entropy(block.float(), yf[start : start + n], reduction="none"))
        start += n
    return torch.cat(out)


def window_nats(
    model: Callable,
    stream,
    windows: Sequence[tuple[int, int, int]],
    *,
    batch_size: int,
    device: Any = "cpu",
    progress: Callable[[int], None] | None = None,
    stop: Callable[[], bool] | None = None,
    token_nats: np.ndarray | None = None,
) -> float | None:
    """Total cross-entropy (nats, summed in float64) of the targets ``windows`` score in ``stream``.

    The one held-out scorer, of :func:`evaluate_bits` and the training loop (storygpt.train.loop); the
    caller sets inference mode and autocast.  ``stream``: the (N,) int64 CPU tensor of :func:`token_stream`;
    ``windows``: ``(begin, end, first_scored)`` of :func:`scoring_windows` (any subset), batched
    ``batch_size`` at a time by length; ``progress(targets scored)`` and ``stop()`` are called after each
    batch, and None is returned when ``stop()`` is True; ``token_nats``, when given, receives each scored
    target's nats at its index - 1 (as :func:`evaluate_bits` says).  Raises ValueError as :func:`evaluate_bits`.
    """
    import torch

    by_len: dict[int, list[tuple[int, int, int]]] = {}
    for w in windows:
        by_len.setdefault(w[1] - w[0], []).append(w)
    total, scored = 0.0, 0
    for length, group in by_len.items():
        offsets = torch.arange(length)
        for i in range(0, len(group), batch_size):
            batch = group[i : i + batch_size]
            starts = torch.tensor([b for b, _, _ in batch])
            x = stream[starts[:, None] + offsets].to(device)
            y = stream[starts[:, None] + offsets + 1].to(device)
            nll = _nll_rows(model, x, y).view(len(batch), length)
            # target of column t is stream token b + 1 + t; keep those >= first_scored
            firsts = torch.tensor([f for _, _, f in batch])
            keep = ((starts[:, None] + offsets + 1) >= firsts[:, None]).to(nll.device)
            total += float(nll[keep].double().sum())
            if token_nats is not None:  # target index j (stream token j) goes to token_nats[j - 1]
                at = (starts[:, None] + offsets)[keep.cpu()]
                token_nats[at.numpy()] = nll[keep].double().cpu().numpy()
            scored += int(keep.sum())
            if progress is not None:
                progress(scored)
            if stop is not None and stop():
                return None
    return total


def evaluate_bits(
    model: Callable,
    tokenizer: Any,
    documents: Sequence[str],
    *,
    block_size: int,
    stride: int | None = None,
    batch_size: int | None = None,
    device: Any = "cpu",
    dtype: Any = None,
    progress: Callable[[int, int], None] | None = None,
    token_nats: np.ndarray | None = None,
) -> BitsResult:
    """Measure ``model`` in bits per character on ``documents``.

    Args:
        model: a callable mapping a LongTensor of ids ``(B, T)`` on ``device`` to
            logits ``(B, T, V)`` (any float dtype), or to a tuple whose first
            item is those logits (``storygpt.model.GPT.forward`` returns
            ``(logits, loss)``); a model with ``hidden_states`` and ``lm_head``
            (:class:`storygpt.model.GPT`) has its output layer applied in
            pieces instead.  Called under ``torch.inference_mode()``; if it is a
            ``torch.nn.Module`` it is put in eval mode for the call and its
            previous mode restored afterwards.
        tokenizer: anything with ``encode_ordinary(str) -> list[int]``,
            ``decode(ids) -> str``, ``eot_id`` and ``unk_id`` (``None`` when the
            tokenizer has no unknown token).
        documents: the held-out text as non-empty documents (see
            :func:`read_documents`, :func:`take_characters`).
        block_size: the model's context length (inputs per window).
        stride: window step, ``1 .. block_size`` (default ``block_size``:
            back-to-back windows).  See :func:`scoring_windows`.
        batch_size: windows per forward call (default :func:`default_batch_size`).
        device: torch device for the inputs.
        dtype: compute dtype under ``torch.autocast`` (None or float32: none);
            the cross-entropy is always computed in float32 and summed in float64.
        progress: called after each batch with ``(targets scored so far, all targets)``.
        token_nats: when given, a float64 array of length ``tokens`` (the predicted tokens: the stream
            minus its leading eot) that receives each token's cross-entropy in nats, in stream order
            (:mod:`storygpt.eval.heldout` sums them into character blocks for the bootstrap).

    Returns:
        a :class:`BitsResult`; ``.bits_per_character`` is
        ``nats / (ln 2 * characters)``.  The result does not depend on
        ``batch_size`` beyond float32 rounding (tests/tools/test_bits.py).

    Raises:
        ValueError: no documents, an empty token stream, logits of the wrong
            shape, or a token id outside the model's vocabulary.
    """
    import torch

    documents = [d for d in documents if d]
    if not documents:
        raise ValueError("no text to measure (all documents are empty)")
    if batch_size is None:
        batch_size = default_batch_size(block_size)
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    stream, per_doc = token_stream(tokenizer, documents)
    n_targets = len(stream) - 1
    if n_targets <= 0:
        raise ValueError("the text encodes to no tokens to predict")
    if token_nats is not None and token_nats.shape != (n_targets,):
        raise ValueError(f"token_nats has shape {token_nats.shape}, expected ({n_targets},)")
    round_trip = sum(1 for d, ids in zip(documents, per_doc) if tokenizer.decode(ids) == d)
    unk = getattr(tokenizer, "unk_id", None)
    n_unk = int((stream[1:] == unk).sum()) if unk is not None else 0

    from storygpt.runtime import autocast_for

    was_training = getattr(model, "training", None)
    if was_training is not None:
        model.eval()
    try:
        with torch.inference_mode(), autocast_for(device, dtype):
            total = window_nats(
                model,
                torch.from_numpy(stream),
                list(scoring_windows(n_targets, block_size, stride)),
                batch_size=batch_size,
                device=device,
                progress=None if progress is None else (lambda k: progress(k, n_targets)),
                token_nats=token_nats,
            )
    finally:
        if was_training:
            model.train()
    return BitsResult(
        nats=total,
        tokens=n_targets,
        characters=count_characters(documents),
        unknown_tokens=n_unk,
        documents=len(documents),
        round_trip_documents=round_trip,
        bytes=count_bytes(documents),
    )
