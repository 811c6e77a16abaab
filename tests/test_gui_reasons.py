"""Group by reason (issue 24): the message table's grouped view and reason filter read the policy's
reason codes, and Compare groups its differences by both sides' decisions and codes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402

from ctxviz.engine.explain import compare, group_differences  # noqa: E402
from ctxviz.engine.policies import get_policy  # noqa: E402
from ctxviz.engine.reason_codes import CODES  # noqa: E402

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


@pytest.fixture
def window(open_window):  # type: ignore[no-untyped-def]
    return open_window(SAMPLES / "support_chat.yaml")


def test_the_grouped_table_counts_every_message_once_by_its_code(window) -> None:  # type: ignore[no-untyped-def]
    plan = window.vm.plan
    window.group_button.setChecked(True)
    assert window.table_stack.currentWidget() is window.reason_groups
    groups = window.reason_groups.groups.groups
    assert sum(g.count for g in groups) == len(plan.messages)
    for g in groups:
        assert all(plan.reason_codes[i] == g.reason.code for i in g.indices)
        assert g.tokens == sum(plan.messages[i].tokens for i in g.indices)
        # A group's side is its code's: never a kept-sounding group of messages not sent.
        assert all(plan.messages[i].sent == g.reason.sent for i in g.indices)
    model = window.reason_groups.groups
    row = next(r for r, g in enumerate(groups) if g.reason.code == "after_cut")
    assert model.index(row, 1).data() == "not sent"
    assert model.index(row, 2).data() == f"{groups[row].count:,}"
    assert model.index(row, 0).data(Qt.ItemDataRole.ToolTipRole) == CODES["after_cut"].meaning


def test_groups_follow_the_other_filters_and_a_group_opens_its_messages(window) -> None:  # type: ignore[no-untyped-def]
    plan = window.vm.plan
    window.role_filter.setCurrentText("user")
    window.group_button.setChecked(True)
    groups = window.reason_groups.groups.groups
    users = [m.index for m in plan.messages if m.role == "user"]
    assert sorted(i for g in groups for i in g.indices) == users
    after_cut = next(g for g in groups if g.reason.code == "after_cut")
    window.reason_groups.groupOpened.emit("after_cut")  # what a double-click on the group does
    assert window.table_stack.currentWidget() is window.table and not window.group_button.isChecked()
    assert window.reason_filter.code() == "after_cut"
    shown = [window.model.message_index(r) for r in range(window.model.rowCount())]
    assert shown == list(after_cut.indices)


def test_the_reason_filter_offers_the_policys_vocabulary_with_meanings(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    box = window.reason_filter
    offered = [box.itemData(i) for i in range(1, box.count())]
    declared = get_policy("missy").reason_codes
    assert set(declared) <= set(offered)
    assert set(window.vm.plan.reason_codes) <= set(offered)
    for i in range(1, box.count()):
        code = CODES[box.itemData(i)]
        assert box.itemData(i, Qt.ItemDataRole.ToolTipRole).endswith(code.meaning)
        assert box.itemText(i).startswith(code.label + " (")
    # Another policy: its own vocabulary.
    with qtbot.waitSignal(window.vm.planReady, timeout=30000):
        window.policy_box.setCurrentText("codex-compaction")
    offered = {box.itemData(i) for i in range(1, box.count())}
    assert set(get_policy("codex-compaction").reason_codes) <= offered and "after_cut" not in offered


def test_compare_groups_its_differences_and_a_group_opens_to_its_messages(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.tabs.setCurrentIndex(2)
    window.compare.policy.setCurrentText("supyagent")
    with qtbot.waitSignal(window.vm.compareReady, timeout=30000):
        window.compare.request()
    a, b = window.compare.shown
    diffs = compare(a, b)
    expected = group_differences(diffs)
    items = window.compare.group_items()
    assert len(diffs) > 100 and len(items) == len(expected) < 10  # not 139 identical rows
    for item, g in zip(items, expected, strict=True):
        assert item.text(0).startswith(f"{g.count:,} message")
        assert (item.text(1), item.text(2)) == (g.a_decision, g.b_decision)
        assert item.text(3) == CODES[g.a_code].label and item.text(4) == CODES[g.b_code].label
        item.setExpanded(True)
        assert [int(item.child(r).text(0).lstrip("#")) for r in range(item.childCount())] == list(g.indices)
    with qtbot.waitSignal(window.compare.messageRequested) as opened:
        window.compare._open_item(items[0].child(0))
    assert opened.args == [expected[0].indices[0]]
