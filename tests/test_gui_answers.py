"""The app says what the engine and the CLI say: pair safety in the replay and the "why" answer, the
plan-versus-replay sentence, the notes, what the provider reported (aligned as `ctxviz simulate`
aligns it), the compactions the log records, and category caps named as caps."""

import dataclasses
import html
import json
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QSettings, Qt  # noqa: E402
from PySide6.QtGui import QTextDocument  # noqa: E402
from PySide6.QtWidgets import QLabel  # noqa: E402

from ctxviz.cli import reported_per_turn  # noqa: E402
from ctxviz.engine.checks import PlanOptions  # noqa: E402
from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.plan import Decision  # noqa: E402
from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.policies import get_policy  # noqa: E402
from ctxviz.engine.session import Compaction  # noqa: E402
from ctxviz.engine.simulate import plan_versus_replay, simulate  # noqa: E402
from ctxviz.gui.main_window import MainWindow  # noqa: E402
from ctxviz.gui.status import SEPARATOR  # noqa: E402
from ctxviz.gui.widgets.budget_pie import BudgetPie  # noqa: E402
from ctxviz.gui.widgets.category_bars import CategoryBars  # noqa: E402
from ctxviz.gui.widgets.timeline import TimelineView  # noqa: E402
from ctxviz.gui.widgets.timeline_marks import RECORDED_COMPACTION_NAME  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

SAMPLES = Path(__file__).parent.parent / "sample_sessions"
CLAUDE = str(SAMPLES / "claude_code_compaction.jsonl")
EVIL = "<img src=/dev/zero>"


@pytest.fixture
def window(qtbot, tmp_path):
    win = MainWindow(settings=QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.resize(1440, 900)
    win.show()
    yield win
    win.vm.shutdown()


def open_and_wait(qtbot, win, path):
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        win.open_path(path)


def simulate_and_wait(qtbot, win):
    with qtbot.waitSignal(win.vm.timelineReady, timeout=60000):
        win.simulate()
    win.vm.wait()
    qtbot.wait(10)


@pytest.fixture
def orphan_file(tmp_path):
    """A chat whose tool result #4 answers a call that is not in the file: pair safety drops it."""
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "hello there, read the file please"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "file body one two three"},
        {"role": "tool", "tool_call_id": "ghost", "content": "an answer to a call that is not in the file, quite a long text " * 5},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "thanks"},
    ]
    path = tmp_path / "orphan.json"
    path.write_text(json.dumps({"model": "gpt-4o", "messages": messages}))
    return str(path)


@pytest.fixture
def claude_file(tmp_path):
    """A small Claude Code log with loader notes (a `progress` line skipped, a block type it does
    not model kept as opaque text: the type's name is markup) and the provider's usage."""
    def assistant(uuid, parent, content, usage):
        return {"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": "s",
                "message": {"id": uuid, "role": "assistant", "model": "claude-sonnet-4-5", "content": content, "usage": usage}}
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": {"role": "user", "content": "hello"}},
        {"type": "progress", "uuid": "p1", "parentUuid": "u1", "data": {}},
        assistant("a1", "u1", [{"type": "text", "text": "hi"}, {"type": EVIL, "data": "x"}], {"input_tokens": 5000, "output_tokens": 10}),
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "sessionId": "s", "message": {"role": "user", "content": "more"}},
        assistant("a2", "u2", [{"type": "text", "text": "ok"}], {"input_tokens": 10, "output_tokens": 10, "cache_read_input_tokens": 5100,
                                                                   "cache_creation_input_tokens": 20}),
    ]
    path = tmp_path / "cc.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return str(path)


def plain(rich: str) -> str:
    document = QTextDocument()
    document.setHtml(rich)
    return document.toPlainText()


