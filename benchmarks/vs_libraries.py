"""storygpt's BPE against the libraries people use: training and encoding, side by side.

Usage::

    python benchmarks/vs_libraries.py BIG.txt --scale [--vocab-sizes 32768] [--threads 1 2]
    python benchmarks/vs_libraries.py FILE [--task train|encode|all] [--vocab-sizes 8192 32768]
                                           [--threads 1 2] [--repeats 3] [--pattern gpt2]
                                           [--encodings gpt2 cl100k_base] [--inputs long batch spaces-100k ...]
                                           [--libraries rustbpe hf storygpt-np bpe-openai tokendagger]

Corpora: the project's 15.7 MB corpus (``../shared/corpora``), and the ones
``benchmarks/make_big_corpus.py`` writes (``--shakespeare``: 5 MB; ``--megabytes
50``: varied text).

Every measurement runs in a fresh subprocess (so peak memory is that run's
own), after the text is already in memory; times are the median of
``--repeats`` runs inside that process, both wall time and CPU time (user +
system of all the process's threads).  The measurements of one table row
group (same task, input, vocabulary and threads) run one after another, so
their ratios share the machine's load; ratios are of CPU time.  Outputs are
compared *before* any time is printed:

* training: storygpt's merges must equal rustbpe's (both break ties by the
  smallest pair of ids) when rustbpe is installed; Hugging Face ``tokenizers``
  breaks ties differently, so only its time and memory are reported.
* encoding: every library's ids must equal tiktoken's, for GPT-2's and
  cl100k's vocabularies (Hugging Face's ``tokenizers`` runs GPT-2's only,
  GitHub's ``bpe-openai`` cl100k's only).  ``tokendagger`` is used when it
  imports (its sdist needs the pcre2 headers to build).

Training text: the file is split into documents at ``<|endoftext|>``; every
library sees the same documents (storygpt gets the separator as a special
token, which splits the text the same way).  ``vocab_size`` counts the 256
bytes and the merges (storygpt's count also holds the one special token, so it
learns exactly the same number of merges).

Optional dependencies: ``pip install -e .[bench]`` (tiktoken, tokenizers,
rustbpe, bpe-openai).  GPT-2's files are read through tiktoken's cache: set
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

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))


# --------------------------------------------------------------------------- workers
def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _read_docs(path: str, eot: str) -> tuple[str, list[str]]:
    text = Path(path).read_text(encoding="utf-8")
    return text, text.split(eot)


def _merge_pairs(tok) -> list[list[str]]:
    """Each merge's two parts (hex), recovered from a rustbpe tokenizer's mergeable ranks."""
    from storygpt.tokenizers import merges_from_ranks

    ranks = {bytes(tb): rank for tb, rank in tok.get_mergeable_ranks()}
    return [[a.hex(), b.hex()] for a, b in merges_from_ranks(ranks)]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(fn, repeats: int):
    """(last result, wall seconds per run, CPU seconds per run)."""
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        c0, t0 = _cpu(), time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(_cpu() - c0)
    return out, (walls, cpus)


def worker_train(lib: str, path: str, vocab_size: int, threads: int, pattern: str, repeats: int, eot: str) -> dict:
    text, docs = _read_docs(path, eot)
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
                special_tokens=[eot.encode()],
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
        pairs = _merge_pairs(tok)
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
    return {"times": times[0], "cpu": times[1], "peak_mb": _peak_mb(), "base_mb": base, "merges": pairs}


def _documents(path: str, eot: str, block: int = 1 << 20):
    """The documents of a file, read in blocks (never whole): exactly ``text.split("<|endoftext|>")``."""
    carry = ""
    with open(path, encoding="utf-8") as f:
        while True:
            data = f.read(block)
            if not data:
                break
            parts = (carry + data).split(eot)
            # the last part may go on in the next block; so may a separator cut in two
            carry = parts.pop()
            yield from parts
    yield carry


def worker_scale(lib: str, path: str, vocab_size: int, threads: int, pattern: str, eot: str) -> dict:
    """Train from a file without holding it: storygpt streams it in C++, the others get a document iterator."""
    from storygpt.tokenizers.bpe_reference import PATTERNS

    base = _peak_mb()
    c0, t0 = _cpu(), time.perf_counter()
    if lib == "storygpt":
        from storygpt import _bpe

        merges = _bpe.train(
            files=[path], vocab_size=vocab_size + 1, pattern=pattern, special_tokens=[eot.encode()], num_threads=threads
        )
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        vocab = [bytes([b]) for b in range(256)]
        for a, b in merges:
            vocab.append(vocab[a] + vocab[b])
        pairs = [[vocab[a].hex(), vocab[b].hex()] for a, b in merges]
    elif lib == "rustbpe":
        import rustbpe

        tok = rustbpe.Tokenizer()
        tok.train_from_iterator(_documents(path, eot), vocab_size, pattern=PATTERNS[pattern])
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        pairs = _merge_pairs(tok)
    elif lib == "hf":
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

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
        tok.train_from_iterator(_documents(path, eot), trainer)
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        pairs = None
    else:
        raise SystemExit(f"unknown library {lib!r}")
    return {"times": [wall], "cpu": [cpu], "peak_mb": _peak_mb(), "base_mb": base, "merges": pairs}


SYNTHETIC = {"spaces": " ", "letters": "a", "digits": "7"}  # repeated units: one long chunk each
INPUTS = ["long", "batch", "noline"] + [
    f"{kind}-{size}" for kind in ("spaces", "letters", "digits", "randletters") for size in ("100k", "1M")
]


def synthetic(mode: str) -> str:
    """The text of a synthetic input: 'spaces-100k', 'letters-1M', 'randletters-1M', 'noline', ..."""
    if mode == "noline":  # a 1 MiB line without spaces or newlines
        return ("x" * 7 + ".") * 131_072
    kind, size = mode.split("-")
    n = {"100k": 100_000, "1M": 1_000_000}[size]
    if kind == "randletters":
        import random

        rng = random.Random(0)
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))
    return SYNTHETIC[kind] * n


def worker_encode(lib: str, path: str, threads: int, repeats: int, mode: str, encoding: str, eot: str) -> dict:
    text, docs = _read_docs(path, eot)
    if mode == "long":
        inputs = [text]
    elif mode == "batch":
        inputs = docs
    else:
        inputs = [synthetic(mode)]
    base = _peak_mb()
    if lib in ("storygpt", "storygpt-np"):
        from storygpt.tokenizers.interop import from_tiktoken

        # A fresh tokenizer (empty chunk cache) for every run: no run profits
        # from the cache an earlier run filled.
        fresh = [from_tiktoken(encoding) for _ in range(repeats)]
        used = []  # freed after the timings: a run must not time freeing the tokenizer it used

        def fn():
            tok = fresh.pop()
            used.append(tok)
            if lib == "storygpt":  # lists of Python ints, as tiktoken returns
                if len(inputs) == 1:
                    return [tok.encode_ordinary(inputs[0])]
                return tok.encode_batch(inputs, num_threads=threads)
            # numpy out (what data.py uses): no Python int per token
            if len(inputs) == 1:
                return [tok._encoder.encode(inputs[0].encode("utf-8"))]
            ids, offsets = tok.encode_batch_numpy(inputs, num_threads=threads)
            return [ids[offsets[i] : offsets[i + 1]] for i in range(len(inputs))]
    elif lib in ("tiktoken", "bpe-openai", "tokendagger"):
        if lib == "tiktoken":
            import tiktoken

            enc = tiktoken.get_encoding(encoding)
        elif lib == "bpe-openai":
            import bpe_openai

            enc = bpe_openai.get_encoding(encoding)
        else:
            import tiktoken
            import tokendagger

            tt = tiktoken.get_encoding(encoding)
            enc = tokendagger.Encoding(
                name=encoding,
                pat_str=tt._pat_str,
                mergeable_ranks=tt._mergeable_ranks,
                special_tokens=tt._special_tokens,
            )
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
        "times": times[0],
        "cpu": times[1],
        "peak_mb": _peak_mb(),
        "base_mb": base,
        "ids_sha": h.hexdigest(),
        "tokens": n,
        "bytes": sum(len(s.encode()) for s in inputs),
    }


# --------------------------------------------------------------------------- driver
def run_worker(spec: dict, threads: int) -> dict | None:
    # the separator is imported here, in the driver: a worker that imported storygpt would measure numpy's memory
    from storygpt.tokenizers import EOT

    env = dict(os.environ)
    env["RAYON_NUM_THREADS"] = str(threads)  # rustbpe, tokenizers
    env["TOKENIZERS_PARALLELISM"] = "true" if threads > 1 else "false"
    env["OMP_NUM_THREADS"] = str(threads)
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps({**spec, "eot": EOT})],
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


def _row(task: str, vocab, threads: int, lib: str, r: dict, ours: dict, check: str, nbytes: int | None = None) -> str:
    wall, cpu = statistics.median(r["times"]), statistics.median(r["cpu"])
    speed = f" ({nbytes / wall / 1e6:.1f} MB/s)" if nbytes else ""
    return (
        f"| {task} | {vocab} | {threads} | {lib} | {wall:.3f}{speed} | {cpu:.3f} | {r['peak_mb']:.0f} | "
        f"{r['peak_mb'] - r['base_mb']:.0f} | {cpu / statistics.median(ours['cpu']):.2f} | {check} |"
    )


def bench_train(args):
    libs = ["storygpt"] + [
        lib for lib, mod in (("rustbpe", "rustbpe"), ("hf", "tokenizers")) if _installed(mod) and lib in args.libraries
    ]
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
            for lib in libs:
                if results[lib] is not None:
                    check = "merges identical" if lib == "rustbpe" else ""
                    yield _row("train", vocab_size, threads, lib, results[lib], ours, check)


def bench_scale(args):
    """Training from the file, never held whole (--scale): time and peak memory; merges checked first."""
    libs = ["storygpt"] + [
        lib for lib, mod in (("rustbpe", "rustbpe"), ("hf", "tokenizers")) if _installed(mod) and lib in args.libraries
    ]
    for vocab_size in args.vocab_sizes:
        for threads in args.threads:
            results = {}
            for lib in libs:
                spec = {
                    "task": "scale",
                    "lib": lib,
                    "path": args.file,
                    "vocab_size": vocab_size,
                    "threads": threads,
                    "pattern": args.pattern,
                }
                results[lib] = run_worker(spec, threads)
            ours = results["storygpt"]
            if ours is None:
                raise SystemExit("storygpt failed; see above")
            if results.get("rustbpe") is not None and results["rustbpe"]["merges"] != ours["merges"]:
                raise SystemExit(f"MISMATCH: merges differ from rustbpe's (vocab {vocab_size}, {threads} threads)")
            for lib in libs:
                if results[lib] is not None:
                    check = "merges identical" if lib == "rustbpe" else ""
                    yield _row("train file", vocab_size, threads, lib, results[lib], ours, check)


def encode_libraries(args, encoding: str) -> list[str]:
    """storygpt and tiktoken (the reference), then the optional ones that are installed and run this vocabulary."""
    optional = [
        ("storygpt-np", None, None),
        ("hf", "tokenizers", "gpt2"),
        ("bpe-openai", "bpe_openai", "cl100k_base"),
        ("tokendagger", "tokendagger", None),
    ]
    libs = ["storygpt", "tiktoken"]
    for lib, mod, only in optional:
        if lib in args.libraries and (mod is None or _installed(mod)) and only in (None, encoding):
            libs.append(lib)
    return libs


def bench_encode(args):
    for encoding in args.encodings:
        libs = encode_libraries(args, encoding)
        cases = [(m, 1) for m in args.inputs if m != "batch"]
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
                    "encoding": encoding,
                }
                results[lib] = run_worker(spec, threads)
            ref = results["tiktoken"]
            for lib in libs:
                r = results[lib]
                if r is not None and r["ids_sha"] != ref["ids_sha"]:
                    raise SystemExit(
                        f"MISMATCH: {lib}'s ids differ from tiktoken's on '{mode}' ({encoding}); no times printed"
                    )
            for lib in libs:
                r = results[lib]
                if r is not None:
                    ours = results["storygpt"]
                    yield _row(f"encode {mode}", encoding, threads, lib, r, ours, "ids identical", r["bytes"])


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
        choices=["simple", "gpt2", "gpt4"],
        help="pre-tokenization pattern for training (all libraries use the same regex)",
    )
    p.add_argument(
        "--inputs",
        nargs="+",
        default=INPUTS,
        choices=INPUTS,
        help="encoding inputs: long = the whole file as one text, batch = the documents as a batch "
        "(once per --threads value), noline = a 1 MiB line without spaces, KIND-SIZE = 100,000 or "
        "1,000,000 spaces, 'a', '7' or random lowercase letters",
    )
    p.add_argument(
        "--encodings",
        nargs="+",
        default=["gpt2", "cl100k_base"],
        choices=["gpt2", "cl100k_base", "o200k_base"],
        help="vocabularies for encoding (tiktoken's files, read from TIKTOKEN_CACHE_DIR)",
    )
    p.add_argument(
        "--libraries",
        nargs="+",
        default=["rustbpe", "hf", "storygpt-np", "bpe-openai", "tokendagger"],
        choices=["rustbpe", "hf", "storygpt-np", "bpe-openai", "tokendagger"],
        help="optional rows besides storygpt (and tiktoken, the encoding reference), each when installed: "
        "rustbpe and hf (Hugging Face tokenizers) train, hf encodes with gpt2, bpe-openai (GitHub's "
        "crate) with cl100k_base, storygpt-np = storygpt with numpy output",
    )
    p.add_argument(
        "--scale",
        action="store_true",
        help="train from FILE without reading it whole (storygpt streams it, rustbpe and hf get a document "
        "iterator), one run per row; --task, --repeats and the encoding options are ignored",
    )
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        task = spec.pop("task")
        worker = {"train": worker_train, "encode": worker_encode, "scale": worker_scale}[task]
        out = worker(**spec)
        print(json.dumps(out))
        return
    if args.worker is None and args.file is None:
        p.error("FILE is required")
    if not Path(args.file).is_file():
        p.error(f"no such file: {args.file}")
    load = os.getloadavg()
    print(
        f"# {args.file} ({Path(args.file).stat().st_size / 1e6:.1f} MB), {os.cpu_count()} CPUs, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start, median of {args.repeats} runs; "
        "CPU ratio = CPU time / storygpt's CPU time"
    )
    if args.scale:
        print("train file: one run each, no text in memory; 'MB above text' = peak minus the interpreter's at start")
    if "tokendagger" in args.libraries and not _installed("tokendagger"):
        print("# tokendagger: not installed (its sdist needs the pcre2 headers to build); no rows")
    print("| task | vocab | threads | library | wall s | CPU s | peak MB | MB above text | CPU ratio | check |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    if args.scale:
        for row in bench_scale(args):
            print(row, flush=True)
    elif args.task in ("train", "all"):
        for row in bench_train(args):
            print(row, flush=True)
    if args.task in ("encode", "all") and not args.scale:
        for row in bench_encode(args):
            print(row, flush=True)
    load = os.getloadavg()
    print(f"# load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end")


if __name__ == "__main__":
    main()
