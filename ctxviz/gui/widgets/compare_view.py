"""Compare: the current plan (A) against another policy or parameter set (B), differences highlighted."""

from __future__ import annotations

from PySide6.QtCore import Signal
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
from ..safe import plain_label, set_plain_tooltip
from .message_strip import MessageStrip


class CompareView(QWidget):
    compareRequested = Signal(str, dict)

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
        self.strip_a = MessageStrip()
        self.strip_b = MessageStrip()
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["#", "A", "B", "A's reason", "B's reason"])
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        for col in (3, 4):  # the reasons share the width; hover shows a long one whole
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)
        # The strips stay out of the way until there is something to compare.
        self.strips = QWidget()
        strips = QVBoxLayout(self.strips)
        strips.setContentsMargins(0, 0, 0, 0)
        for label, strip in (("A (current view)", self.strip_a), ("B", self.strip_b)):
            strip.setFixedHeight(150)
            strips.addWidget(QLabel(label))
            strips.addWidget(strip)
        self.strips.setVisible(False)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(self.strips)
        layout.addWidget(self.table, 1)

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

    def show_result(self, a: Plan, b: Plan) -> None:
        diffs = compare(a, b)
        highlight = {d.index for d in diffs}
        self.strip_a.set_plan(None, a, highlight)
        self.strip_b.set_plan(None, b, highlight)
        self.summary.setText(f"A ({a.policy}): {a.totals.used:,} of {a.totals.budget:,} tokens, {a.totals.kept_messages} sent  |  "
                             f"B ({b.policy}): {b.totals.used:,} of {b.totals.budget:,} tokens, {b.totals.kept_messages} sent  |  "
                             f"{len(diffs)} messages decided differently (outlined in red)")
        self.strips.setVisible(True)
        self.table.setRowCount(len(diffs))
        for row, d in enumerate(diffs):
            for col, text in enumerate((str(d.index), d.a.decision.value, d.b.decision.value, d.a.reason, d.b.reason)):
                item = QTableWidgetItem(text)
                if col >= 3:
                    set_plain_tooltip(item, text)
                self.table.setItem(row, col, item)
        for col in (0, 1, 2):
            self.table.resizeColumnToContents(col)
