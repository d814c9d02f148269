"""The CPU thread count for training, timed once per compare.py call (not once per run, never in a budget).

:func:`probe_threads` builds the comparison's model shape with random weights and times one forward and
backward pass of one batch with each thread count (after a warm-up pass), as pretrain.py's own start-up
probe does per run; compare.py then passes the winner to every pretrain.py and bits.py run as ``--threads``.
"""

from __future__ import annotations


def probe_threads(
    shape: dict, vocab_size: int, batch: int, candidates: list[int], rope: bool = True
) -> tuple[int, dict]:
    """``(fastest thread count, {threads: seconds per forward+backward})`` on the CPU.

    Args:
        shape: n_layer, n_head, n_embd, block_size of the model.
        vocab_size: the vocabulary of the output layer (the largest of the comparison).
        batch: windows per step.
        candidates: thread counts to time (e.g. ``[1, 2]``).
    """
    import torch

    from storygpt.model import GPT, GPTConfig
    from storygpt.runtime import fastest_threads

    before = torch.get_num_threads()
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size, **shape, position="rope" if rope else "learned"))
    x = torch.randint(0, vocab_size, (batch, shape["block_size"]))

    def step() -> None:
        _, loss = model(x, x)
        loss.backward()

    try:
        return fastest_threads(step, candidates)
    finally:
        torch.set_num_threads(before)