# --- 1. pair safety everywhere ---------------------------------------------------------------------
def test_pair_safety_reaches_the_replay_and_the_why_answer(qtbot, window, orphan_file):
    open_and_wait(qtbot, window, orphan_file)
    assert window.vm.plan.messages[4].sent  # the plan honours the policy: the orphan is sent
    with qtbot.waitSignal(window.vm.planReady, timeout=20000):
        window.pair_box.setChecked(True)
    plan = window.vm.plan
    assert plan.messages[4].decision is Decision.DROPPED and "pair-safe" in plan.messages[4].reason
    # The replay is of the pair-safe plan on screen, turn by turn ...
    simulate_and_wait(qtbot, window)
    timeline = window.vm.timeline
    assert timeline.options is not None and timeline.options.pair_safe
    assert timeline.turns[-1].tokens_sent == plan.totals.used
    assert timeline.plan_at(len(timeline.turns) - 1).messages[4].decision is Decision.DROPPED
    # ... and so is the "why" answer for the message it drops.
    with qtbot.waitSignal(window.vm.explanationReady, timeout=20000) as blocker:
        window.select_message(4)
    assert blocker.args[0].message == plan.messages[4]
    qtbot.waitUntil(lambda: "What would keep it" in window.detail_text())
    assert "no single change" in window.detail_text()
    # Turning pair safety off replays the plan without it (the Timeline tab is shown).
    with qtbot.waitSignal(window.vm.timelineReady, timeout=30000):
        window.pair_box.setChecked(False)
    window.vm.wait()
    assert not window.vm.timeline.options.pair_safe
    assert window.vm.timeline.turns[-1].tokens_sent == window.vm.plan.totals.used > plan.totals.used


def test_a_change_of_inputs_never_leaves_an_old_replay_on_screen(qtbot, window, orphan_file):
    open_and_wait(qtbot, window, orphan_file)
    simulate_and_wait(qtbot, window)
    window.tabs.setCurrentIndex(0)
    with qtbot.waitSignal(window.vm.planReady, timeout=20000):
        window.pair_box.setChecked(True)
    assert window.vm.timeline is None and window.timeline.timeline is None
    assert window.vm.plan_versus_replay() == ""
    assert not window.timeline.versus.isVisible()
    assert "changed" in window.timeline.label.text()
    with qtbot.waitSignal(window.vm.timelineReady, timeout=30000):
        window.tabs.setCurrentIndex(1)  # opening the tab replays the plan on screen
    assert window.vm.timeline.options.pair_safe


# --- 2. plan versus replay -------------------------------------------------------------------------
def test_the_timeline_tab_says_how_the_replay_compares_with_the_plan(qtbot, window):
    open_and_wait(qtbot, window, str(SAMPLES / "support_chat.yaml"))
    with qtbot.waitSignal(window.vm.planReady, timeout=20000):
        window.vm.set_policy("supyagent")
    simulate_and_wait(qtbot, window)
    plan, timeline = window.vm.plan, window.vm.timeline
    expected = plan_versus_replay(plan, timeline)
    assert "Both are right" in expected  # supyagent's own summaries fire in the replay
    versus = window.timeline.versus
    assert versus.isVisible() and versus.text() == expected
    assert versus.textFormat() == Qt.TextFormat.PlainText and versus.wordWrap()
    assert versus.height() >= versus.heightForWidth(versus.width())  # every line of it on screen
    # The same sentence as `ctxviz simulate` prints for these inputs.
    session = load_session(str(SAMPLES / "support_chat.yaml"))
    cli_plan = plan_session(session, "supyagent", store=CountStore())
    assert expected == plan_versus_replay(cli_plan, simulate(session, "supyagent", store=CountStore()))
    # A new parameter: the sentence follows the new plan and its new replay, never the old pair.
    with qtbot.waitSignal(window.vm.timelineReady, timeout=30000):
        window.vm.set_param("min_recent_messages", 40)
    window.vm.wait()
    qtbot.waitUntil(lambda: window.vm.plan.params["min_recent_messages"] == 40)
    qtbot.waitUntil(lambda: versus.text() == plan_versus_replay(window.vm.plan, window.vm.timeline) and versus.isVisible())
    assert window.vm.timeline.params.min_recent_messages == 40


def test_the_report_prints_the_same_sentence(qtbot):
    from ctxviz.gui.report import ReportWidget, render_html

    session = load_session(CLAUDE)
    params = get_policy("supyagent").default_params()
    plan = plan_session(session, "supyagent", params, store=CountStore())
    timeline = simulate(session, "supyagent", params, store=CountStore())
    sentence = plan_versus_replay(plan, timeline)
    widget = ReportWidget(session, plan, timeline)
    qtbot.addWidget(widget)
    labels = [label for label in widget.findChildren(QLabel) if label.text() == sentence]
    assert labels and labels[0].textFormat() == Qt.TextFormat.PlainText and not labels[0].isHidden()
    page = render_html(session, plan, b"", timeline)
    assert f"<p class='versus'>{html.escape(sentence)}</p>" in page
    assert "class='versus'" not in render_html(session, plan, b"")  # no timeline, no sentence
    # What the provider reported, and the unseen estimate, as the overview says them (issue 24: the
    # one fill figure to quote, in the overview's sentence, where the report had a wording of its own).
    from ctxviz.engine.fill import fill

    assert f"Fill to quote: {plan.reported.last_window_fill:,} of" in page and html.escape(fill(plan, session).sentence()) in page
    assert "Unseen: about 18,500 tokens of system prompt and tools the log does not record" in page
    assert "Unseen: about 18,500 tokens" in plain(widget.findChildren(QLabel)[0].text())


