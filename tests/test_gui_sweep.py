"""The app's sweep: the trade-off drawn, the cheapest setting named and applied on one click."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")


from ctxviz.engine import sweep
from ctxviz.gui.sweep_dialog import default_grid  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

SAMPLE = str(Path(__file__).resolve().parent.parent / "sample_sessions" / "coding_agent.yaml")


def test_the_sweep_dialog_finds_and_applies_the_cheapest_setting(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    assert default_grid("missy", win.vm.params) == ["total=15000,22500,30000,37500,45000", "fresh_tail_count=8,12,16,20,24"]
    win.registry.trigger("sweep")
    dialog = win.sweep_dialog
    dialog.grid_a.setText("total=10000,15000,20000")
    dialog.grid_b.setText("")
    with qtbot.waitSignal(win.vm.sweepReady, timeout=120000) as got:
        dialog.run()
    rows, best, message = got.args
    assert message == "" and len(rows) == 3
    expected = sweep.cheapest(sweep.summarise(sweep.run([sweep.Task(SAMPLE, "missy", {"total": t}, load=load_session) for t in (10000, 15000, 20000)], jobs=1),
                                              [sweep.parse_requirement("overflows=0")]))
    assert best.params["total"] == expected.params["total"] == 20000
    assert "Cheapest meeting overflows=0: total=20000" in dialog.result.text()
    assert len(dialog.chart.plot.listDataItems()) >= 2  # the settings and the Pareto front
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        dialog.apply_button.click()
    assert win.vm.params.total == 20000


def test_the_retention_axis_reads_in_percent_without_a_scale_prefix(qtbot) -> None:  # type: ignore[no-untyped-def]
    """`sweep --png` drew a 0-1 share as ticks 200-500 under "(x0.001)"."""
    from ctxviz.gui.sweep_chart import SweepChart

    rows = sweep.summarise(sweep.run([sweep.Task(SAMPLE, "missy", {"total": t}, load=load_session) for t in (10000, 30000)], jobs=1))
    assert all("retention_worst" in r.metrics for r in rows)
    chart = SweepChart()
    qtbot.addWidget(chart)
    chart.set_rows(rows, sweep.cheapest(rows), "t")
    left = chart.plot.getAxis("left")
    assert "%" in left.labelText and not left.autoSIPrefix and not chart.plot.getAxis("bottom").autoSIPrefix
    ys = [y for item in chart.plot.listDataItems() for y in item.getData()[1]]
    assert ys and all(0 <= y <= 100 for y in ys)
    assert sorted(ys)[-1] == pytest.approx(100 * max(r.metrics["retention_worst"] for r in rows))
