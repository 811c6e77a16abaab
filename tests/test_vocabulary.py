"""Trigger and keep: every policy names the two knobs users tune everywhere, in units ctxviz can
convert, so the app shows them first and draws the trigger, and `compare` aligns two frameworks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.policies import get_policy, policy_names
from ctxviz.engine.policies.base import param_fields
from ctxviz.engine.vocabulary import UNITS, align, trigger_level
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent
CODING = ROOT / "sample_sessions" / "coding_agent.yaml"


@pytest.mark.parametrize("name", policy_names())
def test_every_policy_declares_its_framework_and_the_units_of_its_trigger_and_keep(name: str) -> None:
    policy = get_policy(name)
    assert policy.framework and policy.counter and policy.source, name
    assert policy.trigger or policy.keep, f"{name} names neither a trigger nor a keep parameter"
    units = {f.name: f.metadata.get("unit") for f in param_fields(policy.params_type)}
    if policy.align is None:
        for knob in (*policy.trigger, *policy.keep):
            assert units[knob] in UNITS, f"{name}.{knob} has no unit, so compare cannot align it"


def test_trigger_levels_in_tokens_follow_each_frameworks_units() -> None:
    session = load_session(str(CODING))
    consolidator = get_policy("missy-consolidator")
    # MemoryConsolidator fires at threshold_pct of max_tokens: 0.8 x 30,000
    assert trigger_level(consolidator, consolidator.default_params(), session) == 24_000
    assert trigger_level(consolidator, consolidator.make_params({"threshold_pct": 0.5, "max_tokens": 10_000}), session) == 5_000
    supyagent = get_policy("supyagent")
    # the message-count trigger has no token level; the token one does
    assert trigger_level(supyagent, supyagent.make_params({"max_tokens_before_summary": 50_000}), session) == 50_000


def test_align_sets_each_policy_in_its_own_units_and_says_what_it_cannot() -> None:
    session = load_session(str(CODING))
    missy = get_policy("missy")
    params, skipped = align(missy, missy.default_params(), session, trigger_tokens=20_000, keep_messages=10)
    assert (params.total, params.fresh_tail_count, skipped) == (20_000, 10, [])
    consolidator = get_policy("missy-consolidator")
    params, skipped = align(consolidator, consolidator.default_params(), session, trigger_tokens=12_000, keep_messages=4)
    assert params.threshold_pct == pytest.approx(0.4) and params.max_tokens == 30_000
    assert skipped == ["missy-consolidator: it keeps no number of messages (it has no keep parameter)"]
    categories = get_policy("categories")
    params, skipped = align(categories, categories.default_params(), session, keep_tokens=5_000)
    assert params == categories.default_params() and "keeps no number of tokens" in skipped[0]


def test_compare_aligns_two_frameworks_and_a_side_setting_has_the_last_word(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compare", str(CODING), "--policy", "missy", "--policy", "supyagent", "--trigger-tokens", "20000",
                 "--keep-messages", "10", "--set-b", "min_recent_messages=8", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (doc["a"]["params"]["total"], doc["a"]["params"]["fresh_tail_count"]) == (20_000, 10)
    assert (doc["b"]["params"]["max_tokens_before_summary"], doc["b"]["params"]["min_recent_messages"]) == (20_000, 8)
    assert doc["not_aligned"] == []
    code = main(["compare", str(CODING), "--policy", "missy", "--policy", "categories", "--keep-messages", "10"])
    out = capsys.readouterr().out
    assert code == 0 and "aligned: keep messages=10" in out
    assert "not aligned: categories: it keeps no number of messages" in out


def test_the_parameter_panel_puts_trigger_and_keep_first_and_edits_text_parameters(qtbot) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import dataclass, field

    from PySide6.QtWidgets import QLabel, QLineEdit

    from ctxviz.gui.widgets.param_form import ParamForm

    @dataclass(frozen=True)
    class Knobs:
        reserve: int = 100
        trigger: str = field(default="tokens=4000", metadata={"help": "when"})
        keep: int = 20

    form = ParamForm()
    qtbot.addWidget(form)
    form.build(Knobs(), trigger=("trigger",), keep=("keep",))
    labels = [form.layout_.itemAt(row, form.layout_.ItemRole.LabelRole).widget().text() for row in range(form.layout_.rowCount())]
    assert [label.split()[0] for label in labels] == ["trigger", "keep", "reserve"]
    assert "· trigger" in labels[0] and "· keep" in labels[1] and isinstance(form.layout_.itemAt(0, form.layout_.ItemRole.LabelRole).widget(), QLabel)
    editor = form.editors["trigger"][0]
    assert isinstance(editor, QLineEdit) and editor.text() == "tokens=4000"
    with qtbot.waitSignal(form.valueChanged) as emitted:
        editor.setText("fraction=0.8")
        editor.editingFinished.emit()
    assert emitted.args == ["trigger", "fraction=0.8"]


def test_the_timeline_draws_the_policys_trigger(qtbot) -> None:  # type: ignore[no-untyped-def]
    from ctxviz.engine.simulate import simulate
    from ctxviz.gui.widgets.timeline import TimelineView

    session = load_session(str(CODING))
    view = TimelineView()
    qtbot.addWidget(view)
    view.set_timeline(simulate(session, "supyagent", {"max_tokens_before_summary": 20_000}))
    names = [item.name() for item in view.plot.listDataItems()]
    assert "trigger (max_tokens_before_summary)" in names
    line = next(item for item in view.plot.listDataItems() if item.name() == "trigger (max_tokens_before_summary)")
    assert set(line.getData()[1]) == {20_000}
    view.set_timeline(simulate(session, "missy"))  # its trigger is its budget, already drawn
    assert not any(str(item.name()).startswith("trigger") for item in view.plot.listDataItems())


def test_mnesis_is_aligned_through_its_context_limit_and_compacts_at_that_level() -> None:
    from ctxviz.engine.simulate import simulate

    session = load_session(str(CODING))
    mnesis = get_policy("mnesis")
    params, skipped = align(mnesis, mnesis.default_params(), session, trigger_tokens=20_000, keep_messages=10)
    assert trigger_level(mnesis, params, session) == 20_000 and "keeps no fixed number of messages" in skipped[0]
    timeline = simulate(session, "mnesis", params)
    events = [e for e in timeline.events if e.kind in ("compaction", "hard_threshold")]
    assert events and "the soft threshold (20,000)" in events[0].message
    crossing = next(t.index for t in timeline.turns if t.tokens_sent >= 20_000)
    assert events[0].turn >= crossing  # nothing compacts below the aligned level
