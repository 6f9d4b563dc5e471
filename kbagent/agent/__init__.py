"""The agent layer: ReAct loop, tools, prompts, citations and LLM backends.

Knows nothing about Textual or Typer; nothing here prints. The loop is a
generator of typed events (:mod:`kbagent.agent.events`) that the CLI, the
TUI, batch mode and the tests all consume.
"""
