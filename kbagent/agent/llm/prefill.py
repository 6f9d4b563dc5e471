"""Prompt evaluation that a cancel can interrupt, for the llama.cpp backend.

llama.cpp evaluates a prompt in batches of 512 tokens and checks nothing while it
does. Measured with the bundled model in the TUI (issue 45), a grounded answer's
prompt (thousands of tokens) took 8-17 s to evaluate on a busy laptop CPU, and Esc
waited for all of it. :func:`prefill` evaluates it in slices and asks between them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kbagent.agent.cancel import CancelToken

PREFILL_SLICE_S = 0.25  # about the longest a cancel waits while a prompt is evaluated
PREFILL_TOKENS = (32, 64, 256)  # the fewest, first and most tokens a slice evaluates


def prefill(llm: Any, tokens: list[int], cached: int, stop: Callable[[], bool]) -> bool:
    """Evaluate ``tokens`` from ``cached`` on into ``llm``'s KV cache (a
    ``llama_cpp.Llama``) in slices, asking ``stop`` before each; False when it said stop
    (what was evaluated stays cached: the next prompt sharing it starts from there).
    A slice is sized from the last one's time to take about PREFILL_SLICE_S (a slice
    costs more the further into the context it lies), so a cancel is seen within about
    that on a fast machine or a slow one."""
    if cached > 0 and not llm._ctx.kv_cache_seq_rm(-1, cached, -1):
        llm.reset()  # a recurrent model's cache cannot be cut: it starts over
        cached = 0
    llm.n_tokens = cached
    size, (least, _, most) = PREFILL_TOKENS[1], PREFILL_TOKENS
    i = cached
    while i < len(tokens):
        if stop():
            return False
        started = time.perf_counter()
        llm.eval(tokens[i : i + size])
        i += size
        took = max(time.perf_counter() - started, 1e-3)
        size = max(least, min(most, 2 * size, int(size * PREFILL_SLICE_S / took)))
    return not stop()


def stopper(cancel: CancelToken | None, deadline: float | None) -> Callable[[], bool]:
    """Has the run been cancelled, or its deadline passed?"""
    def stop() -> bool:
        return ((cancel is not None and cancel.cancelled)
                or (deadline is not None and time.perf_counter() > deadline))
    return stop
