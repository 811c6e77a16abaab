"""The parameter panel, built from the active policy's parameter dataclass.

Each numeric field gets a slider and a spin box, each bool a check box, each text a line edit; the field's metadata gives
its help text and range. A value the framework rejects shows the framework's own message inline
under the field and is not applied.

Qt's sliders and spin boxes hold 32-bit ints, parameters are Python ints of any size: an integer
field is an `IntSpinBox` that shows and keeps the exact value, and a slider whose range would not
fit in 32 bits moves in `SLIDER_STEPS` proportional steps; a value beyond the framework's own bounds
pins the slider to its end while the field shows the real value, and a range ctxviz guessed (no
`min`/`max` in the metadata) grows to take in a value set beyond it.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any, Literal, get_args, get_origin

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QTextDocument, QValidator
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSlider,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ...engine.policies.base import field_type, param_fields
from ..safe import BREAK, INT32_MAX, INT32_MIN, plain_label, qt_int
from ..theme import WARNING

FLOAT_STEPS = 1000
#: The highest value a float field without the framework's maximum takes (its slider grows to it).
FLOAT_TOP = 1e12
#: Positions of a slider whose value range does not fit a 32-bit int.
SLIDER_STEPS = 10_000


class IntSpinBox(QAbstractSpinBox):
    """A spin box over Python ints of any size (QSpinBox holds 32 bits), with group separators.

    `setValue` keeps the value it is given exactly; the range only bounds stepping (arrows, wheel)."""

    valueChanged = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._value = 0
        self.unset = False
        self._minimum: int | None = None
        self._maximum: int | None = None
        self._step = 1
        self.lineEdit().setText(self.textFromValue(0))
        self.editingFinished.connect(self._commit)

    # the QSpinBox API the form uses
    def value(self) -> int:
        return self._value

    def set_unset(self, unset: bool) -> None:
        """An optional field with no value: it says "unset" (never 0, which would mean something else)."""
        self.unset = unset
        self.lineEdit().setText("unset" if unset else self.textFromValue(self._value))

    def setValue(self, value: int) -> None:  # noqa: N802
        value = int(value)
        self.unset = False
        self.lineEdit().setText(self.textFromValue(value))
        if value != self._value:
            self._value = value
            self.valueChanged.emit(value)
        self.update()

    def setRange(self, minimum: int | None, maximum: int | None) -> None:  # noqa: N802
        self._minimum, self._maximum = minimum, maximum

    def minimum(self) -> int | None:
        return self._minimum

    def maximum(self) -> int | None:
        return self._maximum

    def setSingleStep(self, step: int) -> None:  # noqa: N802
        self._step = max(1, int(step))

    def singleStep(self) -> int:  # noqa: N802
        return self._step

    @staticmethod
    def textFromValue(value: int) -> str:  # noqa: N802
        return f"{value:,}"

    @staticmethod
    def valueFromText(text: str) -> int | None:  # noqa: N802
        cleaned = text.strip().replace(",", "").replace("_", "").replace(" ", "")
        if not cleaned or cleaned in ("-", "+") or len(cleaned) > 400:
            return None
        try:
            return int(cleaned)
        except ValueError:
            return None

    # QAbstractSpinBox
    def validate(self, text: str, pos: int) -> QValidator.State:
        if self.unset and text == "unset":
            return QValidator.State.Acceptable
        cleaned = text.strip().replace(",", "").replace("_", "").replace(" ", "")
        if cleaned in ("", "-", "+"):
            return QValidator.State.Intermediate
        return QValidator.State.Acceptable if self.valueFromText(text) is not None else QValidator.State.Invalid

    def fixup(self, text: str) -> str:
        return "unset" if self.unset else self.textFromValue(self._value)

    def stepBy(self, steps: int) -> None:  # noqa: N802
        value = self._value + steps * self._step
        if self._minimum is not None:
            value = max(self._minimum, value)
        if self._maximum is not None:
            value = min(self._maximum, value)
        self.setValue(value)
        self.selectAll()

    def stepEnabled(self) -> QAbstractSpinBox.StepEnabledFlag:  # noqa: N802
        flags = QAbstractSpinBox.StepEnabledFlag.StepNone
        if self._maximum is None or self._value < self._maximum:
            flags |= QAbstractSpinBox.StepEnabledFlag.StepUpEnabled
        if self._minimum is None or self._value > self._minimum:
            flags |= QAbstractSpinBox.StepEnabledFlag.StepDownEnabled
        return flags

    def _commit(self) -> None:
        if self.unset and self.lineEdit().text() == "unset":
            return
        value = self.valueFromText(self.lineEdit().text())
        self.setValue(self._value if value is None else value)


class SliderScale:
    """Maps a field's value range onto a QSlider's 32-bit positions: one position per value (per
    1/FLOAT_STEPS for floats) when that fits, else SLIDER_STEPS proportional steps."""

    def __init__(self, lo: float, hi: float, is_float: bool, guessed: tuple[bool, bool] = (False, False)) -> None:
        self.lo, self.hi, self.is_float = lo, max(lo, hi), is_float
        #: Which ends (low, high) are ctxviz's guess, not the framework's `min`/`max`: a guessed end
        #: grows to take in a value set beyond it, rather than pinning the slider where the value is not.
        self.guessed = guessed
        self.unit = FLOAT_STEPS if is_float else 1
        self._fit()

    def _fit(self) -> None:
        self.exact = INT32_MIN <= self.lo * self.unit and self.hi * self.unit <= INT32_MAX

    def reach(self, value: Any) -> bool:
        """Grow a guessed range to twice a value beyond it, so that the slider shows where the value
        is (its end only when it is the end); a framework's own bounds stay. True when it grew."""
        if not isinstance(value, int | float) or isinstance(value, bool) or (isinstance(value, float) and not math.isfinite(value)):
            return False
        if value > self.hi and self.guessed[1]:
            self.hi = value * 2 if self.is_float else int(value) * 2
        elif value < self.lo and self.guessed[0]:
            self.lo = min(value * 2, value) if self.is_float else min(int(value) * 2, int(value))
        else:
            return False
        self._fit()
        return True

    def range(self) -> tuple[int, int]:
        if self.exact:
            return int(self.lo * self.unit), int(self.hi * self.unit)
        return 0, SLIDER_STEPS

    def to_slider(self, value: float) -> int:
        """The slider position for `value`, pinned to the ends beyond the range."""
        low, high = self.range()
        try:
            clamped = min(max(value, self.lo), self.hi)
        except TypeError:
            return low
        if self.exact:
            return qt_int(round(clamped * self.unit), low, high)
        span = self.hi - self.lo
        if not span:
            return low
        if self.is_float:
            return qt_int(round((clamped - self.lo) / span * SLIDER_STEPS), low, high)
        return qt_int((int(clamped) - int(self.lo)) * SLIDER_STEPS // int(span), low, high)  # no float overflow

    def from_slider(self, position: int) -> int | float:
        if self.exact:
            return position / self.unit if self.is_float else position
        if self.is_float:
            return self.lo + (self.hi - self.lo) * position / SLIDER_STEPS
        return int(self.lo) + (int(self.hi) - int(self.lo)) * position // SLIDER_STEPS  # exact for ints of any size


def field_choices(kind: Any, metadata: dict[str, Any]) -> tuple[Any, ...]:
    """The fixed set of values a parameter takes, when it has one: a `Literal[...]`, an Enum, or
    the field's `choices` metadata (a str field whose framework accepts only a few words)."""
    args = tuple(a for a in get_args(kind) if a is not type(None))
    if get_origin(kind) is Literal:
        return args
    base = args[0] if get_origin(kind) is not None and len(args) == 1 else kind
    if get_origin(base) is Literal:
        return tuple(get_args(base))
    if isinstance(base, type) and issubclass(base, enum.Enum):
        return tuple(m.value for m in base)
    return tuple(metadata.get("choices", ()))


#: Units whose values are whole: a float field counting them is edited as an integer.
WHOLE_UNITS = ("tokens", "messages")


def counts_whole(meta: dict[str, Any], value: Any) -> bool:
    """A float field that counts tokens or messages and holds a whole number (LangChain's max_tokens
    is a float only because a fraction acts as its floor): shown "1,500", not "1500.000", and on a
    slider that reaches the session's tokens. A fraction set explicitly keeps the decimal field."""
    return meta.get("unit") in WHOLE_UNITS and (value is None or isinstance(value, int) or float(value).is_integer())


class UnsetDoubleSpinBox(QDoubleSpinBox):
    """A float field whose value may be unset: it says "unset" (never 0.000, which would mean
    something else) until a value is given."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.unset = False

    def set_unset(self, unset: bool) -> None:
        self.unset = unset
        self.lineEdit().setText(self.textFromValue(self.value()))

    def setValue(self, value: float) -> None:  # noqa: N802
        was = self.unset
        self.unset = False
        super().setValue(value)
        if was:
            self.lineEdit().setText(self.textFromValue(self.value()))

    def textFromValue(self, value: float) -> str:  # noqa: N802
        return "unset" if self.unset else super().textFromValue(value)

    def validate(self, text: str, pos: int) -> Any:
        if self.unset and text == "unset":
            return QValidator.State.Acceptable, text, pos
        return super().validate(text, pos)

    def valueFromText(self, text: str) -> float:  # noqa: N802
        return self.value() if text == "unset" else super().valueFromText(text)

    def stepBy(self, steps: int) -> None:  # noqa: N802
        self.unset = False
        super().stepBy(steps)


class NameLabel(QLabel):
    """A parameter's name (and role) over its editor: on one line when the panel is wide enough,
    else wrapped after an underscore, never cut. A form with wrapped rows gives a label the width
    it asks for, even past the form's edge (at 1024 px "model_auto_compact_token_limit · trigger"
    was cut to "… · tr"), and a word-wrapped QLabel asks for a narrow one (short names broke too):
    this one asks for its text's width on one line, at most the form's."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.setWordWrap(True)
        document = QTextDocument()
        document.setDefaultFont(self.font())
        document.setHtml(text)
        self.one_line = int(document.idealWidth()) + 2 * self.margin() + 2

    def sizeHint(self) -> QSize:  # noqa: N802
        form = self.parentWidget()
        width = self.one_line
        if form is not None and form.layout() is not None:
            margins = form.layout().contentsMargins()
            width = max(40, min(width, form.width() - margins.left() - margins.right()))
        return QSize(width, self.heightForWidth(width))


