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
import random
import sys

from storygpt.cli import ToolParser, check_ranges
from storygpt.helpformat import DefaultsOnceHelpFormatter
from storygpt.sample import unknown_prompt_words, write_sample


def build_parser() -> argparse.ArgumentParser:
    ap = ToolParser(
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
        "text. Default: a random seed, printed (when --temperature > 0) so the sample can be reproduced",
    )
    ap.add_argument(
        "--device", default="auto", help="torch device: auto (cuda, then mps, then cpu), cpu, cuda, cuda:N, mps"
    )
    ap.add_argument(
        "--no-stop",
        action="store_true",
        help="do not stop at <|endoftext|>: keep generating (past document ends) up to --max-new-tokens",
    )
    return ap


# allowed values (storygpt.cli.check_ranges); --seed: what torch.Generator.manual_seed takes
RANGES = {"max_new_tokens": (0, None), "temperature": (0, None), "top_k": (0, None), "top_p": (0, 1, "strict")}
RANGES |= {"num_samples": (1, None), "seed": (-(2**63), 2**64 - 1)}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_ranges(parser, args, RANGES)
    try:
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
    if args.seed is None and args.temperature > 0:  # greedy decoding needs no seed
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
