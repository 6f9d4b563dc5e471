"""Widgets shared by the screens: the prompt, example cards, step panels, citation
badges, the references panel and the document view."""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Collapsible, Static, TextArea, Tree

from kbagent.agent.kinds import StepKind
from kbagent.agent.records import References
from kbagent.safe_text import clean
from kbagent.tui.format import excerpt, literal, plain, ref_location

_MARKER = re.compile(r"\[(\d+)\]")
_LEAD = re.compile(r"^(\s*(?:[-*+]|\d+[.)])?\s*)(.*?)(\s*)$", re.S)


class PromptInput(TextArea):
    """The question box: Enter sends, Ctrl+J / Alt+Enter (Shift+Enter where the
    terminal reports it) insert a newline."""

    BINDINGS = [  # noqa: RUF012 - Textual's idiom
        Binding("enter", "submit", "Send", id="ask.submit", priority=True),
        Binding("ctrl+j,alt+enter,shift+enter", "newline", "Newline", id="ask.newline",
                priority=True),
    ]

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def action_submit(self) -> None:
        # Enter is a priority binding: it runs as the key reaches the app, before the
        # keys sent just ahead of it (a paste, a fast typist, tmux send-keys) have been
        # handled by this widget, which lost the end of a question ("... the Kestrel
        # Edge" for "... the Kestrel Edge appliance use?"). The text is read once this
        # widget has handled every message before the submit.
        self.call_later(self._submit_now)

    def _submit_now(self) -> None:
        if not self.disabled:
            self.post_message(self.Submitted(self.text))

    def action_newline(self) -> None:
        self.insert("\n")


class Card(Static, can_focus=True):
    """An example task: Enter or a click fills the prompt with its question."""

    BINDINGS = [Binding("enter,space", "choose", "Use", show=False, id="card.use")]  # noqa: RUF012

    class Chosen(Message):
        def __init__(self, question: str) -> None:
            super().__init__()
            self.question = question

    def __init__(self, kind: str, question: str, **kwargs: Any) -> None:
        super().__init__(Text.assemble((kind + "\n", "bold"), clean(question)), **kwargs)
        self.question = question

    def action_choose(self) -> None:
        self.post_message(self.Chosen(self.question))

    def on_click(self) -> None:
        self.action_choose()


