"""Many texts encoded at once by :class:`~storygpt.tokenizers.bpe.BPETokenizer` (mixed into it):
:meth:`BatchEncoding.encode_batch` (a list of ids per text) and :meth:`BatchEncoding.encode_batch_numpy`
(all ids in one array with offsets), one multi-threaded call of the C++ core, special tokens as ``encode``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .base import check_no_special, check_texts, clean_text, join_parts, join_parts_numpy, resolve_special


class BatchEncoding:
    """BPETokenizer's batch encoding (uses its ``_encoder``, ``_special``, ``_special_rx`` and ``_split``)."""

    def _id_list(self) -> list[int]:
        """``list(range(vocab_size))``, made once: the int objects the C++ core puts in its lists."""
        if self._id_objects is None:
            self._id_objects = list(range(self._vocab_size))
        return self._id_objects

    def _batch_plan(self, texts: list, allowed_special, disallowed_special) -> tuple[list[str], list | None]:
        """``(pieces, split)``: the plain pieces of ``texts`` to encode, and each text's parts.

        ``split`` is None when no special token is allowed (the pieces are then the
        texts themselves), else each text's parts as :meth:`_split` gives them.

        Raises:
            TypeError: an item that is not a str.
            ValueError: a disallowed special token in a text (named).
        """
        for t in texts:
            if not isinstance(t, str):
                clean_text(t)  # raises the TypeError
        allowed, disallowed = resolve_special(allowed_special, disallowed_special, self._special)
        for t in texts:
            check_no_special(t, disallowed)
        rx, _ = self._special_rx(allowed)
        if rx is None:
            return texts, None
        split = [self._split(t, rx) for t in texts]
        return [p for parts in split for p in parts if isinstance(p, str)], split

    def _with_clean_retry(self, encode, texts: Sequence[str]):
        """``encode(list of texts)``, again with lone surrogates replaced if the UTF-8 encoding fails."""
        check_texts(texts)
        texts = list(texts)
        try:
            return encode(texts)
        except UnicodeEncodeError:  # rare: clean every text only then
            return encode([clean_text(t) for t in texts])

    def _encode_many(self, pieces: list[str], num_threads: int) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, offsets)`` of plain pieces, as the core's ``encode_batch`` returns them."""
        if self.backend == "cpp":
            return self._encoder.encode_batch(pieces, num_threads)
        arrays = [np.asarray(self._encoder.encode(p.encode("utf-8")), dtype=np.uint32) for p in pieces]
        offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
        np.cumsum([len(a) for a in arrays], out=offsets[1:])
        ids = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.uint32)
        return ids.astype(np.uint32, copy=False), offsets

    def encode_batch_numpy(
        self, texts: Sequence[str], num_threads: int = 0, allowed_special=frozenset(), disallowed_special="all"
    ):
        """Encode many texts at once (C++: one multi-threaded call); specials as :meth:`encode`.

        Args:
            texts: a list (or other sequence) of str.
            num_threads: threads of the C++ core (0: all cores).
            allowed_special, disallowed_special: as :meth:`encode`.

        Returns:
            ``(ids, offsets)``: uint32 ids of all texts concatenated, int64
            offsets of shape ``(len(texts) + 1,)``; text k is ``ids[offsets[k]:offsets[k + 1]]``.

        Raises:
            TypeError: ``texts`` is a single str, or an item is not a str.
            ValueError: a disallowed special token in a text (named).
        """
        return self._with_clean_retry(
            lambda t: self._batch_numpy(t, num_threads, allowed_special, disallowed_special), texts
        )

    def _batch_numpy(self, texts: list, num_threads: int, allowed_special, disallowed_special):
        pieces, split = self._batch_plan(texts, allowed_special, disallowed_special)
        ids, offsets = self._encode_many(pieces, num_threads)
        return (ids, offsets) if split is None else join_parts_numpy(split, ids, offsets)

    def encode_batch(
        self, texts: Sequence[str], num_threads: int = 0, allowed_special=frozenset(), disallowed_special="all"
    ) -> list[list[int]]:
        """Encode many texts; one list of ids per text; specials as :meth:`encode`.

        With the C++ core the lists are built while its threads encode (one
        shared int object per id), so threads speed up the whole call.

        Args:
            texts: a list (or other sequence) of str.
            num_threads: threads of the C++ core (0: all cores).
            allowed_special, disallowed_special: as :meth:`encode`.

        Returns:
            ``len(texts)`` lists of int ids in ``range(vocab_size)``.

        Raises:
            TypeError: ``texts`` is a single str, or an item is not a str.
            ValueError: a disallowed special token in a text (named).
        """
        return self._with_clean_retry(
            lambda t: self._batch_lists(t, num_threads, allowed_special, disallowed_special), texts
        )

    def _batch_lists(self, texts: list, num_threads: int, allowed_special, disallowed_special) -> list[list[int]]:
        pieces, split = self._batch_plan(texts, allowed_special, disallowed_special)
        if self.backend == "cpp":
            lists = self._encoder.encode_batch_lists(pieces, self._id_list(), num_threads)
        else:
            lists = [list(self._encoder.encode(p.encode("utf-8"))) for p in pieces]
        return lists if split is None else join_parts(split, iter(lists))