def show_unset(button: QToolButton, active: bool) -> None:
    """An optional field's ×: enabled and shown while the field has a value to unset, else hidden
    (not greyed: a grey × reads as a close button that does not work)."""
    button.setEnabled(active)
    if active and button.parentWidget() is None:
        return  # shown with its row (shown before it has one, it would be a window of its own)
    button.setVisible(active)


class HintLabel(QLabel):
    """A check box's explanation beside it, as tall as its wrapped lines at the width it is given.
    The form's wrapped rows gave it the height its text asks for at its preferred width: at 1024 px
    LlamaIndex's four-line `llm` and eight-line `system_messages_in_memory` hints were cut off at the
    top and bottom. Plain text: a plugin policy's help is not markup."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setText(text)
        self.setWordWrap(True)
        self.setStyleSheet("color: palette(placeholder-text);")

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        needed = self.heightForWidth(self.width())
        if needed > 0 and needed != self.minimumHeight():
            self.setMinimumHeight(needed)


class ParamForm(QWidget):
    valueChanged = Signal(str, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.layout_ = QFormLayout(self)
        self.layout_.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.layout_.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        self.editors: dict[str, tuple[QWidget, ...]] = {}
        self.unsets: dict[str, QToolButton] = {}
        self.in_force: Any = None
        self.errors: dict[str, QLabel] = {}
        self.scales: dict[str, SliderScale] = {}
        #: For each optional number not given when the form was built, the value in force then (the
        #: model's, from the plan): where its slider goes when it is unset again.
        self.defaults: dict[str, float] = {}
        self._updating = False
        self.params_type: type | None = None

    def build(self, params: Any, effective: dict[str, Any] | None = None, trigger: tuple[str, ...] = (),
              keep: tuple[str, ...] = (), limits: dict[str, int] | None = None) -> None:
        """Rebuild for a policy's parameter dataclass (on policy change). The policy's trigger and
        keep parameters come first and are labelled so: they are what users tune in every framework."""
        while self.layout_.rowCount():
            self.layout_.removeRow(0)
        self.editors, self.errors, self.scales = {}, {}, {}
        self.unsets: dict[str, QToolButton] = {}
        self.in_force = params
        # Only for a field not given: a value the user had set is no default to go back to.
        self.defaults = {name: value for name, value in (effective or {}).items()
                         if getattr(params, name, 0) is None and isinstance(value, int | float) and not isinstance(value, bool)}
        self.params_type = type(params)
        roles = {**dict.fromkeys(keep, "keep"), **dict.fromkeys(trigger, "trigger")}
        fields = param_fields(type(params))
        fields.sort(key=lambda f: (0 if roles.get(f.name) == "trigger" else 1 if f.name in roles else 2))
        for f in fields:
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
                line.addWidget(HintLabel(meta.get("help", "")), 1)
                self.editors[f.name] = (editor,)
            elif field_choices(kind, meta):
                choices = field_choices(kind, meta)
                combo = QComboBox()
                combo.addItems([str(c) for c in choices])
                combo.setCurrentIndex(next((i for i, c in enumerate(choices) if c == value or str(c) == str(value)), 0))
                combo.setToolTip(meta.get("help", ""))
                combo.currentIndexChanged.connect(lambda i, n=f.name, cs=choices: self._emit(n, cs[i]))
                line.addWidget(combo, 1)
                self.editors[f.name] = (combo,)
            elif base is str:
                text = QLineEdit("" if value is None else str(value))
                text.setPlaceholderText(meta.get("placeholder", "unset" if optional else ""))
                text.editingFinished.connect(lambda n=f.name, t=text: self._emit(n, t.text()))
                line.addWidget(text, 1)
                self.editors[f.name] = (text,)
            else:
                slider = QSlider(Qt.Orientation.Horizontal)
                guessed = ("min" not in meta, "max" not in meta)
                if base is float and not counts_whole(meta, value):
                    spin: IntSpinBox | QDoubleSpinBox = UnsetDoubleSpinBox()
                    spin.setDecimals(3)
                    spin.setSingleStep(meta.get("step", 0.01))
                    # Without the framework's bounds, a share reaches 1 and another number four times
                    # its value (LangChain's chars_per_token of 4.0 sat at the end of a 0-1 slider).
                    lo, hi = meta.get("min", 0.0), meta.get("max", max(1.0, abs(float(value or 0)) * 4))
                    # It shows the real value; past a guessed top, a typed value is the framework's to refuse.
                    spin.setRange(min(lo, float(value or 0)), FLOAT_TOP if guessed[1] else max(hi, float(value or 0)))
                    scale = SliderScale(lo, hi, True, guessed)
                    scale.reach(value)  # a negative value with no framework minimum
                else:
                    spin = IntSpinBox()
                    lo = int(meta.get("min", 0))
                    current = int(value or 0)
                    # A count of messages or tokens reaches what the session has (not 0-1000 for a
                    # 230-message tail); other integers reach four times their value.
                    unit = meta.get("unit", "")
                    reach = (limits or {}).get(unit)
                    if reach and unit == "tokens":
                        reach = max(reach, current * 2)  # a budget can also be raised past what the session holds
                    hi = int(meta.get("max", max(reach, current) if reach else max(current * 4, 1000)))
                    spin.setRange(None if lo < 0 else 0, None)  # the framework validates, not the widget
                    spin.setSingleStep(int(meta.get("step", 1)))
                    scale = SliderScale(lo, hi, False, guessed)
                    scale.reach(value)  # a negative value with no framework minimum
                    step = int(meta.get("step", 1))
                    slider.setSingleStep(qt_int(step if scale.exact else max(1, SLIDER_STEPS // 1000), 1))
                slider.setRange(*scale.range())
                if not scale.is_float:
                    low, high = scale.range()
                    slider.setPageStep(max(1, (high - low) // 20))
                spin.setValue(value or 0)
                slider.setValue(scale.to_slider(value or 0))
                spin.setKeyboardTracking(False)
                self.scales[f.name] = scale
                slider.valueChanged.connect(lambda v, n=f.name, s=spin, sc=scale: self._from_slider(n, v, s, sc))
                spin.valueChanged.connect(lambda v, n=f.name, sl=slider, sc=scale: self._from_spin(n, v, sl, sc))
                spin.setFixedWidth(112)  # one width for every field, so the sliders line up
                slider.setMinimumWidth(60)
                line.addWidget(slider, 1)
                line.addWidget(spin)
                self.editors[f.name] = (slider, spin)
                if optional:
                    unset = QToolButton()
                    unset.setText("×")
                    unset.setToolTip(f"unset {f.name}: back to its default for the model")
                    # Shown only when there is a value to unset (its place kept): a disabled × beside
                    # every unset field read as a broken close button in the dark theme.
                    policy = unset.sizePolicy()
                    policy.setRetainSizeWhenHidden(True)
                    unset.setSizePolicy(policy)
                    unset.clicked.connect(lambda _checked=False, n=f.name: self._emit(n, None))
                    line.addWidget(unset)
                    show_unset(unset, getattr(params, f.name) is not None)
                    self.unsets[f.name] = unset
                if optional and getattr(params, f.name) is None:
                    spin.setToolTip("default for the model; change it to set it explicitly")
                    if value is None:  # no value at all, not even the model's: "unset", never a 0 that means something else
                        spin.set_unset(True)  # type: ignore[union-attr]
            box.addLayout(line)
            error = plain_label()  # the framework's message quotes the value
            error.setStyleSheet(f"color: {WARNING};")
            error.setWordWrap(True)
            error.hide()
            box.addWidget(error)
            self.errors[f.name] = error
            role = roles.get(f.name)
            # The name may break after its underscores and the role go to the next line: at 1024 px
            # the column cut "model_auto_compact_token_limit · trigger" to "… · tr".
            name = f.name.replace("_", "_" + BREAK)
            label = NameLabel(f"{name}  <span style='color: palette(placeholder-text);'>· {role}</span>" if role else name)
            label.setToolTip((f"This policy's {'trigger: when it acts' if role == 'trigger' else 'keep: how much recent history survives'}. "
                              if role else "") + meta.get("help", ""))
            row.setToolTip(meta.get("help", ""))
            self.layout_.addRow(label, row)

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():  # the names wrap to the new width (`NameLabel`)
            for label in self.findChildren(NameLabel):
                label.updateGeometry()

    def show_error(self, name: str, message: str) -> None:
        """The framework's message beside the field, and the field back at the value in force: a
        rejected value never stays on screen as if it were used."""
        label = self.errors.get(name)
        if label is None:
            return
        if message and self.in_force is not None:
            self.set_values(self.in_force)
        label.setText(message)
        label.setVisible(bool(message))

    def set_values(self, params: Any) -> None:
        """Reflect parameters set elsewhere (a preset, a command) without emitting changes."""
        self.in_force = params
        self._updating = True
        try:
            for name, value in dataclasses.asdict(params).items():
                if name in self.unsets:
                    show_unset(self.unsets[name], value is not None)
                widgets = self.editors.get(name)
                if not widgets:
                    continue
                if value is None:
                    if len(widgets) == 2 and hasattr(widgets[1], "set_unset"):
                        widgets[1].set_unset(True)  # type: ignore[attr-defined]
                        # The slider goes back too: left at the value just unset, it said 60,000
                        # beside "unset" while the plan used the model's 200,000.
                        self._place(widgets[0], self.scales[name], self.defaults.get(name, 0))  # type: ignore[arg-type]
                    continue
                if isinstance(widgets[0], QComboBox):
                    index = widgets[0].findText(str(value.value if isinstance(value, enum.Enum) else value))
                    if index >= 0:
                        widgets[0].setCurrentIndex(index)
                elif isinstance(widgets[0], QCheckBox):
                    widgets[0].setChecked(bool(value))
                elif isinstance(widgets[0], QLineEdit):
                    widgets[0].setText(str(value))
                else:
                    slider, spin = widgets
                    if spin.value() == value and not getattr(spin, "unset", False):  # the field that changed it, or an unchanged one: a slider drag sets one field per step
                        continue
                    if hasattr(spin, "unset"):
                        spin.unset = False  # type: ignore[union-attr]
                    if isinstance(spin, QDoubleSpinBox):
                        spin.setRange(min(spin.minimum(), value), max(spin.maximum(), value))  # show the real value
                    spin.setValue(value)  # type: ignore[attr-defined]
                    self._place(slider, self.scales[name], value)  # type: ignore[arg-type]
        finally:
            self._updating = False

    def _from_slider(self, name: str, position: int, spin: IntSpinBox | QDoubleSpinBox, scale: SliderScale) -> None:
        if self._updating:
            return
        value = scale.from_slider(position)
        self._updating = True
        spin.setValue(value)  # type: ignore[arg-type]
        self._updating = False
        self._emit(name, value)

    def _from_spin(self, name: str, value: float, slider: QSlider, scale: SliderScale) -> None:
        if self._updating:
            return
        self._updating = True
        self._place(slider, scale, value)
        self._updating = False
        self._emit(name, value)

    @staticmethod
    def _place(slider: QSlider, scale: SliderScale, value: float) -> None:
        """The slider at `value`, its guessed range grown first to take the value in (called with
        `_updating` set: a new range moves the handle, which must not send a value)."""
        if scale.reach(value):
            slider.setRange(*scale.range())
        slider.setValue(scale.to_slider(value))

    def _emit(self, name: str, value: Any) -> None:
        if not self._updating:
            self.valueChanged.emit(name, value)
