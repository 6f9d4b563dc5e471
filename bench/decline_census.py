"""Which questions the model policy asks to choose between answering and declining
(issue 44, ``kbagent/agent/run/decline.py``): the harness's test doubts the evidence of
the first retrieval. No model runs: a stand-in that declines at once makes each run a
retrieval and the test, so every question of every development set is counted in
minutes. Its lists are the questions the change can touch (every other prompt is
unchanged), for a model run on those alone.

``--logodds GGUF`` also reads that model's judgment at each choice without generating:
its next-token log-probability of ``ANSWER`` minus that of ``NOT_IN_KB``
(``LLM.option_logprobs``), on the prompt as asked and on a reworded one (``WORDINGS``),
with how well it tells the answerable questions from the unanswerable ones (ROC AUC).

    .venv/bin/python bench/decline_census.py --set heldout=bench/heldout/questions.jsonl=\
bench/out/heldout/git-doc=bench/out/devhomes/heldout [--set ...] [--out FILE.json] \
[--logodds GGUF]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# the choice's prompt as asked, and reworded: the reason as a word check that may be wrong
WORDINGS = {
    "as asked": None,
    "doubted check": (r"Before you answer: a check of the knowledge base found that (.*?)\. "
                      r"Do the sources above",
                      r"An automatic word check suggests \1; it is often wrong when the "
                      r"sources say it in other words. Read the sources: do they"),
}


def census(questions_file: Path, kb_dir: Path, home: Path, rag_top_k: int | None = None
           ) -> list[dict]:
    from kbagent.agent.run.decline import ASKED, DECLINE
    from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
    from kbagent.kb.embedder import load_embedder
    from kbagent.kb.ingest import Ingestor
    from kbagent.kb.knowledge_base import KnowledgeBase
    from kbagent.settings import Settings
    from tests.scripted_llm import ScriptedLLM

    settings = Settings.load(home=home)
    Ingestor(settings, kb_dir.name, embedder=load_embedder()).run(kb_dir)
    kb = KnowledgeBase(settings, kb_dir.name)
    rows = []
    for line in questions_file.read_text().splitlines():
        q = json.loads(line)
        llm = ScriptedLLM([lambda _m: DECLINE] * 8)  # declines, or "answers" with the word
        depth = {} if rag_top_k is None else {"rag_top_k": rag_top_k}
        config = AgentConfig(mode="auto", tools="full", answer_policy="model", **depth)
        result = run_to_result(Agent(llm, [kb], config), q["question"])
        asked = [s.thought for s in result.steps if s.thought.startswith(ASKED)]
        prompt = [c["messages"] for c in llm.calls if c["grammar"]][:1]
        first = llm.calls[0]["messages"] if llm.calls else None
        rows.append({"id": q["id"], "kind": q["kind"], "asked": bool(asked),
                     "first": [(m.role, m.content) for m in first] if first else None,
                     "reason": asked[0][len(ASKED):].split(". Answer, or")[0].strip()
                     if asked else None,
                     "prompt": [(m.role, m.content) for m in prompt[0]] if prompt else None})
    return rows


def log_odds(rows: list[dict], gguf: Path) -> None:
    """Each asked row gets ``logodds``: per wording, the model's log-probability of
    ANSWER minus NOT_IN_KB (first tokens) at the choice."""
    from kbagent.agent.llm.base import Message
    from kbagent.agent.llm.llama import LlamaCppLLM
    from kbagent.agent.run.decline import ANSWER, DECLINE

    llm = LlamaCppLLM(gguf, n_ctx=8192)
    for r in rows:
        if not r["prompt"]:
            continue
        r["logodds"] = {}
        for name, sub in WORDINGS.items():
            messages = [Message(role, text if sub is None else re.sub(*sub, text, flags=re.S))
                        for role, text in r["prompt"]]
            lp = llm.option_logprobs(messages, [ANSWER, DECLINE])
            r["logodds"][name] = None if lp is None else round(lp[0] - lp[1], 3)


def judgment_prompt(evidence: str) -> str:
    """The judgment asked with no reason given: the sources and question as the compose
    prompt shows them, then whether they state the answer."""
    from kbagent.agent.run.decline import ANSWER, DECLINE

    return (f"{evidence}\n\nBefore you answer: do the sources above state the answer to "
            f"the question? Reply with one word: {ANSWER} if they state it, or {DECLINE} "
            "if they do not.")


def judge_all(rows: list[dict], gguf: Path, every: int) -> None:
    """Every unanswerable row and every ``every``-th answerable one with a prompt gets
    ``judged``: the model's log-odds of ANSWER over NOT_IN_KB on the judgment prompt
    (:func:`judgment_prompt`: the evidence and question, no reason given)."""
    from kbagent.agent.llm.base import Message
    from kbagent.agent.llm.llama import LlamaCppLLM
    from kbagent.agent.run.decline import ANSWER, DECLINE

    llm = LlamaCppLLM(gguf, n_ctx=8192)
    answerable = 0
    for r in rows:
        if not r["first"] or r["kind"] == "chit-chat":
            continue
        if r["kind"] != "unanswerable":
            answerable += 1
            if (answerable - 1) % every:
                continue
        (_, system), (_, user) = r["first"][0], r["first"][-1]
        evidence = user.split("\n\nBefore you answer:")[0]
        lp = llm.option_logprobs([Message("system", system),
                                  Message("user", judgment_prompt(evidence))],
                                 [ANSWER, DECLINE])
        r["judged"] = None if lp is None else round(lp[0] - lp[1], 3)
        print(f"  {r['id']} {r['kind'][:5]} {r['judged']}", flush=True)


def _auc(a: list[float], u: list[float]) -> float:
    """ROC AUC: how often an answerable question's log-odds ``a`` exceed an unanswerable
    one's ``u`` (ties count half)."""
    return sum((x > y) + 0.5 * (x == y) for x in a for y in u) / len(a) / len(u)


