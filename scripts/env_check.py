#!/usr/bin/env python3
"""Does this checkout's virtual environment need an install?  The decision of ``scripts/setup_env.sh``.

Run with the environment's python (stdlib, plus the ``packaging`` and ``tomli``
that pip vendors on Python 3.10)::

    python scripts/env_check.py [--extras test]

It looks at the checkout it lies in (the folder above ``scripts/``) and exits with

* 0 (:data:`UP_TO_DATE`): storygpt is installed from this checkout, its compiled
  core ``storygpt/_bpe*.so`` is newer than every file it is built from
  (``csrc/*``, ``setup.py``, ``pyproject.toml``), and every requirement in
  ``pyproject.toml`` (``dependencies`` and the requested extras) is installed at
  a version its specifier allows;
* 10 (:data:`INSTALL`): ``pip install -e ROOT[extras]`` is needed (not installed,
  installed from another checkout, no compiled core, or a build file newer than it);
* 11 (:data:`REQUIREMENTS`): the core is up to date and only requirements are
  missing or at a version their specifier excludes; they are printed one per line
  on stdout, for ``pip install`` (no recompilation needed);
* 2: an error (a malformed ``pyproject.toml``, an unknown extra), one line on stderr.

For 0 and 10 stdout holds one line saying why.  The decision itself,
:func:`decide`, is a pure function of an :class:`EnvState`, so a test drives it
with made-up timestamps and installed versions.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.metadata
import importlib.util
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

UP_TO_DATE, INSTALL, REQUIREMENTS = 0, 10, 11
#: the files the compiled core is built from, relative to the checkout
BUILD_INPUTS = ("csrc", "setup.py", "pyproject.toml")
ROOT = Path(__file__).resolve().parents[1]

try:  # pip vendors both; the standalone packages win where installed
    from packaging.requirements import InvalidRequirement, Requirement
except ImportError:  # pragma: no cover - depends on the environment
    from pip._vendor.packaging.requirements import InvalidRequirement, Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    try:
        import tomli as tomllib
    except ImportError:
        from pip._vendor import tomli as tomllib


@dataclass
class EnvState:
    """What :func:`decide` looks at.

    Attributes:
        root: the checkout.
        package_dir: the folder ``import storygpt`` loads from in the
            environment, or None when storygpt is not importable.
        core_mtime: modification time (seconds since the epoch) of the compiled
            core in ``root/storygpt``, or None when there is none.
        newest_input: ``(mtime, path)`` of the newest build input, or None.
        unsatisfied: requirement strings from ``pyproject.toml`` that the
            environment does not satisfy, in file order.
    """

    root: Path
    package_dir: Path | None
    core_mtime: float | None
    newest_input: tuple[float, str] | None
    unsatisfied: list[str] = field(default_factory=list)


def decide(state: EnvState) -> tuple[int, list[str]]:
    """The decision for ``state``: ``(code, lines)``.

    Returns:
        ``(UP_TO_DATE, [why])``, ``(INSTALL, [why])``, or ``(REQUIREMENTS,
        requirement strings to pip install)``; see the module docstring.
    """
    root = state.root.resolve()
    if state.package_dir is None:
        return INSTALL, ["storygpt is not installed in this environment"]
    if state.package_dir.resolve() != root / "storygpt":
        return INSTALL, [f"storygpt is installed from {state.package_dir}, not from this checkout {root}"]
    if state.core_mtime is None:
        return INSTALL, ["the C++ core storygpt/_bpe is not compiled"]
    if state.newest_input is not None and state.newest_input[0] > state.core_mtime:
        return INSTALL, [f"{state.newest_input[1]} changed since the C++ core was compiled"]
    if state.unsatisfied:
        return REQUIREMENTS, list(state.unsatisfied)
    return UP_TO_DATE, ["storygpt is installed from this checkout and its C++ core is up to date"]


def requirements(pyproject: Path, extras: Iterable[str]) -> list[str]:
    """The requirement strings of ``dependencies`` and of each extra in ``extras``.

    Raises:
        ValueError: naming the file, for TOML it cannot parse or an extra it does not define.
    """
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"{pyproject}: cannot read [project] ({e})") from None
    reqs = list(project.get("dependencies", []))
    optional = project.get("optional-dependencies", {})
    for extra in extras:
        if extra not in optional:
            raise ValueError(f"{pyproject}: no extra {extra!r} (defined: {', '.join(sorted(optional)) or 'none'})")
        reqs += [r for r in optional[extra] if r not in reqs]
    return reqs


def unsatisfied(reqs: Iterable[str], version_of: Callable[[str], str | None]) -> list[str]:
    """The requirements in ``reqs`` that the installed versions do not satisfy.

    Args:
        reqs: PEP 508 requirement strings.
        version_of: the installed version of a distribution name, None when absent.

    Raises:
        ValueError: a requirement string that is not PEP 508.
    """
    out = []
    for text in reqs:
        try:
            req = Requirement(text)
        except InvalidRequirement as e:
            raise ValueError(f"not a requirement: {text!r} ({e})") from None
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        version = version_of(req.name)
        if version is None or not req.specifier.contains(version, prereleases=True):
            out.append(text)
    return out


def installed_version(name: str) -> str | None:
    """The installed version of distribution ``name`` in this environment, or None."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def newest_file(root: Path, names: Iterable[str]) -> tuple[float, str] | None:
    """``(mtime, path relative to root)`` of the newest file among ``names`` (files or folders, recursively)."""
    best = None
    for name in names:
        top = root / name
        for p in [top] if top.is_file() else (q for q in sorted(top.rglob("*")) if q.is_file()):
            item = (p.stat().st_mtime, str(p.relative_to(root)))
            if best is None or item[0] > best[0]:
                best = item
    return best


def core_mtime(root: Path) -> float | None:
    """Modification time of the compiled core ``root/storygpt/_bpe<suffix>`` for this Python, or None."""
    times = [
        (root / "storygpt" / f"_bpe{s}").stat().st_mtime
        for s in importlib.machinery.EXTENSION_SUFFIXES
        if (root / "storygpt" / f"_bpe{s}").is_file()
    ]
    return max(times) if times else None


def package_dir() -> Path | None:
    """The folder ``import storygpt`` would load from (found without importing it), or None."""
    spec = importlib.util.find_spec("storygpt")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent


def probe(root: Path, extras: Iterable[str]) -> EnvState:
    """The :class:`EnvState` of this environment for the checkout ``root``."""
    return EnvState(
        root=root,
        package_dir=package_dir(),
        core_mtime=core_mtime(root),
        newest_input=newest_file(root, BUILD_INPUTS),
        unsatisfied=unsatisfied(requirements(root / "pyproject.toml", extras), installed_version),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="env_check.py",
        description="Say whether this checkout's environment needs `pip install -e .` (exit 10), only some "
        "requirements (exit 11, printed one per line), or nothing (exit 0).",
    )
    ap.add_argument("--extras", default="", help="comma-separated extras of pyproject.toml to require, e.g. test")
    args = ap.parse_args(argv)
    extras = [e.strip() for e in args.extras.split(",") if e.strip()]
    try:
        code, lines = decide(probe(ROOT, extras))
    except ValueError as e:
        print(f"env_check.py: error: {e}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return code


if __name__ == "__main__":
    sys.exit(main())
