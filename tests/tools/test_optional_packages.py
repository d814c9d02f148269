"""A missing optional package is one line naming what needs it and the extra that installs it
(``pip install -e .[interop]``), from one helper (``storygpt.tokenizers.base.missing_package``)."""

from __future__ import annotations

import ast
import re
import sys

import pytest
from conftest import REPO

from storygpt.tokenizers.base import EXTRAS, missing_package, require


def test_every_package_named_is_in_the_extra_named():
    """EXTRAS against pyproject.toml (the oracle): each package is installed by the extra the message names."""
    text = (REPO / "pyproject.toml").read_text()
    lists = dict(re.findall(r"^([a-z]+) = \[(.*?)\]", text.split("[project.optional-dependencies]")[1], re.M | re.S))
    for package, extra in EXTRAS.items():
        assert re.search(rf'"{package}[<>=!~]', lists[extra]), (package, extra)


def test_every_require_call_names_a_package_with_an_extra():
    """Every ``require(...)`` in the library (grep, through the syntax tree) asks for a package of EXTRAS, and
    says what needs it in the user's words, not an internal function name alone."""
    calls = []
    for path in (REPO / "storygpt").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "require":
                package = node.args[0].value
                calls.append((path.name, package))
                assert package.split(".")[0] in EXTRAS, (path, package)
                what = node.args[1]
                if isinstance(what, ast.Constant):
                    assert not re.fullmatch(r"[a-z_]+", what.value), (path, what.value)  # "from_tiktoken" alone
    assert len(calls) >= 10  # the grep found the calls


def test_the_message_names_the_extra_and_the_package():
    assert missing_package("tiktoken", "a tiktoken:NAME tokenizer") == (
        "a tiktoken:NAME tokenizer needs the optional package tiktoken: pip install -e .[interop] "
        "(or pip install tiktoken)"
    )
    assert missing_package("safetensors.torch", "export.py").endswith(
        "pip install -e .[interop] (or pip install safetensors)"
    )
    assert missing_package("ray", "--executor ray", extra="cluster").endswith(
        "pip install -e .[cluster] (or pip install ray)"
    )
    assert missing_package("nowhere", "x") == "x needs the optional package nowhere: pip install nowhere"
    with pytest.raises(ImportError, match=r"^y needs the optional package no_such_pkg_xq: pip install no_such_pkg_xq$"):
        require("no_such_pkg_xq", "y")


def _spec(text):
    from storygpt.tokenizers.spec import build_tokenizer

    return build_tokenizer(text)


def _from_tiktoken():
    from storygpt.tokenizers.interop import from_tiktoken

    return from_tiktoken("gpt2")


def _sentencepiece():
    from storygpt.tokenizers.spm import train_sentencepiece

    return train_sentencepiece(["a b c"], 400, "unigram")


@pytest.mark.parametrize(
    ("package", "call", "what"),
    [
        ("tiktoken", lambda: _spec("tiktoken:gpt2"), "tiktoken:NAME"),
        ("tiktoken", _from_tiktoken, "interop.from_tiktoken"),
        ("sentencepiece", _sentencepiece, "the spm-unigram: tokenizer"),
        ("tokenizers", lambda: _spec("unigram:300"), "the unigram: tokenizer"),
    ],
)
def test_a_missing_package_through_the_public_api(monkeypatch, package, call, what):
    """With the package made unimportable, the public call fails with the one line naming the extra."""
    monkeypatch.setitem(sys.modules, package, None)  # import raises ImportError
    with pytest.raises(ImportError) as info:
        call()
    msg = str(info.value)
    assert "\n" not in msg and what in msg
    assert msg.endswith(f"needs the optional package {package}: pip install -e .[interop] (or pip install {package})")
