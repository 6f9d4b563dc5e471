"""``python -m kbagent.agent.llm.llama_server ARGS``: llama-cpp-python's OpenAI-compatible
server (``python -m llama_cpp.server ARGS``, the same arguments) with its models loaded
the way kbagent loads them on this CPU.

On a CPU with AMX, llama-cpp-python 0.3.36 crashes in ``decode`` (SIGSEGV) at the first
prompt evaluated in a batch when its extra CPU buffer types are on, which is the
default of ``python -m llama_cpp.server``: the server starts, then dies on the first
request. This entry point turns them off there (see
:func:`kbagent.agent.llm.llama.model_params_for_this_cpu`;
``KBAGENT_LLAMA_EXTRA_BUFTS=0/1`` decides when set) and is otherwise the same server.
"""

from __future__ import annotations

import runpy

from kbagent.agent.llm.llama import model_params_for_this_cpu


def main() -> None:
    # the server loads its models in this process, after this point: the swapped
    # parameters hold for as long as it runs
    with model_params_for_this_cpu():
        runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
