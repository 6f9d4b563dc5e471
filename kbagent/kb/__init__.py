"""The knowledge-base layer: documents, chunks, indexes, hybrid search, file views.

Knows nothing about agents or user interfaces (a test enforces that importing
it pulls in no UI library). Heavy libraries (torch, sentence-transformers,
tantivy, usearch) are imported lazily by the modules that need them.
"""
