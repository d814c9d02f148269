"""Tokenizers for storygpt (namespaced so it never shadows Hugging Face ``tokenizers``)."""
