"""What a tokenizer does to a text by itself, with no model: the measures of ``tokens.py`` (docs/tokens.md).

A *text* is a file of documents separated by ``<|endoftext|>`` lines (:func:`storygpt.data.corpora.read_documents`);
it counts as the sum over its documents: characters, UTF-8 bytes and tokens of the documents' text, the
end-of-document tokens **not** counted (chars/token = characters / tokens of the documents).

Words (for fertility and the share of split words) follow one rule, :data:`WORD_RULE`: every Han, Hiragana or
Katakana character is a word by itself (those scripts write no spaces between words), and every other run of
``regex``'s ``\\w`` characters is a word; a document edge ends a word.  A word's token count is the number of
tokens whose bytes overlap the word's bytes (a token spanning two words counts for both), found from each
token's end offset (:func:`storygpt.eval.heldout.token_char_ends`' rule: exact where the tokens' bytes spell
the document, else spread evenly, and the row says ``offsets approximate``).

Encoding takes each tokenizer's batch path: tiktoken's own ``encode_ordinary_batch`` for ``tiktoken:NAME``
rows, the C++ batch encoder for BPE rows, the library's batch for Hugging Face ones.
"""

from __future__ import annotations

import functools
import importlib.util
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import regex

from storygpt.data.corpora import read_documents
from storygpt.eval.heldout import token_char_ends
from storygpt.eval.stats import renyi_efficiency

#: The word rule, in words (the report's header and docs/tokens.md quote it).
WORD_RULE = (
    "a word is one Han, Hiragana or Katakana character, or a run of other \\w characters (Python regex); "
    "a document edge ends a word"
)
RENYI_ALPHA = 2.5
_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}"

#: Kind -> the optional package its tokenizers need (checked before any work).
OPTIONAL = {
    "tiktoken": "tiktoken",
    "hf": "tokenizers",
    "unigram": "tokenizers",
    "wordpiece": "tokenizers",
    "sp": "sentencepiece",
    "spm-unigram": "sentencepiece",
    "spm-bpe": "sentencepiece",
}


def missing_optional(kind: str) -> str | None:
    """The optional package a SPEC of ``kind`` needs when it is not installed, else None."""
    package = OPTIONAL.get(kind)
    if package is not None and importlib.util.find_spec(package) is None:
        return package
    return None


@functools.lru_cache(maxsize=1)
def _char_tables() -> tuple[np.ndarray, np.ndarray]:
    """``(is_word, is_cjk)``: booleans indexed by code point (all of Unicode, made once)."""
    every = "".join(map(chr, range(0x110000)))
    word = np.zeros(0x110000, dtype=bool)
    cjk = np.zeros(0x110000, dtype=bool)
    for m in regex.finditer(r"\w+", every):
        word[m.start() : m.end()] = True
    for m in regex.finditer(f"[{_CJK}]+", every):
        cjk[m.start() : m.end()] = True
    return word, cjk & word


@dataclass
class Text:
    """A text to measure: its documents, counts and words (byte offsets in the documents joined, no separators)."""

    name: str
    path: str
    documents: list[str]
    chars: int
    bytes: int
    raw: bytes  # the documents' UTF-8, joined
    word_starts: np.ndarray
    word_ends: np.ndarray
    doc_byte_starts: np.ndarray  # one per document, and the total at the end
    char_bytes: np.ndarray = field(repr=False)  # UTF-8 bytes up to each character's end (cumulative)

    @property
    def words(self) -> int:
        return int(self.word_starts.size)


def load_text(name: str, path: str) -> Text:
    """Read a text and find its words (:data:`WORD_RULE`).

    Raises:
        FileNotFoundError: no such file; ValueError: empty, or not UTF-8 (the byte offset named).
    """
    docs = read_documents(path)
    return make_text(name, str(path), docs)


