"""The overview's first answer: what the plan does not send, the user's own words first.

One line of totals (a dropped system prompt first, how many messages and tokens, whose, where the
cut fell and by how much it missed, tool results cleared and messages truncated), then the user
messages left out (the user's own words only: harness text and observations are counted apart),
what was lost ranked (what the user asked, then what was used again; tool-output debris folded),
and the largest messages left out, each a link to the message. Session text is untrusted: every
piece is escaped before it reaches the rich-text label.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtWidgets import QWidget

from ...engine.lost import Lost, LostMessage, lost
from ...engine.plan import Plan
from ...engine.session import Session
from ...engine.wording import counted
from ..theme import WARNING
from .text_card import TextCard

SHOWN = 4


def _link(m: LostMessage, with_tokens: bool = False) -> str:
    size = f" {counted(m.tokens, 'token')}" if with_tokens else ""
    return f'<a href="#{m.index}">#{m.index}</a>{html.escape(size)} “{html.escape(m.first_line)}”'


def retention_html(retention: Any) -> str:
    """The retention line: the share of the session's anchors still sent, and the user's
    instructions lost (each a link to where it was said)."""
    if retention is None or not retention.anchors:
        return ""
    instructions = (f"user instructions {retention.instructions_kept} of {retention.instructions} ({retention.instruction_score:.0%})"
                    if retention.instructions else "no user instruction in the session")
    text = f"<b>Retention:</b> {retention.kept:,} of {retention.anchors:,} anchors still sent ({retention.score:.0%}); {instructions}"
    lost = [a for a in retention.lost if a.kind == "instruction" and getattr(a, "voice", "user") == "user"]
    if lost:
        shown = " · ".join(f'<a href="#{a.first_index}">#{a.first_index}</a> {html.escape(a.label(60))}' for a in lost[:SHOWN])
        text += f"<br><b>Instructions lost:</b> {shown}" + (f" · and {len(lost) - SHOWN:,} more" if len(lost) > SHOWN else "")
    ranks = getattr(retention, "ranks", {})
    needed = [a for a in retention.lost if a.id in ranks and ranks[a.id].tier < 3]
    debris = sum(1 for a in retention.lost if a.id in ranks and ranks[a.id].tier == 3)
    if needed or debris:
        shown = " · ".join(f'<a href="#{a.first_index}">#{a.first_index}</a> {html.escape(a.label(50))} ({html.escape(ranks[a.id].why)})'
                           for a in needed[:SHOWN])
        rest = [f"{len(needed) - SHOWN:,} more" if len(needed) > SHOWN else "", f"{debris:,} from tool output, folded" if debris else ""]
        against = " (measured against ctxviz's offline stand-in summary)" if getattr(retention, "stand_in", "") else ""
        text += f"<br><b>Lost, most needed first{against}:</b> {shown or 'nothing the user asked or the agent used again'}"
        text += "".join(f" · and {x}" for x in rest if x)
    return text


def card_html(found: Lost, retention: Any = None) -> str:
    if found.nothing:
        return "<b>Every message is sent.</b>" + (f"<br>{retention_html(retention)}" if retention is not None else "")
    head = html.escape(found.headline())
    if found.cut is not None:
        head = head.replace(f"cut at #{found.cut}", f'cut at <a href="#{found.cut}">#{found.cut}</a>')
    lines = [f'<b style="color:{WARNING}">{head}</b>']
    if found.stand_in:
        lines.append(f"<i>The summary is ctxviz's offline stand-in ({html.escape(found.stand_in)}): what it loses is measured against that "
                     "text, not the agent's own summary.</i>")
    if found.user_requests:
        shown = " · ".join(_link(m) for m in found.user_requests[:SHOWN])
        more = found.users_lost - len(found.user_requests[:SHOWN])
        lines.append(f"<b>User messages not sent:</b> {shown}" + (f" · and {more:,} more" if more > 0 else ""))
    harness = sum(n for role, n in found.by_role.items() if role in ("harness", "observation"))
    if harness:
        lines.append(f"<span>Not the user's words, not sent: {harness:,} harness or observation turn{'s' if harness != 1 else ''} "
                     "(reminders, command output, tool observations sent as user turns)</span>")
    if retention is not None and retention_html(retention):
        lines.append(retention_html(retention))
    if found.largest:
        lines.append("<b>Largest not sent:</b> " + " · ".join(_link(m, True) for m in found.largest[:SHOWN]))
    return "<br>".join(lines)


class LostCard(TextCard):
    """The card; as tall as its text within the room the window gives it (`TextCard`)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.found: Lost | None = None
        self.retention: Any = None
        self.plan: Plan | None = None

    def set_plan(self, session: Session, plan: Plan, found: Lost | None = None) -> None:
        """Show what `plan` does not send: `found` when the caller has it already (the view-model
        makes it on its worker), else worked out here."""
        self.plan = plan
        found = lost(plan, session) if found is None else found
        if found == self.found:
            return  # a re-plan that leaves out the same messages repaints nothing
        self.found = found
        self.retention = None  # the previous plan's: the new one's follows from a worker
        self._set_text(card_html(found))

    def set_retention(self, plan: Plan, retention: Any) -> None:
        if self.plan is None or plan.messages is not self.plan.messages or self.found is None:
            return
        self.retention = retention
        self._set_text(card_html(self.found, retention))
