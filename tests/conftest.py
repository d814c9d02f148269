"""Fixtures, paths and helpers shared by the tests (test modules import the plain names from here).

Paths: ``REPO`` (this checkout) and ``SHARED`` (``../shared`` beside it) with ``CACHE`` (OpenAI's BPE files)
and ``CORPORA``; importing this module points ``TIKTOKEN_CACHE_DIR`` at ``CACHE`` when it is unset, so
tiktoken never downloads.  Skip marks: ``needs_cache``, ``needs_corpora``, ``needs_cpp``, each with a reason
that names what is missing.

Tools: :func:`run_tool` runs a top-level tool (``data.py``, ``pretrain.py``, ...) the way a user does,
``python TOOL.py ARGS`` in a subprocess, and returns its exit status and output; ``fault=NAME`` runs it
through ``tests/tool_faults.py``, which first applies one named fault (Ctrl-C, a full disk, ...) inside
that process.  :func:`tool_parser` reads a tool's argument parser (help texts, defaults) in a subprocess.

Fixtures: ``one_torch_thread`` (tiny models run fastest on one torch thread, far faster than on two when the
machine is busy; a module that trains or runs models asks for it with
``pytestmark = pytest.mark.usefixtures("one_torch_thread")``, the previous count is restored after the
module), and ``tiny_run``: a tiny corpus written by data.py and a checkpoint trained by pretrain.py, which
the bad-input tests of several tools share.

Marks: ``slow`` (left out by ``scripts/test.sh``), ``perf`` (wall-clock bounds, left out by default too).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from storygpt.data.corpora import written_slug
from storygpt.tokenizers import EOT
from storygpt.tokenizers.bpe import load_cpp

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CACHE = SHARED / "tiktoken_cache"
CORPORA = SHARED / "corpora"
if "TIKTOKEN_CACHE_DIR" not in os.environ and CACHE.is_dir():
    os.environ["TIKTOKEN_CACHE_DIR"] = str(CACHE)

try:
    import tiktoken  # noqa: F401  (the oracle for OpenAI vocabularies)

    HAVE_TIKTOKEN = True
except ImportError:
    HAVE_TIKTOKEN = False
try:
    load_cpp()
    HAVE_CPP = True
except ImportError:
    HAVE_CPP = False

needs_cache = pytest.mark.skipif(
    not CACHE.is_dir() or not HAVE_TIKTOKEN,
    reason=f"OpenAI BPE files not found at {CACHE}" if not CACHE.is_dir() else "tiktoken is not installed",
)
needs_corpora = pytest.mark.skipif(not CORPORA.is_dir(), reason=f"shared corpora not found at {CORPORA}")
needs_cpp = pytest.mark.skipif(not HAVE_CPP, reason="storygpt._bpe (the C++ core) is not built")


def run_tool(
    name: str, *argv, cwd=None, env: dict | None = None, fault: str | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """``python REPO/NAME.py ARGV...`` in a subprocess (text mode, stdout and stderr captured).

    ``argv`` items are turned into strings; ``cwd`` is the working folder (default: this process's);
    ``env`` adds to or replaces variables of this process's environment (``OMP_NUM_THREADS`` is 1 unless
    given: the tests' models are tiny and the machine is shared).  ``fault="NAME[:ARG]"`` runs the tool
    through ``tests/tool_faults.py``, which applies the fault ``NAME`` first.  The exit status is not
    checked: tests assert ``returncode`` themselves.
    """
    tool = str(REPO / f"{name}.py")
    cmd = [sys.executable, tool, *map(str, argv)]
    if fault is not None:
        cmd = [sys.executable, str(REPO / "tests" / "tool_faults.py"), fault, tool, *map(str, argv)]
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)


_TOOL_MODULES: dict = {}
#: the warning filters of a plain ``python`` process (the warnings it prints on stderr)
_PROCESS_WARNING_FILTERS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def _storygpt_attributes() -> dict:
    """The attributes of the loaded ``storygpt`` modules and ``os`` (what tests/tool_faults.py's faults replace)."""
    mods = {n: m for n, m in list(sys.modules.items()) if m is not None and (n == "os" or n.startswith("storygpt"))}
    return {n: dict(vars(m)) for n, m in mods.items()}


def call_tool(name: str, *argv, cwd=None, fault: str | None = None) -> subprocess.CompletedProcess:
    """:func:`run_tool` without the subprocess: ``REPO/NAME.py``'s ``main`` run in this process as its
    ``__main__`` block runs it (``storygpt.cli.run``), saving the 2-3 s interpreter and torch start-up.

    What a process would show is kept: stdout and stderr captured (not terminals), the exit status of the
    ``SystemExit`` (a message given to it printed on stderr with status 1, as the interpreter does), an
    uncaught exception's traceback on stderr with status 1, warnings printed on stderr under a plain
    process's filters (pytest's recording of them is bypassed).  ``cwd`` is entered for the call; torch's
    thread count and random state are restored afterwards.  ``fault="NAME[:ARG]"`` applies that fault of
    tests/tool_faults.py for the call only (the attributes of ``storygpt`` modules and ``os`` it replaced are
    put back; it must replace them on modules the tool has imported by then).  Signals, environment variables
    and several processes need :func:`run_tool`.
    """
    import contextlib
    import importlib.util
    import io
    import traceback
    import warnings

    import torch

    from storygpt.cli import run

    if name not in _TOOL_MODULES:
        spec = importlib.util.spec_from_file_location(f"storygpt_tool_{name}", REPO / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _TOOL_MODULES[name] = module
    main = _TOOL_MODULES[name].main
    args = [str(a) for a in argv]
    out, err = io.StringIO(), io.StringIO()
    threads, rng, argv_before, cwd_before = torch.get_num_threads(), torch.get_rng_state(), sys.argv, os.getcwd()

    def show(message, category, filename, lineno, file=None, line=None):
        err.write(warnings.formatwarning(message, category, filename, lineno, line))

    code, attributes = 0, None
    try:
        if fault is not None:
            import tool_faults  # tests/tool_faults.py

            attributes = _storygpt_attributes()
            fault_name, _, fault_arg = fault.partition(":")
            tool_faults.FAULTS[fault_name](fault_arg)
        sys.argv = [str(REPO / f"{name}.py"), *args]
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("default")
            for category in _PROCESS_WARNING_FILTERS:
                warnings.simplefilter("ignore", category)
            warnings.showwarning = show
            try:
                run(lambda: main(args))
            except SystemExit as e:
                if e.code is None or isinstance(e.code, int):
                    code = e.code or 0
                else:
                    err.write(f"{e.code}\n")
                    code = 1
            except Exception:
                err.write(traceback.format_exc())
                code = 1
    finally:
        if attributes is not None:
            for module_name, before in attributes.items():
                module = sys.modules[module_name]
                for key, value in before.items():
                    if vars(module).get(key, value) is not value:
                        setattr(module, key, value)
        os.chdir(cwd_before)
        sys.argv = argv_before
        torch.set_num_threads(threads)
        torch.set_rng_state(rng)
    return subprocess.CompletedProcess([name, *args], code, out.getvalue(), err.getvalue())


def run_tools(name: str, argvs: list, **kwargs) -> list[subprocess.CompletedProcess]:
    """:func:`run_tool` ``name`` once per argument list in ``argvs``, as many at a time as there are CPU cores
    (the tests run on one); the finished processes in the order of ``argvs``."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return list(pool.map(lambda argv: run_tool(name, *argv, **kwargs), argvs))


PARSER_DUMP = """
import argparse, json, runpy, sys
parser = runpy.run_path(sys.argv[1], run_name="tool_parser")["build_parser"]()
actions = []
for a in parser._actions:
    own = None
    if a.option_strings and a.help is not None:
        own = parser.formatter_class("x")._get_help_string(a) % {**vars(a), "prog": "x"}
    has_default = a.default not in (None, False, "", argparse.SUPPRESS)
    actions.append({"flags": a.option_strings, "help": a.help, "own_help": own, "has_default": has_default})
print(json.dumps({"help": parser.format_help(), "actions": actions}, default=str))
"""


def tool_parser(name: str) -> dict:
    """What ``REPO/NAME.py``'s ``build_parser()`` holds, read in a subprocess: ``help`` (the --help text) and
    ``actions``: per argument ``flags``, ``help`` (as given), ``own_help`` (the help line with the default the
    formatter adds, None for positionals and hidden flags) and ``has_default``."""
    done = subprocess.run(
        [sys.executable, "-c", PARSER_DUMP, str(REPO / f"{name}.py")], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def one_error_line(err: str, tool: str) -> str:
    """The stderr of a failed run: one ``tool: error: ...`` line, no traceback; returns that line."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith(f"{tool}: error: ")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for the module; the previous count restored afterwards."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ------------------------------------------------------------- a corpus prepared by data.py, a tiny run
WORDS = (
    "the cat sat on a mat and the dog ran to the log while a bird sang in the old tree "
    "near the river where children played all day long"
).split()
BPE300 = ["--tokenizer", "bpe:300"]  # the BPE token files of ``tiny_run``
TINY_MODEL = [  # the model and run flags of ``tiny_run``'s checkpoint (the gpt2 recipe: tests pass it --lr)
    *("--recipe", "gpt2"),
    *("--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "4"),
    *("--eval-windows", "2", "--eval-interval", "2", "--no-progress", "--threads", "1"),
]


def tiny_argv(data, out_dir, *extra: str) -> list[str]:
    """pretrain.py's arguments for a run like ``tiny_run``'s: ``--data DATA``, bpe:300, ``--out-dir OUT_DIR``,
    :data:`TINY_MODEL`, then ``extra``."""
    return ["--data", str(data), *BPE300, "--out-dir", str(out_dir), *TINY_MODEL, *extra]


def corpus_text(n_docs: int = 12) -> str:
    """``n_docs`` little stories of eight random lines, separated by ``<|endoftext|>`` lines (seeded)."""
    rng = np.random.default_rng(0)
    docs = []
    for d in range(n_docs):
        lines = [" ".join(rng.choice(WORDS, 12)) + "." for _ in range(8)]
        docs.append(f"Story {d}.\n" + "\n".join(lines))
    return f"\n{EOT}\n".join(docs) + "\n"


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> dict[str, Path]:
    """``root/tiny.txt`` (``src``) prepared by data.py into ``root/data/tiny`` (``corpus``: bpe-300 and word:60
    token files, the latter named ``word``: ``word-41``, the size its training split has) and a 2-step pretrain.py run on its BPE files (``ckpt``: ``root/ck/tiny/learned-bpe-300/ckpt.pt``);
    the tools run in this process (:func:`call_tool`).
    """
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("tiny_run")
    src = root / "tiny.txt"
    src.write_text(corpus_text(), encoding="utf-8")
    common = ["--train-file", str(src), "--out", str(root / "data"), "--quiet", "--threads", "1"]
    for kind in (["--bpe", "--vocab-size", "300"], ["--vocab-size", "60"]):
        done = call_tool("data", *common, *kind)
        assert done.returncode == 0, done.stderr
    corpus = root / "data" / "tiny"
    done = call_tool("pretrain", *tiny_argv(corpus, root / "ck", "--max-steps", "2"))
    assert done.returncode == 0, done.stderr
    ckpt = root / "ck" / "tiny" / "learned-bpe-300" / "ckpt.pt"
    return {"root": root, "src": src, "corpus": corpus, "ckpt": ckpt, "word": written_slug(corpus, "word-60")}
