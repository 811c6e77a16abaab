"""The parameter panel, built from the active policy's parameter dataclass.

Each numeric field gets a slider and a spin box, each bool a check box; the field's metadata gives
its help text and range. A value the framework rejects shows the framework's own message inline
under the field and is not applied.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ...engine.policies.base import field_type, param_fields
from ..theme import WARNING

FLOAT_STEPS = 1000


class ParamForm(QWidget):
    valueChanged = Signal(str, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.layout_ = QFormLayout(self)
        self.layout_.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.layout_.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        self.editors: dict[str, tuple[QWidget, ...]] = {}
        self.errors: dict[str, QLabel] = {}
        self._updating = False
        self.params_type: type | None = None

    def build(self, params: Any, effective: dict[str, Any] | None = None) -> None:
        """Rebuild for a policy's parameter dataclass (on policy change)."""
        while self.layout_.rowCount():
            self.layout_.removeRow(0)
        self.editors, self.errors = {}, {}
        self.params_type = type(params)
        for f in param_fields(type(params)):
            kind = field_type(type(params), f.name)
            optional = type(None) in getattr(kind, "__args__", ())
            base = next((a for a in getattr(kind, "__args__", ()) if a is not type(None)), kind)
            value = getattr(params, f.name)
            if value is None and effective:
                value = effective.get(f.name)
            meta = dict(f.metadata)
            row = QWidget()
            box = QVBoxLayout(row)
            box.setContentsMargins(0, 0, 0, 0)
            box.setSpacing(2)
            line = QHBoxLayout()
            if base is bool:
                editor = QCheckBox("on")
                editor.setChecked(bool(value))
                editor.toggled.connect(lambda v, n=f.name: self._emit(n, v))
                line.addWidget(editor)
                hint = QLabel(meta.get("help", ""))
                hint.setWordWrap(True)
                hint.setStyleSheet("color: palette(placeholder-text);")
                line.addWidget(hint, 1)
                self.editors[f.name] = (editor,)
            else:
                slider = QSlider(Qt.Orientation.Horizontal)
                if base is float:
                    spin: QSpinBox | QDoubleSpinBox = QDoubleSpinBox()
                    spin.setDecimals(3)
                    spin.setSingleStep(meta.get("step", 0.01))
                    lo, hi = meta.get("min", 0.0), meta.get("max", 1.0)
                    spin.setRange(lo, hi)
                    slider.setRange(int(lo * FLOAT_STEPS), int(hi * FLOAT_STEPS))
                else:
                    spin = QSpinBox()
                    spin.setGroupSeparatorShown(True)
                    lo = int(meta.get("min", 0))
                    current = int(value or 0)
                    hi = int(meta.get("max", max(current * 4, 1000)))
                    spin.setRange(-1_000_000_000 if lo < 0 else 0, 1_000_000_000)  # the framework validates, not the widget
                    spin.setSingleStep(int(meta.get("step", 1)))
                    slider.setRange(lo, hi)
                    slider.setSingleStep(int(meta.get("step", 1)))
                    slider.setPageStep(max(1, (hi - lo) // 20))
                spin.setValue(value or 0)
                slider.setValue(int((value or 0) * (FLOAT_STEPS if base is float else 1)))
                spin.setKeyboardTracking(False)
                slider.valueChanged.connect(lambda v, n=f.name, s=spin, fl=(base is float): self._from_slider(n, v, s, fl))
                spin.valueChanged.connect(lambda v, n=f.name, sl=slider, fl=(base is float): self._from_spin(n, v, sl, fl))
                spin.setFixedWidth(112)  # one width for every field, so the sliders line up
                slider.setMinimumWidth(60)
                line.addWidget(slider, 1)
                line.addWidget(spin)
                self.editors[f.name] = (slider, spin)
                if optional and getattr(params, f.name) is None:
                    spin.setToolTip("default for the model; change it to set it explicitly")
            box.addLayout(line)
            error = QLabel()
            error.setStyleSheet(f"color: {WARNING};")
            error.setWordWrap(True)
            error.hide()
            box.addWidget(error)
            self.errors[f.name] = error
            label = QLabel(f.name)
            label.setToolTip(meta.get("help", ""))
            row.setToolTip(meta.get("help", ""))
            self.layout_.addRow(label, row)

    def show_error(self, name: str, message: str) -> None:
        label = self.errors.get(name)
        if label is None:
            return
        label.setText(message)
        label.setVisible(bool(message))

    def set_values(self, params: Any) -> None:
        """Reflect parameters set elsewhere (a preset, a command) without emitting changes."""
        self._updating = True
        try:
            for name, value in dataclasses.asdict(params).items():
                widgets = self.editors.get(name)
                if not widgets or value is None:
                    continue
                if isinstance(widgets[0], QCheckBox):
                    widgets[0].setChecked(bool(value))
                else:
                    slider, spin = widgets
                    spin.setValue(value)  # type: ignore[attr-defined]
                    slider.setValue(int(value * FLOAT_STEPS) if isinstance(value, float) else int(value))  # type: ignore[attr-defined]
        finally:
            self._updating = False

    def _from_slider(self, name: str, value: int, spin: QSpinBox | QDoubleSpinBox, is_float: bool) -> None:
        if self._updating:
            return
        self._updating = True
        spin.setValue(value / FLOAT_STEPS if is_float else value)
        self._updating = False
        self._emit(name, value / FLOAT_STEPS if is_float else value)

    def _from_spin(self, name: str, value: float, slider: QSlider, is_float: bool) -> None:
        if self._updating:
            return
        self._updating = True
        slider.setValue(int(value * FLOAT_STEPS) if is_float else int(value))
        self._updating = False
        self._emit(name, value)

    def _emit(self, name: str, value: Any) -> None:
        if not self._updating:
            self.valueChanged.emit(name, value)
