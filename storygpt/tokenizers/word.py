"""Word-level tokenizer: the N most frequent words and punctuation runs, the rest ``<unk>``.

A deliberately simple baseline to compare against byte-level BPE (in bits per
character).  It is lossy (see :class:`WordTokenizer` and docs/tokenizers.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import regex

from . import io as _io
from .base import EOT, Tokenizer, as_int, check_no_special, clean_text, resolve_special

PAD = "<pad>"
UNK = "<unk>"
#: Special tokens of every word tokenizer, with ids 0, 1, 2.
SPECIALS = (PAD, UNK, EOT)

#: Name of the splitting rules below (stored in the file as ``"split"``).
SPLIT_NAME = "words-v1"

_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}"
_WORD_CHARS = rf"[\p{{L}}\p{{M}}\p{{N}}_--[{_CJK}]]"
_TOKEN_BODY = rf"""
  \p{{N}}+(?:[.,:]\p{{N}}+)+                           # numbers with separators: 3.14 1,000 10:30
| [{_CJK}]                                             # one CJK character (no spaces in those scripts)
| {_WORD_CHARS}+(?:['’]{_WORD_CHARS}+)*                # words, with inner apostrophes: don't, John's
| (?:(?!<\|endoftext\|>)[^\s\p{{L}}\p{{M}}\p{{N}}_])+  # a run of punctuation / symbols
"""
_RX_SPECIAL = regex.compile(r"<\|endoftext\|>|" + _TOKEN_BODY, regex.VERBOSE | regex.VERSION1)
_RX_PLAIN = regex.compile(_TOKEN_BODY.replace(r"(?!<\|endoftext\|>)", ""), regex.VERBOSE | regex.VERSION1)
_RX_LAST_SPACE = regex.compile(r"(?r)\s")

# --- decoding rules -----------------------------------------------------------
CLOSERS = set(".,;:!?)]}»”’…%") | set("，。、；：！？）》」』】〕")
OPENERS = set("([{«“‘¿¡") | set("（《「『【〔")
GLUE = set("-–—/")  # hyphens, dashes, slash: no space on either side
_RX_CJK_CHAR = regex.compile(rf"[{_CJK}\u3000-\u303f\uff00-\uffef]")


class WordTokenizer(Tokenizer):
    """Word-level tokenizer.

    Splitting (``"words-v1"``): ``<|endoftext|>``; numbers with inner
    separators (``3.14``); single CJK characters; words (letters, marks,
    digits, ``_``, with inner apostrophes: ``don't``); runs of other
    non-space characters (punctuation, ``."``).  White space only separates
    tokens and is dropped.  Case is kept.

    Decoding puts one space between tokens except: none before closing
    punctuation (``. , ; : ! ? ) ] } » ” ’ … %`` and full-width ones), none
    after opening brackets and quotes (``( [ { « “ ‘``), none before a token
    that starts or after one that ends with a hyphen, dash or ``/``, none
    next to CJK characters; straight quotes ``"`` and ``'`` (as tokens of
    their own or in punctuation runs) alternate between opening (no space
    after) and closing (no space before), each kind separately.  ``<|endoftext|>`` is put on
    a line of its own.

    Lossy: unknown words become ``<unk>``; spacing, line breaks and paragraph
    breaks are not kept; the decoded text follows the rules above, not the
    original spacing.

    Args:
        tokens: token strings in id order; must contain ``<pad>``, ``<unk>`` and
            ``<|endoftext|>`` (at any ids, usually 0, 1, 2).

    Raises:
        ValueError: duplicate tokens, missing specials, tokens with white space.
    """

    kind = "word"

    def __init__(self, tokens: Sequence[str]):
        self._tokens = [str(t) for t in tokens]
        self._ids: dict[str, int] = {}
        for i, t in enumerate(self._tokens):
            if not t or regex.search(r"\s", t):
                raise ValueError(f"word token {i} ({t!r}) is empty or contains white space")
            if t in self._ids:
                raise ValueError(f"word token {t!r} appears twice (ids {self._ids[t]} and {i})")
            self._ids[t] = i
        for s in SPECIALS:
            if s not in self._ids:
                raise ValueError(f"word vocabulary lacks the special token {s!r}")

    # ------------------------------------------------------------ training
    @classmethod
    def train(cls, texts: Iterable[str] | str, vocab_size: int = 10_000, show_progress: bool = False) -> WordTokenizer:
        """Keep the ``vocab_size`` most frequent tokens (the 3 specials included).

        Args:
            texts: an iterable of strings (documents, or lines of an open file);
                a single ``str`` is one text.  Tokens never cross white space,
                so splitting the text into lines does not change the counts.
            vocab_size: total vocabulary size including ``<pad>`` (0),
                ``<unk>`` (1), ``<|endoftext|>`` (2); smaller if the text has
                fewer distinct tokens.
            show_progress: show a tqdm bar over ``texts``.

        Returns:
            A tokenizer whose ids 3, 4, ... are tokens by decreasing count, ties
            in code-point order of the token (deterministic).

        Raises:
            ValueError: ``vocab_size < 3``.
        """
        vocab_size = as_int(vocab_size, "vocab_size")
        if vocab_size < len(SPECIALS):
            raise ValueError(f"vocab_size={vocab_size} is too small: it must hold the {len(SPECIALS)} special tokens")
        if isinstance(texts, str):
            texts = [texts]
        if show_progress:
            from tqdm import tqdm

            texts = tqdm(texts, desc="counting words", unit="text")
        counts: Counter = Counter()
        for t in texts:
            counts.update(m for m in _RX_SPECIAL.findall(clean_text(t)) if m != EOT)
        for s in SPECIALS:
            counts.pop(s, None)
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        keep = [t for t, _ in ranked[: vocab_size - len(SPECIALS)]]
        return cls(list(SPECIALS) + keep)

    # ---------------------------------------------------------- properties
    @property
    def vocab_size(self) -> int:
        return len(self._tokens)

    @property
    def special_tokens(self) -> dict[str, int]:
        return {s: self._ids[s] for s in SPECIALS}

    @property
    def pad_id(self) -> int:
        return self._ids[PAD]

    @property
    def unk_id(self) -> int:
        return self._ids[UNK]

    @property
    def eot_id(self) -> int:
        return self._ids[EOT]

    @property
    def tokens(self) -> list[str]:
        """All tokens in id order."""
        return list(self._tokens)

    def id_to_token(self, token_id: int) -> str:
        """The token string. Raises ValueError for an unknown id."""
        t = as_int(token_id, "token id", ValueError)
        if not 0 <= t < len(self._tokens):
            raise ValueError(f"unknown token id {t} (vocab_size {len(self._tokens)})")
        return self._tokens[t]

    def token_to_id(self, token: str) -> int:
        """The id of a token string (``unk_id`` if not in the vocabulary)."""
        return self._ids.get(token, self._ids[UNK])

    # -------------------------------------------------------------- encode
    @staticmethod
    def split(text: str, allowed_special=frozenset()) -> list[str]:
        """The token strings of ``text`` before vocabulary lookup (``<|endoftext|>`` kept
        whole when ``allowed_special`` is ``"all"`` or holds it)."""
        allowed, _ = resolve_special(allowed_special, (), SPECIALS)
        rx = _RX_SPECIAL if EOT in allowed else _RX_PLAIN
        return rx.findall(clean_text(text))

    def encode(self, text: str, allowed_special=frozenset(), disallowed_special="all") -> list[int]:
        """Encode ``text``; out-of-vocabulary tokens become ``unk_id``.

        Special tokens follow tiktoken's rules (:meth:`Tokenizer.encode`); of the three,
        only ``<|endoftext|>`` is ever recognised in text (``<pad>`` and ``<unk>`` are
        split like punctuation and letters), so it is the only one that can be found
        there and refused.

        Raises:
            ValueError: ``<|endoftext|>`` in ``text`` while it is disallowed.
        """
        allowed, disallowed = resolve_special(allowed_special, disallowed_special, SPECIALS)
        text = clean_text(text)
        check_no_special(text, disallowed & {EOT})
        unk = self._ids[UNK]
        get = self._ids.get
        if EOT in allowed:
            eot = self._ids[EOT]
            return [eot if m == EOT else get(m, unk) for m in _RX_SPECIAL.findall(text)]
        return [get(m, unk) for m in _RX_PLAIN.findall(text)]

    def _safe_cut_for(self, specials):
        """Tokens never contain white space, so the buffer is cut after its last white-space character."""

        def cut(text: str) -> int:
            m = _RX_LAST_SPACE.search(text)
            return m.end() if m is not None else 0

        return cut

    def unknown_rate(self, text: str) -> float:
        """Fraction of the tokens of ``text`` that are ``<unk>`` (0.0 for empty text)."""
        ids = self.encode(text, "all")
        return ids.count(self._ids[UNK]) / len(ids) if ids else 0.0

    # -------------------------------------------------------------- decode
    def decode(self, ids: Iterable[int]) -> str:
        """Join tokens with spaces by the rules in the class docstring (lossy).

        Raises:
            ValueError: an unknown id.
        """
        out: list[str] = []
        prev_opens = True  # nothing before the first token: no space
        prev_glues = False
        open_quote = {'"': False, "'": False}  # straight quotes alternate open / close
        for i in ids:
            tok = self.id_to_token(i)
            if tok == EOT:
                out.append(("\n" if out else "") + EOT + "\n")
                prev_opens, prev_glues = True, False
                open_quote = {'"': False, "'": False}
                continue
            first = tok[0]
            space = not (
                prev_opens
                or prev_glues
                or first in CLOSERS
                or first in GLUE
                or (first in open_quote and open_quote[first])
                or _RX_CJK_CHAR.match(first)
                or _RX_CJK_CHAR.match(out[-1][-1])
            )
            if space:
                out.append(" ")
            out.append(tok)
            for c in tok:
                if c in open_quote:
                    open_quote[c] = not open_quote[c]
            last = tok[-1]
            prev_opens = last in OPENERS or (last in open_quote and open_quote[last])
            prev_glues = last in GLUE
        return "".join(out)

    # ------------------------------------------------------------- storage
    def to_dict(self) -> dict:
        return {
            "format": _io.FORMAT_NAME,
            "version": _io.FORMAT_VERSION,
            "kind": "word",
            "split": SPLIT_NAME,
            "special_tokens": self.special_tokens,
            "vocab": list(self._tokens),
        }

    @classmethod
    def from_dict(cls, d: dict, **kwargs) -> WordTokenizer:
        """Rebuild from :meth:`to_dict` output (extra keyword arguments are ignored).

        Raises:
            TokenizerFileError: wrong header or splitting rules; ValueError: bad vocabulary.
        """
        kind = _io.check_header(d)
        if kind != "word":
            raise _io.TokenizerFileError(f"expected a 'word' tokenizer, got {kind!r}")
        if d.get("split") != SPLIT_NAME:
            raise _io.TokenizerFileError(f"unknown word splitting rules {d.get('split')!r} (expected {SPLIT_NAME!r})")
        vocab = d["vocab"]
        if not isinstance(vocab, list) or not all(isinstance(t, str) for t in vocab):
            raise ValueError("vocab must be a list of strings")
        tok = cls(vocab)
        if d.get("special_tokens", tok.special_tokens) != tok.special_tokens:
            raise ValueError(f"special_tokens {d.get('special_tokens')} disagree with the vocabulary")
        return tok

    def __repr__(self) -> str:
        return f"WordTokenizer(vocab_size={self.vocab_size})"
