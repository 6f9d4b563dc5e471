"""The shape of the package (issue 21): no import cycle anywhere, the agent's rooms,
and small modules.

The graph is grimp's (the library import-linter is built on), with every import
statement counted: those at module level, those inside functions and those under
``TYPE_CHECKING``. An import placed inside a function still makes the modules
depend on each other, so it cannot hide a cycle from this test.
"""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kbagent"
MAX_LINES = 400
MAX_AGENT_TOP_MODULES = 8
AGENT_ROOMS = {"answer", "harness", "llm", "run", "tools"}
# the one module outside the small-model policy's room that imports it (issue 44, item 1)
HARNESS_DOOR = "kbagent.agent.run.loop"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("kbagent", exclude_type_checking_imports=False,
                             cache_dir=None)


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = []
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work.append((root, sorted(graph.find_modules_directly_imported_by(root))))
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.find_modules_directly_imported_by(nxt))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    g = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c"):
        g.add_module(m)
    g.add_import(importer="p.a", imported="p.b")
    g.add_import(importer="p.b", imported="p.c")
    g.add_import(importer="p.c", imported="p.a")
    assert cycles(g) == [["p.a", "p.b", "p.c"]]
    g.remove_import(importer="p.c", imported="p.a")
    assert cycles(g) == []


def test_no_import_cycle_anywhere(graph: grimp.ImportGraph) -> None:
    assert cycles(graph) == []


def test_the_agent_is_rooms() -> None:
    agent = PACKAGE / "agent"
    top = sorted(p.name for p in agent.glob("*.py"))
    assert len(top) <= MAX_AGENT_TOP_MODULES, top
    rooms = {p.name for p in agent.iterdir() if (p / "__init__.py").is_file()}
    assert rooms == AGENT_ROOMS


def test_rooms_depend_downwards(graph: grimp.ImportGraph) -> None:
    """run -> tools -> answer; llm below run only; answer and tools never import run,
    answer never imports tools, and no room imports the LLM backends but run."""
    never = {
        "kbagent.agent.answer": ["kbagent.agent.run", "kbagent.agent.tools",
                                 "kbagent.agent.llm"],
        "kbagent.agent.tools": ["kbagent.agent.run", "kbagent.agent.llm"],
        "kbagent.agent.llm": ["kbagent.agent.run", "kbagent.agent.tools",
                              "kbagent.agent.answer"],
    }
    bad = []
    for low, highs in never.items():
        for high in highs:
            for chain in graph.find_shortest_chains(importer=low, imported=high,
                                                    as_packages=True):
                bad.append(" -> ".join(chain))
    assert bad == []


def test_the_harness_is_a_room_of_its_own(graph: grimp.ImportGraph) -> None:
    """The small-model policy's rules (kbagent/agent/harness) are reached through the
    loop only: no shared stage, no other policy and no surface imports them."""
    harness = "kbagent.agent.harness"
    inside = graph.find_descendants(harness) | {harness}
    importers = {m for h in inside for m in graph.find_modules_that_directly_import(h)}
    assert importers - inside == {HARNESS_DOOR}
    # nothing shared reaches it through the door either: only the surfaces and the
    # session layer import the loop
    agent = graph.find_descendants("kbagent.agent")
    assert not graph.find_modules_that_directly_import(HARNESS_DOOR) & agent


def test_no_module_over_400_lines() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
