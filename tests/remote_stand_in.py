"""A compare.py run job whose tools are stand-ins, for the tests of --executor ray and --executor slurm
(tests/compare/test_cluster_engines.py).

The job (:class:`StandInJob`) is compare.py's own :class:`storygpt.compare.run.RunJob`; in the Ray worker or
submitit job process that calls it, it first replaces ``toolrun.run_tool`` with a stand-in that leaves the fake
files of the tools (tests/fake_runs.py) and records each command, with the process id, as a JSON line of
``PLAN/calls.jsonl``.  ``PLAN/plan.json`` says what goes wrong: ``fail`` {spec: exit status of its pretrain.py},
``crash_once`` [spec: its first pretrain.py leaves a 3-step checkpoint and the process dies with os._exit(1)].
Workers import this module by name: tests/ is on their PYTHONPATH.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import fake_runs

from storygpt.compare import toolrun
from storygpt.compare.run import RunJob


def stand_in_tool(plan: Path):
    """toolrun.run_tool's stand-in of the plan folder ``plan`` (see the module's docstring)."""
    steps = json.loads((plan / "plan.json").read_text()) if (plan / "plan.json").exists() else {}

    def run_tool(cmd, log, verbose, follow=None, bar=None, cpu=None):
        tool, args = Path(cmd[1]).name, [str(a) for a in cmd[2:]]
        with open(plan / "calls.jsonl", "a") as f:
            f.write(json.dumps({"pid": os.getpid(), "tool": tool, "args": args}) + "\n")
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as f:
            f.write(f"$ {tool}\n")
        spec = args[args.index("--tokenizer") + 1] if "--tokenizer" in args else None
        if tool == "pretrain.py" and spec in steps.get("fail", {}):
            rc = steps["fail"][spec]
            with open(log, "a") as f:
                f.write(f"{tool}: error: stand-in exit {rc}\n")
            return rc
        crashed = plan / f"crashed-{spec}"
        if tool == "pretrain.py" and spec in steps.get("crash_once", []) and not crashed.exists():
            crashed.touch()
            folder = Path(args[args.index("--out-dir") + 1]) / Path(args[args.index("--data") + 1]).name
            fake_runs.write_fake_run(folder / args[args.index("--run-name") + 1], spec, stop_reason=None)
            os._exit(1)  # the worker (Ray) or the job's process (submitit) is lost with its checkpoint written
        fake_runs.play(tool, args)
        return 0

    return run_tool


@dataclass
class StandInJob(RunJob):
    plan: str = ""

    def __call__(self, slot):
        toolrun.run_tool = stand_in_tool(Path(self.plan))  # this process is the worker's: no test to undo it for
        return super().__call__(slot)


def calls(plan: Path) -> list[dict]:
    """The commands the stand-ins ran so far (every worker's), in order."""
    path = plan / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
