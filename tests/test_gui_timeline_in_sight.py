"""What the Timeline draws stays in sight. A compaction's label keeps off the data where it can:
on a real Claude Code log whose chart is zoomed to its data (the trigger and budget "above the
chart"), the label "compacted (manual) / 26,239 → 1,442 tokens" hung at the top of the chart,
over the last calls the provider reported and the tokens-sent line beside them. And the user
instructions' retention line shows where it lies on the anchors' line."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPointF, Qt  # noqa: E402

from . import gui_windows  # noqa: E402

CLAUDE_LOG = Path(__file__).parent / "data" / "real" / "claude_code" / "tugtool-compact-native.jsonl"


SAMPLE = Path(__file__).parent.parent / "sample_sessions" / "claude_code_autocompact.jsonl"


def samples_in_scene(vb, item, per_segment: int = 60) -> list[QPointF]:  # type: ignore[no-untyped-def]
    """Points along a drawn line (its vertices and between them), in scene coordinates."""
    xs, ys = (list(map(float, values)) for values in item.getData())
    points = []
    for k in range(len(xs)):
        if k == 0:
            points.append((xs[0], ys[0]))
            continue
        points += [(xs[k - 1] + (xs[k] - xs[k - 1]) * t / per_segment, ys[k - 1] + (ys[k] - ys[k - 1]) * t / per_segment)
                   for t in range(1, per_segment + 1)]
    return [vb.mapViewToScene(QPointF(x, y)) for x, y in points]


@pytest.mark.parametrize(("path", "policy", "size"), [(CLAUDE_LOG, None, (1024, 700)), (CLAUDE_LOG, None, (1440, 900)),
                                                      (SAMPLE, "codex-compaction", (1440, 900))], ids=["cc-1024", "cc-1440", "sample-codex"])
def test_a_compaction_label_covers_none_of_the_charts_lines(qtbot, tmp_path, path, policy, size) -> None:  # type: ignore[no-untyped-def]
    """And under codex-compaction the sample's label "compacted (auto) / 170,251 tokens" lay on
    the tokens not sent (the right-hand scale's dashed line)."""
    win = gui_windows.window_at(qtbot, tmp_path, size, path)
    try:
        if policy is not None:
            with qtbot.waitSignal(win.vm.planReady, timeout=30000):
                win.vm.set_policy(policy)
        with qtbot.waitSignal(win.vm.timelineReady, timeout=120000):
            win.tabs.setCurrentIndex(1)
        qtbot.wait(300)
        view = win.timeline
        vb = view.plot.getPlotItem().vb
        assert view.compaction_marks
        series = {item.name(): item for item in view.plot.getPlotItem().listDataItems() if item.name()}
        points = [p for name in ("tokens sent", "reported by the provider") for p in samples_in_scene(vb, series[name])]
        if view.not_sent_curve.getData()[0] is not None and any(view.not_sent_curve.getData()[1]):
            points += samples_in_scene(view.not_sent_box, view.not_sent_curve)
        assert len(points) > 100
        box = vb.sceneBoundingRect()
        for _c, line, _tick in view.compaction_marks:
            rect = line.label.sceneBoundingRect()
            assert box.contains(rect), (rect, box)
            covered = [(round(p.x()), round(p.y())) for p in points if rect.contains(p)]
            assert not covered, (rect, covered[:5])
    finally:
        win.vm.shutdown()


GEMINI_LOG = Path(__file__).parent / "data" / "real" / "gemini_cli" / "aim_matrix_pro.migrated.jsonl"


def test_the_instructions_line_shows_where_it_lies_on_the_anchors_line(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A real Gemini CLI log keeps all its anchors and its one instruction: both retention lines lie
    at 100 %, and the instructions' 1-pixel dashes were lost in the anchors' 2-pixel line while
    the legend named them. Drawn after it, dashed, at least as thick: the dashes show over it."""
    win = gui_windows.timeline_at(qtbot, tmp_path, (1440, 900), GEMINI_LOG)
    try:
        view = win.timeline
        qtbot.waitUntil(lambda: any(item.name() == "user instructions still sent" for item in view.answers_plot.listDataItems()), timeout=60000)
        items = view.answers_plot.listDataItems()
        names = [item.name() for item in items]
        anchors = items[names.index("anchors still sent (retention)")]
        instructions = items[names.index("user instructions still sent")]
        assert list(anchors.getData()[1])[-1] == list(instructions.getData()[1])[-1] == 100  # the case: one on the other
        assert names.index("user instructions still sent") > names.index("anchors still sent (retention)")  # drawn over it
        pen, under = instructions.opts["pen"], anchors.opts["pen"]
        assert pen.style() == Qt.PenStyle.DashLine and pen.widthF() >= under.widthF(), (pen.widthF(), under.widthF())
    finally:
        win.vm.shutdown()