class Badge(Static, can_focus=True):
    """A citation ``[n]``: Enter or a click shows the reference; hover shows a tooltip."""

    BINDINGS = [Binding("enter,space", "select", "Show", show=False, id="badge.show")]  # noqa: RUF012

    class Selected(Message):
        def __init__(self, n: int, badge: Badge) -> None:
            super().__init__()
            self.n, self.badge = n, badge

        @property
        def control(self) -> Badge:
            return self.badge

    def __init__(self, ref: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(f"[{ref['n']}]", **kwargs)
        self.n = int(ref["n"])
        self.tooltip = plain(f"{ref_location(ref)}\n{excerpt(ref.get('excerpt', ''), 200)}")
        if ref.get("supported") is False:
            self.add_class("-unsupported")

    def action_select(self) -> None:
        self.post_message(self.Selected(self.n, self))

    def on_click(self) -> None:
        self.action_select()


class BadgeRow(Horizontal):
    """The answer's badges, in citation order."""


class StepPanel(Collapsible):
    """One agent step: kind, tool and arguments, tokens and ms in the title; the
    thought streams into it; the observation shows hits as ``path:lines``."""

    def __init__(self, step: int, kind: str, **kwargs: Any) -> None:
        self.step, self.kind = step, kind
        self.thought = Static("", classes="thought")
        self.observation = Static("", classes="observation")
        self._thought_text = ""
        super().__init__(self.thought, self.observation, title=self._heading(), collapsed=False,
                         **kwargs)
        self.tool = ""
        self.args = ""

    def _heading(self, extra: str = "") -> str:
        kinds: dict[str, str] = {StepKind.LLM: "step", StepKind.RETRIEVAL: "search",
                                 StepKind.ANSWER: "answer",
                                 StepKind.FORCED_FINAL: "final answer (forced)"}
        return f"{self.step}. {kinds.get(self.kind, self.kind)}" + (f" · {literal(extra)}"
                                                                  if extra else "")

    def add_thought(self, text: str) -> None:
        self._thought_text += text
        self.thought.update(plain(self._thought_text.strip(), style="italic"))

    def set_action(self, tool: str, args: dict[str, Any]) -> None:
        self.tool = tool
        self.args = ", ".join(f"{k}={v!r}" for k, v in args.items())
        self.title = self._heading(f"{tool}({self.args})")

    def set_observation(self, ev: Any, timings: bool) -> None:
        cost = f" · {ev.tokens} tok · {ev.ms:.0f} ms" if timings else ""
        self.title = self._heading(f"{self.tool}({self.args}){cost}")
        text = plain(ev.summary + "\n", style="bold" if ev.ok else "bold red")
        for line in observation_hits(ev):
            text.append_text(line)
            text.append("\n")
        self.observation.update(text)

    def finish(self) -> None:
        self.collapsed = True


def observation_hits(ev: Any, limit: int = 8) -> list[Text]:
    """``path:lines  excerpt`` for each source an observation showed."""
    out: list[Text] = []
    texts = re.findall(r"^\[(?:\d+|not citable[^\]]*)\] (.*)$", ev.text or "", re.M)
    for i, src in enumerate(ev.sources[:limit]):
        snippet = excerpt(texts[i], 80) if len(texts) == len(ev.sources) else ""
        out.append(Text.assemble((clean(f"  {src}"), "cyan"), (clean("  " + snippet), "dim")))
    if len(ev.sources) > limit:
        out.append(Text(f"  … {len(ev.sources) - limit} more", style="dim"))
    return out


def answer_markdown(text: str, supported: bool | None) -> str:
    """One answer sentence as Markdown: ``[n]`` become links (badges); a sentence the
    support check rejected is italic and marked. Control sequences are removed."""
    text = _MARKER.sub(lambda m: f"[\\[{m.group(1)}\\]](ref:{m.group(1)})", clean(text))
    if supported is False:
        m = _LEAD.match(text)
        if m and m.group(2):
            text = f"{m.group(1)}_{m.group(2)}_ ⚠{m.group(3)}"
    return text


class ReferencesPanel(Tree[dict[str, Any]]):
    """Cited chunks grouped by document, in order of first citation."""

    BINDINGS = [  # noqa: RUF012
        Binding("o", "open_doc", "Open", id="refs.open"),
        Binding("e", "open_editor", "Editor", id="refs.editor"),
    ]

    class Open(Message):
        def __init__(self, ref: dict[str, Any], editor: bool) -> None:
            super().__init__()
            self.ref, self.editor = ref, editor

    def __init__(self, references: References, checks: dict[int, Any] | None = None,
                 **kwargs: Any) -> None:
        super().__init__("references", **kwargs)
        self.show_root = False
        checks = checks or {}  # n -> kb.provenance.RefCheck: what became of the source
        for doc in references:
            # a document opens at its first cited chunk; a leaf holds its chunk
            node = self.root.add(plain(f"{doc.kb}:{doc.path}"), expand=True,
                                 data={"first": doc.chunks[0].to_json()} if doc.chunks else None)
            for c in doc.chunks:
                mark = " ⚠" if c.supported is False else ""
                check = checks.get(c.n)
                if check is not None and check.stale:
                    mark += f" · {check.state} since the answer"
                place = f"{c.location} · " if c.location else ""
                node.add_leaf(plain(f"[{c.n}] {place}lines {c.start_line}-{c.end_line} · "
                                    f"score {c.score or 0:.3f}{mark}"), data=c.to_json())

    def _ref(self) -> dict[str, Any] | None:
        node = self.cursor_node
        if node is None or node.data is None:
            return None
        data = node.data
        first: dict[str, Any] = data.get("first", data)
        return first

    def action_open_doc(self) -> None:
        ref = self._ref()
        if ref is not None:
            self.post_message(self.Open(ref, editor=False))

    def action_open_editor(self) -> None:
        ref = self._ref()
        if ref is not None:
            self.post_message(self.Open(ref, editor=True))


class DocumentView(VerticalScroll):
    """A document's lines with numbers; a range highlighted; optional chunk boundaries."""

    def __init__(self, lines: list[Any], *, highlight: tuple[int, int] | None = None,
                 chunks: list[tuple[int, int]] | None = None,
                 chunk_locations: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lines, self.highlight, self.chunks = lines, highlight, chunks or []
        self.chunk_locations = chunk_locations or []  # page/slide/cells of each chunk
        self.rows_before: dict[int, int] = {}  # line number -> row in the rendered text

    def compose(self) -> Any:
        yield Static(self.render_text(), classes="doc-text")

    def render_text(self) -> Text:
        width = len(str(max((ln.number for ln in self.lines), default=1)))
        places = self.chunk_locations
        starts = {a: (i + 1, a, b, places[i] if i < len(places) else "")
                  for i, (a, b) in enumerate(self.chunks)}
        text, row = Text(), 0
        lo, hi = self.highlight or (0, -1)
        for ln in self.lines:
            if ln.number in starts:
                i, a, b, place = starts[ln.number]
                place = f" · {clean(place)}" if place else ""
                text.append(f"{'─' * (width + 1)} chunk {i} · lines {a}-{b}{place}\n",
                            style="magenta")
                row += 1
            self.rows_before[ln.number] = row
            hit = lo <= ln.number <= hi
            text.append(f"{ln.number:>{width}}│ ", style="bold yellow" if hit else "dim")
            text.append(clean(ln.text) + "\n", style="on #3a3a00" if hit else "")
            row += 1
        return text

    def scroll_to_line(self, line: int) -> None:
        """Scroll so ``line`` is near the top (now, and again once the layout knows
        the text's height: a scroll before that is clamped to 0)."""
        row = self.rows_before.get(line)
        if row is None:
            later = [n for n in self.rows_before if n >= line]
            row = self.rows_before[min(later)] if later else 0
        self._target_row: int | None = max(0, row - 2)
        self.scroll_to(y=self._target_row, animate=False)

    def on_resize(self, event: Any) -> None:
        target = getattr(self, "_target_row", None)
        if target and event.virtual_size.height > target:
            self._target_row = None
            self.scroll_to(y=target, animate=False)
