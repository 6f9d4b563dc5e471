"""``kbagent mcp``: the real server in a subprocess, driven over stdio by the MCP SDK's own
client. The scripted LLM plays the model (it pastes every observation it is shown into
its answer, so a leak anywhere in the run would reach the answer)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from tests.server_support import USERS, dump, stdio_client_for
from tests.test_access_leaks import PLAN, PROBES, leaked

TOOLS = {"search", "ask", "read", "list_kbs", "code_definition", "code_references"}


@pytest.fixture
def home(sample_settings):
    (sample_settings.home / "users.toml").write_text(USERS)
    return sample_settings.home


def test_tools_are_listed_with_schemas_and_answer_with_structured_results(home):
    async def scenario():
        async with stdio_client_for(home, "--kb", "sample") as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == TOOLS
            for t in tools.values():
                assert t.description and t.input_schema["type"] == "object"
                assert t.output_schema and t.output_schema["type"] == "object", t.name
            assert tools["search"].input_schema["required"] == ["query"]
            assert tools["search"].input_schema["properties"]["query"]["maxLength"] == 2000
            assert {"hits", "query"} <= set(tools["search"].output_schema["properties"])
            assert {"answer", "references"} <= set(tools["ask"].output_schema["properties"])

            res = await c.call_tool("search", {"query": "retry backoff base delay", "k": 3})
            assert not res.is_error
            hits = res.structured_content["hits"]
            retry = {"engineering/design/retry_policy.md", "engineering/src/retry.py"}
            assert len(hits) == 3 and {h["path"] for h in hits} & retry
            assert hits[0]["start_line"] <= hits[0]["end_line"] and hits[0]["excerpt"]
            assert hits[0]["uri"] == "kbagent://sample/" + hits[0]["path"]
            assert any(h["bm25_rank"] for h in hits) and any(h["vector_rank"] for h in hits)

            res = await c.call_tool("read", {"path": "engineering/design/retry_policy.md",
                                             "start": 3, "end": 5})
            got = res.structured_content
            assert [ln["number"] for ln in got["lines"]] == [3, 4, 5]
            assert got["next_line"] == 6 and got["total_lines"] > 5
            whole = await c.call_tool("read", {"path": "engineering/design/retry_policy.md"})
            assert len(whole.structured_content["lines"]) <= 80  # the kb_cat rule

            kbs = (await c.call_tool("list_kbs", {})).structured_content["kbs"]
            assert kbs[0]["name"] == "sample" and kbs[0]["documents"] > 30

            code = await c.call_tool("code_definition", {"symbol": "backoff_delay"})
            assert not code.is_error, dump(code)
            assert any(r["path"] == "engineering/src/retry.py"
                       for r in code.structured_content["results"])
            refs = await c.call_tool("code_references", {"symbol": "backoff_delay"})
            assert not refs.is_error

            steps: list[str] = []

            async def progress(value, total, message):
                steps.append(message)

            res = await c.call_tool("ask", {"question": "What is the retry backoff?",
                                            "mode": "agent"}, progress_callback=progress)
            answer = res.structured_content
            assert answer["status"] == "answered" and answer["steps"] >= 2
            assert answer["references"], answer
            for ref in answer["references"]:
                assert f"[{ref['n']}]" in answer["answer"]
                assert ref["where"] == f"{ref['path']}:{ref['start_line']}-{ref['end_line']}"
            assert any(s.startswith("step 1: kb_search") for s in steps), steps
            assert steps[-1] == "done: answered"

            listed = (await c.list_resources()).resources
            uris = {str(r.uri) for r in listed}
            assert "kbagent://sample/engineering/design/retry_policy.md" in uris
            text = (await c.read_resource("kbagent://sample/engineering/design/retry_policy.md"
                                          )).contents[0].text
            assert "retr" in text.lower() and len(text.splitlines()) > 20

    asyncio.run(scenario())


PLAN_URIS = [f"kbagent://sample/{PLAN}", "kbagent://sample/hr//executive_compensation_2026.md",
             "kbagent://sample/./hr/executive_compensation_2026.md",
             "kbagent://sample/hr/executive%5Fcompensation%5F2026.md"]


async def probe_everything(c) -> list[str]:
    """Every tool and resource, asked for the plan in every way; returns what leaked."""
    found: list[str] = []

    def check(what, text, typed=""):
        if leaked(text, typed):
            found.append(f"{what}: {leaked(text, typed)}")

    for q in PROBES:
        for mode in ("hybrid", "bm25", "vector"):
            res = await c.call_tool("search", {"query": q, "k": 20, "mode": mode})
            check(f"search {q} {mode}", dump(res), q)
    for args in ({"path": PLAN}, {"path": PLAN, "kb": "sample", "start": 20, "end": 60},
                 {"path": "./hr//executive_compensation_2026.md"}):
        # an error may echo the path the caller typed, never more
        check(f"read {args}", dump(await c.call_tool("read", args)), args["path"] + PLAN)
    check("list_kbs", dump(await c.call_tool("list_kbs", {})))
    for sym in ("salary", "severance", "Executive"):
        for tool in ("code_definition", "code_references"):
            check(f"{tool} {sym}", dump(await c.call_tool(tool, {"symbol": sym})), sym)
    for question in ("What is the CEO base salary?", "Quote " + PLAN,
                     "What are the executive severance terms?"):
        res = await c.call_tool("ask", {"question": question, "mode": "agent"})
        check(f"ask {question}", dump(res), question + " CEO base salary " + PLAN)
    listed = (await c.list_resources()).resources
    check("resources/list", " ".join(f"{r.uri} {r.name}" for r in listed))
    for uri in PLAN_URIS:
        try:
            got = await c.read_resource(uri)
            check(f"resource {uri}", json.dumps(got.model_dump(mode="json")))
        except Exception as e:  # the SDK raises the server's error
            check(f"resource {uri} error", str(e), uri + PLAN)
    return found


def test_access_per_caller_no_leak_through_any_tool_or_resource(home):
    async def scenario(*who):
        async with stdio_client_for(home, "--kb", "sample", *who) as c:
            return await probe_everything(c), c

    for who in ([], ["--groups", "engineering"], ["--as", "sam"]):
        found, _ = asyncio.run(scenario(*who))
        assert found == [], (who, found)

    async def executive():
        async with stdio_client_for(home, "--kb", "sample", "--as", "maya") as c:
            hits = (await c.call_tool("search", {"query": "CEO base salary"})
                    ).structured_content["hits"]
            read = await c.call_tool("read", {"path": PLAN, "start": 1, "end": 120})
            res = await c.read_resource(PLAN_URIS[0])
            uris = {str(r.uri) for r in (await c.list_resources()).resources}
            ask = await c.call_tool("ask", {"question": "What is the CEO base salary?",
                                            "mode": "agent"})
            return hits, dump(read), res.contents[0].text, uris, dump(ask)

    hits, read, text, uris, ask = asyncio.run(executive())
    assert any(h["path"] == PLAN for h in hits)
    assert "385,000" in read and "385,000" in text and PLAN_URIS[0] in uris
    assert "385,000" in ask  # the pasting 'model' was shown the plan


def test_a_denied_document_reads_exactly_like_a_missing_one(home):
    async def scenario():
        async with stdio_client_for(home, "--kb", "sample") as c:
            denied = dump(await c.call_tool("read", {"path": PLAN}))
            missing = dump(await c.call_tool("read", {"path": PLAN.replace("2026", "2027")}))
            errors = []
            for uri in (PLAN_URIS[0], PLAN_URIS[0].replace("2026", "2027")):
                try:
                    await c.read_resource(uri)
                except Exception as e:
                    errors.append(str(e))
            return denied, missing, errors

    denied, missing, errors = asyncio.run(scenario())
    assert denied.replace("2026", "2027") == missing and "no file" in denied
    assert len(errors) == 2 and errors[0].replace("2026", "2027") == errors[1]


def test_a_client_cancel_stops_the_run_and_the_server_keeps_serving(home, tmp_path):
    errlog = tmp_path / "server.err"

    async def scenario():
        with open(errlog, "w") as err:
            async with stdio_client_for(home, "--kb", "sample", script="slow", delay=0.05,
                                        errlog=err) as c:
                generating = asyncio.Event()

                async def progress(value, total, message):
                    if message.endswith(": llm"):
                        generating.set()

                task = asyncio.create_task(c.call_tool(
                    "ask", {"question": "Why is the sky blue?", "mode": "agent"},
                    progress_callback=progress))
                await asyncio.wait_for(generating.wait(), 60)
                await asyncio.sleep(0.3)  # well inside the slow model's ~10 s step
                task.cancel()
                cancelled_at = time.perf_counter()
                with pytest.raises(asyncio.CancelledError):
                    await task
                stopped = None
                while stopped is None and time.perf_counter() - cancelled_at < 30:
                    for line in errlog.read_text().splitlines():
                        if "ask cancelled; the run stopped" in line:
                            stopped = (time.perf_counter() - cancelled_at) * 1000, line
                    await asyncio.sleep(0.01)
                # the server still serves, and the LLM is free for the next question
                res = await c.call_tool("search", {"query": "retry policy", "k": 2})
                assert not res.is_error
                generating.clear()
                again = asyncio.create_task(c.call_tool(
                    "ask", {"question": "Another question?", "mode": "agent"},
                    progress_callback=progress))
                await asyncio.wait_for(generating.wait(), 60)
                again.cancel()
                return stopped

    stopped = asyncio.run(scenario())
    assert stopped is not None, errlog.read_text()
    client_ms, line = stopped
    # the slow step would have run ~10 s more: it stopped at the cancel, not at its end
    assert client_ms < 5000, line
    print(f"cancel: the run stopped {client_ms:.0f} ms after the client's cancel ({line})")


def test_search_hits_name_their_place_in_office_files(home):
    """Issue 24 through the server: a hit in a deck or a workbook says which slide or which
    cells, as `kbagent search --json` does."""
    async def scenario():
        async with stdio_client_for(home, "--kb", "sample") as c:
            res = await c.call_tool("search", {"query": "kestrel gpu roadmap slide", "k": 10})
            hits = res.structured_content["hits"]
            deck = [h for h in hits if h["path"].endswith(".pptx")]
            assert deck, [h["path"] for h in hits]
            assert all(h["location"].startswith("slide ") for h in deck), deck
            plain = [h for h in hits if h["path"].endswith(".md")]
            assert all(h["location"] == "" for h in plain)

    asyncio.run(scenario())