# --- 3. notes --------------------------------------------------------------------------------------
def test_the_overview_shows_every_note_and_the_status_bar_counts_them(qtbot, window, claude_file):
    open_and_wait(qtbot, window, claude_file)
    # (The log opens under claude-code since issue 24, whose own notes make more than "a few";
    # this test is about the loader's notes under missy, as it was written.)
    with qtbot.waitSignal(window.vm.planReady, timeout=20000):
        window.policy_box.setCurrentText("missy")
    # The fill line names the real count once it is in: the panel's text is final then.
    qtbot.waitUntil(lambda: window.vm.plan.real is not None, timeout=30000)
    plan = window.vm.plan
    loader = [n for n in plan.notes if "`progress` line" in n or "opaque text" in n]
    assert len(loader) == 2 and any(EVIL in n for n in loader)
    panel = window.notes_panel
    qtbot.waitUntil(lambda: panel.isVisible())
    # Folded at first (issue 24: above the charts they took the lost card's room); the toggle opens them.
    assert not panel.notes.isVisible() and not panel.toggle.isChecked()
    panel.toggle.click()
    assert panel.notes.isVisible()
    assert panel.notes.textFormat() == Qt.TextFormat.PlainText and panel.notes.wordWrap()
    assert panel.notes.text() == "\n".join(f"• {n}" for n in plan.notes)
    assert panel.toggle.text().startswith(f"{len(plan.notes)} notes")
    assert window.notes_button.text() == f"{len(plan.notes)} notes" and window.notes_button.isVisible()
    # Wrapped to the overview's width, never cut off at the right; taller than its box only when it scrolls.
    assert panel.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
    qtbot.waitUntil(lambda: panel.notes.width() <= panel.viewport().width())  # once the scroll area has laid it out
    qtbot.waitUntil(lambda: panel.notes.height() >= panel.notes.heightForWidth(panel.notes.width()))  # (opened just now)
    qtbot.waitUntil(lambda: panel.height() >= panel.content_height())  # a few notes: all of them, nothing to scroll
    qtbot.waitUntil(lambda: panel.verticalScrollBar().maximum() == 0)  # (once the scroll area has laid the new text out)
    # The toggle hides them and the status bar's count brings them back.
    panel.toggle.click()
    assert not panel.notes.isVisible()
    window.tabs.setCurrentIndex(2)
    window.notes_button.click()
    assert window.tabs.currentIndex() == 0 and panel.notes.isVisible()


def test_notes_follow_every_replan(qtbot, window):
    open_and_wait(qtbot, window, CLAUDE)
    before = window.vm.plan.notes
    assert window.notes_button.text() == f"{len(before)} notes"
    # Many notes scroll within the panel rather than push the window taller than a laptop's screen.
    panel = window.notes_panel
    assert panel.minimumSizeHint().height() <= panel.toggle.sizeHint().height() + 4
    assert window.minimumSizeHint().height() <= 660
    # (The log opens under claude-code since issue 24; this test is about missy's notes on it.)
    with qtbot.waitSignal(window.vm.planReady, timeout=20000):
        window.policy_box.setCurrentText("missy")
    before = window.vm.plan.notes
    with qtbot.waitSignal(window.vm.planReady, timeout=20000):
        window.vm.set_param("total", 8000)
    with qtbot.waitSignal(window.vm.planReady, timeout=20000):
        window.pair_box.setChecked(True)
    after = window.vm.plan.notes
    assert len(after) == len(before) + 2  # missy's oversized tail, pair safety's drop
    assert any(n.startswith("pair-safe dropped") for n in after)
    assert window.notes_panel.notes.text() == "\n".join(f"• {n}" for n in after)
    assert window.notes_button.text() == f"{len(after)} notes"
    assert window.status_label.text().split(SEPARATOR)[0].startswith("missy budget: ")
    # The context at a turn of the replay keeps the file's notes.
    simulate_and_wait(qtbot, window)
    with qtbot.waitSignal(window.vm.planReady, timeout=5000):
        window.timeline.slider.setValue(40)
    shown = window.notes_panel.notes.text()
    assert all(n in shown for n in window.vm.session.notes)


