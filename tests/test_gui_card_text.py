"""A parameter change at 10,000 messages is drawn within a frame (issue 22): the cards' rich text
from one document of its own (`CardText`), the donut repainting what changed, the reason filter
re-worded in place, a card's unchanged room asking for no layout. Each is held to what it replaced:
QLabel's measures and picture, a whole repaint of the donut, a refilled box."""

from __future__ import annotations

import dataclasses
import html
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from PySide6.QtCore import QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QColor, QImage, QPainter  # noqa: E402

from .hypothesis_budget import examples  # noqa: E402
from .test_gui_replan_frame import _LayoutRequests, card_on_page  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = str(ROOT / "sample_sessions" / "support_chat.yaml")

WORDS = ["cut", "at", "#12", "trace", "evict", "result", "“kubectl", "context”", "·", "and", "1,409", "more", "x" * 40]


@st.composite
def card_texts(draw) -> str:  # type: ignore[no-untyped-def]
    """Rich text of the kind the cards show: bold heads, links, line breaks, escaped words."""
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=30))
        text = " ".join(html.escape(w) for w in words)
        if draw(st.booleans()):
            text = f"<b>{text}</b>"
        if draw(st.booleans()):
            n = draw(st.integers(0, 9999))
            text += f' <a href="#{n}">#{n}</a>'
        lines.append(text)
    return "<br>".join(lines)


def _label_like(card_label):  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QLabel

    label = QLabel()
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
    label.setFont(card_label.font())
    return label


@settings(max_examples=examples(60), deadline=None)
@given(text=card_texts(), widths=st.lists(st.integers(40, 1400), min_size=1, max_size=4))
def test_card_text_measures_and_paints_as_qlabel(qapp, text: str, widths: list[int]) -> None:  # type: ignore[no-untyped-def]
    """The height at every width is QLabel's, and so is the picture at a width (the reference: the
    label the cards had)."""
    from ctxviz.gui.widgets.text_card import CardText

    card = CardText()
    label = _label_like(card)
    card.setText(text)
    label.setText(text)
    for width in widths:
        assert card.heightForWidth(width) == label.heightForWidth(width), width
    width = widths[-1]
    height = card.heightForWidth(width)
    pictures = []
    for widget in (card, label):
        widget.resize(width, height)
        image = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(QColor("white"))
        widget.render(image, QPoint(0, 0))
        pictures.append(image)
    assert pictures[0] == pictures[1]


def test_card_text_links_open_by_mouse_and_by_keyboard(qtbot) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QLineEdit, QVBoxLayout, QWidget

    from ctxviz.gui.widgets.text_card import CardText

    page = QWidget()
    qtbot.addWidget(page)
    layout = QVBoxLayout(page)
    before = QLineEdit()
    card = CardText()
    card.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse | Qt.TextInteractionFlag.LinksAccessibleByKeyboard)
    after = QLineEdit()
    for w in (before, card, after):
        layout.addWidget(w)
    page.resize(400, 200)
    page.show()
    qtbot.waitExposed(page)
    card.setText('<b>Lost:</b> <a href="#3">#3</a> “first” · <a href="#17">#17</a> “second”')
    assert [href for _, _, href in card.links()] == ["#3", "#17"]
    assert card.accessibleName().startswith("Lost: #3")
    opened: list[str] = []
    card.linkActivated.connect(opened.append)
    # The mouse: a click on the second link opens it; the pointer is a hand over it.
    start, end, _ = card.links()[1]
    layout_ = card._document.documentLayout()
    cursor_rect = None
    for x in range(0, card.width()):
        if layout_.anchorAt(QPointF(x, 5)) == "#17":
            cursor_rect = x
            break
    assert cursor_rect is not None
    qtbot.mouseMove(card, QPoint(cursor_rect + 2, 5))
    assert card.cursor().shape() == Qt.CursorShape.PointingHandCursor
    qtbot.mouseClick(card, Qt.MouseButton.LeftButton, pos=QPoint(cursor_rect + 2, 5))
    assert opened == ["#17"]
    qtbot.mouseClick(card, Qt.MouseButton.LeftButton, pos=QPoint(1, 5))  # "Lost:" is no link
    assert opened == ["#17"]
    # The keyboard: Tab into the card reaches its first link, Tab again the next, Enter opens it,
    # and Tab past the last link leaves the card for the next widget.
    before.setFocus()
    qtbot.waitUntil(before.hasFocus)
    qtbot.keyClick(before, Qt.Key.Key_Tab)
    assert card.hasFocus() and card._focused_link == 0
    qtbot.keyClick(card, Qt.Key.Key_Return)
    assert opened == ["#17", "#3"]
    qtbot.keyClick(card, Qt.Key.Key_Tab)
    assert card.hasFocus() and card._focused_link == 1
    qtbot.keyClick(card, Qt.Key.Key_Enter)
    assert opened == ["#17", "#3", "#17"]
    qtbot.keyClick(card, Qt.Key.Key_Tab)
    assert after.hasFocus()


