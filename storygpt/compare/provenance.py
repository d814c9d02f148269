"""Where a comparison's figures came from: versions, the git commit, file fingerprints, CPU time.

compare.py records :func:`environment` in each run folder's compare.json when the run is trained and in
the report's results.json when it is written; :func:`token_fingerprints` names the token files a run was
trained on; :func:`children_cpu` measures the CPU time of the tools it ran.  Nothing here imports torch.
"""

from __future__ import annotations

import platform
import resource
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from storygpt.atomic import sha256_file


def git(repo: Path, *args: str) -> str | None:
    """``git -C repo ARGS`` output (stripped), or None when git or the repository is not there."""
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def version_of(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def environment(repo: Path) -> dict:
    """storygpt's version, the commit of ``repo`` and whether its tracked files differ from it (``dirty``),
    the torch, numpy and Python versions and the platform."""
    import storygpt

    status = git(repo, "status", "--porcelain", "--untracked-files=no")
    return {
        "storygpt": storygpt.__version__,
        "commit": git(repo, "rev-parse", "HEAD"),
        "dirty": None if status is None else bool(status),
        "torch": version_of("torch"),
        "numpy": version_of("numpy"),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "executable": sys.executable,
    }


def token_fingerprints(paths: list[Path]) -> dict:
    """file name -> fingerprint: for a ``.bin`` token file its header's tokenizer fingerprint and crc32 of the
    ids (storygpt.data.binfile), for the tokenizer JSON its sha256; None for a missing or unreadable file."""
    from storygpt.data.binfile import read_header

    out = {}
    for p in paths:
        try:
            if p.suffix == ".bin":
                h = read_header(p)
                out[p.name] = f"tokenizer {h['fingerprint']}, {h['count']} ids, crc32 {h['checksum']}"
            else:
                out[p.name] = "sha256 " + sha256_file(p)
        except (OSError, ValueError, KeyError):
            out[p.name] = None
    return out


def children_cpu() -> float:
    """User + system CPU seconds of this process's finished children (the tools it ran)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
