"""What a parameter change redraws at 10,000 messages (issue 22), held to what the views showed
before: the reason counts the filter lists come from the plan's columns in the order the codes first
occur, the table announces the rows it shows that changed and answers with the new plan's records
(never the last plan's), the strip's lines follow the cut, and the app fills shapes on the painting
thread unless the user chose otherwise."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy, policy_names
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "sample_sessions").glob("*.yaml"))


@pytest.mark.parametrize("sample", SAMPLES[:4], ids=lambda p: p.stem)
def test_reason_counts_are_the_codes_counted_in_the_order_they_first_occur(sample: Path) -> None:
    session = load_session(sample)
    checked = 0
    for name in policy_names(plugins=False):
        params = get_policy(name).default_params()
        for scale in (1.0, 0.4):
            total = getattr(params, "total", None)
            try:
                chosen = dataclasses.replace(params, total=int(total * scale)) if total and scale != 1.0 else params
                made = plan_session(session, name, chosen, None)
            except ValueError:  # a budget below the policy's own reserves
                continue
            counts = made.reason_counts()  # before anything reads the codes one by one
            expected = Counter(made.reason_codes)
            assert list(counts.items()) == list(expected.items()), name
            checked += 1
    assert checked >= len(policy_names(plugins=False))


SAMPLE = str(ROOT / "sample_sessions" / "coding_agent.yaml")


def _change_total(qtbot, win, total: int) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.params.editors["total"][1].setValue(total)


def test_the_table_announces_the_shown_rows_that_changed_and_shows_the_new_plan(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("PySide6")
    from ctxviz.engine.reasons import short

    win = open_window(SAMPLE)
    model, table = win.model, win.table
    old = win.vm.plan
    qtbot.wait(100)  # the window laid out (the cards above the table take their height)
    first, last = table.shown_rows()
    assert 0 <= first < last  # the view says which rows it shows
    shown_before = {(r, c): model.index(r, c).data() for r in range(first, last + 1) for c in (6, 8)}
    changed: list[tuple[int, int]] = []
    model.dataChanged.connect(lambda top, bottom, *_: changed.append((top.row(), bottom.row())))
    # The rows the table shows when the model asks (a busy machine can still be settling the
    # layout after the wait above, and a row that comes into view later is read afresh anyway).
    asked: list[tuple[int, int]] = []
    shown_rows = model.shown_rows
    model.shown_rows = lambda: asked.append(shown_rows()) or asked[-1]
    _change_total(qtbot, win, win.vm.params.total // 2)
    assert asked  # the model compared the shown rows, not all 10,000
    first, last = max(first, asked[-1][0]), min(last, asked[-1][1])
    new = win.vm.plan
    differ = [r for r in range(first, last + 1) if new.messages[r] != old.messages[r]]
    assert differ  # half the budget moves the cut past the rows at the top
    announced = {r for top, bottom in changed for r in range(top, bottom + 1)}
    assert set(differ) <= announced
    for r in range(first, last + 1):  # every cell shown is the new plan's, none the last plan's kept record
        assert model.index(r, 6).data() == new.messages[r].decision.value
        assert model.index(r, 8).data() == short(new.messages[r])
    assert any(model.index(r, c).data() != shown_before[(r, c)] for r in differ for c in (6, 8))


def test_the_strip_lines_follow_the_cut_and_the_tail_stays(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("PySide6")
    from ctxviz.gui.widgets.message_strip import cut_index

    win = open_window(SAMPLE)
    strip = win.strip
    tail = strip.tail_line.value()
    for total in (win.vm.params.total // 2, win.vm.params.total * 2, win.vm.params.total):
        _change_total(qtbot, win, total)
        plan = win.vm.plan
        cut = cut_index(plan)
        if cut is None:
            assert not strip.cut_line.isVisible()
        else:
            assert strip.cut_line.value() == pytest.approx(float(strip.item.starts[cut] + strip.item.widths[cut]))
            assert win.strip_overview.cut_line.value() == strip.cut_line.value()
        assert strip.tail_line.value() == tail  # the fresh tail does not depend on the budget


@pytest.mark.parametrize(("chosen", "threads", "expected"), [(None, None, "1"), ("yes", None, "yes"), (None, "1", "unset")])
def test_the_app_fills_on_the_painting_thread_unless_the_user_chose(chosen: str | None, threads: str | None, expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("QT_NO_GUI_THREADPOOL", "CTXVIZ_QT_FILL_THREADS")}
    env.update(QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    if chosen is not None:
        env["QT_NO_GUI_THREADPOOL"] = chosen
    if threads is not None:  # Qt's pool kept in use
        env["CTXVIZ_QT_FILL_THREADS"] = threads
    code = "import os; from ctxviz.gui.app import application; application(); print(os.environ.get('QT_NO_GUI_THREADPOOL', 'unset'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == expected
