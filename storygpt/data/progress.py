"""Progress bars for data.py's stages (tqdm, on stderr): bytes done, rate and time left.

:func:`bar` makes one bar; :class:`StageBars` turns the BPE trainer's
``progress(stage, done, total)`` callback into one bar per stage.
"""

from __future__ import annotations

from tqdm import tqdm

#: Bar labels of the trainer's stages, and their units.
STAGES = {
    "count": ("count chunks", "B"),
    "count text": ("count chunks", "B"),
    "count words": ("count words", "B"),
    "merge": ("learn merges", "merge"),
}


def bar(desc: str, total: int | None, unit: str = "B", enabled: bool = True) -> tqdm:
    """A tqdm bar; ``unit="B"`` counts bytes (shown as kB/MB/GB, 1024-based).

    Args:
        desc: the label (the stage and the file).
        total: the amount of work (None or 0: unknown, no time left shown).
        unit: ``"B"`` for bytes, else a plain unit (``"char"``, ``"merge"``).
        enabled: False gives a bar that prints nothing (``--quiet``).
    """
    scaled = unit == "B"
    return tqdm(
        total=total or None,
        desc=desc,
        unit=unit,
        unit_scale=scaled,
        unit_divisor=1024 if scaled else 1000,
        disable=not enabled,
        dynamic_ncols=True,
    )


class StageBars:
    """A ``progress(stage, done, total)`` callback drawing one bar per stage.

    Args:
        enabled: False draws nothing.
        skip: stages not to draw (e.g. ``"count"`` when the caller draws its own).
        label: appended to each stage's label (the file).
    """

    def __init__(self, enabled: bool = True, skip: tuple[str, ...] = (), label: str = ""):
        self.enabled = enabled
        self.skip = set(skip)
        self.label = label
        self.bars: dict[str, tqdm] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage in self.skip:
            return
        b = self.bars.get(stage)
        if b is None:
            for other in self.bars.values():  # a new stage: the earlier ones are over
                other.close()
            desc, unit = STAGES.get(stage, (stage, "B"))
            b = self.bars[stage] = bar(f"{desc} {self.label}".strip(), total, unit, self.enabled)
        if total and b.total != total:
            b.total = total
        b.update(done - b.n)

    def close(self) -> None:
        """Close every bar."""
        for b in self.bars.values():
            b.close()

    def __enter__(self) -> StageBars:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
