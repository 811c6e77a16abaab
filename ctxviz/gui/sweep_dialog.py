"""Tools > Sweep: the current policy's trigger and keep swept over a grid on the open session, the
trade-off drawn (cost with prompt caching against retention, the Pareto front marked), and the
cheapest setting that meets the floors one click from being applied."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QDialog, QFormLayout, QHBoxLayout, QLineEdit, QPushButton, QVBoxLayout, QWidget

from ..engine.policies import get_policy
from ..engine.policies.base import param_fields
from ..engine.wording import noun
from .safe import plain_label
from .sweep_chart import SweepChart


def default_grid(policy_name: str, params: Any) -> list[str]:
    """A first grid: the trigger's and keep's current numeric values from half to one and a half times."""
    policy = get_policy(policy_name)
    kinds = {f.name: f.type for f in param_fields(policy.params_type)}
    grid: list[str] = []
    for name in dict.fromkeys((*policy.trigger, *policy.keep)):
        value = getattr(params, name, None)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value:
            continue
        if isinstance(value, float) or "float" in str(kinds.get(name)):
            values = sorted({round(min(1.0, value * k / 4), 3) for k in (2, 3, 4, 5, 6)})
        else:
            values = sorted({max(1, int(value * k / 4)) for k in (2, 3, 4, 5, 6)})
        grid.append(f"{name}={','.join(str(v) for v in values)}")
        if len(grid) == 2:
            break
    return grid


class SweepDialog(QDialog):
    def __init__(self, vm: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.vm = vm
        self.setWindowTitle(f"Sweep {vm.policy} on this session")
        grid = default_grid(vm.policy, vm.params)
        self.grid_a = QLineEdit(grid[0] if grid else "")
        self.grid_b = QLineEdit(grid[1] if len(grid) > 1 else "")
        for edit in (self.grid_a, self.grid_b):
            edit.setPlaceholderText("NAME=START:STOP:STEP or NAME=V1,V2,...")
        self.floors = QLineEdit("overflows=0")
        self.floors.setPlaceholderText("floors, e.g. retention>=0.5 overflows=0 (space separated)")
        form = QFormLayout()
        form.addRow("grid", self.grid_a)
        form.addRow("and", self.grid_b)
        form.addRow("require", self.floors)
        self.run_button = QPushButton("Run")
        self.run_button.clicked.connect(self.run)
        self.apply_button = QPushButton("Use the cheapest")
        self.apply_button.setEnabled(False)
        self.apply_button.clicked.connect(self.apply_best)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.apply_button)
        self.result = plain_label("Each combination is replayed turn by turn on this session and priced with prompt caching.")
        self.result.setWordWrap(True)
        self.chart = SweepChart()
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.result)
        layout.addWidget(self.chart, 1)
        self.resize(900, 640)
        self.best: Any = None
        vm.sweepReady.connect(self.show_rows)

    def run(self) -> None:
        self.run_button.setEnabled(False)
        self.apply_button.setEnabled(False)
        self.result.setText("Replaying…")
        self.vm.run_sweep([g for g in (self.grid_a.text(), self.grid_b.text()) if g.strip()], self.floors.text().split())

    def show_rows(self, rows: list[Any], best: Any, message: str) -> None:
        self.run_button.setEnabled(True)
        if message:
            self.result.setText(message)
            return
        self.best = best
        self.chart.set_rows(rows, best, f"{self.vm.policy}: {len(rows):,} {noun(len(rows), 'combination')}")
        if best is None and self.floors.text().strip():
            self.result.setText(f"No combination meets {self.floors.text()}.")
        elif best is not None:
            settings = " ".join(f"{k}={v}" for k, v in best.params.items() if k in self.grid_a.text() + self.grid_b.text())
            self.result.setText(f"Cheapest meeting {self.floors.text()}: {settings} (input ${best.metrics['cost']:,.4f} with caching).")
        else:
            self.result.setText(f"{len(rows):,} {noun(len(rows), 'combination')}; the Pareto front is joined.")
        self.apply_button.setEnabled(best is not None)

    def apply_best(self) -> None:
        if self.best is not None:
            self.vm.set_params(get_policy(self.vm.policy).make_params(dict(self.best.params), base=self.vm.params))
