"""Token files and corpora for storygpt."""

from .binfile import TokenWriter, dtype_for_vocab, read_header, read_tokens, verify_checksum, write_tokens
from .corpora import (
    EOT,
    NetworkError,
    format_documents,
    parse_documents,
    read_documents,
    read_shakespeare,
    read_tinystories,
    split_documents,
    write_documents,
)

__all__ = [
    "EOT",
    "NetworkError",
    "TokenWriter",
    "dtype_for_vocab",
    "format_documents",
    "parse_documents",
    "read_documents",
    "read_header",
    "read_shakespeare",
    "read_tinystories",
    "read_tokens",
    "split_documents",
    "verify_checksum",
    "write_documents",
    "write_tokens",
]
