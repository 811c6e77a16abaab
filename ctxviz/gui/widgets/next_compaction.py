"""The overview's "Next compaction" card: when the agent will compact, what compacting now would
drop, and what the last recorded compaction did drop.

Every figure is `engine.forecast.forecast`'s for the session, policy and parameters on screen (the
same as `ctxviz watch` prints): calls left with their range, the trigger and how it was set, the
method and its error on this log's past compactions, and the facts a compaction would take out of
the context, ranked (what the user asked first). A user's request or instruction that would be
lost turns the card's frame red. Under a policy that never compacts the card is one grey line
saying so. Session text is untrusted: every piece is escaped before it reaches the rich-text label.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QWidget

from ...engine.forecast import Drop, Forecast
from ...engine.ranking import TIERS
from ...engine.wording import counted, noun
from ..theme import WARNING
from .text_card import TextCard

SHOWN = 4


def _items(drop: Drop, limit: int = SHOWN) -> str:
    """The first ranked facts, each a link to where it was first said."""
    parts = []
    for a in drop.anchors[:limit]:
        r = drop.ranks[a.id]
        parts.append(f'<a href="#{a.first_index}">#{a.first_index}</a> {html.escape(a.label(56))} '
                     f'<span style="color: palette(placeholder-text);">({html.escape(TIERS[r.tier])}: {html.escape(r.why)})</span>')
    more = len(drop.anchors) - limit
    return " · ".join(parts) + (f" · and {more:,} more" if more > 0 else "")


def _drop_line(drop: Drop) -> str:
    line = (f"{drop.messages:,} message{'s' if drop.messages != 1 else ''}, {counted(drop.tokens, 'token')} no longer sent; "
            f"{counted(len(drop.anchors), 'fact')} no longer {'reaches' if len(drop.anchors) == 1 else 'reach'} the model")
    if drop.summary != "recorded":
        line += f" <i>(measured against {html.escape(drop.summary)}, not the agent's own summary)</i>"
    return line


def when_html(f: Forecast) -> str:
    w = f.when
    if w is None:
        return f"<b>Next compaction ({html.escape(f.policy)}):</b> no token trigger; it compacts by its own rule"
    if w.calls == 0:
        head = f'<b style="color:{WARNING}">Next compaction ({html.escape(f.policy)}): before the next request</b>'
    elif w.calls is None:
        head = f"<b>Next compaction ({html.escape(f.policy)}):</b> calls left unknown ({html.escape(w.growth.unknown)})"
    else:
        plural = "s" if w.calls != 1 else ""
        spread = f"at least {w.low:,}, no upper bound: a recent call added nothing" if w.high is None else f"range {w.low:,}-{w.high:,}"
        head = f"<b>Next compaction ({html.escape(f.policy)}): in about {w.calls:,} call{plural}</b> ({spread})"
    share = f" ({w.level / w.trigger:.0%})" if w.trigger else ""
    return head + f" · count {w.level:,} of the trigger {w.trigger:,}{share}, {w.room:,} tokens of room"


def card_html(f: Forecast) -> str:
    lines = [when_html(f)]
    w = f.when
    method = []
    if w is not None:
        method.append(f"trigger: {html.escape(w.trigger_how)}")
        if w.growth.increases:
            g = w.growth
            method.append(f"growth per call: median {g.median:,.0f} tokens over the last {len(g.increases):,} {noun(len(g.increases), 'call')}, "
                          f"{min(g.increases):,}-{max(g.increases):,} for the range")
    method.append(html.escape(f.error_sentence()))
    lines.append("<small>" + "; ".join(method) + "</small>")
    drop = f.next_drop
    if drop is not None:
        lost = drop.user_losses
        if lost:
            lines.append(f'<b style="color:{WARNING}">⚠ Compacting now would lose {len(lost):,} thing{"s" if len(lost) != 1 else ""} you asked.</b> '
                         + _drop_line(drop))
        else:
            lines.append("<b>If it compacted now:</b> " + _drop_line(drop))
        if drop.anchors:
            lines.append("<b>It would drop, most needed first:</b> " + _items(drop))
    for note in f.notes:
        lines.append(f"<small>{html.escape(note)}</small>")
    last = f.last_compaction
    if last is not None:
        lines.append("<b>The last recorded compaction dropped</b> (with the log's own summary): " + _drop_line(last)
                     + (" — " + _items(last, 3) if last.anchors else ""))
    return "<br>".join(lines)


class NextCompactionCard(TextCard):
    """The card; `set_result` takes a gui.live.ForecastResult. As tall as its text within the
    room the window gives it (`TextCard`: a cap of 118 pixels made it scroll at 1920x1080)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("next-compaction")
        self.result: Any = None
        self.warning = False
        self.hide()  # until a session's first forecast

    @property
    def forecast(self) -> Forecast | None:
        return self.result.forecast if self.result is not None else None

    def set_result(self, result: Any) -> None:
        self.result = result
        f = result.forecast
        if f is None:  # not a policy that compacts: one line, no frame
            self._style(False, framed=False)
            # One line, as thin as a line: at 1024x700 every pixel goes to the message table.
            self.layout().setContentsMargins(8, 0, 8, 0)
            self.scroll.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            self.setMinimumHeight(0)
            self.set_cap(self.fontMetrics().lineSpacing() + 2)
            self._set_text(f'<small style="color: palette(placeholder-text);">Next compaction: {html.escape(result.why_not)}</small>')
        else:
            self._style(bool(f.next_drop is not None and f.next_drop.user_losses), framed=True)
            self.layout().setContentsMargins(8, 4, 8, 4)
            self.scroll.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
            self.setMinimumHeight(46)
            self.set_cap(None)
            self._set_text(card_html(f))
        self.show()

    def clear(self) -> None:
        self.result = None
        self.hide()

    def _style(self, warning: bool, framed: bool) -> None:
        self.warning = warning
        self.setFrameShape(QFrame.Shape.StyledPanel if framed else QFrame.Shape.NoFrame)
        sheet = f"QFrame#next-compaction {{ border: 2px solid {WARNING}; border-radius: 3px; }}" if warning else ""
        if sheet != self.styleSheet():  # setting a style sheet restyles the card's every child (6 ms a forecast while following)
            self.setStyleSheet(sheet)
