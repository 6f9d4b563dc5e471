"""Sentence-level evidence ranking and abstention on the question's focus (issue 22).

Constructed documents in a real KB (the bundled embedder, the real searcher and
grounding harness; the scripted model is never what decides): in each, neighbouring
sentences share the question's words but not its fact, and the answer must lead with
the unit that states the fact. A grounded answer quotes the best-ranked unit
first (after the short answer taken from it), so that quote is what these tests read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kbagent.agent.answer.citations import Citation, clean_text
from kbagent.agent.answer.evidence import score_units, units_of
from kbagent.agent.events import Final
from kbagent.agent.run.loop import Agent, AgentConfig
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.settings import Settings
from tests.scripted_llm import ScriptedLLM

DOCS = {
    "ops/cache_guide.md": """# Response cache

The response cache stores completed replies for identical requests. Cache entries are
evicted when the cache tier runs out of memory, and cache entry eviction follows least
recently used order. Operators can list cache entries in the dashboard. Each cache entry
expires 45 minutes after it was written.
""",
    "ops/uploads.md": """# Uploads

A failed upload is retried when the server times out. The maximum number of upload retries
is set per workspace by an administrator. Uploads larger than the chunk size are split.

| Setting | Default | Maximum |
|---------|---------|---------|
| upload_timeout | 30 seconds | 600 seconds |
| upload_retries | 3 | 10 |
| upload_chunk_size | 8 MB | 64 MB |
""",
    "api/memo.html": """<html><body>
<h2>Memoizing helpers</h2>
<p>The size of the memo_cache is what most users tune first, and maxsize values that
are too small make the memo_cache useless. Choosing maxsize well matters.</p>
<dl class="function">
<dt id="memo_cache">memo_cache(user_function, maxsize=128, typed=False)</dt>
<dd><p>Wrap a function with a memoizing callable that keeps the most recent calls.
If maxsize is set to None, the cache can grow without bound.</p></dd>
</dl>
</body></html>
""",
    "ops/audit_settings.md": """# Audit settings

Audit records are written for every administrative action, and auditors read audit
records in the console. How long audit records are kept is decided per workspace.

retention_days
: Days audit records are kept before deletion. Default: 90.

export_format
: Format of exported audit records. Default: JSON lines.
""",
    "security/storage.md": """# Storage

The audit log is stored in the primary region. The audit log is replicated to a second
region, and the replica of the audit log is checked at rest every night. Audit log
entries are encrypted with AES-256 before they are written to disk.
""",
    "hr/leave.md": """# Annual leave

Employees get 25 days of annual leave per year. Leave requests go through the HR portal
and need the approval of a manager. Up to 5 unused days can be carried over into the
following year; anything above that is forfeited.
""",
    "ops/backups.md": """# Backups

Backups of every database run nightly. The retention period for backups is chosen by
each administrator, and the backup retention period can be changed in the console.
Long retention matters for compliance reviews of backups.
""",
    "db/mounts.md": """# Mounting volumes

A single session can use two or more volume files at once with the MOUNT command, and
one volume file can be mounted twice under different names. Mounted volume files can be
released again with UNMOUNT at any time. The number of simultaneously mounted volumes is
limited to MAX_MOUNTED, which is set to 6 by default. Builds can raise it to at most 90.
""",
    "db/scratch.md": """# Scratch space

The engine writes its scratch files to a temporary folder. If the scratch_folder setting
is empty and the SCRATCHDIR variable is unset, the engine tries these folders in order:

- /srv/scratch
- /opt/scratch
- the current working folder
""",
    "sales/plans.md": """# Plans

The Basic plan costs $9 per user per month and includes one workspace. The Business plan
costs $25 per user per month and includes single sign-on.
""",
    "people/falcon.md": """# Falcon

