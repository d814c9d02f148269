"""scripts/setup_env.sh decides what to install with scripts/env_check.py; both are tested here.

The decision (:func:`env_check.decide`) is driven with made-up timestamps and installed
versions; the shell script runs on a made-up checkout whose ``python`` records the pip
commands instead of running them, so nothing is installed.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_env_check():
    spec = importlib.util.spec_from_file_location("env_check", ROOT / "scripts" / "env_check.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["env_check"] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


env_check = _load_env_check()
EnvState, decide = env_check.EnvState, env_check.decide
UP_TO_DATE, INSTALL, REQUIREMENTS = env_check.UP_TO_DATE, env_check.INSTALL, env_check.REQUIREMENTS


def state(root: Path, **kw) -> EnvState:
    base = dict(
        root=root,
        package_dir=root / "storygpt",
        core_mtime=2000.0,
        newest_input=(1000.0, "csrc/bpe.cpp"),
        unsatisfied=[],
    )
    base.update(kw)
    return EnvState(**base)


# ------------------------------------------------------------------ the decision
def test_decide_installed_and_up_to_date(tmp_path):
    assert decide(state(tmp_path)) == (
        UP_TO_DATE,
        ["storygpt is installed from this checkout and its C++ core is up to date"],
    )


def test_decide_not_installed_or_installed_elsewhere(tmp_path):
    assert decide(state(tmp_path, package_dir=None)) == (INSTALL, ["storygpt is not installed in this environment"])
    code, why = decide(state(tmp_path, package_dir=Path("/elsewhere/storygpt")))
    assert code == INSTALL and why == [
        f"storygpt is installed from /elsewhere/storygpt, not from this checkout {tmp_path}"
    ]


def test_decide_core_missing_or_stale(tmp_path):
    assert decide(state(tmp_path, core_mtime=None)) == (INSTALL, ["the C++ core storygpt/_bpe is not compiled"])
    stale = state(tmp_path, newest_input=(2000.5, "setup.py"))
    assert decide(stale) == (INSTALL, ["setup.py changed since the C++ core was compiled"])
    # a stale core wins over missing requirements: pip install -e .[extras] brings both
    assert decide(state(tmp_path, newest_input=(3000.0, "csrc/x.cpp"), unsatisfied=["pytest>=7"]))[0] == INSTALL
    # a build input exactly as old as the core is not newer
    assert decide(state(tmp_path, newest_input=(2000.0, "csrc/x.cpp")))[0] == UP_TO_DATE


def test_decide_only_requirements_missing(tmp_path):
    # the case of issue 13: main_job.sh installed the core, test.sh needs the test extra
    reqs = ["pytest>=7", "ruff==0.17.6"]
    assert decide(state(tmp_path, unsatisfied=reqs)) == (REQUIREMENTS, reqs)


def test_unsatisfied_compares_versions():
    installed = {"pytest": "9.2.0", "regex": "2024.1.1", "torch": "2.13.0+cpu", "ruff": "0.17.6"}
    reqs = ["pytest>=7", "regex==2026.11.19", "torch>=2.1", "ruff==0.17.6", "hypothesis>=6.80"]
    assert env_check.unsatisfied(reqs, installed.get) == ["regex==2026.11.19", "hypothesis>=6.80"]
    with pytest.raises(ValueError, match="not a requirement: 'pytest >>= 7'"):
        env_check.unsatisfied(["pytest >>= 7"], installed.get)


def test_requirements_read_from_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [project]
            name = "x"
            dependencies = ["numpy>=1.24", "regex==2026.11.19"]
            [project.optional-dependencies]
            test = ["pytest>=7", "regex==2026.11.19"]
            bench = ["tiktoken"]
            """
        )
    )
    pyproject = tmp_path / "pyproject.toml"
    assert env_check.requirements(pyproject, []) == ["numpy>=1.24", "regex==2026.11.19"]
    assert env_check.requirements(pyproject, ["test"]) == ["numpy>=1.24", "regex==2026.11.19", "pytest>=7"]
    with pytest.raises(ValueError, match="no extra 'docs' \\(defined: bench, test\\)"):
        env_check.requirements(pyproject, ["docs"])


def test_this_environment_is_ready_for_the_tests():
    # the tests run in an environment scripts/test.sh made: the check agrees it needs nothing
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "env_check.py"), "--extras", "test"],
        capture_output=True,
        text=True,
        cwd="/",
    )
    if out.returncode == INSTALL and "changed since" in out.stdout:
        pytest.skip(f"the C++ core is older than a build input in this checkout: {out.stdout.strip()}")
    assert (out.returncode, out.stdout) == (
        UP_TO_DATE,
        "storygpt is installed from this checkout and its C++ core is up to date\n",
    )


