"""Deprecated: bits per character moved to :mod:`storygpt.eval.bits`; this name works for one release."""

import warnings

from storygpt.eval.bits import *  # noqa: F401,F403
from storygpt.eval.bits import read_documents  # noqa: F401

warnings.warn("storygpt.evaluate is deprecated: import storygpt.eval.bits instead", DeprecationWarning, stacklevel=2)
