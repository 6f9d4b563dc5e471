"""Cases the harness's stage tests share (tests/test_harness_*.py): citations of a
chunk's text as a search returns it, a reference page in Sphinx HTML, a directive's
key/value box, and a manual's parameters whose names hold one another.

Those tests pin the small-model (harness) policy's frozen rules (``answer_policy =
harness``; docs/architecture.md, "Grounded answers"): each test pins a form of question or
document that a development set showed, and no new rule is added for a phrasing (issue
44). docs/harness-forms.md tells when each rule came and from which set's misses. Their
text is constructed (the programs, options and people are invented; none of it comes
from a held-out folder)."""

from __future__ import annotations

from pathlib import Path

from kbagent.agent.answer.citations import Citation
from kbagent.agent.answer.units import Unit, UnitKind
from kbagent.agent.events import AgentResult, Final
from kbagent.agent.run.loop import Agent, AgentConfig
from kbagent.kb.knowledge_base import KnowledgeBase
from kbagent.settings import Settings
from tests.agent_runs import cite
from tests.scripted_llm import ScriptedLLM


def raw_citation(text: str, path: str = "reference/tool.html") -> Citation:
    """A search hit of ``text`` exactly as written (its text not cleaned; the docs KB,
    score 0.5), the first citation of the run."""
    return Citation(1, "docs", path, 1, text.count("\n") + 1, text, 0.5, "kb_search",
                    raw=text)


def page_citation(text: str, n: int = 1, path: str = "mod/core.html") -> Citation:
    """:func:`raw_citation` numbered ``n``, from a module's reference page unless ``path``
    says otherwise."""
    return Citation(n, "docs", path, 1, text.count("\n") + 1, text, 0.5, "kb_search",
                    raw=text)


def option_citation(text: str, path: str = "reference/options.html", n: int = 1) -> Citation:
    """:func:`tests.agent_runs.cite`, from a reference page of options unless ``path``
    says otherwise."""
    return cite(text, path, n)


def _entry(name: str, kind: str, default: str, legacy: str, description: str) -> str:
    """One parameter as Sphinx writes it: a heading, a table of one row, a version note
    and the description (every cell a paragraph of its own)."""
    head = "".join(f'<th class="head"><p>{h}</p></th>\n'
                   for h in ("type", "default", "mandatory", "obsolete legacy directive"))
    cells = "".join(f"<td><p>{v}</p></td>\n" for v in (kind, default, "no", legacy))
    return (f'<span id="{name}"></span><h4>{name}<a class="headerlink" href="#x">¶</a></h4>\n'
            f'<table class="parameter-table docutils">\n<thead>\n<tr class="row-odd">{head}'
            f'</tr>\n</thead>\n<tbody>\n<tr class="row-even">{cells}</tr>\n</tbody>\n</table>\n'
            f'<div class="versionadded">\n<p><span class="versionmodified added">New in '
            f"version 8.38.0.</span></p>\n</div>\n<p>{description}</p>\n")


# a module's reference page: two parameters, each a table of one row of values with the
# default, then an Examples section that sets other values ("600", a 30-second timeout)
FROBD = ("<html><body><h1>omfrob: Frob Output Module</h1>\n<h2>Action Parameters</h2>\n"
         + _entry("ackTimeout", "integer", "10000", "none",
                  "Specifies how long frobd must wait for the external program to confirm "
                  "each message when ackMessages is set to “on”. The value must be "
                  "expressed in milliseconds.")
         + _entry("reportInterval", "integer", "300", "none",
                  "Sets the interval, in seconds, at which frob statistics are reported.")
         + "<h2>Examples</h2>\n<h3>Report to the frob log</h3>\n"
         "<p>This loads the module and writes statistics to /var/log/frob in ten minute "
         "intervals:</p>\n<pre>module(load=\"omfrob\" reportInterval=\"600\")</pre>\n"
         "<p>If no answer arrives from the program within a 30-second timeout, frobd "
         "restarts it.</p>\n</body></html>\n")


# a reference page's directive box as kbagent's HTML extraction writes it: label | value
DIRECTIVE_BOX = """## TraceLog Directive
Description: | Limits the number of trace records kept for each request
Syntax: | TraceLog records
Default: | TraceLog 250
Context: | server config, virtual host
Module: | core
The TraceLog directive sets how many trace records are kept. Records beyond the limit
are dropped, and the dropped count is written to the error log.
"""


def _unit(text: str, n: int = 1, kind: UnitKind = UnitKind.DEFINITION) -> Unit:
    return Unit(n, text, "manual", 0, kind)


# three parameters of a manual whose names all hold the one asked for: only one is it
FRAME_LIMITS = [
    _unit("relay_frame_size_limit (default: 990): The relay-specific version of the "
          "edge_frame_size_limit parameter. See there for details."),
    _unit("edge_frame_size_limit (default: 998): The maximal size of a frame that the "
          "edge service will send."),
    _unit("RESOURCE CONTROLS frame_size_limit (4096)", n=2, kind=UnitKind.SENTENCE),
]


def sample_rag(home: Path, question: str) -> AgentResult:
    """``question`` through the real agent in rag mode over the sample KB of ``home``, the
    model scripted to say nothing useful: the harness's answer."""
    kb = KnowledgeBase(Settings.load(home=home), "sample")
    events = list(Agent(ScriptedLLM(["It is in the sources."] * 5), [kb],
                        AgentConfig(mode="rag", tools="full")).run(question))
    final = events[-1]
    assert isinstance(final, Final)
    return final.result
