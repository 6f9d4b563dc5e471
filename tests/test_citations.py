"""Citation ledger, answer post-processing and the support check."""

from __future__ import annotations

import json

import pytest

from kbagent.agent.answer.citations import DEFAULT_CAP as CAP
from kbagent.agent.answer.citations import CitationLedger, clean_text
from kbagent.agent.answer.processor import AnswerProcessor
from kbagent.agent.answer.sentences import normalize_markers, sentence_spans
from kbagent.agent.run.loop import Agent, AgentConfig, run_to_result
from kbagent.agent.tools.base import ToolContext
from kbagent.agent.tools.toolset import registry, run_tool
from kbagent.kb.ingest import Ingestor
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.kb.search import HybridSearcher
from tests.scripted_llm import ScriptedLLM

DOCS = {
    "ops/rotate.md": "# Certificate rotation\n\n" + "".join(
        f"Step {i}: renew the certificate on node {i} before it expires.\n" for i in range(1, 41)),
    "web/status.html": (
        "<html><head><title>Status</title><script>bad()</script></head><body>\n"
        "<h1>Platform status</h1>\n"
        "<p>The gateway served <b>99.98%</b> of requests\nsuccessfully in September.</p>\n"
        "<p>Latency p95 was 180&nbsp;ms &amp; stable.</p>\n</body></html>\n"),
    "jp/tokyo.md": "# 東京オフィス\n\n東京オフィスは2025年4月に開設されました。従業員は9名です。\n",
    "cn/beijing.md": "# 北京\n\n北京办公室于2024年开设。团队有五名工程师。\n",
}


@pytest.fixture
def ctx(settings, make_folder, embedder):
    Ingestor(settings, "c", embedder=embedder).run(make_folder(DOCS))
    kb = KnowledgeBase(settings, "c")
    context = ToolContext({"c": kb}, HybridSearcher([kb]), CitationLedger())
    context.ledger.resolver = context.resolve_lines
    return context


def call(ctx, tool, **args):
    from kbagent.agent.tools.schema import validate

    t = registry("full")[tool]
    out, _ = run_tool(t, ctx, validate(tool, t.parameters, args))
    return out


def test_kb_cat_output_is_one_structured_citation_with_its_span(ctx):
    out = call(ctx, "kb_cat", path="ops/rotate.md", start_line=5, end_line=9)
    assert out.citations == [1]
    c = ctx.ledger.get(1)
    assert (c.path, c.start_line, c.end_line, c.tool, c.score) == ("ops/rotate.md", 5, 9,
                                                                   "kb_cat", None)
    assert c.text.startswith("Step 3: renew") and c.text.endswith("node 7 before it expires.")


def test_failed_or_empty_outputs_produce_no_citation(ctx):
    assert call(ctx, "kb_cat", path="missing.md").citations == []
    assert call(ctx, "kb_grep", pattern="zzzz-not-there").citations == []
    assert call(ctx, "kb_search", query="the").citations == [] or len(ctx.ledger) > 0
    assert call(ctx, "kb_ls").citations == []
    assert call(ctx, "calculate", expression="1/0").citations == []
    assert len(ctx.ledger) == 0 or all(c.tool == "kb_search" for c in ctx.ledger)


def test_grep_yields_one_citation_per_file_with_the_matched_lines(ctx):
    out = call(ctx, "kb_grep", pattern="node 1[0-2] ", regex=True)
    assert len(out.citations) == 1
    c = ctx.ledger.get(out.citations[0])
    assert (c.start_line, c.end_line) == (12, 14)
    assert c.text.count("Step") == 3 and c.score is None
    out = call(ctx, "kb_grep", pattern="2025|2024", regex=True)
    assert len(out.citations) == 2 and {ctx.ledger.get(n).path for n in out.citations} == {
        "jp/tokyo.md", "cn/beijing.md"}


@pytest.mark.parametrize("score", [float("nan"), None, "n/a", float("inf")])
def test_nan_or_none_scores_become_null(score):
    ledger = CitationLedger()
    ledger.add(kb="k", path="a.md", start_line=1, end_line=2, text="text", score=score)
    ref = ledger.references(None).to_json()[0]["chunks"][0]
    assert ref["score"] is None
    assert json.loads(json.dumps(ref))["score"] is None


