"""The Ask screen: a conversation with the agent, its steps live, the answer streamed
with citation badges, and the references of each answer."""

from __future__ import annotations

import gc
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, Markdown, Static

from kbagent.agent.events import (
    Action,
    AnswerDelta,
    ErrorEvent,
    Final,
    Observation,
    StepStarted,
    ThoughtDelta,
)
from kbagent.agent.kinds import ErrorKind
from kbagent.agent.records import describe_repairs
from kbagent.errors import KbagentError
from kbagent.tui.format import plain, reference_detail
from kbagent.tui.host import host
from kbagent.tui.widgets import (
    Badge,
    BadgeRow,
    Card,
    PromptInput,
    ReferencesPanel,
    StepPanel,
    answer_markdown,
)

SEGMENT_CHARS = 1500
INTRO = ("Ask a question about your documents. Enter sends; Ctrl+J or Alt+Enter adds a "
         "line; Esc stops a run.")


def pause_collector() -> None:
    """Collect garbage now, freeze what survives, and pause the collector for a run.

    Measured with bench/bench_tui.py (4,000 tokens at 100/s): Python's cyclic
    collections, which walk the objects of the whole process (the app, the KBs,
    the model), paused the event loop for up to 81 ms at a time while an answer
    streamed, more as the answer grew: the worst frames of the run, and what
    made the last 10% of the answer cost 2-7x the first. With one collection as
    the run starts (the user just pressed Enter), the survivors frozen and the
    collector off until the run ends (:func:`resume_collector`), the worst frame
    while tokens stream fell from 145-190 ms to about 70 ms and the last/first
    cost to about 1x. Reference counting still frees almost everything during the
    run; the cycles a run leaves wait for the next run's collection. Unfreezing first lets the
    widgets of earlier turns that were removed be collected."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    gc.disable()


def resume_collector() -> None:
    """Turn the collector back on after a run, first freezing what the run made:
    switched on with those objects in view, its first collection walked them all
    and froze the screen for 0.6 s as the answer ended. They are looked at by the
    next run's :func:`pause_collector` instead."""
    gc.freeze()
    gc.enable()


class AgentEvent(Message):
    """One event of the agent's stream, posted from the worker thread."""

    def __init__(self, event: Any, turn: Turn) -> None:
        super().__init__()
        self.event, self.turn = event, turn


class RunFailed(Message):
    def __init__(self, message: str, turn: Turn) -> None:
        super().__init__()
        self.message, self.turn = message, turn


class Turn(Vertical):
    """One question and everything the agent did for it."""

    def __init__(self, question: str, route: str) -> None:
        super().__init__(classes="turn")
        self.question, self.route = question, route
        self.steps = Vertical(classes="steps")
        self.answer = Vertical(classes="answer")  # Markdown segments, see write_answer
        self.segments: list[Markdown] = []
        self.notices = Vertical(classes="notices")
        self.badges = BadgeRow(classes="badges")
        self.detail = Static("", classes="ref-detail")
        self.refs_box = Vertical(classes="refs")
        self.panels: dict[int, StepPanel] = {}
        self.stream: Any = None
        self.result: Any = None

    def compose(self) -> ComposeResult:
        yield Static(plain(f"❯ {self.question}"), classes="question")
        yield Static(plain(f"route: {self.route}"), classes="route")
        yield self.steps
        yield self.answer
        yield self.notices
        yield self.badges
        yield self.detail
        yield self.refs_box

    @property
    def answer_text(self) -> str:
        """The answer's Markdown source, all segments."""
        return "".join(m.source for m in self.segments)

    async def write_answer(self, fragment: str) -> None:
        """Stream ``fragment`` into the answer. A long answer is split into Markdown
        segments at paragraph ends (every ~SEGMENT_CHARS): appending to a segment
        re-parses and lays out only that segment, so the cost of an append stays
        flat however long the answer grows."""
        current = self.segments[-1] if self.segments else None
        if current is None or (len(current.source) >= SEGMENT_CHARS
                               and current.source.endswith("\n\n")):
            if self.stream is not None:
                await self.stream.stop()
            current = Markdown("", classes="answer-part", open_links=False)
            self.segments.append(current)
            await self.answer.mount(current)
            self.stream = Markdown.get_stream(current)
        await self.stream.write(fragment)

    def notice(self, text: str, kind: str = "info") -> None:
        self.notices.mount(Static(plain(text), classes=f"notice -{kind}"))

    def reference(self, n: int) -> dict[str, Any] | None:
        """Reference ``[n]`` of this turn's answer, as the widgets show it."""
        found = self.result.reference(n) if self.result is not None else None
        return found.to_json() if found is not None else None


