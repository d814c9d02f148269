"""``compare.py --halving``: successive halving across the budgets of a sweep (issue 45).

:mod:`storygpt.halving.rule` decides which tokenizers are clearly worse at a budget; :mod:`storygpt.halving.rounds`
trains the sweep one budget at a time, only the tokenizers still in, each continuing its own wsd trunk.
"""
