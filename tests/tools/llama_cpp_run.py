"""llama.cpp itself on a GGUF file: its tokenizer ids, its logits at every position and its greedy tokens.

Driven through llama.cpp's C API (``llama.h``: ``llama_model_load_from_file``, ``llama_tokenize``,
``llama_decode``, ``llama_get_logits_ith``) as compiled in the PyPI package ``llama-cpp-cffi``
(import name ``llama``; its CPU module ``llama/_llama_cpp_cpu*.so`` is llama.cpp build b4965,
commit b3298fa4, with cffi declarations of ``llama.h``).  Only that compiled module is loaded, not
the package's Python layer (which imports ``transformers<5`` and ``huggingface_hub``), so install it
with ``pip install --no-deps llama-cpp-cffi cffi``.

The module was built with GCC 14, whose libstdc++ has ``__cxa_call_terminate`` (called when an
exception leaves a ``noexcept`` function); older ones (GCC 12, Debian 12) lack it and the module
does not load.  Then a three-line C definition of it is compiled with the system's C compiler and
loaded first (:func:`_cxa_call_terminate_shim`); it is the only symbol missing.

Command line (a checkpoint, its GGUF export and a text; prints the comparison)::

    python tests/tools/llama_cpp_run.py CKPT GGUF TEXT [--tokens 128] [--windows 4] [--steps 50]
"""

from __future__ import annotations

import ctypes
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PACKAGE = "llama-cpp-cffi"
SHIM_C = """\
extern void *__cxa_begin_catch(void *exc);
extern void _ZSt9terminatev(void) __attribute__((noreturn));
void __cxa_call_terminate(void *exc) { if (exc) __cxa_begin_catch(exc); _ZSt9terminatev(); }
"""
GGML_TYPE_F32 = 0


class LlamaCppMissing(ImportError):
    """llama-cpp-cffi is not installed, or its compiled module cannot be loaded here (the reason)."""


