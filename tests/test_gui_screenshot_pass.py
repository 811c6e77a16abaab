"""What the screenshot pass of issue 24 found, each measured in the window as it lays out.

Screenshots of real logs of every format at 1024x700, 1280x720 and 1920x1080 showed: the parameter
panel cut "model_auto_compact_token_limit · trigger" to "… · tr" at 1024 px (a Codex log); the
lost card capped at 104 pixels and scrolling at 1920x1080 with half the window to spare (and 104
pixels for a two-line "Every message is sent."); a "Next" tab under a policy that never compacts,
holding only "missy does not compact"; and the detail panel an empty box over a placeholder cut
to "Select a message to see it" before anything was selected."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint  # noqa: E402
from PySide6.QtWidgets import QLabel, QScrollArea  # noqa: E402

DATA = Path(__file__).parent / "data"
#: A real Codex rollout: codex-compaction's parameters have the longest names of any policy.
CODEX_LOG = DATA / "real" / "codex" / "codemie-rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
#: A real Claude Code log with a recorded compaction: summarised messages before it.
CLAUDE_COMPACT = DATA / "heldout" / "claude_code" / "agentlogs-compact.jsonl"
#: A real Claude Code log whose every message is sent under claude-code: a lost card of two lines.
CLAUDE_ALL_SENT = DATA / "real" / "claude_code" / "spotter-4d5611e5.jsonl"
SUPPORT = Path(__file__).parent.parent / "sample_sessions" / "support_chat.yaml"


from .gui_windows import settle, window_at  # noqa: E402


def test_at_1024_px_every_parameter_name_and_its_role_are_in_view(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1024, 700), CODEX_LOG)
    try:
        assert win.vm.policy == "codex-compaction"
        viewport = win.params_panel.viewport()
        labels = [win.params.layout_.itemAt(row, win.params.layout_.ItemRole.LabelRole).widget()
                  for row in range(win.params.layout_.rowCount())]
        assert any("model_auto_compact_token_limit" in label.text().replace("\u200b", "") for label in labels)
        for label in labels:
            assert isinstance(label, QLabel) and label.isVisible()
            left = label.mapTo(viewport, QPoint(0, 0)).x()
            # Inside the panel (nothing past its right edge) and as tall as its wrapped text.
            assert left >= 0 and left + label.width() <= viewport.width(), label.text()
            assert label.height() >= label.heightForWidth(label.width()), label.text()
        # A name that fits stays on one line (a word-wrapped label asked for ~100 pixels and broke those too).
        short = next(label for label in labels if label.text().replace("\u200b", "").startswith("model_context_window"))
        assert short.height() < 2 * short.fontMetrics().lineSpacing()
    finally:
        win.vm.shutdown()


def test_at_1920x1080_the_lost_card_shows_all_of_its_text_and_no_more(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1920, 1080), SUPPORT)
    try:
        card = win.lost_card
        assert not win.cards_beside and card.isVisible() and card.found is not None and not card.found.nothing
        qtbot.waitUntil(lambda: card.retention is not None, timeout=30000)
        qtbot.wait(50)
        scroll = card.findChild(QScrollArea)
        # Every line in view: nothing to scroll (it scrolled within 104 pixels, "Largest not sent" cut).
        # (The sample's card is seven lines at this width: taller than the old cap.)
        assert scroll.verticalScrollBar().maximum() == 0
        assert card.label.height() <= scroll.viewport().height()
        assert card.height() > 104
        # And the charts still get their room below it.
        assert card.mapTo(win, QPoint(0, 0)).y() + card.height() <= win.pie.mapTo(win, QPoint(0, 0)).y()
        # A card of two lines is two lines tall, not 104 pixels.
        with qtbot.waitSignal(win.vm.planReady, timeout=30000):
            win.open_path(str(CLAUDE_ALL_SENT))
        settle(qtbot, win)
        assert card.found is not None and card.found.nothing
        qtbot.waitUntil(lambda: card.height() <= max(card.minimumHeight(), scroll.widget().heightForWidth(scroll.viewport().width()) + 10) + 2, timeout=5000)
        assert card.height() < 104 and scroll.verticalScrollBar().maximum() == 0
    finally:
        win.vm.shutdown()


def test_no_next_tab_under_a_policy_that_never_compacts(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1024, 700), SUPPORT)
    try:
        tabs = win.cards_tabs
        assert win.cards_beside
        page = win.card_pages[1]
        index = tabs.indexOf(page.page)
        assert tabs.tabText(index) == "Next"
        assert win.next_card.result is not None and win.next_card.forecast is None  # missy: no forecast, one grey line
        assert not tabs.isTabVisible(index)
        assert tabs.isTabVisible(tabs.indexOf(win.card_pages[0].page))  # the lost card keeps its tab
        # A policy that compacts brings the tab back, with its forecast; one that does not hides it again.
        with qtbot.waitSignal(win.vm.planReady, timeout=30000):
            win.policy_box.setCurrentText("claude-code")
        settle(qtbot, win)
        assert win.next_card.forecast is not None and tabs.isTabVisible(index)
        tabs.setCurrentIndex(index)
        with qtbot.waitSignal(win.vm.planReady, timeout=30000):
            win.policy_box.setCurrentText("missy")
        settle(qtbot, win)
        assert not tabs.isTabVisible(index) and tabs.currentIndex() != index and tabs.isTabVisible(tabs.currentIndex())
    finally:
        win.vm.shutdown()


@pytest.mark.parametrize("size", [(1024, 700), (1920, 1080)])
def test_before_a_selection_the_detail_panel_says_what_it_is_for_in_full(qtbot, tmp_path, size) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, size, CLAUDE_ALL_SENT)
    try:
        assert win.selected is None
        head = win.detail_head
        # No empty box over an empty body: the head says what the panel shows, wrapped, whole.
        assert not win.detail.isVisible() and head.isVisible()
        assert "Select a message" in head.text() and head.wordWrap()
        viewport = head.parentWidget()
        assert head.heightForWidth(viewport.width()) <= viewport.height()
        win.select_message(3)
        assert win.detail.isVisible() and win.detail_text().startswith("#3")
    finally:
        win.vm.shutdown()


def test_at_1024_px_the_search_box_keeps_its_first_words_and_the_count_is_whole(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1024, 700), CODEX_LOG)
    try:
        search, count = win.search, win.count_label
        # The box showed "S…": the count beside it kept room for "100,000 of 100,000" in every session.
        assert search.isVisible() and search.width() >= search.fontMetrics().horizontalAdvance("Search (Ctrl+F)") + 20
        assert count.text() == "172 of 172" and count.width() >= count.fontMetrics().horizontalAdvance(count.text())
        # Filtered, the count still fits (its width is the session's, set once, not per re-plan).
        win.decision_filter.setCurrentText("dropped")
        assert count.width() >= count.fontMetrics().horizontalAdvance(count.text())
        # Whole within the filters' row, which spans the table and the detail panel (it was held to
        # the table's width, which left the panel 157 pixels: tests/test_gui_narrow_detail.py).
        row = win.filter_row
        assert count.mapTo(win, QPoint(0, 0)).x() + count.width() <= row.mapTo(win, QPoint(0, 0)).x() + row.width() + 4
    finally:
        win.vm.shutdown()


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_the_table_shows_each_decision_and_reason_whole(qtbot, tmp_path, size) -> None:  # type: ignore[no-untyped-def]
    from ctxviz.engine.reasons import short

    win = window_at(qtbot, tmp_path, size, CLAUDE_COMPACT)
    try:
        table, plan = win.table, win.vm.plan
        metrics, viewport = table.fontMetrics(), table.viewport()
        # "summarized" read "summa…" and the reason "since …" (1280) even beside 500 idle pixels (1920).
        for column, texts in ((6, {m.decision.value for m in plan.messages}), (8, {short(m) for m in plan.messages}),
                              (7, {m.zone for m in plan.messages}), (2, {win.model.data(win.model.index(r, 2)) for r in range(win.model.rowCount())})):
            widest = max(metrics.horizontalAdvance(t) for t in texts)
            assert table.columnWidth(column) >= widest + 6, (column, texts)
        # The reason is in view without scrolling (the zone may scroll out on a narrow window, not the reason).
        assert table.columnViewportPosition(8) + table.columnWidth(8) <= viewport.width()
    finally:
        win.vm.shutdown()


def test_a_compaction_at_the_end_of_the_timeline_keeps_its_label_inside_the_chart(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1280, 720), CLAUDE_COMPACT)
    try:
        with qtbot.waitSignal(win.vm.timelineReady, timeout=60000):
            win.tabs.setCurrentIndex(1)
        qtbot.wait(100)
        ((_, line, _tick),) = win.timeline.compaction_marks
        view = win.timeline.plot.getPlotItem().vb
        label = line.label
        assert "compacted (manual)" in label.toPlainText()
        # The log's compaction is at the last message: its label ran off the chart ("compacted (manua").
        box, chart = label.mapRectToScene(label.boundingRect()), view.sceneBoundingRect()
        assert chart.left() <= box.left() and box.right() <= chart.right(), (box, chart)
        # And it hangs from its point: centred on it, its first line ran above a short chart.
        assert chart.top() <= box.top(), (box, chart)
    finally:
        win.vm.shutdown()


@pytest.mark.parametrize("size", [(1280, 720), (1400, 900)])
def test_compaction_labels_cover_neither_each_other_nor_a_tick(qtbot, tmp_path, size) -> None:  # type: ignore[no-untyped-def]
    """tugtool-rewind-branch compacts three times, the last two 12 calls apart: the tick at each
    compaction's tokens before hid its label's first letter ("ompacted (manual)"), and the last
    label, set left of its line, covered the sizes of the one before."""
    from PySide6.QtCore import QPointF, QRectF

    from ctxviz.gui.widgets.timeline_marks import TICK_SIZE

    win = window_at(qtbot, tmp_path, size, DATA / "real" / "claude_code" / "tugtool-rewind-branch.jsonl")
    try:
        with qtbot.waitSignal(win.vm.timelineReady, timeout=60000):
            win.tabs.setCurrentIndex(1)
        qtbot.wait(100)
        marks = win.timeline.compaction_marks
        assert len(marks) == 3
        vb = win.timeline.plot.getPlotItem().vb
        labels = [line.label.mapRectToScene(line.label.boundingRect()) for _c, line, _tick in marks]
        ticks = []
        for c, line, _tick in marks:
            at = vb.mapViewToScene(QPointF(line.value(), c.pre_tokens))
            ticks.append(QRectF(at.x() - TICK_SIZE / 2, at.y() - 2, TICK_SIZE, 4))
        for k, label in enumerate(labels):
            assert not any(label.intersects(tick) for tick in ticks), (k, label, ticks)
            assert not any(label.intersects(other) for j, other in enumerate(labels) if j != k), (k, labels)
            assert vb.sceneBoundingRect().contains(label), (k, label, vb.sceneBoundingRect())
    finally:
        win.vm.shutdown()


def test_compare_shows_both_strips_whole_and_says_when_nothing_differs(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1280, 720), CLAUDE_COMPACT)
    try:
        win.tabs.setCurrentIndex(2)
        compare = win.compare
        compare.policy.setCurrentText("missy")
        with qtbot.waitSignal(win.vm.compareReady, timeout=30000):
            compare.request()
        qtbot.wait(100)
        a, b = compare.shown
        assert all(x.decision == y.decision for x, y in zip(a.messages, b.messages, strict=True))
        # Each policy counts with its own counter: A's strip (349 tokens) was cut at B's width (241).
        for strip in (compare.strip_a, compare.strip_b):
            right = strip.getPlotItem().vb.viewRange()[0][1]
            assert right >= strip.item._bounds.width(), (right, strip.item._bounds.width())
        # No difference: a sentence, not an empty table under its headers and an empty lane.
        same = compare.findChild(QLabel, "compare-same")
        assert same is not None and same.isVisible() and "No message is decided differently" in same.text()
        assert not compare.table.isVisible() and not compare.lane.isVisible()
        assert "marked in the lane" not in compare.summary.text()
        # A comparison that differs brings the table and the lane back.
        compare.overrides.setText("total=4050 fresh_tail_count=0")
        with qtbot.waitSignal(win.vm.compareReady, timeout=30000):
            compare.request()
        assert compare.table.topLevelItemCount() > 0 and compare.table.isVisible() and compare.lane.isVisible() and not same.isVisible()
    finally:
        win.vm.shutdown()


def test_every_timeline_legend_entry_is_inside_the_chart(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1280, 720), CODEX_LOG)
    try:
        with qtbot.waitSignal(win.vm.timelineReady, timeout=120000):
            win.tabs.setCurrentIndex(1)
        qtbot.waitUntil(lambda: len(win.timeline.band_samples) >= 4, timeout=60000)  # the composition's entries too
        qtbot.wait(200)
        for plot in (win.timeline.plot, win.timeline.answers_plot):
            legend = plot.getPlotItem().legend
            for _, label in legend.items:
                # Codex's trigger entry was 470 pixels: four fixed 240-pixel columns ran it, and the
                # entries after it, past the chart's right edge.
                box = label.item.mapRectToScene(label.item.boundingRect())
                assert 0 <= box.left() and box.right() <= plot.width(), (label.text, box, plot.width())
        # The trigger is named by its level, not in a 470-pixel entry of its parameters' names that
        # took a column of its own (the legend had five rows over a chart 60 pixels tall).
        legend = win.timeline.plot.getPlotItem().legend
        assert "trigger (244,800 tokens)" in [label.text for _, label in legend.items]  # the level, not the sidebar's marks
        # At 720 pixels the legend sits beside the chart, one entry a line (issue 24: under the chart
        # its rows left the data 0-40 pixels), and the chart keeps its data area.
        assert win.timeline.legends_beside() and legend.columnCount == 1
        assert win.timeline.plot.getPlotItem().vb.height() >= 120
    finally:
        win.vm.shutdown()


def test_compare_says_no_cache_model_rather_than_a_zero_price(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    swe = DATA / "real" / "swe_agent" / "pydicom__pydicom-1458.traj"  # a trajectory that names no model
    win = window_at(qtbot, tmp_path, (1280, 720), swe)
    try:
        assert not win.vm.session.model
        win.tabs.setCurrentIndex(2)
        win.compare.policy.setCurrentText("missy")
        with qtbot.waitSignal(win.vm.compareCosted, timeout=60000):
            win.compare.request()
        text = win.compare.costs.text()
        # It read "input $0.0000 with (no model named)'s prompt caching, cache hits 0%".
        assert "$0.0000" not in text and "cache hits 0%" not in text
        assert text.count("no cache model for this model (no model named)") == 2
        # The timeline said of it "none named: the catalogue has no cache price for it".
        with qtbot.waitSignal(win.vm.timelineReady, timeout=60000):
            win.tabs.setCurrentIndex(1)
        qtbot.waitUntil(lambda: "Prompt caching" in win.timeline.answers_label.text(), timeout=30000)
        said = win.timeline.answers_label.text()
        assert "no cache model for this model (the log names no model)" in said and "no cache price for it" not in said
    finally:
        win.vm.shutdown()


def test_a_reason_with_a_figure_is_sized_to_its_text_not_elided_to_its_first_word(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ctxviz.engine.reasons import short

    win = window_at(qtbot, tmp_path, (1280, 720), SUPPORT)
    try:
        with qtbot.waitSignal(win.vm.planReady, timeout=30000):
            win.vm.set_policy("categories")
        plan = win.vm.plan
        texts = {short(m) for m in plan.messages}
        # Every dropped row read "over …": the column was sized to the code's label, not to the
        # category and maximum the column lifts from the sentence.
        assert "over SYSTEM_OUTPUT 7,500" in texts
        widest = max(win.table.fontMetrics().horizontalAdvance(t) for t in texts)
        assert win.table.columnWidth(8) >= widest + 6
    finally:
        win.vm.shutdown()


def test_the_app_spells_a_summarised_message_one_way_in_table_filter_and_detail(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1280, 720), CLAUDE_COMPACT)
    try:
        model, plan = win.model, win.vm.plan
        summarised = [m.index for m in plan.messages if m.decision.value == "summarized"]
        assert summarised
        shown = {model.data(model.index(r, 6)) for r in range(model.rowCount())}
        assert "summarised" in shown and "summarized" not in shown  # the strip's legend and the cards say "summarised"
        win.decision_filter.setCurrentText("summarised")
        assert [model.message_index(r) for r in range(model.rowCount())] == summarised
        win.select_message(summarised[0])
        qtbot.wait(50)
        assert "<b>summarised</b>" in win._detail_head_html and "summarized" not in win._detail_head_html
    finally:
        win.vm.shutdown()


def test_the_timeline_says_why_its_figures_differ_from_the_plan_in_view(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    win = window_at(qtbot, tmp_path, (1920, 1080), Path(__file__).parent.parent / "sample_sessions" / "coding_agent.yaml")
    try:
        with qtbot.waitSignal(win.vm.planReady, timeout=30000):
            win.vm.set_policy("supyagent")
        with qtbot.waitSignal(win.vm.answersReady, timeout=60000):
            win.tabs.setCurrentIndex(1)
        qtbot.wait(100)
        tl = win.timeline
        assert tl.versus.isVisible() and "Both are right" in tl.versus.text()
        # Under the retention and caching lines it was scrolled out of the capped box even at 1920x1080.
        top = tl.versus.mapTo(tl.words.widget(), QPoint(0, 0)).y() - tl.words.verticalScrollBar().value()
        assert 0 <= top and top + tl.versus.height() <= tl.words.viewport().height() + 2
    finally:
        win.vm.shutdown()
