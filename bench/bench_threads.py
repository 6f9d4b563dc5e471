"""llama.cpp generation threads: the speed of one model answering the same prompt with
``n_threads`` 1, 2, ... (the tokens generated one at a time) while ``n_threads_batch``
(the prompt) stays llama-cpp-python's default, all logical CPUs. Runs alternate, so a
change in the machine's load falls on every setting alike; prints each setting's prompt
and generation time (median over the repeats), its tokens per second, and its ratio to
the first setting.

llama-cpp-python's default for ``n_threads`` is ``cpu_count() // 2`` (physical cores on
a machine with two hardware threads per core): one thread on a 2-core machine without
them, half of it idle while the model writes.

    .venv/bin/python bench/bench_threads.py --model ~/.cache/kbagent/eval-models/\\
        qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --threads 1,2 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kbagent._native  # noqa: E402,F401  (the system libstdc++ first, as kbagent loads it)


def prompt_text(words: int) -> str:
    """A model-policy-like prompt: numbered sources from the README, then a question."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").split()
    sources = []
    for n in range(6):
        chunk = " ".join(text[n * words // 6:(n + 1) * words // 6])
        sources.append(f"[{n + 1}] README.md, lines {n * 20 + 1}-{n * 20 + 20}:\n{chunk}")
    return ("Sources:\n\n" + "\n\n".join(sources)
            + "\n\nQuestion: What does kbagent do, and how is it installed? Answer in "
            "five sentences, citing the sources like [1].")


def one(llm, prompt: str, max_tokens: int) -> tuple[float, float, int]:
    """(seconds to the first token, seconds for the rest, tokens generated)."""
    llm.reset()
    t0 = time.perf_counter()
    first = None
    n = 0
    for _ in llm.create_chat_completion([{"role": "user", "content": prompt}],
                                        max_tokens=max_tokens, temperature=0.0, stream=True):
        n += 1
        if first is None:
            first = time.perf_counter()
    end = time.perf_counter()
    return (first or end) - t0, end - (first or end), n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="GGUF file")
    ap.add_argument("--threads", default="1,2", help="n_threads settings to compare")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--words", type=int, default=900, help="words of source text shown")
    ap.add_argument("--max-tokens", type=int, default=96)
    args = ap.parse_args()
    import llama_cpp

    settings = [int(x) for x in args.threads.split(",")]
    models = {t: llama_cpp.Llama(args.model, n_ctx=4096, n_threads=t, seed=42, verbose=False)
              for t in settings}
    prompt = prompt_text(args.words)
    for llm in models.values():  # warm: pages in, first-call costs paid
        one(llm, prompt, 8)
    runs: dict[int, list[tuple[float, float, int]]] = {t: [] for t in settings}
    for _ in range(args.repeats):
        for t in settings:
            runs[t].append(one(models[t], prompt, args.max_tokens))
    first = models[settings[0]]
    print(f"model {Path(args.model).name}; prompt {len(first.tokenize(prompt.encode()))} "
          f"tokens; n_threads_batch {first.context_params.n_threads_batch}")
    print("| n_threads | prompt s | generation s | tokens | tokens/s | generation ratio |")
    print("|---|---|---|---|---|---|")
    base = None
    for t in settings:
        p = statistics.median(r[0] for r in runs[t])
        g = statistics.median(r[1] for r in runs[t])
        n = statistics.median(r[2] for r in runs[t])
        base = base or g
        print(f"| {t} | {p:.2f} | {g:.2f} | {n:.0f} | {(n - 1) / g:.1f} | {g / base:.2f}x |")


if __name__ == "__main__":
    main()