def test_a_card_given_the_same_room_asks_for_no_layout(qtbot) -> None:  # type: ignore[no-untyped-def]
    """A forecast coming in sets the next-compaction card's cap again: the same cap lays nothing out,
    another one does (the card takes its new height)."""
    page, card = card_on_page(qtbot, 500)
    card._set_text("<br>".join(f"line {i}" for i in range(12)))
    card.set_room(300)
    qtbot.wait(20)
    watcher = _LayoutRequests()
    page.installEventFilter(watcher)
    card.set_room(300)
    card.set_cap(None)
    qtbot.wait(20)
    assert watcher.seen == 0
    card.set_cap(80)
    qtbot.wait(20)
    assert watcher.seen >= 1 and card.height() == 80
    page.removeEventFilter(watcher)


@settings(max_examples=examples(25), deadline=None)
@given(first=st.floats(0.05, 2.0), second=st.floats(0.05, 2.0), fresh=st.integers(0, 40))
def test_the_donut_repainted_where_a_replan_changed_it_is_the_donut_painted_whole(qapp, first: float, second: float, fresh: int) -> None:  # type: ignore[no-untyped-def]
    """After a re-plan the donut repaints the ring and the legend lines that changed: what is on
    screen then is what a whole repaint of the new plan draws."""
    from ctxviz.engine.planner import plan_session
    from ctxviz.engine.policies import get_policy
    from ctxviz.gui.widgets.budget_pie import BudgetPie
    from ctxviz.io.loaders import load_session

    session = load_session(SAMPLE)
    defaults = get_policy("missy").default_params()
    plans = []
    for share, tail in ((first, 16), (second, fresh)):
        total = max(defaults.system_reserve + defaults.tool_definitions_reserve, int(defaults.total * share))
        plans.append(plan_session(session, "missy", dataclasses.replace(defaults, total=total, fresh_tail_count=tail), None, None, None, None))
    pie = BudgetPie()
    pie.resize(643, 236)
    screen = QImage(pie.size(), QImage.Format.Format_ARGB32_Premultiplied)
    pie.set_plan(plans[0])
    pie.render(screen, QPoint(0, 0))  # on screen: the first plan, whole
    updates = []
    pie.update = lambda *area: updates.append(area)  # type: ignore[method-assign, assignment]
    pie.set_plan(plans[1])
    painter = QPainter(screen)
    for area in updates:  # what a re-plan repaints, over what was on screen
        from PySide6.QtCore import QRect
        from PySide6.QtGui import QRegion

        rect = QRect(*area) if len(area) == 4 else (area[0] if area else pie.rect())
        pie.render(painter, rect.topLeft(), QRegion(rect))
    painter.end()
    whole = QImage(pie.size(), QImage.Format.Format_ARGB32_Premultiplied)
    pie.render(whole, QPoint(0, 0))
    assert screen == whole


def test_a_replan_that_keeps_the_reserves_lines_repaints_the_ring_and_the_lines_that_changed(qapp) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QRect

    from ctxviz.engine.planner import plan_session
    from ctxviz.engine.policies import get_policy
    from ctxviz.gui.widgets.budget_pie import BudgetPie
    from ctxviz.io.loaders import load_session

    session = load_session(SAMPLE)
    defaults = get_policy("missy").default_params()
    a, b = (plan_session(session, "missy", dataclasses.replace(defaults, total=n), None, None, None, None) for n in (30000, 27000))
    pie = BudgetPie()
    pie.resize(643, 236)
    pie.set_plan(a)
    rows_before = pie.legend_rows()[0]
    updates = []
    pie.update = lambda *area: updates.append(QRect(*area) if len(area) == 4 else area[0])  # type: ignore[method-assign, assignment]
    pie.set_plan(b)
    rows_after = pie.legend_rows()[0]
    changed = sum(1 for x, y in zip(rows_before, rows_after, strict=True) if x != y)
    assert 0 < changed < len(rows_after)  # History and the free space moved; the reserves did not
    ring = pie._ring_area(pie._ring()[0])
    assert updates[0] == ring and len(updates) == 1 + changed and all(not r.intersects(ring) for r in updates[1:])


@settings(max_examples=examples(25), deadline=None)
@given(shares=st.lists(st.floats(0.05, 2.0), min_size=2, max_size=4))
def test_the_reason_filter_reworded_in_place_is_the_filter_filled_anew(qapp, shares: list[float]) -> None:  # type: ignore[no-untyped-def]
    from ctxviz.engine.planner import plan_session
    from ctxviz.engine.policies import get_policy
    from ctxviz.gui.widgets.reason_groups import ReasonFilter
    from ctxviz.io.loaders import load_session

    session = load_session(SAMPLE)
    policy = get_policy("missy")
    defaults = policy.default_params()
    codes = policy.reason_codes
    kept = ReasonFilter()
    for share in shares:
        total = max(defaults.system_reserve + defaults.tool_definitions_reserve, int(defaults.total * share))
        plan = plan_session(session, "missy", dataclasses.replace(defaults, total=total), None, None, None, None)
        kept.set_plan(codes, plan)
        fresh = ReasonFilter()
        fresh.set_plan(codes, plan)
        items = [(kept.itemText(i), kept.itemData(i), kept.itemData(i, Qt.ItemDataRole.ToolTipRole)) for i in range(kept.count())]
        assert items == [(fresh.itemText(i), fresh.itemData(i), fresh.itemData(i, Qt.ItemDataRole.ToolTipRole)) for i in range(fresh.count())]
        assert kept.code() == fresh.code()
