#!/usr/bin/env python3
"""Export a checkpoint for other libraries: a Hugging Face folder or a llama.cpp GGUF file.

    python export.py checkpoints/shakespeare/rope-bpe-8192 exported/rope-bpe-8192
    python export.py checkpoints/shakespeare/rope-bpe-8192 rope-bpe-8192.gguf --format gguf

The Hugging Face folder loads with ``AutoModelForCausalLM.from_pretrained(OUT)`` and
``AutoTokenizer.from_pretrained(OUT)`` (stock classes, no custom code): learned positions
become GPT-2, rotary positions GPT-NeoX, the modern recipe's parts Llama, Qwen3 or NanoChat,
with the same logits; what has no exact equivalent is refused (docs/export.md).
"""

from __future__ import annotations

import argparse
import sys

EPILOG = """\
formats:
  hf    a folder: config.json, model.safetensors (float32), generation_config.json,
        tokenizer.json, tokenizer_config.json, special_tokens_map.json (the tokenizer puts
        <|endoftext|> before the text, as the model was trained), README.md (a model card)
  gguf  one file for llama.cpp (architectures gpt2 and gptneox: the gpt2 recipe; float32), for
        byte-level BPE tokenizers with the gpt2, gpt4 or o200k split pattern

What has no exact equivalent in the format (a model option, a tokenizer) is
refused with the reason; nothing is written then.  Needs safetensors (and gguf
for --format gguf): pip install -e .[interop]
"""


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="export.py",
        description="Export a checkpoint as a Hugging Face model folder or a llama.cpp GGUF file.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "checkpoint",
        metavar="CKPT",
        help="checkpoint file (checkpoints/RUN/best.pt or ckpt.pt) or run folder (best.pt, else ckpt.pt)",
    )
    ap.add_argument("out", metavar="OUT", help="the folder (hf) or file (gguf) to create")
    ap.add_argument("--format", choices=("hf", "gguf"), default="hf", help="what to write (default hf)")
    ap.add_argument("--force", action="store_true", help="replace OUT when it exists and is not empty")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from storygpt.cli import show
    from storygpt.export.destination import ExportError, check_paths

    try:
        check_paths(args.checkpoint, args.out, args.format, args.force)  # before torch is imported
        from storygpt.export import export

        res = export(args.checkpoint, args.out, fmt=args.format, force=args.force)
    except (ExportError, FileNotFoundError, ValueError, ImportError) as e:
        print(f"export.py: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a folder not writable, a full disk: nothing of the export is left (storygpt.export)
        where = e.filename if e.filename is not None else args.out
        print(
            f"export.py: error: cannot write {args.out}: {e.strerror or e} ({where}); nothing written", file=sys.stderr
        )
        return 1
    except KeyboardInterrupt:
        print("\nexport.py: interrupted", file=sys.stderr)
        return 130
    print(
        f"{show(res['checkpoint'])} -> {show(res['path'])} ({res['format']}, {res['architecture']}): "
        + ", ".join(res["files"])
    )
    return 0


if __name__ == "__main__":
    from storygpt.cli import run

    run(main)