def test_a_session_without_notes_shows_no_notes(qtbot, window, tmp_path):
    chat = tmp_path / "chat.json"  # no tool calls (missy notes those), no usage, nothing skipped
    chat.write_text('[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]')
    open_and_wait(qtbot, window, str(chat))
    assert window.vm.plan.notes == ()
    assert not window.notes_panel.isVisible() and not window.notes_button.isVisible()


# --- 4. what the provider reported -----------------------------------------------------------------
@pytest.mark.parametrize("name", ["claude_code_compaction.jsonl", "codex_rollout.jsonl", "gemini_cli_session.json", "coding_agent.yaml"])
def test_reported_usage_is_drawn_at_the_turn_its_call_saw(qtbot, name):
    """The call that produced message N saw the context of turn N-1: the series is where
    `ctxviz simulate` puts it, for every format whose loader fills `Message.usage`."""
    session = load_session(str(SAMPLES / name))
    expected = reported_per_turn(session)
    assert expected
    timeline = simulate(session, "missy", store=CountStore())
    view = TimelineView()
    qtbot.addWidget(view)
    view.set_timeline(timeline)
    (item,) = [i for i in view.plot.listDataItems() if i.name() == "reported by the provider"]
    xs, ys = item.getData()
    assert dict(zip(xs.tolist(), ys.tolist(), strict=True)) == {float(k): float(v) for k, v in expected.items()}
    turn, fill = next(iter(expected.items()))
    assert timeline.turns[timeline.step_of(turn)].index == turn  # the call's request is a step
    view.slider.setValue(timeline.step_of(turn))
    assert f"the provider reported {fill:,} for the call made after this turn, which produced #{turn + 1}" in view.label.text()


def test_the_overview_shows_the_last_calls_fill_and_the_unseen_estimate_apart(qtbot, window):
    open_and_wait(qtbot, window, CLAUDE)
    plan = window.vm.plan
    rep = plan.reported
    assert rep is not None and rep.unseen == 18_500
    facts = window.notes_panel.facts
    assert facts.isVisible() and facts.textFormat() == Qt.TextFormat.PlainText
    lines = facts.text().split("\n")
    # (issue 24: one fill figure to quote, the provider's last reported fill, and the plan's figure explained beside it)
    assert lines[0].startswith(f"Fill to quote: {rep.last_window_fill:,} of ")
    assert (f"reported by the provider at the last call in the log (#{rep.last_index}, {rep.calls} calls with usage)" in lines[0]
            and f"plan sends {plan.totals.used:,} of its {plan.totals.budget:,}" in lines[0])
    assert lines[1].startswith("Unseen: about 18,500 tokens of system prompt and tools the log does not record")
    # In the donut: a labelled line of its own; the policy's parts and figures are the plan's, unchanged.
    assert window.pie.unseen == 18_500 and any(line.startswith("Unseen ≈ 18,500") for line in window.pie.legend_lines())
    assert window.pie.parts == [(k, v, plan.usage[k]) for k, v in plan.allocation.items()]
    assert (window.pie.used, window.pie.total) == (plan.totals.used, plan.totals.budget)
    assert f"{plan.totals.used:,} of {plan.totals.budget:,} tokens" in window.status_label.text()


def test_a_log_without_an_unseen_prompt_says_nothing_about_one(qtbot, window):
    open_and_wait(qtbot, window, str(SAMPLES / "coding_agent.yaml"))  # its first call: 1,498 reported, about 1,009 shown
    assert window.vm.plan.reported is not None and window.vm.plan.reported.unseen == 0
    assert "Unseen" not in window.notes_panel.facts.text()
    assert not any("Unseen" in line for line in window.pie.legend_lines())


