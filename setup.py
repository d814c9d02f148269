"""Build script for the C++ extension ``storygpt._bpe``.

All project metadata lives in ``pyproject.toml``; this file only declares the
pybind11 extension so that ``pip install .`` / ``pip install -e .`` compile it
with optimisation (-O3) and C++17.  Sources: every .cpp under csrc/ (csrc/common,
pretokenize, train, encode: pure C++; csrc/python: the bindings), included as "layer/file.h" from csrc/,
compiled in parallel (pybind11's ``ParallelCompile``).
"""

import os
import re
import sys
from pathlib import Path

from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import setup

# Compile the sources in parallel, one job per core (STORYGPT_BUILD_JOBS=N to set N, 0: one per core).
_jobs = os.environ.get("STORYGPT_BUILD_JOBS", "0")
if not re.fullmatch(r"[0-9]{1,3}", _jobs.strip()):  # ASCII digits only: int() would take '٣' too
    sys.exit(f"setup.py: STORYGPT_BUILD_JOBS must be a whole number from 0 to 999 (0: one per core), got {_jobs!r}")
ParallelCompile("STORYGPT_BUILD_JOBS", default=0).install()

extra_compile_args = []
if sys.platform != "win32":
    extra_compile_args = ["-O3", "-fvisibility=hidden", "-pthread"]

ext_modules = [
    Pybind11Extension(
        "storygpt._bpe",
        sources=sorted(str(p) for p in Path("csrc").rglob("*.cpp")),
        include_dirs=["csrc"],
        cxx_std=17,
        extra_compile_args=extra_compile_args,
        extra_link_args=["-pthread"] if sys.platform != "win32" else [],
    )
]

setup(ext_modules=ext_modules, cmdclass={"build_ext": build_ext})
