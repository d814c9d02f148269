#!/usr/bin/env bash
# The README's test command: install what the tests need, then run them.
# Long tests are marked `slow`, wall-clock bounds `perf`; both are left out by default. Run them with:
# scripts/test.sh -m slow, scripts/test.sh -m perf
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STORYGPT_EXTRAS=test . "$ROOT/scripts/setup_env.sh"
# Parity tests against tiktoken read OpenAI's BPE files from ../shared when present.
if [ -z "${TIKTOKEN_CACHE_DIR:-}" ] && [ -d "$ROOT/../shared/tiktoken_cache" ]; then
    export TIKTOKEN_CACHE_DIR="$ROOT/../shared/tiktoken_cache"
fi
# Lint and format check first (configuration in pyproject.toml).
echo ">> ruff check; ruff format --check"
ruff check --quiet .
ruff format --check --quiet .
# C++ style (.clang-format; files listed in .clang-format-ignore are skipped).
echo ">> clang-format --dry-run --Werror csrc/"
find csrc -name "*.h" -o -name "*.cpp" | LC_ALL=C sort | xargs clang-format --dry-run --Werror
# Default run only: the C++ core built with AddressSanitizer and UndefinedBehaviorSanitizer, on a
# fixed set of random vocabularies and texts (fuzz/core_fuzz.cpp; any report fails; objects cached
# in build/sanitize/, about 50 s of CPU to build from scratch, 10 s to run).
if [ "$#" -eq 0 ]; then
    echo ">> fuzz/sanitize.sh (C++ core under -fsanitize=address,undefined)"
    bash "$ROOT/fuzz/sanitize.sh" --quick
fi
# Default: the fast tests, on two worker processes (pytest-xdist; many tests start the tools as
# subprocesses and wait for them). Any argument replaces all of this, e.g. `-m slow`.
if [ "$#" -eq 0 ]; then
    set -- -m "not slow and not perf" -n 2 --dist worksteal
fi
exec python -m pytest "$@"
