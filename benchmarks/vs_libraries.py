"""storygpt's BPE against the libraries people use: training and encoding, side by side.

Usage::

    python benchmarks/vs_libraries.py FILE [--task train|encode|all] [--vocab-sizes 8192 32768]
                                           [--threads 1 2] [--repeats 3] [--pattern gpt2]
                                           [--inputs long spaces letters noline batch] [--libraries rustbpe hf storygpt-np]

Every measurement runs in a fresh subprocess (so peak memory is that run's
own), after the text is already in memory; times are the median of
``--repeats`` runs inside that process.  Outputs are compared *before* any time
is printed:

* training: storygpt's merges must equal rustbpe's (both break ties by the
  smallest pair of ids) when rustbpe is installed; Hugging Face ``tokenizers``
  breaks ties differently, so only its time and memory are reported.
* encoding: storygpt's ids with GPT-2's vocabulary must equal tiktoken's (and
  Hugging Face's, when installed).

Training text: the file is split into documents at ``<|endoftext|>``; every
library sees the same documents (storygpt gets the separator as a special
token, which splits the text the same way).  ``vocab_size`` counts the 256
bytes and the merges (storygpt's count also holds the one special token, so it
learns exactly the same number of merges).

Optional dependencies: ``pip install -e .[bench]`` (tiktoken, tokenizers,
rustbpe).  GPT-2's files are read through tiktoken's cache: set
``TIKTOKEN_CACHE_DIR`` (``../shared/tiktoken_cache`` here); nothing downloads.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

EOT = "<|endoftext|>"
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))


# --------------------------------------------------------------------------- workers
def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _read_docs(path: str) -> tuple[str, list[str]]:
    text = Path(path).read_text(encoding="utf-8")
    return text, text.split(EOT)


def _timed(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, times


def worker_train(lib: str, path: str, vocab_size: int, threads: int, pattern: str, repeats: int) -> dict:
    text, docs = _read_docs(path)
    base = _peak_mb()
    if lib == "storygpt":
        from storygpt import _bpe
        from storygpt.tokenizers.bpe_reference import PATTERNS  # noqa: F401  (pattern name check)

        data = text.encode("utf-8")
        merges, times = _timed(
            lambda: _bpe.train(
                data,
                vocab_size=vocab_size + 1,
                pattern=pattern,
                special_tokens=[EOT.encode()],
                num_threads=threads,
            ),
            repeats,
        )
        vocab = [bytes([b]) for b in range(256)]
        for a, b in merges:
            vocab.append(vocab[a] + vocab[b])
        pairs = [[vocab[a].hex(), vocab[b].hex()] for a, b in merges]
    elif lib == "rustbpe":
        import rustbpe

        from storygpt.tokenizers.bpe_reference import PATTERNS

        def run():
            tok = rustbpe.Tokenizer()
            tok.train_from_iterator(iter(docs), vocab_size, pattern=PATTERNS[pattern])
            return tok

        tok, times = _timed(run, repeats)
        from storygpt.tokenizers import merges_from_ranks

        # each merge's two parts, as BPE with the lower-ranked tokens only leaves them
        ranks = {bytes(tb): rank for tb, rank in tok.get_mergeable_ranks()}
        pairs = [[a.hex(), b.hex()] for a, b in merges_from_ranks(ranks)]
    elif lib == "hf":
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

        from storygpt.tokenizers.bpe_reference import PATTERNS

        def run():
            tok = Tokenizer(models.BPE())
            tok.pre_tokenizer = pre_tokenizers.Sequence(
                [
                    pre_tokenizers.Split(Regex(PATTERNS[pattern]), behavior="isolated"),
                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
                ]
            )
            trainer = trainers.BpeTrainer(
                vocab_size=vocab_size,
                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                show_progress=False,
                special_tokens=[],
            )
            tok.train_from_iterator(docs, trainer)
            return tok

        tok, times = _timed(run, repeats)
        pairs = None
    else:
        raise SystemExit(f"unknown library {lib!r}")
    return {"times": times, "peak_mb": _peak_mb(), "base_mb": base, "merges": pairs}


def worker_encode(lib: str, path: str, threads: int, repeats: int, mode: str, encoding: str = "gpt2") -> dict:
    text, docs = _read_docs(path)
    if mode == "long":
        inputs = [text]
    elif mode == "batch":
        inputs = docs
    else:  # synthetic long runs
        inputs = [{"spaces": " " * 100_000, "letters": "a" * 100_000, "noline": ("x" * 7 + ".") * 131_072}[mode]]
    base = _peak_mb()
    if lib in ("storygpt", "storygpt-np"):
        from storygpt.tokenizers import BPETokenizer

        # A fresh tokenizer (empty chunk cache) for every run: no run profits
        # from the cache an earlier run filled.
        fresh = [BPETokenizer.from_tiktoken(encoding) for _ in range(repeats)]

        def fn():
            tok = fresh.pop()
            if lib == "storygpt":  # lists of Python ints, as tiktoken returns
                if len(inputs) == 1:
                    return [tok.encode_ordinary(inputs[0])]
                return tok.encode_batch(inputs, num_threads=threads)
            # numpy out (what data.py uses): no Python int per token
            if len(inputs) == 1:
                return [tok._encoder.encode(inputs[0].encode("utf-8"))]
            ids, offsets = tok.encode_batch_numpy(inputs, num_threads=threads)
            return [ids[offsets[i] : offsets[i + 1]] for i in range(len(inputs))]
    elif lib == "tiktoken":
        import tiktoken

        enc = tiktoken.get_encoding(encoding)
        if len(inputs) == 1:
            fn = lambda: [enc.encode_ordinary(inputs[0])]
        else:
            fn = lambda: enc.encode_ordinary_batch(inputs, num_threads=threads)
    elif lib == "hf":
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers

        cache = Path(os.environ.get("TIKTOKEN_CACHE_DIR", ROOT.parent / "shared" / "tiktoken_cache"))
        bpe = models.BPE.from_file(
            str(cache / "6c7ea1a7e38e3a7f062df639a5b80947f075ffe6"),
            str(cache / "6d1cbeee0f20b3d9449abfede4726ed8212e3aee"),
        )
        tok = Tokenizer(bpe)
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        if len(inputs) == 1:
            fn = lambda: [tok.encode(inputs[0]).ids]
        else:
            fn = lambda: [e.ids for e in tok.encode_batch(inputs)]
    else:
        raise SystemExit(f"unknown library {lib!r}")
    ids, times = _timed(fn, repeats)
    import hashlib

    h = hashlib.sha256()
    n = 0
    for row in ids:
        row = list(map(int, row))
        n += len(row)
        h.update(json.dumps(row).encode())
    return {
        "times": times,
        "peak_mb": _peak_mb(),
        "base_mb": base,
        "ids_sha": h.hexdigest(),
        "tokens": n,
        "bytes": sum(len(s.encode()) for s in inputs),
    }


# --------------------------------------------------------------------------- driver
def run_worker(spec: dict, threads: int) -> dict | None:
    env = dict(os.environ)
    env["RAYON_NUM_THREADS"] = str(threads)  # rustbpe, tokenizers
    env["TOKENIZERS_PARALLELISM"] = "true" if threads > 1 else "false"
    env["OMP_NUM_THREADS"] = str(threads)
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        print(f"  ! {spec['lib']} failed: {err[-1] if err else proc.returncode}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _installed(mod: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(mod) is not None


def bench_train(args) -> list[str]:
    libs = ["storygpt"] + [
        lib for lib, mod in (("rustbpe", "rustbpe"), ("hf", "tokenizers")) if _installed(mod) and lib in args.libraries
    ]
    rows = []
    for vocab_size in args.vocab_sizes:
        for threads in args.threads:
            results = {}
            for lib in libs:
                spec = {
                    "task": "train",
                    "lib": lib,
                    "path": args.file,
                    "vocab_size": vocab_size,
                    "threads": threads,
                    "pattern": args.pattern,
                    "repeats": args.repeats,
                }
                results[lib] = run_worker(spec, threads)
            ours = results["storygpt"]
            if ours is None:
                raise SystemExit("storygpt failed; see above")
            if results.get("rustbpe") is not None:
                theirs = results["rustbpe"]["merges"]
                if theirs != ours["merges"]:
                    first = (
                        next(i for i, (a, b) in enumerate(zip(theirs, ours["merges"])) if a != b)
                        if len(theirs) == len(ours["merges"])
                        else min(len(theirs), len(ours["merges"]))
                    )
                    raise SystemExit(
                        f"MISMATCH: merges differ from rustbpe's at merge {first} "
                        f"(vocab {vocab_size}, {threads} threads); no times printed"
                    )
            t_ours = statistics.median(ours["times"])
            for lib in libs:
                r = results[lib]
                if r is None:
                    continue
                t = statistics.median(r["times"])
                rows.append(
                    f"| train | {vocab_size} | {threads} | {lib} | {t:.3f} | {r['peak_mb']:.0f} | "
                    f"{r['peak_mb'] - r['base_mb']:.0f} | {t / t_ours:.2f} |"
                    + (" merges identical |" if lib == "rustbpe" else " |")
                )
    return rows


def bench_encode(args) -> list[str]:
    libs = ["storygpt", "storygpt-np", "tiktoken"] + (["hf"] if _installed("tokenizers") else [])
    libs = [lib for lib in libs if lib in ("storygpt", "tiktoken") or lib in args.libraries]
    libs = [lib for lib in libs if lib != "hf" or args.encoding == "gpt2"]  # hf reads GPT-2's files only
    rows = []
    cases = [(m, 1) for m in ("long", "spaces", "letters", "noline") if m in args.inputs]
    cases += [("batch", t) for t in args.threads if "batch" in args.inputs]
    for mode, threads in cases:
        results = {}
        for lib in libs:
            spec = {
                "task": "encode",
                "lib": lib,
                "path": args.file,
                "threads": threads,
                "repeats": args.repeats,
                "mode": mode,
                "encoding": args.encoding,
            }
            results[lib] = run_worker(spec, threads)
        ref = results["tiktoken"]
        for lib in libs:
            r = results[lib]
            if r is not None and r["ids_sha"] != ref["ids_sha"]:
                raise SystemExit(f"MISMATCH: {lib}'s ids differ from tiktoken's on '{mode}'; no times printed")
        t_ours = statistics.median(results["storygpt"]["times"])
        for lib in libs:
            r = results[lib]
            if r is None:
                continue
            t = statistics.median(r["times"])
            mbps = r["bytes"] / t / 1e6
            rows.append(
                f"| encode {mode} | {args.encoding} | {threads} | {lib} | {t:.3f} ({mbps:.1f} MB/s) | {r['peak_mb']:.0f} | "
                f"{r['peak_mb'] - r['base_mb']:.0f} | {t / t_ours:.2f} | ids identical |"
            )
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", nargs="?", help="UTF-8 text file, documents separated by <|endoftext|>")
    p.add_argument("--task", choices=["train", "encode", "all"], default="all", help="what to measure")
    p.add_argument(
        "--vocab-sizes",
        type=int,
        nargs="+",
        default=[8192, 32768],
        help="vocabulary sizes for training (256 bytes + merges)",
    )
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts to measure")
    p.add_argument("--repeats", type=int, default=3, help="runs per measurement; the median is printed")
    p.add_argument(
        "--pattern",
        default="gpt2",
        choices=["simple", "gpt2", "gpt4", "o200k"],
        help="pre-tokenization pattern for training (all libraries use the same regex)",
    )
    p.add_argument(
        "--encoding",
        default="gpt2",
        choices=["gpt2", "cl100k_base", "o200k_base"],
        help="OpenAI vocabulary for the encoding runs (o200k_base: GPT-4o's, with its o200k pattern)",
    )
    p.add_argument(
        "--inputs",
        nargs="+",
        default=["long", "spaces", "letters", "noline", "batch"],
        choices=["long", "spaces", "letters", "noline", "batch"],
        help="encoding inputs: long = the whole file as one text, spaces = 100,000 spaces, "
        "letters = 100,000 'a', noline = a 1 MiB line without spaces, batch = the "
        "documents as a batch (once per --threads value)",
    )
    p.add_argument(
        "--libraries",
        nargs="+",
        default=["rustbpe", "hf", "storygpt-np"],
        choices=["rustbpe", "hf", "storygpt-np"],
        help="optional rows besides storygpt (and tiktoken, the encoding reference): "
        "rustbpe and hf (Hugging Face tokenizers) when installed, storygpt-np = "
        "storygpt with numpy output",
    )
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        task = spec.pop("task")
        out = worker_train(**spec) if task == "train" else worker_encode(**spec)
        print(json.dumps(out))
        return
    if not args.file:
        p.error("FILE is required")
    if not Path(args.file).is_file():
        p.error(f"no such file: {args.file}")
    print(
        f"# {args.file} ({Path(args.file).stat().st_size / 1e6:.1f} MB), {os.cpu_count()} CPUs, "
        f"median of {args.repeats} runs; ratio = time / storygpt's time"
    )
    print("| task | vocab | threads | library | seconds | peak MB | MB above text | ratio | check |")
    print("|---|---|---|---|---|---|---|---|---|")
    if args.task in ("train", "all"):
        for row in bench_train(args):
            print(row, flush=True)
    if args.task in ("encode", "all"):
        for row in bench_encode(args):
            print(row, flush=True)


if __name__ == "__main__":
    main()
