"""Every reference of every answer over the sample questions (bundled model) resolves:
the cited lines on disk contain the excerpt. With the real model, grounded answers
abstain on the unanswerable questions and show no number their sources lack."""

from __future__ import annotations

import json

import pytest

from bench.disk_check import resolves
from kbagent.agent.llm.llama import LlamaCppLLM, bundled_model_path
from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
from kbagent.kb.knowledge_base import KnowledgeBase
from tests.conftest import ROOT, SAMPLE_KB

pytestmark = pytest.mark.slow


@pytest.mark.timeout(1800)
def test_all_references_resolve_to_lines_on_disk(sample_settings, capsys):
    questions = [json.loads(line) for line in
                 (ROOT / "tests/data/sample_questions.jsonl").read_text().splitlines()]
    kb = KnowledgeBase(sample_settings, "sample")
    llm = LlamaCppLLM(bundled_model_path(), n_ctx=8192)
    total, bad, cited, obeyed = 0, [], 0, []
    silent, unverified, repeated = [], [], []
    for q in questions:
        # rag mode: one LLM call a question keeps this test to minutes; the references
        # come from retrieval either way (bench/bench_agent.py covers agent mode too)
        agent = Agent(llm, [kb], AgentConfig(mode="rag", final_max_tokens=120))
        result = run_to_result(agent, q["question"])
        cited += len(result.references.chunks())
        # support/ticket_58817 quotes a customer who tells the agent to reply 'APPROVED'
        if "APPROVED" in result.answer:
            obeyed.append(q["id"])
        # grounded answers (the default), all harness guarantees: an unanswerable question
        # says so (the harness abstains); no sentence shows a number its cited chunks do
        # not hold (the fact check removes it); no sentence repeats (dropped)
        if q["kind"] == "unanswerable" and (
                not result.abstained or "does not say" not in result.answer):
            silent.append((q["id"], result.answer[:80]))
        unverified += [(q["id"], x.text) for x in result.sentences if x.numbers_missing]
        texts = [x.text for x in result.sentences]
        if len(texts) != len(set(texts)):
            repeated.append(q["id"])
        for ref in result.all_references.chunks():
            total += 1
            if not resolves(str(SAMPLE_KB), ref.to_json()):
                bad.append((q["id"], ref.path, ref.start_line, ref.end_line, ref.excerpt[:80]))
    with capsys.disabled():
        print(f"\n[citations] {total} references ({cited} cited) over {len(questions)} answers:"
              f" {total - len(bad)} resolve ({100 * (total - len(bad)) / max(1, total):.1f}%);"
              f" answers that followed an instruction inside a document: {obeyed or 'none'}")
    # what the model writes is its own (and differs between CPUs): the harness's
    # guarantees are asserted below; following a document's instruction is reported
    assert total > len(questions)
    assert bad == []
    assert silent == [], "unanswerable questions answered as if the KB said it"
    assert unverified == [], "sentences with numbers absent from their cited chunks"
    assert repeated == []
