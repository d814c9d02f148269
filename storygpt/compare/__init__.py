"""The tokenizer comparison of ``compare.py``: which tokenizer gives the better model at equal compute.

``settings`` (what a comparison is: its options, SPECs, budget, model shape, run folders), ``preflight`` (the
checks before any training, the pretrain.py flags, the thread probe), ``run`` (the tools run as subprocesses:
data.py, pretrain.py, bits.py), ``analysis`` (verdicts, sweeps, the power-law fit), ``report``,
``report_tables`` and ``plots`` (report.md, results.csv, results.json, PNGs), ``provenance`` and ``toolrun``;
``executors`` (runs at once: --jobs, Ray, Slurm) and ``frontier`` (isoFLOP frontiers of --sizes).
What a run is measured with (bits per character, held-out blocks, sets, perturbations, attribution) is
:mod:`storygpt.eval`.  See docs/compare.md.
"""
