"""The Compare tab names a summary as `ctxviz compare` does: one the file records is "summary #N",
one the policy writes now is "a new summary". The tab called `compare_summaries(a, b)` without the
number the file records, and a new summary both sides make (decided differently) was named
"summary #2", as if the log had recorded it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from ctxviz.engine.plan_rows import Decision  # noqa: E402
from ctxviz.gui.vm import compare as vm_compare  # noqa: E402

#: A Claude Code log with one recorded compaction summary.
SAMPLE = Path(__file__).parent.parent / "sample_sessions" / "claude_code_compaction.jsonl"


def rows(view) -> list[str]:  # type: ignore[no-untyped-def]
    return [view.table.topLevelItem(i).text(0) for i in range(view.table.topLevelItemCount())]


def test_a_new_summary_both_sides_write_is_named_new_not_the_logs(qtbot, open_window, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    win = open_window(SAMPLE)
    session = win.vm.session
    assert len(session.summaries) == 1
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_policy("missy-consolidator")
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.vm.set_param("max_tokens", 1000)
    # missy-consolidator at 1,000 tokens writes a summary of its own after the log's (index 1, sent).
    assert [(s.index, s.decision) for s in win.vm.plan.summaries if s.index >= 1] == [(1, Decision.KEPT)]
    real = vm_compare.plan_session

    def b_drops_its_new_summary(session, policy, params, *args, **kwargs):  # type: ignore[no-untyped-def]
        """Side B (its params differ) decides the new summary otherwise: no shipped policy drops
        the summary it writes, so B's is dropped here, the case the tab must name."""
        plan = real(session, policy, params, *args, **kwargs)
        if params.max_tokens != 1000:
            summaries = tuple(dataclasses.replace(s, decision=Decision.DROPPED) if s.index >= 1 else s for s in plan.summaries)
            plan = dataclasses.replace(plan, summaries=summaries)
        return plan

    monkeypatch.setattr(vm_compare, "plan_session", b_drops_its_new_summary)
    with qtbot.waitSignal(win.vm.compareReady, timeout=30000) as blocker:
        win.vm.request_compare("missy-consolidator", {"max_tokens": 900})
    a, b = blocker.args[:2]
    assert [s.decision for s in a.summaries if s.index == 1] == [Decision.KEPT]
    assert [s.decision for s in b.summaries if s.index == 1] == [Decision.DROPPED]
    names = rows(win.compare)
    assert "a new summary" in names, names
    assert not any(name.startswith("summary #2") for name in names), names
    assert "summary #2" not in win.compare.summary.text()
    assert blocker.args[2:] == [1]  # the count the file records travels with the two plans