Falcon is the codename of the team that builds the desktop app.
""",
}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, embedder) -> KnowledgeBase:
    from kbagent.kb.ingest import Ingestor

    root = tmp_path_factory.mktemp("ranking_docs")
    for rel, text in DOCS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    home = tmp_path_factory.mktemp("ranking_home")
    settings = Settings.load(home=Path(home))
    Ingestor(settings, "docs", embedder=embedder).run(root)
    return KnowledgeBase(settings, "docs")


def answer(kb: KnowledgeBase, question: str):
    events = list(Agent(ScriptedLLM(["-"] * 3), [kb],
                        AgentConfig(mode="rag", tools="full")).run(question))
    assert isinstance(events[-1], Final)
    return events[-1].result


def lead(kb: KnowledgeBase, question: str) -> str:
    """The source sentence the answer leads with: the first quote, of the best-ranked
    unit (a short answer taken from it may come before it)."""
    result = answer(kb, question)
    assert not result.abstained, result.answer
    quotes = [s.text for s in result.sentences if s.role == "quote" and " says: \u201c" in s.text]
    assert quotes, result.answer
    return quotes[0]


def test_the_fact_leads_not_the_neighbours_that_share_the_question_words(kb) -> None:
    first = lead(kb, "What is the lifetime of a cache entry?")
    assert "45 minutes" in first


def test_a_table_row_leads_when_the_prose_above_it_shares_the_words(kb) -> None:
    first = lead(kb, "What is the maximum number of upload retries?")
    assert "upload_retries" in first and "10" in first


def test_an_api_signature_is_one_unit_with_its_description_as_gloss() -> None:
    c = Citation(1, "kb", "api/memo.html", 1, 9, clean_text(DOCS["api/memo.html"]), None,
                 "kb_search", raw="\n".join([
                     "## Memoizing helpers",
                     "The size of the memo_cache is what most users tune first.",
                     "memo_cache(user_function, maxsize=128, typed=False)",
                     "Wrap a function with a memoizing callable that keeps the most recent "
                     "calls. If maxsize is set to None, the cache can grow without bound."]))
    units = {u.text: u for u in units_of(c)}
    sig = units.get("memo_cache(user_function, maxsize=128, typed=False)")
    assert sig is not None
    assert "memoizing callable" in sig.context  # its description's first sentence
    assert "The size of the memo_cache is what most users tune first." in units


def test_an_api_signature_leads_for_its_default(kb) -> None:
    first = lead(kb, "What is the default maxsize of memo_cache?")
    assert "maxsize=128" in first


def test_a_definition_list_entry_is_one_unit_with_its_term(kb) -> None:
    c = Citation(1, "kb", "ops/audit_settings.md", 1, 12,
                 clean_text(DOCS["ops/audit_settings.md"]), None, "kb_search",
                 raw=DOCS["ops/audit_settings.md"])
    texts = [u.text for u in units_of(c)]
    assert "retention_days: Days audit records are kept before deletion. Default: 90." in texts
    first = lead(kb, "For how many days are audit records retained by default?")
    assert "90" in first


def test_a_yes_no_question_leads_with_the_sentence_that_settles_it(kb) -> None:
    first = lead(kb, "Is the audit log encrypted at rest?")
    assert "AES-256" in first


def test_a_paraphrase_is_bridged_by_the_sentence_embedding(kb) -> None:
    # "roll over" is in no document: the harness must neither refuse nor lead with the
    # sentences that share "leave" and "year"
    first = lead(kb, "Can unused leave roll over into next year?")
    assert "carried over" in first


def test_all_the_question_words_but_not_the_fact_abstains(kb) -> None:
    result = answer(kb, "How long is the backup retention period?")
    assert result.abstained
    assert result.answer.startswith("The knowledge base does not say")


def test_a_named_thing_no_document_mentions_is_the_reason_not_a_paraphrase_word(kb) -> None:
    # "roomy" is in no document either, but only a named thing is a reason
    result = answer(kb, "How roomy is the turbo_cache by default?")
    assert result.abstained
    assert "never mentions \u201cturbo_cache\u201d" in result.answer


def test_a_count_leads_not_two_or_more_and_out_of_the_box_is_the_default(kb) -> None:
    # "two or more volume files" shares the question's words and is no count
    result = answer(kb, "Out of the box, how many volume files can I mount in one session?")
    assert not result.abstained, result.answer
    assert result.short_answer.startswith("6 ["), result.answer


def test_a_folder_question_whose_best_units_name_no_folder_is_not_refused(kb) -> None:
    # the units that share the question's words are the sentence before the list: a
    # kind of answer told by words (a path, a name) must not make the harness refuse
    result = answer(kb, "With scratch_folder empty and SCRATCHDIR unset, which folder does "
                        "the engine try first for its scratch files?")
    assert not result.abstained, result.answer


def _cite(path: str, raw: str) -> Citation:
    return Citation(1, "kb", path, 1, raw.count("\n") + 1, clean_text(raw), None, "kb_search",
                    raw=raw)


def test_a_paragraph_wrapped_in_the_html_source_is_one_unit() -> None:
    # extracted HTML keeps a paragraph's source line breaks
    raw = "\n".join([
        "Note that the script should exit",
        "with code 0 if the source is good.",
        "The special exit code 99 should be used when the current source code",
        "cannot be tested.",
        "- a list item of its own"])
    texts = [u.text for u in units_of(_cite("tools/bisect.html", raw))]
    assert "The special exit code 99 should be used when the current source code cannot be " \
           "tested." in texts
    assert "Note that the script should exit with code 0 if the source is good." in texts


def test_a_long_definitions_later_sentence_keeps_its_first_as_context() -> None:
    raw = "\n".join([
        "sweep.limit",
        "When more than this many stale records pile up in the store, the sweeper compacts "
        "them in the background during the quiet hours of the night. Setting this to 0 "
        "disables compaction entirely, which is not recommended for busy stores. The default "
        "value is 4200.",
        "sweep.packLimit",
        "When more than this many packs exist, the sweeper merges them into one larger pack "
        "file during the quiet hours of the night, which keeps lookups fast on stores that "
        "see many writes. Setting this to 0 disables merging. The default value is 50."])
    units = units_of(_cite("ops/sweep.html", raw))
    last = next(u for u in units if u.text == "sweep.limit: The default value is 4200.")
    assert "stale records" in last.context and "stale records" in last.gloss
    top = score_units("By default, how many stale records may pile up before the sweeper "
                      "compacts them?", units)[0]
    assert "4200" in top.unit.text


def test_a_name_of_several_words_must_be_in_the_chunk_that_answers(kb) -> None:
    # "Falcon" and "Team" are both in the KB, so nothing is "never mentioned"; but the
    # only chunk with a price per user per month is about other plans
    result = answer(kb, "How much does the Falcon Team plan cost per user per month?")
    assert result.abstained, result.answer
    # ... while a plan the chunk names is answered
    result = answer(kb, "How much does the Business plan cost per user per month?")
    assert not result.abstained and "$25" in result.answer


def test_only_the_units_best_by_their_words_are_embedded() -> None:
    import numpy as np

    from kbagent.agent.answer.evidence import EMBED_TOP, SentenceVectors

    raw = "\n\n".join(f"Paragraph {i} talks about topic number {i} in some words."
                       for i in range(3 * EMBED_TOP))
    raw += "\n\nThe upload limit is 64 MB per file."
    units = units_of(_cite("notes/many.md", raw))
    seen: list[int] = []

    def embed(texts: list[str]) -> np.ndarray:
        seen.append(len(texts))
        rng = np.random.default_rng(len(texts))
        vecs = rng.normal(size=(len(texts), 8))
        return vecs / np.linalg.norm(vecs, axis=1)[:, None]

    scored = score_units("What is the upload limit per file?", units,
                         vectors=SentenceVectors(embed))
    assert len(units) > EMBED_TOP + 1
    assert seen == [EMBED_TOP + 1]  # the question and the EMBED_TOP best units
    assert "64 MB" in scored[0].unit.text