def test_a_codex_rollout_shows_the_instructions_and_tools_it_does_not_record(qtbot, window):
    """A rollout records the user's instructions, not Codex's own prompt or its tool schemas: the
    first call's 9,488 tokens against about 645 shown. The app says so and counts them in the real
    count, as the cache model always has (it said 4,907 against the provider's 16,743)."""
    open_and_wait(qtbot, window, str(SAMPLES / "codex_rollout.jsonl"))
    reported = window.vm.plan.reported
    assert reported is not None and reported.unseen == 8800 and reported.partial
    assert "Unseen: about 8,800 tokens" in window.notes_panel.facts.text()
    assert any("Unseen ≈ 8,800" in line for line in window.pie.legend_lines())
    qtbot.waitUntil(lambda: window.vm.plan.real is not None, timeout=30000)  # counted after the first plan
    real = window.vm.plan.real
    assert real.tokens > 13_000 and real.window == 272_000  # the window the log reports
    # The donut says where they are counted: in the real count above it, not in codex-compaction's parts.
    qtbot.waitUntil(lambda: window.pie.real is not None, timeout=30000)
    assert "Unseen ≈ 8,800 (not in the log; in the count above, not the parts)" in window.pie.legend_lines()


def test_the_donut_says_which_figures_hold_the_unseen_prompt(qtbot, window):
    """Claude Code's count starts from the provider's usage, which holds the prompt the log lacks:
    its parts hold it too. Without a real count nothing above holds it."""
    from ctxviz.gui.widgets.budget_pie import UNSEEN_APART, UNSEEN_IN_ALL, unseen_where

    open_and_wait(qtbot, window, str(SAMPLES / "claude_code_compaction.jsonl"))
    plan = window.vm.plan
    assert plan.reported.unseen and plan.extra["request_tokens"] == plan.totals.used
    assert unseen_where(plan) == UNSEEN_IN_ALL
    assert any(line.endswith(f"({UNSEEN_IN_ALL})") for line in window.pie.legend_lines())
    assert "in the plan's figures, which start from the provider's usage, and in the real count" in window.notes_panel.facts.text()
    gemini = dataclasses.replace(window.vm.plan, extra={}, real=None)
    assert unseen_where(gemini) == UNSEEN_APART


# --- 5. compactions recorded in the log ------------------------------------------------------------
def test_the_logs_compactions_are_marked_on_the_timeline(qtbot, window):
    open_and_wait(qtbot, window, CLAUDE)
    simulate_and_wait(qtbot, window)
    (compaction,) = window.vm.session.compactions
    assert compaction.trigger == "manual" and compaction.pre_tokens == 107_264
    ((c, line, tick),) = window.timeline.compaction_marks
    # Claude Code compacted before its answer #95: the call that answered is the first step it is in force at.
    step = window.vm.timeline.step_after(compaction.before_index)
    x = window.vm.timeline.turns[step].index
    assert window.vm.timeline.turns[step].reply == compaction.before_index
    assert c is compaction and line.value() == x
    assert "compacted (manual)" in line.label.toPlainText() and "107,264" in line.label.toPlainText()
    assert "manual" in plain(line.toolTip()) and "107,264" in plain(line.toolTip())
    xs, ys = tick.getData()
    assert (xs.tolist(), ys.tolist()) == ([x], [compaction.pre_tokens])
    assert tick.name() == RECORDED_COMPACTION_NAME
    assert window.timeline.plot.getViewBox().viewRange()[1][1] >= compaction.pre_tokens  # the tick is in view
    with qtbot.waitSignal(window.vm.planReady, timeout=5000):
        window.timeline.slider.setValue(step)
    assert "in the log: the agent compacted its context before #95 (manual): 107,264 tokens before" in window.timeline.label.text()
    window.timeline.slider.setValue(step - 1)
    assert "in the log" not in window.timeline.label.text()


def test_a_compaction_quoting_markup_and_braces_is_plain_text(qtbot):
    session = load_session(CLAUDE)
    trigger = "{0} {value} " + EVIL
    session = dataclasses.replace(session, compactions=(Compaction(20, trigger, 10**20, 1234),))
    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(900, 500)
    view.show()
    view.set_timeline(simulate(session, "missy", store=CountStore()))
    view.grab()
    ((_, line, tick),) = view.compaction_marks
    assert "compacted ({0} {value} <img src=/d…)" in line.label.toPlainText()  # cut to fit, braces literal
    assert trigger in plain(line.toolTip()) and "<img" not in line.toolTip()
    assert "100,000,000,000,000,000,000 -> 1,234 tokens" in plain(line.toolTip())
    assert all(abs(v) <= 1e15 for v in tick.getData()[1])


