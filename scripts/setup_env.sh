#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment in .venv and install
# storygpt into it, compiling the C++ core.  Sourced by main_job.sh and test.sh.
#
#   STORYGPT_VENV   where the venv lives (default: .venv in the repo root)
#   STORYGPT_TORCH  the torch requirement installed first (default torch==2.13.0;
#                   pinned so that pip takes the CPU build that lies on this
#                   class of machine instead of pulling a multi-GB CUDA build)
#   STORYGPT_EXTRAS extras to install, e.g. "test" (default: none)
#   STORYGPT_REINSTALL=1  reinstall and recompile even when everything is up to date
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${STORYGPT_VENV:-$ROOT/.venv}"
TORCH_REQ="${STORYGPT_TORCH:-torch==2.13.0}"
PYTHON="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
    echo ">> creating virtual environment $VENV"
    "$PYTHON" -m venv "$VENV"
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
if ! python -c "import torch" >/dev/null 2>&1; then
    echo ">> installing $TORCH_REQ"
    python -m pip install -q "$TORCH_REQ"
fi
SPEC="$ROOT"
CHECK="import storygpt._bpe"
if [ -n "${STORYGPT_EXTRAS:-}" ]; then
    SPEC="$ROOT[${STORYGPT_EXTRAS}]"
    [ "$STORYGPT_EXTRAS" = test ] && CHECK="$CHECK, pytest, hypothesis, tiktoken, rustbpe, ruff, clang_format"
fi
# Skip the (re)install when this checkout is already installed in the venv, its
# compiled core is newer than every C++ source and build file, and the extras import.
up_to_date() {
    local so
    so=$(ls "$ROOT"/storygpt/_bpe*.so 2>/dev/null | head -n 1)
    [ -n "$so" ] || return 1
    [ -z "$(find "$ROOT/csrc" "$ROOT/setup.py" "$ROOT/pyproject.toml" -newer "$so" 2>/dev/null)" ] || return 1
    (cd / && python -c "import storygpt, sys; sys.exit(not storygpt.__file__.startswith('$ROOT/')); $CHECK") >/dev/null 2>&1
}
if [ "${STORYGPT_REINSTALL:-0}" != 1 ] && up_to_date; then
    echo ">> storygpt is installed and its C++ core is up to date (STORYGPT_REINSTALL=1 forces a rebuild)"
else
    echo ">> installing storygpt (compiles the C++ core)"
    python -m pip install -q -e "$SPEC"
fi
