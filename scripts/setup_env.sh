#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment in .venv and install
# storygpt into it, compiling the C++ core.  Sourced by main_job.sh and test.sh.
#
#   STORYGPT_VENV   where the venv lives (default: .venv in the repo root)
#   STORYGPT_TORCH  the torch requirement installed first (default torch==2.13.0;
#                   pinned so that pip takes the CPU build that lies on this
#                   class of machine instead of pulling a multi-GB CUDA build)
#   STORYGPT_EXTRAS extras to install, e.g. "test" (default: none)
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
if [ -n "${STORYGPT_EXTRAS:-}" ]; then
    SPEC="$ROOT[${STORYGPT_EXTRAS}]"
fi
echo ">> installing storygpt (compiles the C++ core)"
python -m pip install -q -e "$SPEC"
