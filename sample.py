#!/usr/bin/env python3
"""Write a story with a trained checkpoint, printed as it is generated.

    python sample.py checkpoints/bpe-rope/best.pt --prompt "Once upon a time"

The prompt is plain text (a literal "<|endoftext|>" in it is not a control
token) and follows one end-of-text token, so the model starts a new document
the way it saw documents start in training.  Generation stops at the
end-of-text token unless --no-stop is given.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys

from storygpt.helpformat import DefaultsOnceHelpFormatter


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="sample.py",
        description="Sample text from a checkpoint written by pretrain.py, printing it as it is generated. "
        "The model sees <|endoftext|> followed by the prompt (a new document that starts with it); <pad> is "
        "never drawn. A word-level tokenizer turns words outside its vocabulary into <unk>: the prompt is "
        "echoed as the model sees it, and a note on stderr names the words it lost.",
        formatter_class=DefaultsOnceHelpFormatter,
    )
    ap.add_argument(
        "checkpoint",
        metavar="CKPT",
        help="checkpoint file (checkpoints/RUN/best.pt or ckpt.pt) or run folder (best.pt, else ckpt.pt)",
    )
    ap.add_argument(
        "--prompt",
        default="",
        help="text to continue, encoded as plain text (special tokens in it are ordinary text); "
        "empty: start a new document",
    )
    ap.add_argument("--max-new-tokens", type=int, default=200, help="the most tokens to generate per sample")
    ap.add_argument(
        "--temperature",
        type=float,
        default=0.8,
        help="divides the logits before sampling; below 1 is more conservative, 0 is greedy (argmax)",
    )
    ap.add_argument("--top-k", type=int, default=200, help="sample only among the k most likely tokens (0: all tokens)")
    ap.add_argument(
        "--top-p",
        type=float,
        default=1.0,
        help="nucleus sampling: after --top-k, sample only among the most likely tokens whose probabilities "
        "add up to at least P (0 < P <= 1; the most likely token is always kept); 1: off",
    )
    ap.add_argument(
        "--no-heal",
        action="store_true",
        help="turn token healing off. Healing (on by default, BPE tokenizers only; skipped for word-level "
        "ones): the prompt's last token is taken back and the first generated token must start with its "
        "bytes, so the model can choose how the last word ends (without it, 'Zorblax went' can only be "
        "followed by a new token, e.g. 'Zorblax wenty')",
    )
    ap.add_argument("--num-samples", type=int, default=1, help="how many samples to write, one after the other")
    ap.add_argument(
        "--seed",
        type=int,
        default=None,
        help="random seed; the same seed (with the same checkpoint, flags and device) gives the same "
        "text. Default: a random seed, printed so the sample can be reproduced",
    )
    ap.add_argument("--device", default="auto", help="torch device: auto (cuda, then mps, then cpu), cpu, cuda, mps")
    ap.add_argument(
        "--no-stop",
        action="store_true",
        help="do not stop at <|endoftext|>: keep generating (past document ends) up to --max-new-tokens",
    )
    return ap


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


class SuppressTokens:
    """Wraps an output layer so that some ids can never be drawn (their logits become -inf).

    ``<pad>`` is in every vocabulary but never follows anything in the
    training data; a barely trained model would still give it some
    probability.  ``model.stream`` reads the logits from ``model.lm_head``, so
    sample.py puts this wrapper there while it samples (the weights, tied or
    not, stay the same tensors).
    """

    def __init__(self, head, ids):
        self.head = head
        self.ids = sorted(set(int(i) for i in ids))

    def __call__(self, h):
        logits = self.head(h)
        if self.ids:
            logits = logits.clone()
            logits[..., self.ids] = float("-inf")
        return logits


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
    never drawn (see :class:`SuppressTokens`).  With ``heal`` (and a BPE
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
    first_allowed = None
    if allowed:
        first_allowed = torch.zeros(model.config.vocab_size, dtype=torch.bool, device=device)
        first_allowed[allowed] = True
    idx = torch.tensor([[tokenizer.eot_id] + list(prefix)], dtype=torch.long, device=device)
    pad = getattr(tokenizer, "pad_id", None)
    head = getattr(model, "lm_head", None)
    if pad is not None and pad != stop and head is not None:
        model.__dict__["lm_head"] = SuppressTokens(head, [pad])  # an instance attribute, not a submodule
    printer = StreamPrinter(tokenizer, prefix, out)
    out.write(printer.printed)
    out.flush()
    try:
        if max_new_tokens > 0:
            for t in model.stream(
                idx,
                max_new_tokens,
                temperature=temperature,
                top_k=top_k,
                top_p=top_p,
                generator=generator,
                stop_token=stop,
                first_allowed=first_allowed,
            ):
                t = int(t[0])
                if stop is not None and t == stop:
                    break
                printer.add(t)
    finally:
        model.__dict__.pop("lm_head", None)
    return printer.finish()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.max_new_tokens < 0:
            raise ValueError(f"--max-new-tokens must be >= 0, got {args.max_new_tokens}")
        if not (0 <= args.temperature < math.inf):
            raise ValueError(f"--temperature must be a finite number >= 0, got {args.temperature}")
        if args.top_k < 0:
            raise ValueError(f"--top-k must be >= 0, got {args.top_k}")
        if not 0 < args.top_p <= 1:
            raise ValueError(f"--top-p must be in (0, 1], got {args.top_p}")
        if args.num_samples < 1:
            raise ValueError(f"--num-samples must be >= 1, got {args.num_samples}")
        if args.seed is not None and not -(2**63) <= args.seed < 2**64:  # what torch.Generator.manual_seed takes
            raise ValueError(f"--seed must be in [-2**63, 2**64), got {args.seed}")
        import torch

        from storygpt import load_checkpoint
        from storygpt.checkpoint import resolve_checkpoint
        from storygpt.runtime import resolve_device

        path = resolve_checkpoint(args.checkpoint)
        device = resolve_device(args.device)
        model, tok, ckpt = load_checkpoint(str(path), device=device)
    except (FileNotFoundError, ValueError) as e:
        print(f"sample.py: error: {e}", file=sys.stderr)
        return 2

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    if args.seed is None:
        print(f"(seed {seed}; pass --seed {seed} to get this text again)", file=sys.stderr)
    prompt_ids = [int(t) for t in tok.encode_ordinary(args.prompt)]
    unknown = unknown_prompt_words(tok, args.prompt)
    n_unk = sum(1 for t in prompt_ids if t == tok.unk_id) if tok.unk_id is not None else 0
    if n_unk:
        names = ", ".join(unknown) if unknown else "?"
        word = "word is" if n_unk == 1 else "words are"
        print(
            f"note: {n_unk} prompt {word} unknown to this {tok.kind}-level tokenizer and became "
            f"{tok.id_to_token(tok.unk_id) if hasattr(tok, 'id_to_token') else '<unk>'}: {names}",
            file=sys.stderr,
        )
    stop = None if args.no_stop else tok.eot_id
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    try:
        for i in range(args.num_samples):
            if args.num_samples > 1:
                print(f"--- sample {i + 1}/{args.num_samples} ---", flush=True)
            write_sample(
                model,
                tok,
                prompt_ids,
                max_new_tokens=args.max_new_tokens,
                temperature=args.temperature,
                top_k=args.top_k or None,
                top_p=args.top_p if args.top_p < 1 else None,
                heal=not args.no_heal,
                generator=generator,
                stop=stop,
            )
            sys.stdout.write("\n")
            sys.stdout.flush()
    except KeyboardInterrupt:
        sys.stdout.write("\n")
        return 130
    return 0


if __name__ == "__main__":
    from storygpt.cli import run

    run(main)