class AskScreen(Screen[None]):
    """Ask questions; watch the agent work; follow citations."""

    BINDINGS = [  # noqa: RUF012
        Binding("escape", "cancel_run", "Cancel run", id="ask.cancel"),
        Binding("ctrl+n", "new_conversation", "New chat", id="ask.new"),
        Binding("ctrl+r", "focus_refs", "References", id="ask.refs"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.turns: list[Turn] = []
        self.running = False
        self.previous: tuple[str, str] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="conversation"):
            yield Static(INTRO, id="intro")
            yield Grid(id="cards")
        yield PromptInput(id="prompt", placeholder="Ask about your documents…")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_cards()
        self.query_one(PromptInput).focus()

    def refresh_cards(self) -> None:
        """Example task cards built from the open KBs (only on an empty conversation)."""
        from kbagent.session_kbs import example_questions

        if self.turns:
            return
        grid = self.query_one("#cards", Grid)
        grid.remove_children()
        try:
            examples = example_questions(host(self).session.kbs, host(self).session.principal)
        except Exception:  # a broken KB must not break the screen; cards are optional
            examples = []
        grid.mount_all(Card(kind, q, classes="card") for kind, q in examples)

    # --- input ------------------------------------------------------------------
    @on(Card.Chosen)
    def fill_from_card(self, message: Card.Chosen) -> None:
        prompt = self.query_one(PromptInput)
        prompt.text = message.question
        prompt.move_cursor(prompt.document.end)
        prompt.focus()

    @on(PromptInput.Submitted)
    def submit(self, message: PromptInput.Submitted) -> None:
        self.ask(message.text)

    def ask(self, question: str) -> None:
        from kbagent.agent.run.router import route

        question = question.strip()
        if self.running:
            self.notify("a question is running; Esc stops it", severity="warning")
            return
        if not question:
            return
        session = host(self).session
        token = session.prepare_run()  # before the worker: an early Esc is kept
        mode = session.mode
        label = f"{route(' '.join(question.split()))} (auto)" if mode == "auto" else mode
        turn = Turn(question, label)
        self.turns.append(turn)
        if len(self.turns) == 1:
            self.query_one("#cards", Grid).remove()
            self.query_one("#intro", Static).remove()
        conversation = self.query_one("#conversation", VerticalScroll)
        conversation.mount(turn)
        conversation.anchor()
        prompt = self.query_one(PromptInput)
        prompt.text = ""
        prompt.disabled = True
        self.running = True
        pause_collector()
        self.run_agent(question, self.previous, token, turn)

    @work(thread=True, exclusive=True, group="agent", exit_on_error=False)
    def run_agent(self, question: str, previous: Any, token: Any, turn: Turn) -> None:
        """Runs in a thread; only posts messages."""
        try:
            for ev in host(self).run_question(question, previous, token):
                self.post_message(AgentEvent(ev, turn))
        except KbagentError as e:
            self.post_message(RunFailed(str(e), turn))
        except Exception as e:  # a worker bug is a notification, never a traceback
            self.post_message(RunFailed(f"unexpected {type(e).__name__}: {e}", turn))

    # --- events -----------------------------------------------------------------
    @on(AgentEvent)
    async def show_event(self, message: AgentEvent) -> None:
        ev, turn = message.event, message.turn
        timings = host(self).timings
        panel: StepPanel | None
        if isinstance(ev, StepStarted):
            for panel in turn.panels.values():
                panel.finish()
            panel = StepPanel(ev.step, ev.kind, classes=f"step -{ev.kind}")
            turn.panels[ev.step] = panel
            await turn.steps.mount(panel)
        elif isinstance(ev, ThoughtDelta):
            panel = turn.panels.get(ev.step)
            if panel is not None:
                panel.add_thought(ev.text)
        elif isinstance(ev, Action):
            panel = turn.panels.get(ev.step)
            if panel is not None:
                panel.set_action(ev.tool, ev.args)
                if ev.thought and not panel._thought_text:
                    panel.add_thought(ev.thought)
        elif isinstance(ev, Observation):
            panel = turn.panels.get(ev.step)
            if panel is not None:
                panel.set_observation(ev, timings)
        elif isinstance(ev, AnswerDelta):
            await turn.write_answer(answer_markdown(ev.text, ev.supported))
        elif isinstance(ev, ErrorEvent):
            # a cancel is the user's own doing: a warning, not an error
            kind = "warning" if ev.kind == ErrorKind.CANCELLED else "error"
            turn.notice(("stopped: " if ev.kind == ErrorKind.CANCELLED else f"{ev.kind}: ")
                        + ev.message, kind)
        elif isinstance(ev, Final):
            await self.finish(turn, ev.result)

    async def finish(self, turn: Turn, result: Any) -> None:
        if turn.stream is not None:
            await turn.stream.stop()
        for panel in turn.panels.values():
            panel.finish()
        turn.result = result
        if result.stop_reason and result.status != "cancelled":
            turn.notice(f"guard stop: {result.stop_reason}", "warning")
        for line in describe_repairs(getattr(result, "repairs", [])):
            turn.notice(f"✎ {line}", "warning")
        usage = result.usage
        cost = (f" · {usage.budget_tokens} tokens · {usage.wall_ms / 1000:.1f} s"
                if host(self).timings else "")
        turn.notice(f"{result.status} · mode {result.mode}{cost}", "status")
        seen = sorted(result.references.chunks(), key=lambda c: c.n)
        await turn.badges.mount_all(Badge(c.to_json(), classes="badge") for c in seen)
        if result.references:
            await turn.refs_box.mount(ReferencesPanel(result.references, classes="refs-tree"))
        self.previous = (result.question, result.answer)
        host(self).save_result(result)
        self.end_run()

    @on(RunFailed)
    def run_failed(self, message: RunFailed) -> None:
        message.turn.notice(f"error: {message.message}", "error")
        self.notify(message.message, title="The question could not run", severity="error",
                    timeout=8)
        self.end_run()

    def end_run(self) -> None:
        resume_collector()
        self.running = False
        prompt = self.query_one(PromptInput)
        prompt.disabled = False
        prompt.focus()

    # --- references ---------------------------------------------------------
    def _turn_of(self, widget: Any) -> Turn | None:
        for node in widget.ancestors_with_self:
            if isinstance(node, Turn):
                return node
        return self.turns[-1] if self.turns else None

    def show_reference(self, turn: Turn, n: int) -> None:
        ref = turn.reference(n)
        if ref is None:
            self.notify(f"no reference [{n}] in this answer", severity="warning")
            return
        check = host(self).reference_check(ref)
        shown = ref
        if check is not None and str(check.state) == "moved":  # the lines where it is now
            shown = {**ref, "path": check.now_path, "start_line": check.now_start,
                     "end_line": check.now_end}
        turn.detail.update(plain(reference_detail(ref, host(self).reference_lines(shown),
                                                   check)))
        turn.detail.add_class("-shown")

    @on(Badge.Selected)
    def badge_selected(self, message: Badge.Selected) -> None:
        turn = self._turn_of(message.control) if message.control else None
        if turn is not None:
            self.show_reference(turn, message.n)

    @on(Markdown.LinkClicked)
    def link_clicked(self, message: Markdown.LinkClicked) -> None:
        if message.href.startswith("ref:") and message.href[4:].isdigit():
            turn = self._turn_of(message.markdown)
            if turn is not None:
                self.show_reference(turn, int(message.href[4:]))

    @on(ReferencesPanel.NodeHighlighted)
    def ref_highlighted(self, message: ReferencesPanel.NodeHighlighted[dict[str, Any]]) -> None:
        data = message.node.data
        if data and "n" in data:
            turn = self._turn_of(message.control)
            if turn is not None:
                self.show_reference(turn, int(data["n"]))

    @on(ReferencesPanel.NodeSelected)
    def ref_selected(self, message: ReferencesPanel.NodeSelected[dict[str, Any]]) -> None:
        data = message.node.data
        if data and "n" in data:
            host(self).open_reference(data, editor=False)

    @on(ReferencesPanel.Open)
    def ref_open(self, message: ReferencesPanel.Open) -> None:
        host(self).open_reference(message.ref, editor=message.editor)

    # --- actions --------------------------------------------------------------
    def action_cancel_run(self) -> None:
        if self.running:
            host(self).session.cancel()
            self.notify("stopping… the answer will show what was gathered", timeout=3)

    async def action_new_conversation(self) -> None:
        """Forget the turns, show the intro and example cards again (on an empty
        conversation they are there already); the input keeps or gets the focus."""
        if self.running:
            self.notify("a question is running; Esc stops it", severity="warning")
            return
        self.previous = None
        prompt = self.query_one(PromptInput)
        if self.turns:
            # focus first: a focused widget inside a removed turn (the references, after
            # Ctrl+R) would hand the focus to the next focusable one, an example card
            prompt.focus()
            self.turns.clear()
            await self.query(Turn).remove()
            conversation = self.query_one("#conversation", VerticalScroll)
            await conversation.mount_all([Static("New conversation. " + INTRO, id="intro"),
                                          Grid(id="cards")])
            self.refresh_cards()
        prompt.focus()

    def action_focus_refs(self) -> None:
        panels = list(self.query(ReferencesPanel))
        if panels:
            panels[-1].focus()
        else:
            self.notify("no references yet", severity="warning")

    def set_question(self, question: str) -> None:
        """Put a question in the input (history's re-run)."""
        prompt = self.query_one(PromptInput)
        prompt.text = question
        prompt.move_cursor(prompt.document.end)
        prompt.focus()
