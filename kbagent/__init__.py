"""kbagent: a terminal-first, fully local knowledge-base explorer.

Layers (dependencies point down only): ``kbagent.cli`` (surfaces) ->
``kbagent.agent`` (ReAct loop, tools, citations, LLM backends) ->
``kbagent.kb`` (documents, chunks, indexes, hybrid search, file views).
"""

from kbagent import _native  # noqa: F401  (must run before usearch is imported)

__version__ = "0.1.0"
