"""SentencePiece models behind storygpt's interface: ``sp:PATH``, ``spm-unigram:V``, ``spm-bpe:V``.

:class:`SentencePieceTokenizer` runs the optional ``sentencepiece`` package (Kudo & Richardson 2018)
on a ``.model`` file (Llama 2, Gemma, T5); its file (``"kind": "sp"``) holds the proto in base64.
:func:`train_sentencepiece` trains ``unigram`` or ``bpe`` losslessly and deterministically
(identity normalization, ``byte_fallback``, one thread, fixed seed); specials ``<unk>`` 0,
``<pad>`` 1, ``<|endoftext|>`` 2.  Settings and their reasons: docs/tokenizers.md.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from . import io as _io
from .base import EOT, Tokenizer, as_int, check_ids, encode_split, require

#: Smallest vocabulary of spm-unigram and spm-bpe: 3 special tokens, 256 byte pieces and one more piece.
MIN_VOCAB = 3 + 256 + 1

#: ``sentencepiece``'s reservoir sample of documents, above which training samples this many
#: (seeded, so the sample is the same every run); below it every document is used.
MAX_SENTENCES = 2_000_000
#: ``sentencepiece`` leaves out sentences longer than this many bytes, so longer documents are
#: given to it in pieces cut after a newline (:func:`sentences`).
MAX_SENTENCE_BYTES = 1 << 20
SEED = 0


class SentencePieceFileError(ValueError):
    """A file that is not a SentencePiece ``.model``; the message names the file."""


def _processor(proto: bytes, source: str):
    spm = require("sentencepiece", "a SentencePiece tokenizer")
    sp = spm.SentencePieceProcessor()
    try:
        sp.LoadFromSerializedProto(proto)
    except Exception:  # the library raises RuntimeError/OSError with a protobuf message
        raise SentencePieceFileError(f"{source}: not a SentencePiece model file") from None
    if sp.get_piece_size() == 0:
        raise SentencePieceFileError(f"{source}: not a SentencePiece model file (no pieces)")
    return sp


class SentencePieceTokenizer(Tokenizer):
    """A ``sentencepiece.SentencePieceProcessor`` as a storygpt tokenizer.

    Encoding is the processor's ``encode`` (no BOS/EOS added); storygpt splits out the
    allowed special tokens itself (tiktoken's rules).  ``<|endoftext|>`` is the model's
    piece of that name when it has one, else one more id after the model's pieces.
    Decoding is the processor's ``decode`` between special tokens, which are written as
    their text.  Lossless when the model has byte fallback and identity normalization
    (the trained kinds); a model that normalizes (NFKC) or lacks byte fallback is lossy,
    which bits.py and compare.py report as round-trip failures and unknown share.

    Args:
        proto: the serialized ``ModelProto`` (the bytes of a ``.model`` file).
        source: a name for error messages (the file path or SPEC).

    Raises:
        ImportError: ``sentencepiece`` missing (named).
        SentencePieceFileError: bytes the library cannot read (``source`` named).
    """

    kind = "sp"

    def __init__(self, proto: bytes, source: str = "sentencepiece model"):
        self._sp = _processor(proto, source)
        self._proto = bytes(proto)
        self._source = source
        n = self._sp.get_piece_size()
        special = {}
        for i in range(n):
            if self._sp.is_control(i):
                special[self._sp.id_to_piece(i)] = i
        eot = self._sp.piece_to_id(EOT)
        if eot == self._sp.unk_id() and EOT not in special:
            eot = n  # one more id after the model's pieces
        special[EOT] = eot
        self._special = special
        self._vocab_size = max(n, eot + 1)
        self._extra = {eot: EOT} if eot >= n else {}
        pad = self._sp.pad_id()
        self._pad = pad if pad >= 0 else special.get("<pad>")
        self._unk = self._sp.unk_id() if self._sp.unk_id() >= 0 else None

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> SentencePieceTokenizer:
        """Read a SentencePiece ``.model`` file.

        Raises:
            FileNotFoundError (named); SentencePieceFileError: not a model (named).
        """
        path = Path(path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(f"SentencePiece model not found: {path}") from None
        except IsADirectoryError:
            raise SentencePieceFileError(f"{path}: is a folder, not a SentencePiece model file") from None
        return cls(raw, source=str(path))

    @classmethod
    def from_spec(cls, arg, train_docs, options) -> SentencePieceTokenizer:
        """``sp:PATH`` (see :func:`storygpt.tokenizers.registry.register_kind`)."""
        return cls.from_file(arg)

    def id_to_token(self, token_id: int) -> str:
        t = as_int(token_id, "token id", ValueError)
        if t in self._extra:
            return self._extra[t]
        if not 0 <= t < self._sp.get_piece_size():
            raise ValueError(f"unknown token id {t} (vocab_size {self._vocab_size})")
        return self._sp.id_to_piece(t)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes one token stands for: a byte piece ``<0xNN>`` its byte, a special token its
        UTF-8, another piece its text with ``\u2581`` as a space (so the dummy prefix of a text's
        first piece counts as one byte the text lacks).

        Raises:
            ValueError: unknown id (named).
        """
        t = as_int(token_id, "token id", ValueError)
        piece = self.id_to_token(t)
        if t in self._extra or self._sp.is_control(t):
            return piece.encode("utf-8")
        if self._sp.is_byte(t):
            return bytes([int(piece[3:5], 16)])
        return piece.replace("\u2581", " ").encode("utf-8")

    # ---------------------------------------------------------------------- encode
    def encode(self, text: str, allowed_special=frozenset(), disallowed_special="all") -> list[int]:
        """Encode with the processor; specials as :meth:`Tokenizer.encode`."""
        return self.encode_batch([text], 0, allowed_special, disallowed_special)[0]

    def encode_batch(
        self, texts: Sequence[str], num_threads: int = 0, allowed_special=frozenset(), disallowed_special="all"
    ) -> list[list[int]]:
        """Encode several texts (the processor's batch encode with ``num_threads``).

        Raises:
            ValueError: a disallowed special token in a text (named).
        """
        threads = max(num_threads, 0) or -1
        encode = lambda plain: self._sp.encode(plain, num_threads=threads)
        return encode_split(texts, self._special, allowed_special, disallowed_special, encode)

    def _safe_cut_for(self, specials):
        """Never cut: the dummy-prefix rule looks at the start of the text."""
        return lambda text: 0

    # ---------------------------------------------------------------------- decode
    def decode(self, ids: Iterable[int]) -> str:
        """The processor's decode between special tokens, which are written as their text.

        Raises:
            ValueError: an unknown id (named).
        """
        ids = check_ids(ids, self._vocab_size)
        by_id = {i: s for s, i in self._special.items()}
        out, run = [], []
        for i in ids:
            if i in by_id:
                if run:
                    out.append(self._sp.decode(run))
                    run = []
                out.append(by_id[i])
            else:
                run.append(i)
        if run:
            out.append(self._sp.decode(run))
        return "".join(out)

    # --------------------------------------------------------------------- storage
    def to_dict(self) -> dict:
        return {
            "format": _io.FORMAT_NAME,
            "version": _io.FORMAT_VERSION,
            "kind": "sp",
            "model_proto_base64": base64.b64encode(self._proto).decode("ascii"),
        }

    @classmethod
    def from_dict(cls, d: dict, **kwargs) -> SentencePieceTokenizer:
        """Rebuild from :meth:`to_dict` output (extra keyword arguments are ignored).

        Raises:
            TokenizerFileError: wrong header; ValueError: a missing or corrupt model proto.
        """
        kind = _io.check_header(d)
        if kind != "sp":
            raise _io.TokenizerFileError(f"expected an 'sp' tokenizer, got {kind!r}")
        b64 = d.get("model_proto_base64")
        if not isinstance(b64, str):
            raise ValueError("model_proto_base64 must be the base64 text of a SentencePiece model")
        try:
            proto = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("model_proto_base64 is not valid base64") from None
        return cls(proto, source="sp tokenizer (model_proto_base64)")

    def __repr__(self) -> str:
        return f"SentencePieceTokenizer(vocab_size={self.vocab_size})"


# ------------------------------------------------------------------------- training
def sentences(docs: Iterable[str], limit: int = MAX_SENTENCE_BYTES) -> Iterator[str]:
    """The documents as ``sentencepiece`` training sentences: each document whole when its UTF-8
    fits in ``limit`` bytes, else in pieces of at most ``limit`` bytes cut after a newline (a
    line longer than that: cut between characters)."""
    for doc in docs:
        if len(doc.encode("utf-8")) <= limit:
            yield doc
            continue
        piece, size = [], 0
        for line in doc.splitlines(keepends=True):
            n = len(line.encode("utf-8"))
            if size + n > limit and piece:
                yield "".join(piece)
                piece, size = [], 0
            while n > limit:  # one line over the limit: cut at limit // 4 characters (<= limit bytes)
                yield line[: limit // 4]
                line = line[limit // 4 :]
                n = len(line.encode("utf-8"))
            piece.append(line)
            size += n
        if piece:
            yield "".join(piece)


def train_sentencepiece(docs: Iterable[str], vocab_size: int, model_type: str) -> bytes:
    """Train a SentencePiece model (``SentencePieceTrainer``), lossless and deterministic.

    Args:
        docs: the training documents (str), one sentence each (:func:`sentences`), read once.
        vocab_size: the vocabulary size (an upper bound: ``hard_vocab_limit`` off, so a
            small corpus gives fewer pieces instead of an error).
        model_type: ``"unigram"`` or ``"bpe"``.

    Returns:
        the serialized ``ModelProto`` (the bytes of a ``.model`` file).

    Raises:
        ImportError: ``sentencepiece`` missing (named).  ValueError: ``vocab_size`` below
            the 3 specials + 256 byte pieces + 1, or the trainer's refusal (its message).
    """
    kind = f"spm-{model_type}"
    if vocab_size < MIN_VOCAB:
        raise ValueError(
            f"{kind}:{vocab_size}: the vocabulary size must be at least {MIN_VOCAB} (3 special tokens, 256 byte pieces)"
        )
    spm = require("sentencepiece", f"the {kind}: tokenizer")
    spm.set_random_generator_seed(SEED)
    out = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=sentences(docs),
            model_writer=out,
            vocab_size=vocab_size,
            model_type=model_type,
            byte_fallback=True,
            normalization_rule_name="identity",
            remove_extra_whitespaces=False,
            allow_whitespace_only_pieces=True,
            unk_id=0,
            bos_id=-1,
            eos_id=-1,
            pad_id=-1,
            control_symbols=["<pad>", EOT],
            num_threads=1,
            input_sentence_size=MAX_SENTENCES,
            shuffle_input_sentence=True,
            max_sentence_length=MAX_SENTENCE_BYTES,
            hard_vocab_limit=False,
            minloglevel=2,
        )
    except RuntimeError as e:
        raise ValueError(f"{kind}:{vocab_size}: sentencepiece refused to train: {e}") from None
    return out.getvalue()


def build_spm_unigram(vocab_size: int, docs: Iterable[str], options) -> SentencePieceTokenizer:
    """``spm-unigram:V`` (builder: see :func:`storygpt.tokenizers.registry.register_kind`)."""
    return SentencePieceTokenizer(train_sentencepiece(docs, vocab_size, "unigram"), f"spm-unigram:{vocab_size}")


def build_spm_bpe(vocab_size: int, docs: Iterable[str], options) -> SentencePieceTokenizer:
    """``spm-bpe:V`` (builder: see :func:`storygpt.tokenizers.registry.register_kind`)."""
    return SentencePieceTokenizer(train_sentencepiece(docs, vocab_size, "bpe"), f"spm-bpe:{vocab_size}")
