"""storygpt.runtime: device names checked before torch sees them (one-line errors that name the flag)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from storygpt.runtime import resolve_device  # noqa: E402


def test_resolve_device():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") in ("cpu", "cuda", "mps")
    with pytest.raises(ValueError, match=r"--device 'banana': not a device name"):
        resolve_device("banana")
    with pytest.raises(ValueError, match=r"--device 'meta': unsupported device type"):
        resolve_device("meta")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"--device 'cuda': CUDA is not available"):
            resolve_device("cuda")
