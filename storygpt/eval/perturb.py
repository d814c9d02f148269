"""Noisy copies of the held-out text, and the change in bits per character they cause (``--perturb``).

Kinds after TokSuite's categories (arXiv 2512.20757): ``typos``, ``case``, ``spaces``, ``unicode``
(look-alikes), each applied with probability :data:`RATE` and seeded (PCG64 from ``--perturb-seed``
and the kind).  The text is perturbed block by block, so each perturbed block pairs with one
clean block for the paired bootstrap (:func:`change_interval`).  Each edit: docs/attribution.md.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np

from storygpt.eval.stats import LN2, Interval

KINDS = ("typos", "case", "spaces", "unicode")
#: the share of words (typos, case), spaces (spaces) or look-alike characters (unicode) changed
RATE = 0.1
LOOKALIKES = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "'": "’", '"': "“", "-": "–"}
WORD = re.compile(r"[^\W\d_]+")


def parse_kinds(value: str | None) -> list[str]:
    """``"typos,case"`` -> ``["typos", "case"]``; ``None`` and ``"none"`` -> ``[]``.

    Raises:
        ValueError: an unknown kind, one named twice, or none (``""``; one line naming it and the known kinds).
    """
    if value is None or value.strip() == "none":
        return []
    if not value.strip():
        raise ValueError(f"--perturb {value!r}: no perturbation named (known: {', '.join(KINDS)})")
    out = []
    for k in value.split(","):
        k = k.strip()
        if k not in KINDS:
            raise ValueError(f"--perturb {value}: unknown perturbation {k!r} (known: {', '.join(KINDS)})")
        if k in out:
            raise ValueError(f"--perturb {value}: {k!r} is named twice")
        out.append(k)
    return out


def _typo(w: str, rng: np.random.Generator) -> str:
    i = int(rng.integers(0, len(w) - 1))
    op = int(rng.integers(0, 4))
    if op == 0:
        return w[:i] + w[i + 1] + w[i] + w[i + 2 :]
    if op == 1:
        return w[:i] + w[i + 1 :]
    if op == 2:
        return w[:i] + w[i] + w[i:]
    return w[:i] + chr(ord("a") + int(rng.integers(0, 26))) + w[i + 1 :]


def _case(w: str, rng: np.random.Generator) -> str:
    op = int(rng.integers(0, 3))
    return w.upper() if op == 0 else w.lower() if op == 1 else w[0].swapcase() + w[1:]


def perturb_piece(text: str, kind: str, rng: np.random.Generator) -> str:
    """One perturbed copy of ``text`` (see the module docstring)."""
    if kind in ("typos", "case"):

        def edit(m: re.Match) -> str:
            w = m.group(0)
            if kind == "typos" and len(w) < 3:
                return w
            return (_typo if kind == "typos" else _case)(w, rng) if rng.random() < RATE else w

        return WORD.sub(edit, text)
    if kind == "spaces":

        def space(m: re.Match) -> str:
            if m.group(0) == " ":
                if rng.random() >= RATE:
                    return " "
                return "" if rng.random() < 0.5 else "  "
            return "\n  " if rng.random() < RATE else "\n"

        return re.sub(r"(?<! ) (?! )|\n(?=\S)", space, text)
    if kind == "unicode":
        return "".join(LOOKALIKES[c] if c in LOOKALIKES and rng.random() < RATE else c for c in text)
    raise ValueError(f"unknown perturbation {kind!r} (known: {', '.join(KINDS)})")


def perturb_documents(
    documents: Sequence[str], kind: str, seed: int, block_chars: int
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Perturb ``documents`` block by block.

    Returns:
        ``(perturbed documents, clean block ends, perturbed block ends)``: block ``i`` is characters
        ``ends[i-1] .. ends[i]-1`` of the counted characters (boundaries included, one each; a block
        never crosses a boundary, the boundary closes the block before it).  A perturbed document is
        never empty (a block that loses every character keeps its first one).
    """
    rng = np.random.default_rng([seed, zlib.crc32(kind.encode())])
    out, clean_ends, new_ends = [], [], []
    at_clean = at_new = 0
    for j, d in enumerate(documents):
        pieces = []
        for s in range(0, len(d), block_chars):
            piece = d[s : s + block_chars]
            p = perturb_piece(piece, kind, rng) or piece[:1]
            pieces.append(p)
            last = s + block_chars >= len(d) and j < len(documents) - 1
            at_clean += len(piece) + last
            at_new += len(p) + last
            clean_ends.append(at_clean)
            new_ends.append(at_new)
        out.append("".join(pieces))
    return out, np.array(clean_ends), np.array(new_ends)


def sums_by_ends(char_nats: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The sums of ``char_nats`` over the blocks ending at ``ends`` (exclusive, cumulative)."""
    c = np.concatenate([[0.0], np.cumsum(np.asarray(char_nats, dtype=np.float64))])
    return np.diff(c[np.concatenate([[0], ends])])


def change_interval(
    clean_nats: np.ndarray,
    clean_chars: np.ndarray,
    noisy_nats: np.ndarray,
    noisy_chars: np.ndarray,
    *,
    replicates: int = 10_000,
    level: float = 0.95,
    seed: int = 0,
) -> Interval:
    """bits/char of the perturbed text minus bits/char of the clean text, with a paired percentile
    interval (the pairs of blocks resampled with replacement).

    Raises:
        ValueError: arrays of different lengths or fewer than 2 blocks.
    """
    arrays = [np.asarray(x, dtype=np.float64) for x in (clean_nats, clean_chars, noisy_nats, noisy_chars)]
    n = len(arrays[0])
    if any(len(x) != n for x in arrays):
        raise ValueError("clean and perturbed block counts differ")
    if n < 2:
        raise ValueError(f"a bootstrap needs at least 2 blocks, got {n}")
    cn, cc, pn, pc = arrays
    w = np.random.default_rng(seed).multinomial(n, np.full(n, 1.0 / n), size=replicates).astype(np.float64)
    rep = (w @ pn) / (LN2 * (w @ pc)) - (w @ cn) / (LN2 * (w @ cc))
    tail = (1 - level) / 2
    low, high = np.quantile(rep, [tail, 1 - tail])
    obs = pn.sum() / (LN2 * pc.sum()) - cn.sum() / (LN2 * cc.sum())
    return Interval(float(obs), float(low), float(high), level)
