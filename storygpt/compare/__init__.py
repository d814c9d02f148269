"""The tokenizer comparison of ``compare.py``: which tokenizer gives the better model at equal compute.

``settings`` (what a comparison is: SPECs, budget, model shape, run folders), ``run`` (the tools run as
subprocesses: data.py, pretrain.py, bits.py), ``analysis`` and ``stats`` (verdicts, sweeps, bootstrap),
``report`` and ``plots`` (report.md, results.csv, results.json, PNGs), ``heldout`` (block losses for
bits.py --block-chars), ``provenance``, ``toolrun`` and ``probe``; ``executors`` (runs at once: --jobs, Ray,
Slurm) and ``frontier`` (isoFLOP frontiers of --sizes).  See docs/compare.md.
"""