def _cxa_call_terminate_shim() -> None:
    """Compile and load (RTLD_GLOBAL) a definition of GCC 14's ``__cxa_call_terminate``."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise LlamaCppMissing(f"{PACKAGE} needs GCC 14's libstdc++ (__cxa_call_terminate) and no C compiler is here")
    folder = Path(tempfile.mkdtemp(prefix="llama-shim-"))
    (folder / "shim.c").write_text(SHIM_C)
    so = folder / "shim.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(so), str(folder / "shim.c"), "-lstdc++"], check=True)
    ctypes.CDLL(str(so), mode=ctypes.RTLD_GLOBAL)


def load_llama_cpp():
    """llama.cpp's compiled CPU module from llama-cpp-cffi: an object with ``lib`` (the C functions) and ``ffi``.

    Raises:
        LlamaCppMissing: the package is not installed or its module cannot be loaded (the reason).
    """
    spec = importlib.util.find_spec("llama")  # locates the package without running its __init__
    paths = list(spec.submodule_search_locations or []) if spec else []
    found = [p for d in paths for p in sorted(Path(d).glob("_llama_cpp_cpu*.so"))]
    if not found:
        raise LlamaCppMissing(f"{PACKAGE} is not installed (pip install --no-deps {PACKAGE} cffi)")
    if importlib.util.find_spec("_cffi_backend") is None:
        raise LlamaCppMissing(f"{PACKAGE} needs cffi (pip install cffi)")
    loaded = sys.modules.get("_llama_cpp_cpu")
    if loaded is not None:
        return loaded
    mod_spec = importlib.util.spec_from_file_location("_llama_cpp_cpu", found[0])
    try:
        module = importlib.util.module_from_spec(mod_spec)
    except ImportError as e:
        if "__cxa_call_terminate" not in str(e):
            raise LlamaCppMissing(f"{PACKAGE}'s CPU module does not load: {e}") from None
        _cxa_call_terminate_shim()
        module = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(module)
    sys.modules["_llama_cpp_cpu"] = module
    module.lib.llama_backend_init()
    return module


def llama_cpp_version() -> str:
    """``bBUILD (commit)`` of the loaded llama.cpp, from its build-info globals."""
    so = ctypes.CDLL(load_llama_cpp().__file__)
    number = ctypes.c_int.in_dll(so, "LLAMA_BUILD_NUMBER").value
    commit = ctypes.c_char_p.in_dll(so, "LLAMA_COMMIT").value.decode()
    return f"b{number} ({commit})"


@dataclass
class LlamaCpp:
    """A GGUF model in llama.cpp, float32 end to end (the KV cache too), one thread.

    ``n_ctx`` is the context in tokens; every position's logits are kept (``logits_all``).
    """

    path: str
    n_ctx: int

    def __post_init__(self):
        m = load_llama_cpp()
        self.lib, self.ffi = m.lib, m.ffi
        self._quiet = self.ffi.callback("void(enum ggml_log_level, const char *, void *)", lambda *a: None)
        self.lib.llama_log_set(self._quiet, self.ffi.NULL)
        mp = self.lib.llama_model_default_params()
        self.model = self.lib.llama_model_load_from_file(str(self.path).encode(), mp)
        if self.model == self.ffi.NULL:
            raise ValueError(f"{self.path}: llama.cpp could not load this GGUF file")
        cp = self.lib.llama_context_default_params()
        cp.n_ctx = cp.n_batch = cp.n_ubatch = self.n_ctx
        cp.n_threads = cp.n_threads_batch = 1
        cp.type_k = cp.type_v = GGML_TYPE_F32  # default F16 KV cache rounds keys and values
        cp.logits_all = True
        self.ctx = self.lib.llama_init_from_model(self.model, cp)
        self.vocab = self.lib.llama_model_get_vocab(self.model)
        self.n_vocab = self.lib.llama_vocab_n_tokens(self.vocab)

    def close(self) -> None:
        self.lib.llama_free(self.ctx)
        self.lib.llama_model_free(self.model)

    def tokenize(self, text: str) -> list[int]:
        """llama.cpp's ids for ``text`` (no BOS added; special tokens in the text are parsed)."""
        data = text.encode("utf-8")
        cap = len(data) + 8
        buf = self.ffi.new("int32_t[]", cap)
        n = self.lib.llama_tokenize(self.vocab, data, len(data), buf, cap, False, True)
        if n < 0:
            raise ValueError(f"llama_tokenize needs {-n} slots")
        return list(buf[0:n])

    def logits(self, ids: list[int]) -> np.ndarray:
        """Logits at every position of ``ids`` from an empty cache: float32 (len(ids), n_vocab)."""
        self.lib.llama_kv_self_clear(self.ctx)
        return self._decode(ids, start=0, every=True)

    def greedy(self, ids: list[int], steps: int) -> list[int]:
        """``steps`` tokens, each the argmax of llama.cpp's logits (lowest id on ties), from ``ids``."""
        self.lib.llama_kv_self_clear(self.ctx)
        last = self._decode(ids, start=0, every=False)[-1]
        out = []
        for _ in range(steps):
            t = int(np.argmax(last))
            out.append(t)
            last = self._decode([t], start=len(ids) + len(out) - 1, every=False)[-1]
        return out

    def _decode(self, ids: list[int], start: int, every: bool) -> np.ndarray:
        n = len(ids)
        batch = self.lib.llama_batch_init(n, 0, 1)
        try:
            for i, t in enumerate(ids):
                batch.token[i], batch.pos[i] = t, start + i
                batch.n_seq_id[i], batch.seq_id[i][0] = 1, 0
                batch.logits[i] = every or i == n - 1
            batch.n_tokens = n
            rc = self.lib.llama_decode(self.ctx, batch)
            if rc != 0:
                raise RuntimeError(f"llama_decode returned {rc}")
            rows = range(n) if every else [n - 1]
            out = np.empty((len(rows), self.n_vocab), dtype=np.float32)
            for r, i in enumerate(rows):
                p = self.lib.llama_get_logits_ith(self.ctx, i)
                out[r] = np.frombuffer(self.ffi.buffer(p, 4 * self.n_vocab), dtype=np.float32)
            return out
        finally:
            self.lib.llama_batch_free(batch)


