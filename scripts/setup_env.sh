#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment in .venv and install
# storygpt into it, compiling the C++ core.  Sourced by main_job.sh and test.sh,
# in either order: each installs what it needs and keeps what is there.
#
#   STORYGPT_VENV   where the venv lives (default: .venv in the repo root)
#   STORYGPT_TORCH  the torch requirement installed first (default torch==2.13.0;
#                   pinned so that pip takes the CPU build that lies on this
#                   class of machine instead of pulling a multi-GB CUDA build)
#   STORYGPT_EXTRAS extras of pyproject.toml to install, e.g. "test" (default: none)
#   STORYGPT_REINSTALL=1  reinstall and recompile even when everything is up to date
#
# What to install is decided by scripts/env_check.py (tested in tests/tools/test_setup_env.py):
# nothing when storygpt is installed from this checkout, its compiled core is newer
# than csrc/, setup.py and pyproject.toml, and every requirement (with the extras)
# is satisfied; only the missing requirements when that is all that is wrong;
# otherwise `pip install -e ROOT[EXTRAS]`, which compiles the core.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${STORYGPT_VENV:-$ROOT/.venv}"
TORCH_REQ="${STORYGPT_TORCH:-torch==2.13.0}"
PYTHON="${PYTHON:-python3}"
EXTRAS="${STORYGPT_EXTRAS:-}"

if [ ! -x "$VENV/bin/python" ]; then
    echo ">> creating virtual environment $VENV"
    "$PYTHON" -m venv "$VENV"
    python_new_venv=1
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
if [ "${python_new_venv:-0}" = 1 ]; then
    python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
fi
if ! python -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is None)"; then
    echo ">> installing $TORCH_REQ"
    python -m pip install -q "$TORCH_REQ"
fi
SPEC="$ROOT"
[ -n "$EXTRAS" ] && SPEC="$ROOT[$EXTRAS]"

env_check() {  # sets CHECK_RC and CHECK_OUT
    set +e
    CHECK_OUT=$(python "$ROOT/scripts/env_check.py" --extras "$EXTRAS")
    CHECK_RC=$?
    set -e
}
env_check
if [ "$CHECK_RC" = 2 ]; then
    exit 2  # env_check.py printed the error
fi
if [ "${STORYGPT_REINSTALL:-0}" = 1 ]; then
    CHECK_RC=10
    CHECK_OUT="STORYGPT_REINSTALL=1"
fi
case "$CHECK_RC" in
    0)
        echo ">> $CHECK_OUT (STORYGPT_REINSTALL=1 forces a rebuild)"
        ;;
    11)
        mapfile -t missing <<< "$CHECK_OUT"
        echo ">> installing requirements that are missing: ${missing[*]}"
        python -m pip install -q "${missing[@]}"
        ;;
    *)
        echo ">> installing storygpt, compiling the C++ core ($CHECK_OUT)"
        python -m pip install -q -e "$SPEC"
        ;;
esac
if [ "$CHECK_RC" != 0 ]; then
    env_check
    if [ "$CHECK_RC" != 0 ]; then
        echo "setup_env.sh: error: after installing, the environment $VENV is still not ready: ${CHECK_OUT//$'\n'/, }" >&2
        exit 1
    fi
fi
