"""The Overview tab: the notes and the cards (what was lost, the next compaction) over the donut
and the bars, the message strip with its range summary, and the table beside the detail panel;
a welcome page before a session is open.

A mixin of `MainWindow` (gui/main_window.py); the table and the detail panel are built by
`window/plan_table.py` and `window/detail.py` and laid out here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import (
    QLabel,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ...engine.checks import counts_unseen
from ...engine.fill import fill
from ...engine.plan import Plan
from ...engine.policies import get_policy
from ...engine.ranges import range_summary
from ...engine.session import Session
from ...engine.vocabulary import trigger_level
from ..safe import plain_label
from ..status import notes_count, reported_turn_text, unseen_text
from ..theme import CATEGORY_COLORS, CATEGORY_LABELS
from ..widgets.budget_pie import BudgetPie
from ..widgets.category_bars import CategoryBars
from ..widgets.lost_card import LostCard
from ..widgets.message_strip import USER_LOST, MessageStrip, sent_span
from ..widgets.next_compaction import NextCompactionCard
from ..widgets.notes import NotesPanel
from ..widgets.session_browser import SessionBrowser
from ..widgets.strip_overview import StripOverview
from ..widgets.text_card import CARD_MIN_ROOM
from ..widgets.welcome import WelcomePanel

#: A window less tall than this folds the notes and puts the cards beside the donut (`place_cards`).
SHORT_WINDOW = 800
#: Above the charts the lost card and the next-compaction card may each take up to this fraction
#: (1/n) of the window's height.
CARD_SHARE = 4
#: The detail panel's least width beside the table: a sentence a line, not a word.
DETAIL_LEAST = 280
#: The table's rows the cards above the charts leave in view, together (`fit_cards`).
TABLE_ROWS = 8
QWIDGETSIZE_MAX = (1 << 24) - 1


class _CardPage(QObject):
    """A card's tab beside the donut (on a short window): the card on a page of its own, the tab
    shown while the card is (each card hides itself when it has nothing to say)."""

    def __init__(self, card: QWidget, title: str, tip: str, tabs: QTabWidget,
                 says_something: Callable[[], bool] = lambda: True) -> None:
        super().__init__(tabs)
        self.card, self.title, self.tip, self.tabs = card, title, tip, tabs
        # A card may be shown with nothing worth a tab: the next-compaction card under a policy
        # that never compacts is one grey line ("missy does not compact"), a tab holding only that.
        self.says_something = says_something
        self.page = QWidget()
        self.page.setObjectName(f"card-page-{title.lower()}")
        self.layout = QVBoxLayout(self.page)
        self.layout.setContentsMargins(2, 2, 2, 2)
        self.layout.addStretch(0)  # below a card that stops at its own cap
        self.hidden = card.isHidden()
        card.installEventFilter(self)

    def enter(self, position: int) -> None:
        self.hidden = self.card.isHidden()
        self.layout.insertWidget(0, self.card, 1)  # as tall as the page allows (a card's own cap still holds)
        index = self.tabs.insertTab(position, self.page, self.title)
        self.tabs.setTabToolTip(index, self.tip)
        self.follow()

    def leave(self) -> None:
        self.layout.removeWidget(self.card)
        self.tabs.removeTab(self.tabs.indexOf(self.page))
        self.card.setVisible(not self.hidden)

    def follow(self) -> None:
        """The tab shown while the card is, and has something to say."""
        index = self.tabs.indexOf(self.page)
        if index >= 0:
            shown = not self.hidden and self.says_something()
            self.tabs.setTabVisible(index, shown)
            if not shown and self.tabs.currentIndex() == index:  # never left open on a hidden tab
                self.tabs.setCurrentIndex(next(i for i in range(self.tabs.count()) if self.tabs.isTabVisible(i)))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.card and event.type() in (QEvent.Type.ShowToParent, QEvent.Type.HideToParent):
            self.hidden = event.type() == QEvent.Type.HideToParent
            self.follow()
        return False


class _Refit(QObject):
    """Calls `react` when `widget` has `event` (once per event): the cards' room is the Overview
    page's height, which the window's own resize event does not know yet (the page is laid out
    after it, or later still while another tab is shown), and their shares follow their text."""

    def __init__(self, widget: QWidget, event: QEvent.Type, react: Callable[[], None]) -> None:
        super().__init__(widget)
        self.event, self.react = event, react
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == self.event:
            self.react()
        return False


def share_room(needs: list[int], least: list[int], room: int) -> list[int]:
    """Each its need when all fit in `room`; else one level for all (each at least its least, a
    card needing less than the level keeps its need), the level as high as `room` allows. Fixed
    shares gave the lost card three lines while the next-compaction card kept room it did not use."""
    if sum(needs) <= room:
        return list(needs)
    low, high = 0, max(needs)
    while low < high:  # the highest level whose heights fit
        level = (low + high + 1) // 2
        if sum(min(n, max(m, level)) for n, m in zip(needs, least, strict=True)) <= room:
            low = level
        else:
            high = level - 1
    return [min(n, max(m, low)) for n, m in zip(needs, least, strict=True)]


def strip_legend_html() -> str:
    """One line under the strip: the category colours (the same everywhere) and how decisions are drawn."""
    swatches = " ".join(f'<span style="color:{CATEGORY_COLORS[c]};">■</span>&nbsp;{CATEGORY_LABELS[c]}'
                        for c in ("system", "context", "dialog", "system_output", "error"))
    return (f"<small>{swatches} · faint: not sent · hatched: summarised · part-filled: truncated · "
            f'<span style="color:{USER_LOST};">■</span> user msg. not sent · a search dims the rest</small>')


class OverviewTab:
    """The Overview's charts, strip, cards and layout, for `MainWindow`."""

    vm: Any
    shown_plan: Plan | None
    shown_session: Session | None
    splitters: dict[str, QSplitter]
    notes_button: Any
    tabs: Any
    filter_row: QWidget

    def _build_charts(self) -> None:
        """The donut, the bars and the strip (before the table: the strip's overview follows it)."""
        self.pie = BudgetPie()
        self.bars = CategoryBars()
        self.strip = MessageStrip()
        self.strip_overview = StripOverview(self.strip)

    def _build_overview(self, table_box: QWidget, detail_box: QSplitter) -> None:
        """The Overview laid out (`overview_stack`: the welcome page, then the session's page)."""
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.pie)
        # Beside the donut: the bars; on a short window the cards too, as tabs before them
        # (`place_cards`). With one page the tab bar hides itself.
        self.cards_tabs = QTabWidget()
        self.cards_tabs.setObjectName("cards-tabs")
        self.cards_tabs.setDocumentMode(True)
        self.cards_tabs.setTabBarAutoHide(True)
        self.bars_page = self.bars
        self.cards_tabs.addTab(self.bars, "Categories")
        self.cards_tabs.setTabToolTip(0, "Sent and all tokens per category")
        top.addWidget(self.cards_tabs)
        top.setSizes([560, 440])
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.addWidget(table_box)
        lower.addWidget(detail_box)
        lower.setSizes([820, 420])
        lower.setChildrenCollapsible(False)
        # The detail panel keeps a readable column (at 1024x700 the filters' ~600 pixels above the
        # table left it 157, a word a line), and the filters span the table and the panel together.
        detail_box.setMinimumWidth(DETAIL_LEAST)
        table_area = QWidget()
        table_area.setObjectName("table-area")
        tl = QVBoxLayout(table_area)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.filter_row)
        tl.addWidget(lower, 1)
        overview = QSplitter(Qt.Orientation.Vertical)
        overview.addWidget(top)
        strip_box = QWidget()
        sb = QVBoxLayout(strip_box)
        sb.setContentsMargins(0, 0, 0, 0)
        sb.setSpacing(0)
        sb.addWidget(self.strip, 1)
        sb.addWidget(self.strip_overview)
        # The span selected on the strip (Shift+drag), summed up: tokens, roles, tool pairs.
        self.range_label = plain_label()
        self.range_label.setObjectName("strip-range")
        self.range_label.setContentsMargins(6, 0, 6, 0)
        self.range_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.range_label.setWordWrap(True)
        self.range_label.setToolTip("Shift+drag on the strip selects a span of messages; Esc on the strip clears it")
        self.range_label.hide()
        self.strip.rangeChanged.connect(lambda _first, _last: self._show_range())
        sb.addWidget(self.range_label)
        self.strip_legend = QLabel(strip_legend_html())
        self.strip_legend.setTextFormat(Qt.TextFormat.RichText)
        self.strip_legend.setWordWrap(True)  # one line at 1280 px; two at 1024 rather than a window wider than the screen
        self.strip_legend.setContentsMargins(6, 0, 6, 2)
        sb.addWidget(self.strip_legend)
        # The splitter may not squeeze the strip, its overview and a two-line legend into each other.
        strip_box.setMinimumHeight(self.strip.minimumHeight() + self.strip_overview.height() + 2 * self.fontMetrics().lineSpacing() + 6)
        overview.addWidget(strip_box)
        overview.addWidget(table_area)
        overview.setSizes([190, 130, 540])
        # A taller window gives its extra height to the table first (at 1024x700 it showed four rows).
        overview.setStretchFactor(0, 0)
        overview.setStretchFactor(1, 0)
        overview.setStretchFactor(2, 1)
        self.overview = overview
        # What the provider's log says beside the plan, and the notes, above the charts (not in the
        # splitter: a layout gives them the height their wrapped text needs).
        self.notes_panel = NotesPanel()
        overview_page = QWidget()
        self.overview_layout = ol = QVBoxLayout(overview_page)
        ol.setContentsMargins(0, 0, 0, 0)
        ol.setSpacing(2)
        self.lost_card = LostCard()
        self.lost_card.messageClicked.connect(self.select_message)
        self.next_card = NextCompactionCard()
        self.next_card.messageClicked.connect(self.select_message)
        # The provider's fill and the notes, what was lost, the next compaction: one column of cards.
        self.cards = QWidget()
        self.cards.setObjectName("cards")
        self.cards_layout = QVBoxLayout(self.cards)
        self.cards_layout.setContentsMargins(0, 0, 0, 0)
        self.cards_layout.setSpacing(2)
        for card in (self.notes_panel, self.lost_card, self.next_card):
            self.cards_layout.addWidget(card)
        # On a short window each card is a tab beside the donut, shown while the card has something to say.
        self.card_pages = [_CardPage(card, title, tip, self.cards_tabs) for card, title, tip in (
            (self.lost_card, "Lost", "What the plan does not send, the user's own words first"),
            (self.next_card, "Next", "The next compaction: when, and what it would lose"),
            (self.notes_panel, "Fill", "The fill figure to quote, and the notes from reading and planning the file"))]
        self.card_pages[1].says_something = lambda: self.next_card.forecast is not None
        self.cards_beside = False
        ol.addWidget(self.cards)
        ol.addWidget(overview, 1)
        # Before a session is open, the overview is a welcome page (samples, recent files), not bare axes.
        self.welcome = WelcomePanel()
        self.welcome.openRequested.connect(self.open_path)
        self.browser = SessionBrowser()
        self.welcome.set_browser(self.browser)
        self.overview_stack = QStackedWidget()
        self.overview_stack.addWidget(self.welcome)
        self.overview_stack.addWidget(overview_page)
        self.charts_splitter = top
        self.table_splitter = lower
        _Refit(self.overview_stack, QEvent.Type.Resize, self.fit_cards)
        # And the charts' and table's split follows the overview's own height (the cards' room
        # changes it after the window's resize: from 1400x900 to 1400x1000 the splitter gave the
        # donut and the strip what the cards left, and the table kept 5.8 rows).
        _Refit(overview, QEvent.Type.Resize, lambda: QTimer.singleShot(0, self._fit_overview_once_laid_out))
        # New text in a card: its share follows (a card's height asked is capped by its room, so a
        # longer text changes nothing the layout sees). Once per turn of the event loop.
        self._refit_timer = QTimer(self.overview_stack)
        self._refit_timer.setSingleShot(True)
        self._refit_timer.setInterval(0)
        self._refit_timer.timeout.connect(self.fit_cards)
        for changed in (self.lost_card.textChanged, self.next_card.textChanged, self.notes_panel.contentChanged):
            changed.connect(self._refit_timer.start)

    def place_cards(self, beside: bool) -> None:
        """Above the charts (a tall window), or beside the donut as tabs before the bars (a window
        under `SHORT_WINDOW` pixels): above, the three cards took the height of five table rows, and
        a real Claude Code log at 1024x700 showed three. Beside the donut, what was lost is the
        first tab and shown; a card with nothing to say has no tab."""
        if beside == self.cards_beside:
            return
        self.cards_beside = beside
        for position, page in enumerate(self.card_pages):
            if beside:
                self.cards_layout.removeWidget(page.card)
                page.enter(position)
            else:
                page.leave()
                self.cards_layout.insertWidget(position, page.card)
        self.cards.setVisible(not beside)
        self.fit_cards()
        self.cards_tabs.setCurrentIndex(0)

    def fit_cards(self) -> None:
        """Above the charts the lost card and the next-compaction card are each as tall as their
        text, up to a quarter of the window (they scroll beyond), and the three cards together
        leave the table TABLE_ROWS rows (`cards_room`, shared by `share_room`); in its own tab a
        card takes the page."""
        quarter = QWIDGETSIZE_MAX if self.cards_beside else max(CARD_MIN_ROOM, self.height() // CARD_SHARE)
        cards = [self.notes_panel, self.lost_card, self.next_card]
        if self.cards_beside:
            rooms = [QWIDGETSIZE_MAX] * 3
        else:
            shown = [card for card in cards if not card.isHidden()]
            needs = [self.notes_panel.sizeHint().height(), min(quarter, self.lost_card.content_height()),
                     min(quarter, self.next_card.content_height())]
            least = [self.notes_panel.minimumSizeHint().height(), self.lost_card.minimumHeight(), self.next_card.minimumHeight()]
            room = self.cards_room() - self.cards_layout.spacing() * max(0, len(shown) - 1)
            given = iter(share_room([needs[k] for k, c in enumerate(cards) if not c.isHidden()],
                                    [least[k] for k, c in enumerate(cards) if not c.isHidden()], room))
            rooms = [next(given) if not card.isHidden() else quarter for card in cards]
        self.notes_panel.setMaximumHeight(rooms[0])
        self.lost_card.set_room(min(quarter, rooms[1]))
        self.next_card.set_room(min(quarter, rooms[2]))

    def cards_room(self) -> int:
        """The height the cards above the charts may take together: the Overview's page less the
        least the donut and the strip take and TABLE_ROWS rows of the table with its filters and
        header (at 1400x900 a real Codex log's cards, a quarter of the window each, took 386 pixels
        and left the table 1.6 rows)."""
        page = self.overview_stack.height()
        if page <= 0:
            return QWIDGETSIZE_MAX
        handles = 2 * self.overview.handleWidth() + 3 * self.overview_layout.spacing()
        least = self.pie.minimumHeight() + self.overview.widget(1).minimumHeight() + handles + self.table_least()
        return max(3 * CARD_MIN_ROOM // 2, page - least)

    def table_least(self) -> int:
        """The height of TABLE_ROWS rows of the table with its filters, header, frame and scroll bar
        (those as laid out, once they are)."""
        table, box = self.table, self.overview.widget(2)
        chrome = box.height() - table.viewport().height() if table.viewport().height() > 0 and box.height() > 0 else (
            self.filter_row.sizeHint().height() + box.layout().spacing() + table.horizontalHeader().sizeHint().height()
            + 2 * table.frameWidth() + table.horizontalScrollBar().sizeHint().height())
        return chrome + TABLE_ROWS * table.verticalHeader().defaultSectionSize()

    def _forecast_shown(self, *_: object) -> None:
        """A new forecast on the card (after the card took it): its tab follows what it says."""
        self.card_pages[1].follow()

    def show_cards(self) -> None:
        """The notes in view (their tab, on a short window)."""
        if self.cards_beside:
            self.cards_tabs.setCurrentWidget(self.card_pages[-1].page)

    def _fit_overview_once_laid_out(self) -> None:
        if not self._overview_fitted:
            self.overview.blockSignals(True)
            self.fit_overview()
            self.overview.blockSignals(False)

    def _overview_moved(self, *_: object) -> None:
        self._overview_fitted = True

    def fit_overview(self) -> None:
        """Split the overview's height: the donut and the strip at what they need (a little more
        on a tall window), the table the rest, so a 700-pixel window shows more than four rows."""
        total = sum(self.overview.sizes())
        if total <= 0:
            return
        main = self.splitters["main"]
        width = sum(main.sizes())
        if width > 0:  # the parameters take less of a narrow window (340 of 1024 pixels squeezed the charts)
            side = min(340, max(250, int(width * 0.24)))
            main.setSizes([side, width - side])
        pie_least, strip_least = self.pie.minimumHeight(), self.overview.widget(1).minimumHeight()
        pie = min(max(int(total * 0.3), pie_least), 280)
        strip = strip_least + max(0, min(60, int((total - 560) * 0.15)))
        # The table's TABLE_ROWS rows first: the donut and the strip grow past their least only
        # with what those leave (a donut at 30 % left a real Codex log's table 7.7 rows at 1400x900).
        spare = max(0, total - self.table_least() - pie_least - strip_least - 2 * self.overview.handleWidth())
        pie = pie_least + min(pie - pie_least, spare)
        strip = strip_least + min(strip - strip_least, spare - (pie - pie_least))
        self.overview.setSizes([pie, strip, max(total - pie - strip, 1)])

    def toggle_strip_width(self) -> None:
        self.strip.set_by_tokens(not self.strip.by_tokens)

    def zoom_to_cut(self) -> None:
        """The strip around the newest message not sent: twenty messages either side."""
        plan = self.shown_plan
        cut = plan.last_unsent if plan is not None else None
        if cut is not None:
            self.strip.zoom_to(max(0, cut - 20), min(len(plan.messages) - 1, cut + 20))  # type: ignore[union-attr]

    def zoom_to_sent(self) -> None:
        """The strip from the first to the last message sent, the leading system message left out."""
        span = sent_span(self.shown_plan) if self.shown_plan is not None else None
        if span is not None:
            self.strip.zoom_to(*span)

    def zoom_all(self) -> None:
        if self.shown_plan is not None and self.shown_plan.messages:
            self.strip.zoom_to(0, len(self.shown_plan.messages) - 1)

    def _show_range(self) -> None:
        """The strip's selected span in one line (hidden without one): what a DevTools range says."""
        span, plan, session = self.strip.selected_range, self.shown_plan, self.shown_session
        if span is None or plan is None or session is None or span[1] >= len(plan.messages):
            self.range_label.hide()
            return
        self.range_label.setText(f"Span {range_summary(plan, session, *span).sentence()}")
        self.range_label.show()

    def _trigger(self, plan: Plan) -> int | None:
        """The token count at which the plan's policy acts (engine.vocabulary), for the donut's verdict."""
        if plan.policy != self.vm.policy or self.vm.session is None:
            return None
        try:
            return trigger_level(get_policy(plan.policy), self.vm.params, self.vm.session)
        except Exception:  # a policy that cannot say (a plugin): no trigger mark, the plan's own verdict
            return None

    def _unseen(self, plan: Plan | None = None) -> int:
        """The estimate of what the log does not record: a fact of the file, whatever turn is shown
        (the latest plan's), save in an excerpt that starts mid-conversation, whose context before
        the first call after its compaction also held the conversation before the file (as the
        replay counts it: `Reported.restart_call`)."""
        latest = self.vm.plan
        found = latest.reported if latest is not None else None
        if found is None:
            return 0
        return found.unseen_after if plan is None else found.unseen_at(len(plan.messages) - 1)

    def plan_notes(self, session: Session, plan: Plan, latest: bool) -> tuple[str, ...]:
        """The notes of the plan on screen: a plan of the whole file has the loader's already; the
        context at a turn of the replay gets them here (they are about the file, not the turn)."""
        return plan.notes if latest else (*session.notes, *plan.notes)

    def _show_notes(self, session: Session, plan: Plan, latest: bool) -> None:
        notes = self.plan_notes(session, plan, latest)
        facts = []
        if latest and plan.reported is not None:  # the one fill figure to quote, the others explained beside it
            facts.append(fill(plan, session).sentence())
        elif self.vm.session is not None:  # the context at a turn: the call made after it
            full = self.vm.session.messages
            turn = len(session.messages) - 1
            after = full[turn + 1] if 0 <= turn + 1 < len(full) else None
            if after is not None and after.usage is not None and after.usage.window_fill:
                facts.append(reported_turn_text(turn, after.usage.window_fill, plan.totals.used))
        facts.append(unseen_text(self._unseen(plan), counts_unseen(plan)))
        self.notes_panel.set_content(facts, notes)
        count = notes_count(notes)
        self.notes_button.setText(count)
        self.notes_button.setVisible(bool(count))

    def show_notes(self) -> None:
        self.tabs.setCurrentIndex(0)
        self.show_cards()
        self.notes_panel.expand(True)