# ------------------------------------------------------------------ the shell script
FAKE_PYTHON = """\
#!/usr/bin/env bash
# python of a made-up venv: pip commands are recorded, not run
if [ "${1:-}" = -m ] && [ "${2:-}" = pip ]; then
    echo "${*:3}" >> "$PIP_LOG"
    exit 0
fi
exec "$REAL_PYTHON" "$@"
"""


@pytest.fixture
def checkout(tmp_path):
    """A made-up checkout (scripts, pyproject, csrc, a compiled core) and a venv whose pip only logs."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    for name in ("setup_env.sh", "env_check.py"):
        shutil.copy(ROOT / "scripts" / name, root / "scripts" / name)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "storygpt"\ndependencies = ["pytest"]\n'
        '[project.optional-dependencies]\ntest = ["no-such-distribution-for-storygpt==1.0"]\n'
    )
    (root / "setup.py").write_text("")
    (root / "csrc").mkdir()
    (root / "csrc" / "bpe.cpp").write_text("")
    pkg = root / "storygpt"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    core = pkg / f"_bpe{env_check.importlib.machinery.EXTENSION_SUFFIXES[0]}"
    core.write_bytes(b"")
    for p in (root / "pyproject.toml", root / "setup.py", root / "csrc" / "bpe.cpp"):
        os.utime(p, (1_000_000, 1_000_000))
    os.utime(core, (2_000_000, 2_000_000))
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(FAKE_PYTHON)
    (venv / "bin" / "python").chmod(0o755)
    (venv / "bin" / "activate").write_text(f'export PATH="{venv}/bin:$PATH"\n')
    return root, venv


def run_setup(root: Path, venv: Path, **env) -> tuple[subprocess.CompletedProcess, list[str]]:
    log = venv / "pip.log"
    log.unlink(missing_ok=True)
    full = {k: v for k, v in os.environ.items() if k not in ("STORYGPT_EXTRAS", "STORYGPT_REINSTALL")}
    full.update(
        STORYGPT_VENV=str(venv),
        PIP_LOG=str(log),
        REAL_PYTHON=sys.executable,
        PYTHONPATH=str(root),  # `import storygpt` finds the made-up checkout first
        **env,
    )
    out = subprocess.run(["bash", str(root / "scripts" / "setup_env.sh")], capture_output=True, text=True, env=full)
    return out, log.read_text().splitlines() if log.exists() else []


def test_setup_env_installs_nothing_when_up_to_date(checkout):
    root, venv = checkout
    out, pip = run_setup(root, venv)
    assert out.returncode == 0, out.stderr
    assert pip == []
    assert "storygpt is installed from this checkout and its C++ core is up to date" in out.stdout


def test_setup_env_recompiles_when_a_source_changed(checkout):
    root, venv = checkout
    os.utime(root / "csrc" / "bpe.cpp", (3_000_000, 3_000_000))
    out, pip = run_setup(root, venv)
    assert pip == [f"install -q -e {root}"]
    assert "(csrc/bpe.cpp changed since the C++ core was compiled)" in out.stdout
    # the fake pip compiled nothing, so the check after it fails with a one-line error
    assert out.returncode == 1
    assert out.stderr.strip().startswith("setup_env.sh: error: after installing, the environment")


def test_setup_env_installs_only_missing_extras(checkout):
    # main_job.sh then test.sh: the core is up to date, the test extra is not installed
    root, venv = checkout
    out, pip = run_setup(root, venv, STORYGPT_EXTRAS="test")
    assert pip == ["install -q no-such-distribution-for-storygpt==1.0"]
    assert ">> installing requirements that are missing: no-such-distribution-for-storygpt==1.0" in out.stdout
    assert out.returncode == 1 and "no-such-distribution-for-storygpt==1.0" in out.stderr


def test_setup_env_reinstall_forced_and_unknown_extra(checkout):
    root, venv = checkout
    out, pip = run_setup(root, venv, STORYGPT_EXTRAS="test", STORYGPT_REINSTALL="1")
    assert pip == [f"install -q -e {root}[test]"]
    out, pip = run_setup(root, venv, STORYGPT_EXTRAS="docs")
    assert out.returncode == 2 and pip == []
    assert out.stderr.strip() == f"env_check.py: error: {root}/pyproject.toml: no extra 'docs' (defined: test)"