def test_duplicates_across_tools_share_one_number(ctx):
    search = call(ctx, "kb_search", query="gateway served requests successfully")
    n = next(x for x in search.citations if ctx.ledger.get(x).path == "web/status.html")
    cat = call(ctx, "kb_cat", path="web/status.html")
    grep = call(ctx, "kb_grep", pattern="Latency p95")
    assert cat.citations == [n] and grep.citations == [n]
    assert ctx.ledger.get(n).score is not None  # the retrieval score is kept


def test_cap_truncates_deterministically():
    def fill() -> tuple[list[int | None], int]:
        ledger = CitationLedger(cap=5)
        got = [ledger.add(kb="k", path=f"f{i}.md", start_line=1, end_line=1, text=f"t{i}")
               for i in range(8)]
        return got, ledger.dropped
    first, dropped = fill()
    assert first == [1, 2, 3, 4, 5, None, None, None] and dropped == 3
    assert fill() == (first, dropped)
    assert CAP >= 50


def test_markup_is_cleaned_before_storing():
    assert clean_text("## Plans &amp; **prices**\n- [Pro](http://x) tier | $49\n---\n") == (
        "Plans & prices Pro tier $49")


def test_model_written_unknown_number_is_dropped_and_variants_normalised():
    assert normalize_markers("Margin fell [7]. Costs rose [1,2] 【3】 [source 2] [^1].",
                             {1, 2, 3}) == "Margin fell. Costs rose [1][2] [3] [2] [1]."
    ledger = CitationLedger()
    ledger.add(kb="k", path="a.md", start_line=1, end_line=3, text="Revenue was $11.2M in Q3.")
    p = AnswerProcessor(ledger)
    p.feed("Revenue was $11.2M in Q3 [7]. ")
    p.finish()
    assert p.answer == "Revenue was $11.2M in Q3 [1]."  # [7] dropped, [1] placed by matching
    assert p.sentences[0].auto


def _processor(ctx, queries):
    for q in queries:
        call(ctx, "kb_search", query=q)
    return AnswerProcessor(ctx.ledger)


def test_auto_annotation_for_copied_and_paraphrased_sentences_incl_html(ctx):
    p = _processor(ctx, ["gateway requests September", "renew certificate node expires"])
    n_html = next(c.n for c in ctx.ledger if c.path == "web/status.html")
    for piece in ["The gateway served 99.98% of requests successfully in Sep", "tember. ",
                  "Every node must have its certificate renewed before it expires, one step ",
                  "at a time. ", "I hope this helps!"]:
        p.feed(piece)
    p.finish()
    copied, paraphrased, chatter = p.sentences
    assert copied.text == (f"The gateway served 99.98% of requests successfully in September "
                           f"[{n_html}]. ")
    assert copied.auto and copied.supported
    assert paraphrased.cited and paraphrased.text.rstrip().endswith("].")
    assert ctx.ledger.get(paraphrased.cited[0]).path == "ops/rotate.md"
    assert chatter.cited == [] and chatter.supported is None
    for s in p.sentences:  # never mid-word: a marker follows a space and precedes punctuation
        if s.cited:
            body = s.text.rstrip()
            assert body[-1] in ".!?" and body[body.rindex("[") - 1] == " "


def test_chinese_and_japanese_sentence_endings(ctx):
    spans, rest = sentence_spans("東京オフィスは2025年4月に開設されました。従業員は9名です！次",
                                 final=False)
    assert spans == ["東京オフィスは2025年4月に開設されました。", "従業員は9名です！"]
    assert rest == "次"
    p = _processor(ctx, ["東京オフィス 開設", "北京办公室 开设"])
    p.feed("東京オフィスは2025年4月に開設されました。北京办公室于2024年开设。")
    p.finish()
    jp, cn = p.sentences
    assert jp.text.endswith("開設されました[" + str(jp.cited[0]) + "]。")
    assert ctx.ledger.get(jp.cited[0]).path == "jp/tokyo.md"
    assert cn.text.endswith("开设[" + str(cn.cited[0]) + "]。")
    assert ctx.ledger.get(cn.cited[0]).path == "cn/beijing.md"


