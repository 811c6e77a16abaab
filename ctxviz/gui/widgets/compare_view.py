"""Compare: the current plan (A) against another policy or parameter set (B), differences highlighted."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...engine.explain import compare
from ...engine.plan import Plan
from ...engine.policies import get_policy, policy_names
from ...engine.policies.base import params_dict
from ...engine.reasons import short
from ..safe import plain_label, set_plain_tooltip
from ..theme import WARNING
from .diff_lane import DiffLane, lane_legend_html
from .message_strip import MessageStrip


def settings_text(plan: Plan) -> str:
    """The policy and the parameters that differ from its defaults: how a strip is labelled."""
    defaults = params_dict(get_policy(plan.policy).default_params()) if plan.policy in policy_names() else {}
    changed = [f"{k}={v}" for k, v in plan.params.items() if defaults.get(k, v) != v]
    return f"{plan.policy} ({', '.join(changed) if changed else 'defaults'})"


class CompareView(QWidget):
    compareRequested = Signal(str, dict)
    #: A message index to show (a row of the differences was opened).
    messageRequested = Signal(int)

    def __init__(self, policies: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.policy = QComboBox()
        self.policy.addItems(policies)
        self.overrides = QLineEdit()
        self.overrides.setPlaceholderText("B's parameters, e.g. total=50000 fresh_tail_count=24")
        run = QPushButton("Compare")
        run.clicked.connect(self.request)
        self.overrides.returnPressed.connect(self.request)
        top = QHBoxLayout()
        top.addWidget(QLabel("B:"))
        top.addWidget(self.policy)
        top.addWidget(self.overrides, 1)
        top.addWidget(run)
        self.summary = plain_label("A is the current view. Choose B and press Compare.")
        self.summary.setWordWrap(True)
        self.costs = plain_label()
        self.costs.setWordWrap(True)
        self.costs.hide()
        # Shown when A has changed since the comparison: never an old result passed off as current.
        self.stale = QWidget()
        stale = QHBoxLayout(self.stale)
        stale.setContentsMargins(0, 0, 0, 0)
        self.stale_label = plain_label()
        self.stale_label.setStyleSheet(f"color: {WARNING};")
        self.stale_label.setWordWrap(True)
        refresh = QPushButton("Compare again")
        refresh.clicked.connect(self.request)
        stale.addWidget(self.stale_label, 1)
        stale.addWidget(refresh)
        self.stale.hide()
        self.shown: tuple[Plan, Plan] | None = None
        self.strip_a = MessageStrip()
        self.strip_b = MessageStrip()
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["#", "A", "B", "A's reason", "B's reason"])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.cellDoubleClicked.connect(self._open_row)
        self.table.cellActivated.connect(self._open_row)
        self.table.setToolTip("Differences grouped by their reasons; double-click (or Enter) opens the message on the overview")
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        for col in (3, 4):  # the reasons share the width; hover shows a long one whole
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)
        # The strips stay out of the way until there is something to compare.
        self.strips = QWidget()
        strips = QVBoxLayout(self.strips)
        strips.setContentsMargins(0, 0, 0, 0)
        self.label_a, self.label_b = plain_label("A (current view)"), plain_label("B")
        # Between the strips, a thin lane marks the messages decided differently (not outlines).
        self.lane = DiffLane(self.strip_a)
        self.lane.messageClicked.connect(self.messageRequested)
        self.lane_label = QLabel()
        self.lane_label.setTextFormat(Qt.TextFormat.RichText)  # our own words and colours only
        for label, strip in ((self.label_a, self.strip_a), (self.label_b, self.strip_b)):
            strip.setFixedHeight(120)
            strips.addWidget(label)
            strips.addWidget(strip)
            if strip is self.strip_a:
                strips.addWidget(self.lane_label)
                strips.addWidget(self.lane)
        self.strips.setVisible(False)
        # One token axis for both: zooming or panning one moves the other.
        self.strip_b.setXLink(self.strip_a)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(self.costs)
        layout.addWidget(self.stale)
        layout.addWidget(self.strips)
        layout.addWidget(self.table, 1)

    def check_current(self, plan: Plan) -> None:
        """Say so when A has changed since the comparison shown (policy, parameters or the plan itself)."""
        if self.shown is None:
            return
        a = self.shown[0]
        if (a.policy, dict(a.params)) != (plan.policy, dict(plan.params)) or len(a.messages) != len(plan.messages):
            self.stale_label.setText(f"This comparison is of an earlier A ({settings_text(a)}); the current view is {settings_text(plan)}.")
            self.stale.show()
            self.label_a.setText(f"A: {settings_text(a)} (an earlier view, not the current one)")
        else:
            self.stale.hide()
            self.label_a.setText(f"A: {settings_text(a)} (the current view)")

    def _open_row(self, row: int, _column: int = 0) -> None:
        item = self.table.item(row, 0)
        if item is not None and item.text().isdigit():
            self.messageRequested.emit(int(item.text()))

    def set_request(self, policy: str, overrides: str) -> None:
        """Fill in B (the app's `--compare` options) without running it."""
        self.policy.setCurrentText(policy)
        self.overrides.setText(overrides)

    def request(self) -> None:
        """Compare with B as filled in (the Compare button, Enter in the parameters field)."""
        overrides = {}
        for item in self.overrides.text().replace(",", " ").split():
            key, _, value = item.partition("=")
            if key:
                overrides[key] = value
        self.compareRequested.emit(self.policy.currentText(), overrides)

    def show_costs(self, a: Plan, b: Plan, cost_a: Any, cost_b: Any) -> None:
        """Each side replayed turn by turn and priced with prompt caching, under the totals."""
        if self.shown is None or self.shown[0] is not a or self.shown[1] is not b:
            return
        lines = [f"{side} replayed: " + (f"input ${c.cost:,.4f} with {c.model.name}'s prompt caching, cache hits {c.hit_share:.0%}, "
                                          f"cache broken at {len(c.breaks):,} turn(s)" if c is not None else "could not be replayed")
                 for side, c in (("A", cost_a), ("B", cost_b))]
        self.costs.setText("\n".join(lines))
        self.costs.show()

    def show_result(self, a: Plan, b: Plan) -> None:
        self.shown = (a, b)
        self.stale.hide()
        self.costs.setText("Replaying both sides to price them with prompt caching…")
        self.costs.show()
        diffs = compare(a, b)
        # Grouped by what happened on each side, so "A dropped after the cut, B kept: fresh tail" reads as one block.
        diffs.sort(key=lambda d: (short(d.a), short(d.b), d.index))
        self.strip_a.set_plan(None, a)
        self.strip_b.set_plan(None, b)
        self.lane.set_differences(diffs)
        self.lane_label.setText(lane_legend_html(len(diffs)))
        # One token axis for both strips, so the same position is the same message's tokens.
        self.label_a.setText(f"A: {settings_text(a)} (the current view)")
        self.label_b.setText(f"B: {settings_text(b)}")
        self.summary.setText(f"A ({a.policy}): {a.totals.used:,} of {a.totals.budget:,} tokens, {a.totals.kept_messages:,} sent  |  "
                             f"B ({b.policy}): {b.totals.used:,} of {b.totals.budget:,} tokens, {b.totals.kept_messages:,} sent  |  "
                             f"{len(diffs):,} messages decided differently (marked in the lane between the strips)")
        self.strips.setVisible(True)
        self.table.setRowCount(len(diffs))
        for row, d in enumerate(diffs):
            for col, text in enumerate((str(d.index), d.a.decision.value, d.b.decision.value, short(d.a), short(d.b))):
                item = QTableWidgetItem(text)
                if col >= 3:
                    set_plain_tooltip(item, (d.a if col == 3 else d.b).reason)
                self.table.setItem(row, col, item)
        for col in (0, 1, 2):
            self.table.resizeColumnToContents(col)
