"""Fixtures shared by the tests.

``one_torch_thread``: tiny models run fastest on one torch thread, and far faster than on two when the
machine is busy; a test module that trains or runs models asks for it with
``pytestmark = pytest.mark.usefixtures("one_torch_thread")`` (torch's thread count is restored after
the module).  The shared paths and skip marks of the tokenizer tests are in ``tests/_shared.py``.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for the module; the previous count restored afterwards."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
