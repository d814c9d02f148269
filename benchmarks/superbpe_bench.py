#!/usr/bin/env python
"""SuperBPE against storygpt's BPE (training CPU time) and tiktoken (encoding), one thread.

    python benchmarks/superbpe_bench.py CORPUS.txt [--vocab 8192] [--repeats 2] [--encode-bytes 5000000]
    python benchmarks/superbpe_bench.py CORPUS.txt --chars-per-token --vocab 2048 8192
    python benchmarks/superbpe_bench.py data/shakespeare/train.txt --valid data/shakespeare/valid.txt \
        --chars-per-token --vocab 2048 8192 --shares 0.5 0.75 0.9

Training (per vocabulary V): storygpt BPE and SuperBPE (default T = 0.9 V) both train on
the file (streamed, ``num_threads=1``, pattern gpt4), interleaved ``--repeats`` times;
before any time is printed it checks that SuperBPE's stage-1 merges are BPE's first
merges and that every SuperBPE run gave the same merges.  Encoding: the first
``--encode-bytes`` of the file as one string, SuperBPE (``encode_ordinary``) against
tiktoken running storygpt's BPE of the same V (``to_tiktoken``), after checking that
tiktoken's ids are storygpt BPE's ids and SuperBPE's ids are those of its exported
``tokenizer.json`` in stock Hugging Face ``tokenizers``.  Times are CPU seconds
(``resource.getrusage``, user + system) with the load average printed.
``--chars-per-token``: the documents are split 90/10 in order (whole documents), or
``--valid FILE`` holds the held-out documents (data.py's ``valid.txt``); both tokenizers
train on the training part (SuperBPE with T = each ``--shares`` x V) and the held-out
characters per token are printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from storygpt.tokenizers import EOT, interop, train_bpe  # noqa: E402
from storygpt.tokenizers.superbpe_train import train_superbpe  # noqa: E402

SPECIALS = ("<pad>", EOT)


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(f):
    t = cpu()
    out = f()
    return out, cpu() - t


def train_both(path: str, vocab: int, repeats: int):
    bpe_times, sup_times, sups = [], [], []
    for _ in range(repeats):
        bpe, t = timed(lambda: train_bpe([path], vocab, pattern="gpt4", special_tokens=SPECIALS, num_threads=1))
        bpe_times.append(t)
        sup, t = timed(lambda: train_superbpe([path], vocab, pattern="gpt4", special_tokens=SPECIALS, num_threads=1))
        sup_times.append(t)
        sups.append(sup)
    n1 = sups[0].stage1_merges
    assert all(s.merges == sups[0].merges for s in sups), "SuperBPE runs differ"
    assert sups[0].merges[:n1] == bpe.merges[:n1], "stage 1 is not BPE's first merges"
    return bpe, sups[0], bpe_times, sup_times


def check_encoders(bpe, sup, text: str) -> tuple:
    import tiktoken  # noqa: F401  (imported here: an optional extra)
    import tokenizers

    enc = interop.to_tiktoken(bpe)
    want = bpe.encode_ordinary(text)
    assert enc.encode_ordinary(text) == want, "tiktoken and storygpt BPE differ"
    with tempfile.TemporaryDirectory() as d:
        interop.save_hf(sup, Path(d) / "tokenizer.json")
        hf = tokenizers.Tokenizer.from_file(str(Path(d) / "tokenizer.json"))
    docs = text.split(EOT)
    got = [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]
    assert got == sup.encode_batch(docs, disallowed_special=()), "SuperBPE and its tokenizer.json differ"
    return enc, want


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpus", help="a text file (documents separated by <|endoftext|> lines)")
    p.add_argument("--vocab", type=int, nargs="+", default=[8192], help="vocabulary sizes V")
    p.add_argument("--repeats", type=int, default=2, help="interleaved training runs of each tokenizer")
    p.add_argument("--encode-bytes", type=int, default=5_000_000, help="bytes of the corpus to encode")
    p.add_argument("--chars-per-token", action="store_true", help="held-out characters per token instead of times")
    p.add_argument("--valid", help="held-out documents for --chars-per-token (default: the last 10%% of CORPUS)")
    p.add_argument(
        "--shares", type=float, nargs="+", default=[0.9], help="transition points T / V for --chars-per-token"
    )
    a = p.parse_args(argv)
    print(f"# {a.corpus}: {os.path.getsize(a.corpus):,} bytes; load average {os.getloadavg()}")
    if a.chars_per_token:
        return chars_per_token(a)
    for vocab in a.vocab:
        bpe, sup, tb, ts = train_both(a.corpus, vocab, a.repeats)
        text = Path(a.corpus).read_bytes()[: a.encode_bytes].decode("utf-8", errors="ignore")
        enc, _ = check_encoders(bpe, sup, text)
        te = ts_enc = 0.0
        for _ in range(a.repeats):
            te += timed(lambda: enc.encode_ordinary(text))[1]
            ts_enc += timed(lambda: sup.encode_ordinary(text))[1]
        print(
            f"V={vocab} T={sup.transition}: outputs checked. train CPU s: bpe {min(tb):.2f}, superbpe {min(ts):.2f} "
            f"(ratio {min(ts) / min(tb):.2f}x); encode {len(text.encode()):,} bytes CPU s: tiktoken {te / a.repeats:.3f}, "
            f"superbpe {ts_enc / a.repeats:.3f} (speed-up {te / ts_enc:.2f}x); load {os.getloadavg()[0]:.2f}"
        )


def chars_per_token(a) -> None:
    docs = Path(a.corpus).read_text(encoding="utf-8").split(f"\n{EOT}\n")
    if a.valid:
        train, held = EOT.join(docs), Path(a.valid).read_text(encoding="utf-8").split(f"\n{EOT}\n")
    else:
        cut = len(docs) * 9 // 10
        train, held = EOT.join(docs[:cut]), docs[cut:]
    n_chars = sum(len(d) for d in held)
    for vocab in a.vocab:
        bpe = train_bpe(train, vocab, pattern="gpt4", special_tokens=SPECIALS)
        nb = sum(len(x) for x in bpe.encode_batch(held, disallowed_special=()))
        print(f"V={vocab}: {len(held)} held-out documents, {n_chars:,} characters; bpe {n_chars / nb:.3f} chars/token")
        for share in a.shares:
            t = int(vocab * share)
            sup = train_superbpe(train, vocab, t, pattern="gpt4", special_tokens=SPECIALS)
            ns = sum(len(x) for x in sup.encode_batch(held, disallowed_special=()))
            assert sup.decode(sup.encode(held[0], disallowed_special=())) == held[0]
            print(f"  superbpe T={t}: {n_chars / ns:.3f} chars/token ({100 * (nb / ns - 1):+.1f}% vs bpe)")


if __name__ == "__main__":
    main()
