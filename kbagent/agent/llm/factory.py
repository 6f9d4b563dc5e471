"""Picks the LLM backend for the settings (kept out of ``base`` so that the
interface module does not import its own implementations)."""

from __future__ import annotations

from typing import Any

from kbagent.agent.llm.base import LLM


def load_llm(settings: Any) -> LLM:
    """The backend the settings ask for: a server URL wins, else a GGUF file."""
    if settings.llm_url:
        from kbagent.agent.llm.openai_compat import OpenAICompatLLM

        return OpenAICompatLLM.from_settings(settings)
    from kbagent.agent.llm.llama import LlamaCppLLM

    return LlamaCppLLM.from_settings(settings)
