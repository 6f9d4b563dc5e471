"""The tools the agent calls, as the model sees them and as they run.

``base`` (tool outputs, failures, the context every tool gets), ``toolset`` (the
knowledge tools and the registry), ``code`` (symbol-index tools), ``calculator``
(safe arithmetic) and ``schema`` (argument validation and its GBNF).
"""
