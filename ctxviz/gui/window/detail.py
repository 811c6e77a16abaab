"""The detail panel beside the table: the selected message whole, its decision, and the "why"
answer (the smallest change that would keep it), asked for off the GUI thread.

A mixin of `MainWindow` (gui/main_window.py).
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QScrollArea, QSplitter, QTextBrowser

from ...engine.explain import Explanation, describe
from ...engine.plan import Plan
from ...engine.reasons import short_reason
from ...engine.session import Session, ToolCallPart, part_text
from ...engine.wording import counted
from ..models import VOICE_MEANINGS, role_shown
from ..safe import BREAK
from ..theme import category_label
from ..widgets.text_card import MeasuredLabel
from ..words import decided_where, spelled

#: Where the "why" answer goes in the detail's head: after the decision, before the reason.
DETAIL_SPLIT = "<!--why-->"
#: The panel before a message is selected.
DETAIL_HINT = ("<p style='color: palette(placeholder-text);'>Select a message in the table or on the strip: it shows here "
               "whole, with its decision, the reason, and the smallest change that would keep it.</p>")
PIN_HTML = ('<p><a href="pin">Pin this message</a> (Ctrl+K): send it whatever the policy decides, and see what it pushes out</p>')
UNPIN_HTML = '<p><a href="pin">Unpin this message</a> (Ctrl+K): let the policy decide it again</p>'


def pin_line(pinned: bool) -> str:
    """The pin link says what clicking it does now: a pinned message's link read "send it whatever
    the policy decides", which is what it already was."""
    return UNPIN_HTML if pinned else PIN_HTML


def decision_line(m: Any) -> str:
    """The decision, its zone when that says more ("dropped in evictable", but "summarised", not
    "summarised in summarised"), and its tokens with a real plural ("1 token", not "1 tokens")."""
    decision, zone = decided_where(m.decision.value, m.zone)
    where = f" in <i>{html.escape(zone)}</i>" if zone else ""
    return f"<b>{decision}</b>{where} — {counted(m.tokens, 'token')} ({m.sent_tokens:,} sent)"


SEARCHING_HTML = "<p><i>Searching for the smallest change that would keep it…</i></p>"


