"""Compare: the current plan (A) against another policy or parameter set (B), differences highlighted."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
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
        run.clicked.connect(self._request)
        self.overrides.returnPressed.connect(self._request)
        top = QHBoxLayout()
        top.addWidget(QLabel("B:"))
        top.addWidget(self.policy)
        top.addWidget(self.overrides, 1)
        top.addWidget(run)
        self.summary = QLabel("A is the current view. Choose B and press Compare.")
        self.summary.setWordWrap(True)
        self.strip_a = MessageStrip()
        self.strip_b = MessageStrip()
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["#", "A", "B", "A's reason", "B's reason"])
        self.table.horizontalHeader().setStretchLastSection(True)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(QLabel("A"))
        layout.addWidget(self.strip_a)
        layout.addWidget(QLabel("B"))
        layout.addWidget(self.strip_b)
        layout.addWidget(self.table, 1)

    def _request(self) -> None:
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
        self.table.setRowCount(len(diffs))
        for row, d in enumerate(diffs):
            for col, text in enumerate((str(d.index), d.a.decision.value, d.b.decision.value, d.a.reason, d.b.reason)):
                self.table.setItem(row, col, QTableWidgetItem(text))
        self.table.resizeColumnsToContents()
