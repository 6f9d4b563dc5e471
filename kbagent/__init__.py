"""kbagent: a terminal-first, fully local knowledge-base explorer.

Layers (dependencies point down only): ``kbagent.cli`` (surfaces) ->
``kbagent.agent`` (ReAct loop, tools, citations, LLM backends) ->
``kbagent.kb`` (documents, chunks, indexes, hybrid search, file views).
"""

__version__ = "0.1.0"
