"""Error text quoted inside storygpt's own one-line messages, never cut mid-sentence, mid-URL or mid-path."""

from __future__ import annotations

LIMIT = 500  # characters; a quoted line longer than this is shortened at a sentence or word boundary


def shorten(text: str, limit: int = LIMIT) -> str:
    """``text`` whole when it has at most ``limit`` characters; else cut at a boundary, with ``...``.

    The cut is after the last sentence (``. ``, ``! ``, ``? ``, ``; ``) that ends in the second half of
    ``limit``; failing that, before the last word (whitespace-separated, so a URL or a path stays whole)
    that would cross ``limit``.  A first word longer than ``limit`` is kept whole.
    """
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    ends = [head.rfind(mark, 0, limit) for mark in (". ", "! ", "? ", "; ")]
    end = max(ends)
    if end >= limit // 2:
        return text[: end + 1] + " ..."
    space = head.rfind(" ")
    if space <= 0:
        word_end = text.find(" ")
        return text if word_end < 0 else text[:word_end] + " ..."
    return text[:space].rstrip() + " ..."


def first_line(e: BaseException | str, limit: int = LIMIT) -> str:
    """The first non-empty line of an error's text (its type's name when it has none), by :func:`shorten`."""
    text = str(e)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return type(e).__name__ if isinstance(e, BaseException) else ""
    return shorten(lines[0], limit)
