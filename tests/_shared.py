"""Paths and skip marks shared by the tokenizer tests.

``../shared`` (beside the repository) holds OpenAI's BPE files and the corpora;
tests that need them skip with a reason that names the missing folder.
Importing this module points ``TIKTOKEN_CACHE_DIR`` at the shared cache (when
it is unset), so tiktoken never downloads.
"""

import os
import pathlib

import pytest

from storygpt.tokenizers.bpe import _load_cpp

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
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
    _load_cpp()
    HAVE_CPP = True
except ImportError:
    HAVE_CPP = False

needs_cache = pytest.mark.skipif(
    not CACHE.is_dir() or not HAVE_TIKTOKEN,
    reason=f"OpenAI BPE files not found at {CACHE}" if not CACHE.is_dir() else "tiktoken is not installed",
)
needs_corpora = pytest.mark.skipif(not CORPORA.is_dir(), reason=f"shared corpora not found at {CORPORA}")
needs_cpp = pytest.mark.skipif(not HAVE_CPP, reason="storygpt._bpe (the C++ core) is not built")