class DetailPanel:
    """The selected message and why it is (not) sent, for `MainWindow`."""

    vm: Any
    model: Any
    strip: Any
    shown_plan: Plan | None
    shown_session: Session | None
    selected: int | None

    def _build_detail(self) -> QSplitter:
        """The head (decision, "why", reason) over the message's body, in a splitter."""
        # The decision and the "why" answer change on every re-plan; the message body does not, and
        # laying out a long tool output again on each slider step would stall the drag.
        self.detail_head = MeasuredLabel()  # measured once per text and width: its scroll area asks on every re-plan
        self.detail_head.setWordWrap(True)
        self.detail_head.setTextFormat(Qt.TextFormat.RichText)
        self.detail_head.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.LinksAccessibleByMouse)
        self.detail_head.linkActivated.connect(self._detail_link)
        self.detail_head.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.detail_head.setContentsMargins(6, 2, 6, 2)
        self.detail = QTextBrowser()
        self.detail.setOpenExternalLinks(False)
        # Until a message is selected the head says what the panel is for (wrapped: the body's
        # placeholder was cut to "Select a message to see it" at 1024 px) and the empty body is
        # hidden (it left an empty box over the placeholder).
        self.detail_head.setText(DETAIL_HINT)
        self.detail.hide()
        # Head and body share the panel through a splitter, the head scrolling when a long
        # answer would otherwise squeeze the message out of sight on a small screen.
        self.detail_head_scroll = head_scroll = QScrollArea()
        # The answer is scrolled to once the head has its new height (the scroll range follows the text).
        self._why_scroll_pending = False
        head_scroll.verticalScrollBar().rangeChanged.connect(lambda *_: self._why_scroll_pending and self.scroll_to_why())
        head_scroll.verticalScrollBar().actionTriggered.connect(self._head_scrolled_by_user)
        head_scroll.setWidget(self.detail_head)
        head_scroll.setWidgetResizable(True)
        head_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        head_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        detail_box = QSplitter(Qt.Orientation.Vertical)
        detail_box.addWidget(head_scroll)
        detail_box.addWidget(self.detail)
        detail_box.setStretchFactor(0, 3)
        detail_box.setStretchFactor(1, 2)
        detail_box.setSizes([300, 200])  # scaled to the space it gets: three fifths for the decision and why
        detail_box.setChildrenCollapsible(False)
        # The message whose body the panel shows: the session itself, not its id (ids are reused once freed).
        self._detail_session: Session | None = None
        self._detail_index = -1
        self._detail_record: Any = None
        self._detail_head_html = ""
        self._why_html = ""
        # A re-plan asks "why" again only once the parameters settle: each search re-plans hundreds of times.
        self._why_timer = QTimer(self)
        self._why_timer.setSingleShot(True)
        self._why_timer.setInterval(250)
        self._why_timer.timeout.connect(self._request_why)
        return detail_box

    def _show_detail(self, index: int, replanned: bool = False) -> None:
        """Show message `index`: its body once, its decision whenever it changes, and the smallest
        change that would keep it (searched at once for a click, after a pause for a re-plan)."""
        if self.shown_plan is None or self.shown_session is None or index >= len(self.shown_plan.messages):
            return
        self.selected = index
        self.strip.select(index)
        m = self.shown_plan.messages[index]
        message = self.shown_session.messages[index]
        if self.shown_session is not self._detail_session or index != self._detail_index:
            self._detail_session, self._detail_index, self._detail_record = self.shown_session, index, None
            self.detail.show()
            # The tool calls once, as a list: `Message.text` renders them too, so the body is the other parts.
            other = "\n".join(filter(None, (part_text(p) for p in message.parts if not isinstance(p, ToolCallPart))))
            body = html.escape(other) or ("" if message.tool_calls else "<i>(no text)</i>")
            calls = "".join(f"<li><code>{html.escape(c.name)}({html.escape(c.arguments[:400])})</code></li>" for c in message.tool_calls)
            self.detail.setHtml((f"<p><b>Tool calls</b></p><ul>{calls}</ul>" if calls else "")
                                + (f"<pre style='white-space: pre-wrap'>{body}</pre>" if body else ""))
        searching = not m.sent and self.shown_session is self.vm.session
        if m != self._detail_record or replanned:
            # After a re-plan the answer belongs to the old parameters even when this message's
            # decision and reason did not change: never leave it on screen as if it were current.
            self._detail_record = m
            voice = self.model.voices[index] if index < len(self.model.voices) else ""
            who = role_shown(m.role, voice)
            self._detail_head_html = (
                f"<p style='font-size:large'><b>#{m.index} · {html.escape(who)} · {html.escape(category_label(str(m.category)))}</b></p>"
                + (f"<p><i>{html.escape(VOICE_MEANINGS[voice])}</i></p>" if who != m.role else "")
                + f"<p>{decision_line(m)}</p>"
                + DETAIL_SPLIT
                + f"<p>{html.escape(spelled(m.reason))}</p>"
                + self._detail_extras(m)
                + pin_line(f"#{m.index}" in self.vm.options.pins)
            )
            self._why_html = SEARCHING_HTML if searching else ""
            self._render_detail_head()
            if not replanned:  # a message newly selected is read from its top
                self._why_scroll_pending = False
                self.detail_head_scroll.verticalScrollBar().setValue(0)
        self.vm.cancel_explanation()
        if not searching:
            self._why_timer.stop()
        elif replanned:
            self._why_timer.start()
        else:
            self._request_why()

    def _request_why(self) -> None:
        """Ask only about the plan on screen: the view-model's latest session, selection in range."""
        self._why_timer.stop()
        plan = self.vm.plan
        if (self.selected is not None and self.shown_session is self.vm.session and plan is self.shown_plan
                and plan is not None and self.selected < len(plan.messages)):
            self.vm.request_explanation(self.selected)

    def why_pending(self) -> bool:
        """The selected message's "why" answer is asked for (or about to be) and not in yet."""
        return self._why_timer.isActive() or self._why_html == SEARCHING_HTML

    def _render_detail_head(self) -> None:
        """The decision, then at once the "why" answer (on a 720-pixel screen it was below the
        fold, under the reason and the pin link), then the rest."""
        head, _, rest = self._detail_head_html.partition(DETAIL_SPLIT)
        self.detail_head.setText(head + self._why_html + rest + "<hr>")

    def detail_text(self) -> str:
        """The detail panel as plain text: decision, reason, the "why" answer, then the message."""
        document = QTextDocument()
        head, _, rest = self._detail_head_html.partition(DETAIL_SPLIT)
        document.setHtml(head + self._why_html + rest)
        return document.toPlainText().replace(BREAK, "") + "\n" + self.detail.toPlainText()

    def _show_explanation(self, explanation: Explanation) -> None:
        if self.selected != explanation.message.index or explanation.message != self._detail_record:
            return  # an answer about another message, or about a plan no longer on screen
        text = describe(explanation).split("\n", 1)
        answer = "<br>".join(html.escape(spelled(line)) for line in text[1].split("\n")) if len(text) > 1 else ""
        # A parameter's name may break after its underscores: in a narrow panel one long name
        # otherwise widened the text past the panel's edge, cutting every line.
        answer = answer.replace("_", "_" + BREAK)
        self._why_html = f"<p style='color:#2ca02c'><b>What would keep it:</b> {answer}</p>" if answer else ""
        self._render_detail_head()
        if answer:  # now, and again once the label has its new height (`rangeChanged`)
            self._why_scroll_pending = True
            self.scroll_to_why()
            QTimer.singleShot(0, self.scroll_to_why)

    def why_span(self) -> tuple[float, float] | None:
        """Where the "What would keep it" answer sits in the detail's head: (top, bottom) in the
        head label's pixels, or None without an answer."""
        if not self._why_html or self._why_html == SEARCHING_HTML:
            return None
        head, _, _ = self._detail_head_html.partition(DETAIL_SPLIT)
        label = self.detail_head
        width = label.contentsRect().width()

        def height(text: str) -> float:
            document = QTextDocument()
            document.setDefaultFont(label.font())
            document.setTextWidth(width)
            document.setHtml(text)
            return document.size().height()

        top = label.contentsMargins().top()
        return top + height(head), top + height(head + self._why_html)

    def _head_scrolled_by_user(self, *_: object) -> None:
        """The user's own scrolling of the head wins over bringing the answer into view."""
        self._why_scroll_pending = False

    def scroll_to_why(self) -> None:
        """Bring the answer into view: in a narrow panel (1024 px) the message's title and its
        decision pushed it partly below the fold. As little scrolling as it takes: the answer's
        end in view, and its start, which wins when the answer is taller than the view."""
        span = self.why_span()
        if span is None:
            self._why_scroll_pending = False
            return
        top, bottom = int(span[0]), int(span[1] + 0.5)
        bar = self.detail_head_scroll.verticalScrollBar()
        view = self.detail_head_scroll.viewport().height()
        value = bar.value()
        if bottom > value + view:
            value = bottom - view
            # Not in the middle of a line: the head's first paragraph boundary at or past that point,
            # while the answer's start stays in view (the title was left cut in half at the top).
            value = next((stop for stop in self._head_stops() if value <= stop <= top), value)
        bar.setValue(min(value, top))

    def _head_stops(self) -> list[int]:
        """Where each paragraph of the head before the answer ends, in the head label's pixels."""
        head, _, _ = self._detail_head_html.partition(DETAIL_SPLIT)
        paragraphs = [p + "</p>" for p in head.split("</p>") if p.strip()]
        label = self.detail_head
        document = QTextDocument()
        document.setDefaultFont(label.font())
        document.setTextWidth(label.contentsRect().width())
        stops = []
        for k in range(1, len(paragraphs) + 1):
            document.setHtml("".join(paragraphs[:k]))
            stops.append(label.contentsMargins().top() + int(document.size().height() + 0.5))
        return stops

    def _detail_extras(self, m: Any) -> str:
        """How far the message missed the budget by, and the tool-call partner a broken pair needs.

        The miss is read from the reason sentence, which a pinned message keeps ("without it missy
        would have dropped it: 689 tokens did not fit in the 685 left"): for a message that is sent,
        "that much more room and it would be sent" contradicted the line above it. A pinned one is
        told what unpinning would do; any other sent one has no miss to tell."""
        extras: list[str] = []
        code = short_reason(m.reason, m.decision.value)
        if code.startswith("missed by"):
            tokens = f"{html.escape(code)} token{'s' if not code.endswith(' 1') else ''}"
            if not m.sent:
                extras.append(f"<b>{tokens}</b>: that much more room and it would be sent")
            elif m.code == "pinned":
                extras.append(f"<b>pinned</b>: unpinned, it would miss by {tokens.removeprefix('missed by ')} and not be sent")
        plan = self.shown_plan
        for orphan in plan.orphans if plan is not None else ():
            if orphan.index == m.index:
                link = f'<a href="#{orphan.partner}">#{orphan.partner}</a>' if orphan.partner is not None else "a partner not in the file"
                extras.append(f"<b>broken tool-call pair</b> with {link}: {html.escape(orphan.message)}")
            elif orphan.partner == m.index:
                extras.append(f'<b>broken tool-call pair</b>: <a href="#{orphan.index}">#{orphan.index}</a> is sent without this message')
        return "".join(f"<p>{e}</p>" for e in extras)

    def _detail_link(self, href: str) -> None:
        if href == "pin":
            self.toggle_pin()
        elif href.startswith("#") and href[1:].isdigit():
            self.select_message(int(href[1:]))

    def toggle_pin(self) -> None:
        """Pin the selected message (sent whatever the policy decides; the plan says what it pushed out)."""
        if self.selected is None or self.vm.session is None:
            return
        pinned = self.vm.toggle_pin(self.selected)
        self.statusBar().showMessage(f"#{self.selected} {'pinned: it is sent whatever the policy decides' if pinned else 'unpinned'}"
                                     f" ({len(self.vm.options.pins)} pinned)", 5000)
