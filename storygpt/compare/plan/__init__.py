"""What compare.py trains before it trains it: ``--seeds auto[:MAX]`` (:mod:`storygpt.compare.plan.seeds_auto`, seed rounds
added until the tokenizers' order is decided) and ``--dry-run`` (:mod:`storygpt.compare.plan.dryrun`, the runs, their
FLOPs and time, nothing written).  The run order itself stays in storygpt/compare/run.py."""
