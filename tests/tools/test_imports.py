"""The import graph of the library (issue 23): no cycle, counting imports inside functions, and no
module importing a private ``_name`` from another.  Checked on the source with ``ast`` (nothing imported)."""

from __future__ import annotations

import ast
import re

import pytest
from conftest import REPO

PACKAGE = REPO / "storygpt"


def module_name(path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def library() -> dict[str, object]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


#: The C++ extensions setup.py builds (they import no storygpt module).
EXTENSIONS = set(re.findall(r'Pybind11Extension\(\s*"([\w.]+)"', (REPO / "setup.py").read_text(encoding="utf-8")))


def is_extension(name: str) -> bool:
    return name in EXTENSIONS


def imports(name: str, path, modules) -> list[tuple[str, str | None]]:
    """``(module, imported name or None)`` for every storygpt import anywhere in the file (functions too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for a in node.names:
                sub = f"{base}.{a.name}"
                if is_extension(sub):
                    continue  # the C++ core (storygpt._bpe): no Python imports
                out.append((sub, None) if sub in modules else (base, a.name))
    return [(m, n) for m, n in out if m in modules]


def graph() -> tuple[dict[str, set[str]], list[str]]:
    modules = library()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    private = []
    for m, path in modules.items():
        for target, name in imports(m, path, modules):
            if target != m:
                edges[m].add(target)
            if name is not None and name.startswith("_") and target != m:
                private.append(f"{m} imports {target}.{name}")
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_checker_finds_a_cycle_and_a_private_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    edges, _ = graph()
    assert "storygpt.tokenizers.base" in edges["storygpt.tokenizers.bpe"]  # relative imports resolved


@pytest.mark.parametrize("scope", ["storygpt.tokenizers", "storygpt"])
def test_no_import_cycle_and_no_private_import(scope):
    edges, private = graph()
    inside = [c for c in cycles(edges) if any(m == scope or m.startswith(scope + ".") for m in c)]
    assert inside == []
    assert [p for p in private if scope in p] == []


def test_every_package_is_installed():
    """pyproject.toml lists every folder of the library with an ``__init__.py``: a plain ``pip install .``
    (not editable) installs only the packages listed (before: ``storygpt.train`` was missing)."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "storygpt").rglob("__init__.py")}
    assert listed == found


def test_the_comparison_is_one_package_nothing_below_imports():
    """Issue 32: the comparison lives in storygpt/compare/ and no other part of the library imports it (the
    tools compare.py and bits.py do, and storygpt/halving, compare.py --halving's rounds of comparisons, a layer
    above it that the comparison never imports); the top of storygpt/ keeps at most 10 loose modules."""
    edges, _ = graph()
    above = ("storygpt.compare", "storygpt.halving")
    up = sorted(
        f"{m} -> {t}" for m, ts in edges.items() for t in ts if t.startswith(above[0]) and not m.startswith(above)
    )
    assert up == []
    down = sorted(
        f"{m} -> {t}" for m, ts in edges.items() for t in ts if m.startswith(above[0]) and t.startswith(above[1])
    )
    assert down == []
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 10, loose
    compare = {p.stem for p in (PACKAGE / "compare").glob("*.py")}
    assert {"settings", "run", "preflight", "report", "plots", "analysis"} <= compare
    assert len(compare) <= 12, sorted(compare)  # issue 47: at most 12 modules, __init__ included


def test_no_python_file_is_over_650_lines():
    """Issue 47: every .py file of the repository, tests/ included (git's, else those below it outside hidden
    folders), has at most 650 lines."""
    import subprocess

    try:
        listed = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True)
        paths = [REPO / line for line in listed.stdout.splitlines() if (REPO / line).is_file()]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for p in REPO.rglob("*.py") if not any(part.startswith(".") for part in p.relative_to(REPO).parts)]
    long = {str(p.relative_to(REPO)): n for p in paths if (n := len(p.read_text(encoding="utf-8").splitlines())) > 650}
    assert long == {}


def reached(start: set[str], edges: dict[str, set[str]]) -> set[str]:
    """Every module that ``start`` imports, directly or through others (imports inside functions too)."""
    seen, todo = set(), list(start)
    while todo:
        m = todo.pop()
        for t in edges.get(m, ()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def tool_imports(tool: str, modules) -> set[str]:
    """The storygpt modules a top-level tool (``bits.py``) imports itself."""
    path = REPO / tool
    return {m for m, _ in imports("__main__", path, modules)}


def test_evaluation_is_its_own_package_bits_and_tasks_reach_no_compare():
    """Issue 47: evaluation lives in storygpt/eval/; bits.py, storygpt/eval and storygpt/tasks reach nothing
    in storygpt.compare, not even through another module."""
    edges, _ = graph()
    modules = library()
    for start in (
        tool_imports("bits.py", modules),
        {m for m in modules if m.startswith("storygpt.eval")},
        {m for m in modules if m.startswith("storygpt.tasks")},
    ):
        assert start, "nothing to check"
        bad = sorted(m for m in reached(start, edges) | start if m.startswith("storygpt.compare"))
        assert bad == [], (sorted(start)[:3], bad)
    assert {"bits", "heldout", "measure", "sets", "perturb", "attribution", "charloss", "vocab_health", "stats"} <= {
        p.stem for p in (PACKAGE / "eval").glob("*.py")
    }


def test_old_evaluate_module_still_works_with_a_deprecation_warning():
    """docs/api.md's rule for a rename: storygpt.evaluate (now storygpt.eval.bits) keeps working for a release."""
    import importlib
    import sys
    import warnings

    sys.modules.pop("storygpt.evaluate", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = importlib.import_module("storygpt.evaluate")
    from storygpt.eval import bits

    assert old.evaluate_bits is bits.evaluate_bits and old.read_documents is bits.read_documents
    assert any(issubclass(w.category, DeprecationWarning) and "storygpt.eval.bits" in str(w.message) for w in caught)
