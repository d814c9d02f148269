"""The machine line every benchmark prints: the CPU model and the load (imported by the scripts beside it)."""

from __future__ import annotations

import platform
from pathlib import Path


def cpu_model() -> str:
    """``model name`` of /proc/cpuinfo (the platform's processor name elsewhere, ``?`` when unknown)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def load() -> str:
    """The 1, 5 and 15 minute load averages of /proc/loadavg (``?`` where there is none)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"
