"""A parameter change at 10,000 messages is drawn within a frame (issue 22): what each view does
less of, held to what it showed before. The user lane's ticks are placed without pyqtgraph's
per-point style lookup; what the lost card and the reason filter show of a plan is made on the
plan worker; the table announces the rows that changed; a card is laid out again only when its
height changes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QEvent, QObject  # noqa: E402

from ctxviz.engine.lost import lost  # noqa: E402
from ctxviz.gui.widgets.lost_card import card_html  # noqa: E402

SAMPLE = str(Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml")


def _change_total(qtbot, win, total: int) -> None:  # type: ignore[no-untyped-def]
    """A typed value in the budget's box, through the worker, as a user makes it."""
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.params.editors["total"][1].setValue(total)


def _lane_points(lane) -> list[int]:  # type: ignore[no-untyped-def]
    return [int(p.data()) for p in lane.points()]


def test_a_replan_that_moves_the_cut_moves_the_user_lanes_ticks_and_each_is_drawn(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    strip = win.strip
    before = _lane_points(strip.user_lane_lost)
    total = win.vm.params.total
    _change_total(qtbot, win, total // 2)
    plan = win.vm.plan
    users = [m for m in plan.messages if m.role == "user"]
    lost_now = _lane_points(strip.user_lane_lost)
    assert lost_now == [m.index for m in users if not m.sent] and lost_now != before  # half the budget loses more of them
    assert _lane_points(strip.user_lane) == [m.index for m in users if m.sent]
    for lane in (strip.user_lane, strip.user_lane_lost):
        # Every tick has its place in the symbol atlas (a tick with none is not drawn), the same as
        # pyqtgraph's own per-point lookup gives the item's one style.
        rects = lane.data["sourceRect"]
        assert len(rects) and (rects["w"] > 0).all() and len({tuple(r) for r in rects.tolist()}) == 1
        style = [(lane.opts["symbol"], lane.opts["size"], lane.opts["pen"], lane.opts["brush"])]
        assert tuple(rects[0]) == tuple(lane.fragmentAtlas[style][0])
    # Back to the first budget: the first plan's ticks again.
    _change_total(qtbot, win, total)
    assert _lane_points(strip.user_lane_lost) == before


def test_the_lost_card_and_the_reason_filter_show_the_plan_on_screen_made_on_the_worker(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    vm = win.vm
    _change_total(qtbot, win, vm.params.total // 2)
    plan, session = vm.plan, vm.session
    found = vm.prepared(plan, "lost")
    assert found is not None and found == lost(plan, session)  # made by the worker, the same as made here
    assert win.lost_card.found == found and win.lost_card.label.text() == card_html(found)
    counts = Counter(plan.reason_codes)
    assert vm.prepared(plan, "reason_counts") == counts
    shown = {win.reason_filter.itemData(i): win.reason_filter.itemText(i) for i in range(1, win.reason_filter.count())}
    assert set(counts) <= set(shown) and all(shown[code].endswith(f"({n:,})") for code, n in counts.items())
    # A plan the worker did not make (a synchronous plan) is worked out by the views themselves.
    vm.set_param("total", vm.params.total + 1)
    vm.wait()
    fresh = vm.plan_now()
    assert vm.prepared(fresh, "lost") is None and win.lost_card.found == lost(fresh, session)


def test_a_replan_tells_the_table_the_rows_that_changed_and_it_shows_the_new_decisions(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    model = win.model
    old = win.vm.plan
    changed: list[tuple[int, int]] = []
    resets: list[bool] = []
    model.dataChanged.connect(lambda top, bottom, *_: changed.append((top.row(), bottom.row())))
    model.modelReset.connect(lambda: resets.append(True))
    model.shown_rows = None  # compare every row, not only those the view shows at this size
    _change_total(qtbot, win, win.vm.params.total // 2)
    new = win.vm.plan
    differ = [i for i in range(len(new.messages)) if new.messages[i] != old.messages[i]]
    assert differ and not resets  # a re-plan of the same session announces rows, it resets nothing
    announced = {r for top, bottom in changed for r in range(top, bottom + 1)}
    assert set(differ) <= announced and len(announced) < len(new.messages)
    codes = new.reason_codes
    for i in differ:
        assert model.index(i, 6).data() == new.messages[i].decision.value
    # The reason filter lists the changed rows' codes, and filters to them.
    code = codes[differ[0]]
    win.reason_filter.set_code(code)
    assert [model.message_index(r) for r in range(model.rowCount())] == [i for i, c in enumerate(codes) if c == code]


class _LayoutRequests(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    def eventFilter(self, obj, event) -> bool:  # type: ignore[no-untyped-def]  # noqa: N802
        if event.type() == QEvent.Type.LayoutRequest:
            self.seen += 1
        return False


def card_on_page(qtbot, width: int):  # type: ignore[no-untyped-def]  # noqa: ANN201
    """A `TextCard` at the top of a shown page `width` wide (a stretch under it), as the overview holds one."""
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from ctxviz.gui.widgets.text_card import TextCard

    page = QWidget()
    qtbot.addWidget(page)
    layout = QVBoxLayout(page)
    card = TextCard()
    layout.addWidget(card)
    layout.addStretch(1)
    page.resize(width, 400)
    page.show()
    return page, card


def test_a_card_is_laid_out_again_only_when_its_height_changes(qtbot) -> None:  # type: ignore[no-untyped-def]
    page, card = card_on_page(qtbot, 600)
    watcher = _LayoutRequests()
    page.installEventFilter(watcher)
    card._set_text("<b>one line</b>")
    qtbot.wait(20)
    height = card.height()
    watcher.seen = 0
    card._set_text("<b>another line</b>")  # the same height: nothing around the card moves
    qtbot.wait(20)
    assert watcher.seen == 0 and card.height() == height
    card._set_text("<br>".join(f"line {i}" for i in range(4)))  # taller: the page makes room for it
    qtbot.wait(20)
    assert watcher.seen >= 1 and card.height() > height
    card._set_text("<b>one line</b>")  # and gives it back
    qtbot.wait(20)
    assert card.height() == height
    page.removeEventFilter(watcher)


def test_a_plan_back_from_the_worker_is_shown_in_a_later_round_of_the_event_loop(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    """What was already due (a drag's next step, the user's input) is served before the plan is
    drawn, instead of after it and the next plan both (a slider drag's longest stall)."""
    from PySide6.QtCore import QTimer

    win = open_window(SAMPLE)
    vm = win.vm
    order: list[str] = []
    vm.planReady.connect(lambda *_: order.append("plan"))
    QTimer.singleShot(0, lambda: order.append("due before"))
    vm._planned.emit(vm._generation, vm.session, vm.plan)  # as the worker posts it (here on the GUI thread: delivered at once)
    assert order == []
    qtbot.waitUntil(lambda: "plan" in order, timeout=5000)
    assert order == ["due before", "plan"] and win.shown_plan is vm.plan


def test_the_donut_legend_follows_each_replan_and_its_size(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    pie = win.pie
    before = pie.legend_lines()
    rows_before = pie.legend_rows()
    _change_total(qtbot, win, win.vm.params.total // 2)
    # Worked out afresh for the new plan, not the last one's remembered.
    assert pie.legend_lines() != before and pie.total == win.vm.plan.totals.budget
    assert pie.legend_entries() == pie._legend_entries(False) and pie.legend_width() == pie._legend_width()
    pie.resize(pie.width(), 160)  # a shorter pie: its rows are worked out again for the room it has
    assert pie.legend_rows() == pie._legend_rows()
    assert pie.legend_rows() != rows_before or pie.legend_rows()[1] <= rows_before[1]


def test_a_cards_text_is_measured_once_per_text_and_width(qtbot) -> None:  # type: ignore[no-untyped-def]
    """The lost card's label answers its scroll area, the card and the layout from one measurement,
    and measures again for a new text or width (the same heights as QLabel's own)."""
    from PySide6.QtWidgets import QLabel

    from ctxviz.gui.widgets.text_card import TextCard

    card = TextCard()
    qtbot.addWidget(card)
    plain = QLabel()
    plain.setTextFormat(card.label.textFormat())
    plain.setWordWrap(True)
    for text in ("<b>short</b>", "<b>" + " ".join(["longer words that wrap"] * 12) + "</b>"):
        card._set_text(text)
        plain.setText(text)
        for width in (120, 300, 900, 300):
            assert card.label.heightForWidth(width) == plain.heightForWidth(width)
    # The last text's heights are kept per width (the card's own width among them), and nothing of the text before.
    assert {120, 300, 900} <= set(card.label._heights[1]) and card.label._heights[0][0] == plain.text()


def test_a_cards_new_text_is_laid_out_as_a_fresh_card_lays_it_out(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A text that would not move anything is not laid out again by the scroll area (`CardText.setText`),
    and every text, the same height or not, a piece wider than the card or not, ends up where a card
    given only that text puts it: the label's size, the scroll range and the card's height."""
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from ctxviz.gui.widgets.text_card import TextCard

    def page_with_card(room: int) -> tuple[QWidget, TextCard]:
        page = QWidget()
        qtbot.addWidget(page)
        layout = QVBoxLayout(page)
        card = TextCard()
        card.set_room(room)
        layout.addWidget(card)
        layout.addStretch(1)
        page.resize(500, 400)
        page.show()
        return page, card

    def geometry(card: TextCard) -> tuple[object, ...]:
        bar = card.scroll.verticalScrollBar()
        return card.label.size(), card.scroll.viewport().size(), bar.maximum(), bar.isVisible(), card.height()

    words = "<b>cut at</b> <a href='#12'>#12</a> “trace evict result” · and {} more"
    texts = [words.format(n) for n in (1, 22, 333, 4444)]  # the same lines, other figures
    texts += ["<br>".join(texts), "<br>".join(texts[:3]), "<br>".join(texts), words.format(5)]  # taller, shorter (past the cap)
    texts += ["x" * 150, words.format(6)]  # one line as wide as the card, then one wider than it
    for room in (400, 60):  # a card as tall as its text, and one that scrolls
        pages = [page_with_card(room)]  # (kept: a page let go of takes its card with it)
        card = pages[0][1]
        dropped = 0
        for text in texts:
            card._set_text(text)
            dropped += card.label.placed_as_before
            qtbot.wait(30)
            pages.append(page_with_card(room))
            fresh = pages[-1][1]
            fresh._set_text(text)
            qtbot.wait(30)
            assert geometry(card) == geometry(fresh), (room, text)
        assert dropped >= 3  # the figures alone changed: those were not laid out again