def make_text(name: str, path: str, docs: Sequence[str]) -> Text:
    """A :class:`Text` from documents already read."""
    docs = list(docs)
    joined = "".join(docs)
    cps = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    nbytes = 1 + (cps >= 0x80).astype(np.int64) + (cps >= 0x800) + (cps >= 0x10000)
    char_bytes = np.cumsum(nbytes)
    char_starts = char_bytes - nbytes
    word_table, cjk_table = _char_tables()
    is_word = word_table[cps]
    is_cjk = cjk_table[cps]
    doc_chars = np.cumsum([0] + [len(d) for d in docs])
    edge = np.zeros(cps.size + 1, dtype=bool)
    edge[doc_chars] = True
    prev_word = np.concatenate([[False], is_word[:-1]])
    prev_cjk = np.concatenate([[False], is_cjk[:-1]])
    starts = is_word & (~prev_word | is_cjk | prev_cjk | edge[:-1])
    next_word = np.concatenate([is_word[1:], [False]])
    next_cjk = np.concatenate([is_cjk[1:], [False]])
    ends = is_word & (~next_word | is_cjk | next_cjk | edge[1:])
    raw = joined.encode("utf-8", "surrogatepass")
    doc_bytes = np.concatenate([[0], char_bytes])[doc_chars]
    return Text(
        name=name,
        path=path,
        documents=docs,
        chars=len(joined),
        bytes=len(raw),
        raw=raw,
        word_starts=char_starts[starts],
        word_ends=char_bytes[ends],
        doc_byte_starts=doc_bytes.astype(np.int64),
        char_bytes=char_bytes,
    )


def tokens_per_word(token_starts: np.ndarray, token_ends: np.ndarray, text: Text) -> np.ndarray:
    """For each word of ``text``, how many tokens overlap its bytes (token offsets: sorted byte positions in the
    documents joined)."""
    first = np.searchsorted(token_ends, text.word_starts, side="right")  # first token ending after the word start
    after = np.searchsorted(token_starts, text.word_ends, side="left")  # tokens starting before the word end
    return np.maximum(after - first, 0)


@dataclass
class Encoded:
    """One tokenizer's ids for a text: ``ids`` of all documents, document ``i`` is ``ids[offsets[i]:offsets[i+1]]``."""

    ids: np.ndarray
    offsets: np.ndarray
    seconds: float
    cpu_seconds: float


def encode_text(tokenizer, text: Text, tiktoken_encoding=None, num_threads: int = 0) -> Encoded:
    """The ids of every document of ``text`` by the tokenizer's batch path (special tokens are plain text)."""
    t0, c0 = time.perf_counter(), time.process_time()
    if tiktoken_encoding is not None:
        lists = tiktoken_encoding.encode_ordinary_batch(text.documents, num_threads=num_threads or 8)
        lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        ids = np.fromiter((t for x in lists for t in x), dtype=np.uint32, count=int(offsets[-1]))
    else:
        ids, offsets = tokenizer.encode_batch_numpy(
            text.documents, num_threads=num_threads, allowed_special=set(), disallowed_special=()
        )
        ids, offsets = np.asarray(ids, dtype=np.uint32), np.asarray(offsets, dtype=np.int64)
    return Encoded(ids, offsets, time.perf_counter() - t0, time.process_time() - c0)


@functools.lru_cache(maxsize=16)
def _byte_lengths(tokenizer) -> np.ndarray | None:
    """UTF-8 bytes of every token id (``token_bytes``), or None for a tokenizer without it."""
    token_bytes = getattr(tokenizer, "token_bytes", None)
    if token_bytes is None:
        return None
    out = np.zeros(int(tokenizer.vocab_size), dtype=np.int64)
    for i in range(out.size):
        try:
            out[i] = len(token_bytes(i))
        except (ValueError, KeyError, IndexError):
            out[i] = 0
    return out


def _round_trip(tokenizer, text: Text, enc: Encoded) -> tuple[int, bool]:
    """``(documents that do not come back from their tokens, whole-text bytes check passed)``."""
    decode_bytes = getattr(tokenizer, "decode_bytes", None)
    if decode_bytes is not None:
        try:
            if decode_bytes(enc.ids) == text.raw:
                return 0, True
        except ValueError:
            pass
    bad = 0
    for i, d in enumerate(text.documents):
        if tokenizer.decode(enc.ids[enc.offsets[i] : enc.offsets[i + 1]].tolist()) != d:
            bad += 1
    return bad, False