# --- 6. caps ---------------------------------------------------------------------------------------
def test_category_caps_are_named_caps_not_a_division(qtbot):
    session = load_session(str(SAMPLES / "multimodal_review.yaml"))
    plan = plan_session(session, "categories", store=CountStore(), options=PlanOptions())
    assert plan.totals.allocation_kind == "caps" and sum(plan.allocation.values()) == plan.totals.budget * 115 // 100
    pie = BudgetPie()
    qtbot.addWidget(pie)
    pie.resize(700, 300)
    pie.set_plan(plan)
    pie.grab()
    lines = pie.legend_lines()
    assert lines[0] == "Category caps (they add up to 115 % of the budget)"
    dialog = plan.usage["dialog"]
    assert lines[3] == f"Dialog  {dialog:,} / cap 75,000  ({dialog / 75_000 * 100:.0f} % full)"  # used / allotted (x % full)
    assert "a cap of 75,000 tokens (50.0% of the budget" in pie.tooltip_html(2)
    bars = CategoryBars()
    qtbot.addWidget(bars)
    bars.set_plan(plan)
    assert bars.title_text == "sent / cap per category (the caps add up to 115 % of the budget)"
    # A division stays a division.
    missy = plan_session(session, "missy", store=CountStore())
    pie.set_plan(missy)
    bars.set_plan(missy)
    assert not any("cap" in line for line in pie.legend_lines()) and "cap" not in bars.title_text


def test_a_static_report_shows_no_input_field(qtbot):
    """The report's PNG and HTML showed the app's empty "Where did it go?" search box."""
    from PySide6.QtWidgets import QLineEdit, QPushButton

    from ctxviz.gui.report import ReportWidget

    session = load_session(CLAUDE)
    params = get_policy("supyagent").default_params()
    plan = plan_session(session, "supyagent", params, store=CountStore())
    widget = ReportWidget(session, plan, simulate(session, "supyagent", params, store=CountStore()))
    qtbot.addWidget(widget)
    widget.settle()
    assert not [w for kind in (QLineEdit, QPushButton) for w in widget.findChildren(kind) if w.isVisible()]
    assert not widget.timeline_view.slider.isVisible() and widget.timeline_view.plot.isVisible()


def test_a_report_is_its_own_width_and_shows_every_sentence(qtbot):
    """A still cannot scroll and should not be wider than asked: the coding agent's long fill
    sentence made the PNG 1,633 pixels wide (its title did not wrap), and the sentences under the
    timeline, capped at four lines for the app's short tab, showed a scroll bar in the picture."""
    from ctxviz.gui.report import SIZE, ReportWidget, render_png

    session = load_session(str(Path(__file__).resolve().parent.parent / "sample_sessions" / "coding_agent.yaml"))
    plan = plan_session(session, "missy", None, store=CountStore())
    widget = ReportWidget(session, plan, simulate(session, "missy", None, store=CountStore()))
    qtbot.addWidget(widget)
    widget.settle()
    assert widget.width() == SIZE.width()
    png = render_png(widget)
    assert int.from_bytes(png[16:20], "big") == SIZE.width()  # (the PNG header's width)
    words = widget.timeline_view.words
    assert words.verticalScrollBar().maximum() == 0 and words.height() >= words.widget().minimumHeight()


def test_an_excerpts_unseen_part_is_the_one_of_the_context_on_screen(qtbot, window):
    """The bundled claude_code_autocompact excerpt starts mid-conversation: before the call after its
    compaction the unseen part held the conversation before the file (164,100), after it the
    prompt and tools alone (32,400). The donut and the notes say the shown context's."""
    open_and_wait(qtbot, window, Path(__file__).resolve().parent.parent / "sample_sessions" / "claude_code_autocompact.jsonl")
    assert window.pie.unseen == 32_400 and window._unseen(window.vm.plan) == 32_400
    simulate_and_wait(qtbot, window)
    with qtbot.waitSignal(window.vm.planReady, timeout=5000):
        window.timeline.slider.setValue(0)  # the request the first call answers: before the compaction
    assert window.pie.unseen == 164_100
    window.timeline.slider.setValue(window.vm.timeline.step_of(4))  # the request after the call that followed it
    qtbot.waitUntil(lambda: window.pie.unseen == 32_400, timeout=5000)
