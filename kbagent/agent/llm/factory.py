"""Picks the LLM backend for the settings (kept out of ``base`` so that the
interface module does not import its own implementations)."""

from __future__ import annotations

from kbagent.agent.llm.base import LLM
from kbagent.settings import Settings


def load_llm(settings: Settings) -> LLM:
    """The backend the settings ask for: a server URL wins, else a GGUF file."""
    if settings.llm_url:
        from kbagent.agent.llm.openai_compat import OpenAICompatLLM

        return OpenAICompatLLM.from_settings(settings)
    from kbagent.agent.llm.llama import LlamaCppLLM

    return LlamaCppLLM.from_settings(settings)
