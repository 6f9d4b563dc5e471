"""LLM backends behind one small interface (:class:`~kbagent.agent.llm.base.LLM`):
llama.cpp in-process (default) or any OpenAI-compatible server. Tests bring their own
scripted double of this interface; the package ships none."""

from kbagent.agent.llm.base import LLM, Completion, ContextFull, Message, complete
from kbagent.agent.llm.factory import load_llm

__all__ = ["LLM", "Completion", "ContextFull", "Message", "complete", "load_llm"]