def llama_cpp_gelu(x):
    """GELU as llama.cpp b4965 computes it on the CPU (ggml-cpu ``ggml_vec_gelu_f32`` with ``GGML_GELU_FP16``):
    GPT-2's tanh approximation looked up in a float16 table (input and output rounded to float16),
    ``x`` itself above 10 and 0 below -10.  storygpt and Hugging Face compute the exact erf GELU."""
    import torch
    import torch.nn.functional as F

    y = F.gelu(x.half().float(), approximate="tanh").half().float()
    return torch.where(x >= 10, x, torch.where(x <= -10, torch.zeros_like(x), y))


class LlamaCppGELU:
    """Within ``with LlamaCppGELU(model):`` the model's GELU MLPs compute :func:`llama_cpp_gelu`."""

    def __init__(self, model):
        import torch.nn as nn

        self.mlps = [m for m in model.modules() if isinstance(getattr(m, "gelu", None), nn.GELU)]
        self.saved = [m.gelu for m in self.mlps]

    def __enter__(self):
        import torch.nn as nn

        class Approx(nn.Module):
            def forward(self, x):
                return llama_cpp_gelu(x)

        for m in self.mlps:
            m.gelu = Approx()
        return self

    def __exit__(self, *exc):
        for m, g in zip(self.mlps, self.saved):
            m.gelu = g


def compare(ckpt: str, gguf: str, text: str, tokens: int, windows: int, steps: int) -> dict:
    """storygpt against llama.cpp on ``text``: max |logit difference| over ``windows`` windows of ``tokens``
    tokens (each after <|endoftext|>), greedy tokens from each window's first 20, tokenizer ids on ``text``."""
    import torch

    from storygpt.checkpoint import load_checkpoint

    model, tok = load_checkpoint(ckpt, device="cpu")[:2]
    model.eval()
    llm = LlamaCpp(gguf, n_ctx=model.config.block_size)
    ids = tok.encode_ordinary(text)
    worst, worst_approx, same_greedy, same_greedy_approx, first_diff = 0.0, 0.0, 0, 0, []
    step = max(1, (len(ids) - tokens) // max(1, windows))
    for w in range(windows):
        window = [tok.eot_id, *ids[w * step : w * step + tokens - 1]]
        theirs = llm.logits(window)
        with torch.no_grad():
            mine = model(torch.tensor([window]))[0][0].numpy()
            with LlamaCppGELU(model):
                approx = model(torch.tensor([window]))[0][0].numpy()
        worst = max(worst, float(np.abs(mine - theirs).max()))
        worst_approx = max(worst_approx, float(np.abs(approx - theirs).max()))
        prompt = window[:20]
        with torch.no_grad():
            want = model.generate(torch.tensor([prompt]), steps, temperature=0)[0, len(prompt) :].tolist()
        got = llm.greedy(prompt, steps)
        same_greedy += got == want
        with torch.no_grad(), LlamaCppGELU(model):
            want_approx = model.generate(torch.tensor([prompt]), steps, temperature=0)[0, len(prompt) :].tolist()
        same_greedy_approx += got == want_approx
        if got != want:
            k = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
            with torch.no_grad():
                last = model(torch.tensor([prompt + want[:k]]))[0][0, -1]
            top2 = last.topk(2).values
            first_diff.append({"window": w, "step": k, "storygpt_top2_gap": float(top2[0] - top2[1])})
    theirs = llm.tokenize(text)
    llm.close()
    return {
        "llama.cpp": llama_cpp_version(),
        "max_abs_logit_diff": worst,
        "max_abs_logit_diff_with_llama_cpp_gelu": worst_approx,
        "greedy_windows_identical": f"{same_greedy}/{windows}",
        "greedy_first_differences": first_diff,
        "greedy_windows_identical_with_llama_cpp_gelu": f"{same_greedy_approx}/{windows}",
        "ids_identical": theirs == tok.encode(text, allowed_special="all"),
        "n_ids": len(theirs),
    }


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ckpt")
    ap.add_argument("gguf")
    ap.add_argument("text")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--steps", type=int, default=50)
    a = ap.parse_args()
    text = Path(a.text).read_text(encoding="utf-8")
    print(compare(a.ckpt, a.gguf, text, a.tokens, a.windows, a.steps))
