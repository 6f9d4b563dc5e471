"""usearch imported before llama.cpp loads a model must not break the model load."""

from __future__ import annotations

import subprocess
import sys


def test_llama_loads_a_model_after_usearch_was_imported():
    code = (
        "import kbagent, usearch.index\n"
        "from kbagent.agent.llm.llama import LlamaCppLLM, bundled_model_path\n"
        "llm = LlamaCppLLM(bundled_model_path(), n_ctx=512)\n"
        "print(llm.count_tokens('hello world'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.strip()) > 0