def test_support_check_flags_sentences_their_sources_do_not_support(ctx):
    p = _processor(ctx, ["latency p95 stable"])
    n = next(c.n for c in ctx.ledger if c.path == "web/status.html")
    p.feed(f"Latency p95 was 180 ms and stable [{n}]. The CEO resigned in a scandal over "
           f"bonuses [{n}].")
    p.finish()
    good, bad = p.sentences
    assert good.supported is True and good.support > 0.8
    assert bad.supported is False and bad.support < 0.5
    assert p.support_by_number() == {n: True}


def test_abbreviations_and_decimals_do_not_split_sentences():
    spans, _ = sentence_spans("Costs rose 5.2 pts, e.g. GPUs. Dr. Reyes agreed. Done")
    assert spans == ["Costs rose 5.2 pts, e.g. GPUs. ", "Dr. Reyes agreed. ", "Done"]


def test_references_payload_lists_only_cited_by_default(ctx):
    llm = ScriptedLLM(["Thought: s\nAction: kb_search\nAction Input: {\"query\": \"certificate "
                       "renew node\"}",
                       "Thought: f\nFinal Answer: Renew the certificate on node 1 before it "
                       "expires [1]."])
    agent = Agent(llm, list(ctx.kbs.values()), AgentConfig(mode="agent"))
    result = run_to_result(agent, "How are certificates renewed?")
    refs = result.to_dict()["references"]
    assert [c["n"] for d in refs for c in d["chunks"]] == [1]
    chunk = refs[0]["chunks"][0]
    assert set(chunk) >= {"n", "path", "start_line", "end_line", "kb", "score", "excerpt",
                          "supported"}
    assert chunk["supported"] is True and chunk["kb"] == "c"
    everything = result.to_dict(all_references=True)["references"]
    assert sum(len(d["chunks"]) for d in everything) > 1


def test_a_sentence_cut_by_the_token_limit_is_dropped(ctx):
    proc = AnswerProcessor(CitationLedger())
    done = proc.feed("The TTL is one hour [1]. It was chosen in")
    assert proc.drop_unfinished() == "It was chosen in"
    assert [s.text.strip() for s in done + proc.finish()] == ["The TTL is one hour."]
    assert proc.answer == "The TTL is one hour."
    # a finished last sentence stays, and so does a lone fragment (better than nothing)
    for text in ("One. Two [1].", "Only a fragment", "第一。第二。"):
        proc = AnswerProcessor(CitationLedger())
        proc.feed(text)
        assert proc.drop_unfinished() == ""


def test_a_looping_answer_is_cut_even_when_its_citation_numbers_change():
    proc = AnswerProcessor(CitationLedger())
    proc.feed("The answer is: 68.5%\n\n" + "".join(
        f"The source is:\n[{n}]\n\n" for n in range(1, 9)))
    assert proc.trim_repetition()
    assert proc.drop_unfinished()  # as the loop does after cutting a repetition
    proc.finish()
    assert proc.answer.startswith("The answer is: 68.5%")
    assert proc.answer.count("The source is:") <= 2  # of 8 copies
    # a table whose rows differ in their numbers is not a loop
    proc = AnswerProcessor(CitationLedger())
    proc.feed("".join(f"Q{q} 2026 revenue: ${q * 3}.{q}0M, margin {60 + q}.{q}%\n"
                      for q in range(1, 5)))
    assert not proc.trim_repetition()


def test_a_repeat_is_found_whether_or_not_a_marker_was_placed():
    # the same sentence once with a citation placed before its full stop and once
    # without: a looping model's answer kept 19 copies when a stray space told them apart
    ledger = CitationLedger()
    ledger.add(kb="k", path="a.md", start_line=1, end_line=1, text="Octopus merges heads.")
    proc = AnswerProcessor(ledger)
    proc.auto_cite = False
    proc.feed("Git merges branches [1]. Git merges branches.\n\nGit merges  branches [1] . ")
    proc.finish()
    assert proc.answer == "Git merges branches [1]."
    assert proc.drop_repeat()  # the caller stops a model that repeats itself
