"""KBs held in PostgreSQL + pgvector (``kbagent ingest DIR --store postgresql://...``).

:mod:`.schema` the tables, :mod:`.kb` the read side (one SQL statement per
search: BM25, vectors, access filter and RRF fusion), :mod:`.ingest` the
writer (one transaction per ingest, an advisory lock per KB).
"""
