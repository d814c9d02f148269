"""Issue 47: the command line stops at the tools.  No library function under storygpt/ takes an argparse
Namespace (storygpt/cli.py and storygpt/helpformat.py are the command-line helper layer and may)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "storygpt"
ALLOWED = {ROOT / "cli.py", ROOT / "helpformat.py"}


def _is_namespace(node: ast.AST | None) -> bool:
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        return node.value.split(".")[-1] == "Namespace"
    if isinstance(node, ast.Name):
        return node.id == "Namespace"
    if isinstance(node, ast.Attribute):
        return node.attr == "Namespace"
    return False


def namespace_uses(source: str, name: str = "<source>") -> list[str]:
    """Where ``source`` takes or makes an argparse Namespace, as ``name:line: what``."""
    tree = ast.parse(source, filename=name)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_namespace(node.func):
            found.append(f"{name}:{node.lineno}: constructs argparse.Namespace")
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        a = node.args
        params = [
            *a.posonlyargs,
            *a.args,
            *a.kwonlyargs,
            *([a.vararg] if a.vararg else []),
            *([a.kwarg] if a.kwarg else []),
        ]
        fname = getattr(node, "name", "<lambda>")
        for p in params:
            if _is_namespace(p.annotation):
                found.append(f"{name}:{node.lineno}: {fname}({p.arg}: Namespace)")
        # an ``args`` parameter with no annotation (an annotated one, e.g. bpe_train's ``args: TrainArgs``, is
        # a value of its own type) whose body reads it like a Namespace
        if any(p.arg == "args" and p.annotation is None for p in params):
            body = node.body if isinstance(node.body, list) else [node.body]
            for stmt in body:
                for sub in ast.walk(stmt):
                    reads = (
                        isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "args"
                    )
                    gets = (
                        isinstance(sub, ast.Call)
                        and isinstance(sub.func, ast.Name)
                        and sub.func.id in ("getattr", "setattr", "vars")
                        and sub.args
                        and isinstance(sub.args[0], ast.Name)
                        and sub.args[0].id == "args"
                    )
                    if reads or gets:
                        found.append(f"{name}:{sub.lineno}: {fname}(args) reads args like a Namespace")
                        break
                else:
                    continue
                break
    return found


def test_the_check_finds_namespace_shapes():
    bad = {
        "import argparse\ndef f(a: argparse.Namespace): pass\n": "Namespace)",
        "from argparse import Namespace\ndef f(a: 'Namespace'): pass\n": "Namespace)",
        "import argparse\nx = argparse.Namespace(a=1)\n": "constructs",
        "def f(args):\n    return args.seed\n": "reads args",
        "def f(x, args=None):\n    return getattr(args, 'seed')\n": "reads args",
    }
    for src, what in bad.items():
        found = namespace_uses(src)
        assert found and what in found[0], (src, found)
    assert namespace_uses("def f(args):\n    return list(args)\n") == []  # a plain list named args
    assert namespace_uses("def f(*, seed: int):\n    return seed\n") == []
    assert namespace_uses("def f(args: TrainArgs):\n    return args.vocab_size\n") == []  # a dataclass


def test_no_library_function_takes_a_namespace():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path in ALLOWED:
            continue
        found += namespace_uses(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT.parent)))
    assert not found, "argparse Namespaces under storygpt/ (the command line stops at the tools):\n" + "\n".join(found)
