"""Pretraining a GPT (pretrain.py is the command line over it).

    loop.py       state, schedule, step, evaluation, checkpoints and the loop (start here)
    start.py      a session from the command line's values: data, model, optimizer, resume, then the loop
    inputs.py     the corpus folder's token files, training batches, the held-out slice
    runfolder.py  the run folder: lock, metrics.jsonl, summary.json, leftovers, loss.png
    resume.py     resume reconciliation: the checkpoint, flags and data a resumed run goes on with
    tracking.py   --log: TensorBoard and wandb beside metrics.jsonl
    branch.py     --branch: a wsd run leaves each smaller budget's run paused at its decay start

The checkpoint format is storygpt.checkpoint's; device, dtype, threads, processes and signals are
storygpt.runtime's.  See docs/training.md.
"""