def _token_spans(tokenizer, text: Text, enc: Encoded, exact_bytes: bool) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(starts, ends, exact)``: each token's byte span in the documents joined."""
    lengths = _byte_lengths(tokenizer)
    if exact_bytes and lengths is not None:
        ends = np.cumsum(lengths[enc.ids.astype(np.int64)])
        return ends - lengths[enc.ids.astype(np.int64)], ends, True
    starts_all, ends_all, exact = [], [], True
    char_bytes = np.concatenate([[0], text.char_bytes])
    char_start = 0
    for i, d in enumerate(text.documents):
        ids = enc.ids[enc.offsets[i] : enc.offsets[i + 1]].tolist()
        char_ends, ok = token_char_ends(tokenizer, d, ids)
        exact &= ok
        ends = char_bytes[char_start + char_ends]
        starts = np.concatenate([[text.doc_byte_starts[i]], ends[:-1]]) if len(ends) else ends
        starts_all.append(starts)
        ends_all.append(ends)
        char_start += len(d)
    cat = np.concatenate if starts_all else (lambda _: np.zeros(0, dtype=np.int64))
    return cat(starts_all).astype(np.int64), cat(ends_all).astype(np.int64), exact


def measure(tokenizer, text: Text, enc: Encoded) -> dict:
    """Every measure of one tokenizer on one text (see the module docstring and docs/tokens.md).

    Returns:
        ``text``, ``documents``, ``chars``, ``bytes``, ``words``, ``tokens``, ``chars_per_token``,
        ``bytes_per_token``, ``tokens_per_1k_chars``, ``fertility`` (tokens per word), ``split_share``
        (share of words of >= 2 tokens), ``renyi_efficiency`` (alpha 2.5), ``vocab_used_share``,
        ``unk_share`` (None without an unknown token), ``lossy_documents``, ``round_trip`` ("exact" or
        "lossy: K of N documents"), ``offsets_exact``, ``encode_seconds``, ``encode_cpu_seconds``.
    """
    vocab = int(tokenizer.vocab_size)
    tokens = int(enc.ids.size)
    counts = np.bincount(enc.ids.astype(np.int64), minlength=vocab)
    bad_docs, exact_bytes = _round_trip(tokenizer, text, enc)
    starts, ends, exact = _token_spans(tokenizer, text, enc, exact_bytes)
    per_word = tokens_per_word(starts, ends, text)
    unk = tokenizer.unk_id
    return {
        "text": text.name,
        "documents": len(text.documents),
        "chars": text.chars,
        "bytes": text.bytes,
        "words": text.words,
        "tokens": tokens,
        "chars_per_token": text.chars / tokens if tokens else None,
        "bytes_per_token": text.bytes / tokens if tokens else None,
        "tokens_per_1k_chars": 1000 * tokens / text.chars,
        "fertility": float(per_word.mean()) if per_word.size else None,
        "split_share": float((per_word >= 2).mean()) if per_word.size else None,
        "renyi_efficiency": renyi_efficiency(counts[:vocab], vocab, RENYI_ALPHA) if tokens and vocab > 1 else None,
        "vocab_used_share": int(np.count_nonzero(counts[:vocab])) / vocab,
        "unk_share": None if unk is None else (int(counts[unk]) / tokens if tokens else 0.0),
        "lossy_documents": bad_docs,
        "round_trip": "exact" if bad_docs == 0 else f"lossy: {bad_docs} of {len(text.documents)} documents",
        "offsets_exact": exact,
        "encode_seconds": enc.seconds,
        "encode_cpu_seconds": enc.cpu_seconds,
    }


def fertility(tokenizer, documents: Sequence[str]) -> float | None:
    """Tokens per word of ``documents`` (the words of :data:`WORD_RULE`; :func:`measure`'s ``fertility``, as
    tokens.py gives it), None when they hold no word."""
    text = make_text("text", "", documents)
    return measure(tokenizer, text, encode_text(tokenizer, text))["fertility"]


def add_premium(rows: list[dict], reference: str, parallel: bool) -> None:
    """Put ``premium`` into every row: for the same tokenizer, tokens(text) / tokens(reference) when the texts are
    ``parallel`` (translations, Petrov et al. 2023's parity), else per character: (tokens/char of the text) /
    (tokens/char of the reference)."""
    ref = {r["tokenizer"]: r for r in rows if r["text"] == reference}
    for r in rows:
        base = ref.get(r["tokenizer"])
        if base is None or not base["tokens"]:
            r["premium"] = None
        elif parallel:
            r["premium"] = r["tokens"] / base["tokens"]
        else:
            r["premium"] = (r["tokens"] / r["chars"]) / (base["tokens"] / base["chars"])


def embedding_parameters(vocab_size: int, n_embd: int, tied: bool) -> int:
    """Parameters of the token embedding and the output layer (one matrix when tied; no bias: storygpt's GPT)."""
    return vocab_size * n_embd * (1 if tied else 2)
