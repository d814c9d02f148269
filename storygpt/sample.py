"""Writing one sample: prompt healing, the tokens a sample must not draw, and printing text as it is generated.

sample.py is the command line over these; docs/design.md lists the module.
"""

from __future__ import annotations

import re
import sys


class StreamPrinter:
    """Print the text of a growing id sequence as it becomes final.

    Each call decodes all ids so far and prints the part not yet printed.  A
    trailing U+FFFD is held back: with byte-level BPE a character of several
    UTF-8 bytes can be split over tokens, and its first bytes alone decode to
    the replacement character, which the next token may complete.
    """

    def __init__(self, tokenizer, prefix_ids: list[int], out=None):
        self.tok = tokenizer
        self.ids = list(prefix_ids)
        self.out = out if out is not None else sys.stdout
        # a healed prompt (see heal_prompt) may end inside a character: its bytes are printed once completed
        self.printed = tokenizer.decode(self.ids).rstrip("\ufffd") if self.ids else ""
        self.text = self.printed  # everything emitted so far

    def _emit(self, full: str) -> None:
        if full.startswith(self.printed):
            new = full[len(self.printed) :]
            if new:
                self.out.write(new)
                self.out.flush()
                self.printed = full

    def add(self, token_id: int) -> None:
        self.ids.append(int(token_id))
        self._emit(self.tok.decode(self.ids).rstrip("\ufffd"))

    def finish(self) -> str:
        """Print whatever is left (a genuine trailing U+FFFD included) and return the whole text."""
        self._emit(self.tok.decode(self.ids))
        return self.printed


def unknown_prompt_words(tokenizer, prompt: str) -> list[str]:
    """The words of ``prompt`` that a tokenizer with an unknown token maps to it (each once, in order).

    Uses the tokenizer's own splitting (``WordTokenizer.split``) when it has
    one; otherwise looks each word and punctuation run up on its own.
    """
    unk = getattr(tokenizer, "unk_id", None)
    if unk is None:
        return []
    found: list[str] = []
    split = getattr(tokenizer, "split", None)
    pieces = None
    if callable(split):
        try:
            pieces = list(split(prompt, allowed_special=set()))
        except TypeError:
            pieces = None
    ids = tokenizer.encode_ordinary(prompt)
    if pieces is not None and len(pieces) == len(ids):
        candidates = [p for p, i in zip(pieces, ids) if i == unk]
    else:
        words = re.findall(r"\w+(?:['\u2019-]\w+)*|[^\w\s]+", prompt)
        candidates = [w for w in words if unk in tokenizer.encode_ordinary(w)]
    for w in candidates:
        if w not in found:
            found.append(w)
    return found


def heal_prompt(tokenizer, prompt_ids: list[int]) -> tuple[list[int], list[int]]:
    """Token healing: take the prompt's last token back and list the tokens that may replace it.

    The prompt's encoding ends at the end of the text, where encoding the text
    *with* its continuation could have produced a longer token (``" went"``
    where the corpus has ``" wentworth"``, or an unfinished word).  A model
    given the shorter token then only sees it followed by a token boundary it
    rarely saw there.  Healing removes the last token and makes the first
    generated token one whose bytes start with the removed token's bytes: the
    token itself or a longer one that extends it (the model's probabilities,
    renormalized over these, choose).  Special tokens are never allowed.

    Only tokenizers of kind ``"bpe"`` (with ``token_bytes``) are healed; for
    others (word-level) and for an empty prompt the prompt is returned as it
    is with no allowed list.

    Returns:
        ``(ids, allowed)``: the prompt without its last token, and the sorted
        ids of the tokens allowed first (empty: no healing).
    """
    token_bytes = getattr(tokenizer, "token_bytes", None)
    if not prompt_ids or not callable(token_bytes) or getattr(tokenizer, "kind", None) != "bpe":
        return list(prompt_ids), []
    tail = token_bytes(prompt_ids[-1])
    special = set(tokenizer.special_tokens.values())
    allowed = []
    for i in range(tokenizer.vocab_size):
        if i in special:
            continue
        try:
            b = token_bytes(i)
        except ValueError:  # an id with no token (a gap in a foreign vocabulary)
            continue
        if b.startswith(tail):
            allowed.append(i)
    return list(prompt_ids[:-1]), allowed


def allowed_tokens(vocab_size: int, heal_allowed: list[int], forbidden: list[int], device=None):
    """The ``allowed`` mask of ``GPT.stream``: ``forbidden`` ids never, and the first draw only among
    ``heal_allowed`` (when given, see :func:`heal_prompt`).  None when nothing is constrained.

    Returns:
        a (1 or 2, vocab_size) bool tensor: row 0 for the first draw, the last row for every later one.
    """
    import torch

    if not heal_allowed and not forbidden:
        return None
    rest = torch.ones(vocab_size, dtype=torch.bool, device=device)
    rest[list(forbidden)] = False
    if not heal_allowed:
        return rest[None]
    first = torch.zeros(vocab_size, dtype=torch.bool, device=device)
    first[list(heal_allowed)] = True
    return torch.stack([first & rest, rest])


def write_sample(
    model,
    tokenizer,
    prompt_ids: list[int],
    *,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    heal: bool = True,
    generator=None,
    stop: int | None = None,
    out=None,
) -> str:
    """Print the prompt, then each newly completed piece of the continuation as it is drawn.

    The model sees ``[eot] + prompt_ids`` (a new document starting with the
    prompt) and draws with ``model.stream`` (KV cache).  When ``stop`` is
    given, generation ends at that id, which is not printed.  ``<pad>`` is
    never drawn: a barely trained model would still give it some probability, though it never follows
    anything in the training data.  With ``heal`` (and a BPE
    tokenizer, at least one new token) the prompt's last token is taken back
    and the first token drawn must start with its bytes (:func:`heal_prompt`);
    the text printed still starts with the whole prompt.

    Args:
        model: a :class:`storygpt.model.GPT` (anything with its ``stream``).
        tokenizer: the checkpoint's tokenizer.
        prompt_ids: the prompt encoded with ``encode_ordinary``.
        generator: a ``torch.Generator`` on the model's device (the seed).
        out: a text stream (default ``sys.stdout``).

    Returns:
        The text printed (prompt echo included).
    """
    import torch

    out = out if out is not None else sys.stdout
    device = next(model.parameters()).device
    prefix, allowed = heal_prompt(tokenizer, prompt_ids) if heal and max_new_tokens > 0 else (prompt_ids, [])
    idx = torch.tensor([[tokenizer.eot_id] + list(prefix)], dtype=torch.long, device=device)
    pad = getattr(tokenizer, "pad_id", None)
    forbidden = [pad] if pad is not None and pad != stop else []
    mask = allowed_tokens(model.config.vocab_size, allowed, forbidden, device)
    printer = StreamPrinter(tokenizer, prefix, out)
    out.write(printer.printed)
    out.flush()
    if max_new_tokens > 0:
        for t in model.stream(
            idx, max_new_tokens, temperature, top_k, generator, stop_token=stop, top_p=top_p, allowed=mask
        ):
            t = int(t[0])
            if stop is not None and t == stop:
                break
            printer.add(t)
    return printer.finish()
