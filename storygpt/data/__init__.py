"""Token files and corpora for storygpt."""
from .binfile import TokenWriter, dtype_for_vocab, read_header, read_tokens, write_tokens

__all__ = ["TokenWriter", "dtype_for_vocab", "read_header", "read_tokens", "write_tokens"]