def threshold(rows: list[dict], refused: float = 0.03) -> str:
    """From the ``judged`` rows: the threshold that declines at most ``refused`` of the
    answerable questions (half-way between the last one it declines and the next), how
    many unanswerable ones it declines, and the ROC AUC."""
    a = sorted(r["judged"] for r in rows if r.get("judged") is not None
               and r["kind"] != "unanswerable")
    u = sorted(r["judged"] for r in rows if r.get("judged") is not None
               and r["kind"] == "unanswerable")
    if not a or not u:
        return "no judged rows"
    k = int(refused * len(a))  # answerable declined at most
    cut = round((a[k - 1] + a[k]) / 2, 2) if k else round(a[0] - 0.01, 2)
    auc = _auc(a, u)
    return (f"judged: AUC {auc:.2f} over {len(a)} answerable and {len(u)} unanswerable; "
            f"declining below {cut:+.2f} refuses {sum(x < cut for x in a)}/{len(a)} "
            f"answerable and declines {sum(y < cut for y in u)}/{len(u)} unanswerable; "
            f"the greedy choice (below 0) {sum(x < 0 for x in a)}/{len(a)} and "
            f"{sum(y < 0 for y in u)}/{len(u)}")


def separation(rows: list[dict]) -> str:
    """Per wording: the ROC AUC of the log-odds (answerable above unanswerable), the means,
    and how many of each the greedy choice answers (log-odds above 0)."""
    out = []
    for name in WORDINGS:
        a = [r["logodds"][name] for r in rows if "logodds" in r and r["kind"] != "unanswerable"]
        u = [r["logodds"][name] for r in rows if "logodds" in r and r["kind"] == "unanswerable"]
        if not a or not u:
            continue
        auc = _auc(a, u)
        out.append(f"{name}: AUC {auc:.2f}, mean log-odds answerable {sum(a) / len(a):.2f} "
                   f"unanswerable {sum(u) / len(u):.2f}; greedy answers {sum(x > 0 for x in a)}"
                   f"/{len(a)} answerable, {sum(y > 0 for y in u)}/{len(u)} unanswerable")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", required=True,
                    help="NAME=QUESTIONS=KB_DIR=HOME (HOME: a kept bench_agent --home)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/out/decline_census.json")
    ap.add_argument("--logodds", type=Path, help="a GGUF whose judgment at each choice is read")
    ap.add_argument("--judge-all", type=Path, help="a GGUF whose judgment is read on every "
                    "unanswerable question and every --every-th answerable one")
    ap.add_argument("--every", type=int, default=1, choices=range(1, 100), metavar="N")
    args = ap.parse_args()
    out: dict[str, list[dict]] = {}
    for spec in args.set:
        name, questions, kb_dir, home = spec.split("=")
        rows = out[name] = census(Path(questions), Path(kb_dir), Path(home))
        if args.logodds:
            log_odds(rows, args.logodds)
        if args.judge_all:
            judge_all(rows, args.judge_all, args.every)
            args.out.write_text(json.dumps(out, indent=1))  # kept as it goes
        un = [r for r in rows if r["kind"] == "unanswerable"]
        ans = [r for r in rows if r["kind"] != "unanswerable"]
        print(f"{name:>10}: asked for {sum(r['asked'] for r in un)}/{len(un)} unanswerable, "
              f"{sum(r['asked'] for r in ans)}/{len(ans)} answerable "
              f"({', '.join(r['id'] for r in ans if r['asked'])})", flush=True)
    args.out.write_text(json.dumps(out, indent=1))
    total = [r for rows in out.values() for r in rows]
    un = [r for r in total if r["kind"] == "unanswerable"]
    ans = [r for r in total if r["kind"] != "unanswerable"]
    print(f"all: asked for {sum(r['asked'] for r in un)}/{len(un)} unanswerable, "
          f"{sum(r['asked'] for r in ans)}/{len(ans)} answerable")
    if args.logodds:
        print(separation(total))
    if args.judge_all:
        print(threshold(total))


if __name__ == "__main__":
    main()
