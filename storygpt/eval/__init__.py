"""Evaluation of a model, or a tokenizer, on text: what bits.py, compare.py and the tasks measure.

``bits`` (bits per character and per byte, the windows), ``heldout`` (per-block losses for the bootstrap and a
tokenizer's intrinsic measures), ``stats`` (paired bootstrap, ranks, Rényi efficiency), ``measure`` (one pass
over named texts), ``sets`` (intervals per evaluation set), ``perturb`` (noisy copies), ``charloss`` and
``attribution`` (per-character losses, where a difference comes from), ``vocab_health``, ``sections`` (bits.py's
optional sections) and ``where`` (the same sections in a comparison's report).  Nothing here imports
:mod:`storygpt.compare`.  See docs/bits.md and docs/attribution.md.
"""
