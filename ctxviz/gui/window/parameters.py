"""The parameters dock: the policy's title and what it does (and why a log opened under it), its
parameters as a form, reset, presets saved and loaded, undo and redo's enabled state.

A mixin of `MainWindow` (gui/main_window.py).
"""

from __future__ import annotations

import html
import re
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QLabel, QPushButton, QScrollArea, QVBoxLayout, QWidget

from ...engine.plan import Plan
from ...engine.policies import get_policy
from ...engine.policies.base import params_dict
from ...engine.tokenizers import get_tokenizer
from ...errors import CtxvizError, LoadError, UnknownNameError
from ...io.config import dump_preset, field_line, load_preset
from ...io.exporters import write_atomic
from ...resources import resource_path
from ..safe import BREAK
from ..widgets.param_form import ParamForm


class ParametersDock:
    """The policy's parameters, for `MainWindow`."""

    vm: Any
    registry: Any
    policy_box: Any
    tokenizer_box: Any

    def _build_params_dock(self) -> QScrollArea:
        """The title, the form and Reset, scrolling in a narrow column (`params_panel`)."""
        self.params = ParamForm()
        self.policy_title = QLabel()
        self.policy_title.setWordWrap(True)
        self.reset_button = QPushButton("Reset to defaults")
        self.reset_button.setToolTip("Every parameter back to the framework's default (Ctrl+Shift+0; Ctrl+Z undoes)")
        self.reset_button.clicked.connect(self.vm.reset_params)
        side = QWidget()
        sl = QVBoxLayout(side)
        sl.addWidget(self.policy_title)
        sl.addWidget(self.params)
        sl.addWidget(self.reset_button, 0, Qt.AlignmentFlag.AlignLeft)
        sl.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidget(side)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(250)
        side.setMinimumWidth(230)

        self.params_panel = scroll
        return scroll

    def _policy_changed(self, name: str) -> None:
        self._show_policy_title(name)
        policy = get_policy(name)
        effective = dict(self.vm.plan.params) if self.vm.plan is not None and self.vm.plan.policy == name else {}
        self.params.build(self.vm.params, effective, policy.trigger, policy.keep, self._limits())
        if self.policy_box.currentText() != name:
            self.policy_box.blockSignals(True)
            self.policy_box.setCurrentText(name)
            self.policy_box.blockSignals(False)

    def _show_policy_title(self, name: str) -> None:
        """The policy's title and what it does, and, when the open log chose it, why (its agent's own)."""
        policy = get_policy(name)
        opened = self.vm.opened
        why = (f"<br><small><i>Opened under {html.escape(opened.reason)}; the Policy box chooses another.</i></small>"
               if opened is not None and opened.agents_own and opened.policy == name else "")
        # A class name may break between its words: "SlidingWindowConversationManager" ran past a 250-pixel panel's edge.
        title = re.sub(r"(?<=[a-z])(?=[A-Z])", BREAK, html.escape(policy.title))
        self.policy_title.setText(f"<b>{title}</b><br><small>{html.escape(policy.description)}</small>{why}")

    def _limits(self, plan: Plan | None = None) -> dict[str, int]:
        """What the sliders of a unit should reach for this session: all its messages, all its tokens."""
        plan = plan or self.vm.plan
        if plan is None:
            return {}
        return {"messages": len(plan.messages), "tokens": sum(plan.columns.tokens) + plan.totals.used}

    def toggle_params(self) -> None:
        self.params_panel.setVisible(not self.params_panel.isVisible())

    def _history_changed(self, can_undo: bool, can_redo: bool) -> None:
        self.registry.actions["undo"].setEnabled(can_undo)
        self.registry.actions["redo"].setEnabled(can_redo)

    def save_preset(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save parameters", f"{self.vm.policy}.yaml", "YAML (*.yaml *.yml)")
        if path:
            self.write_preset(path)

    def write_preset(self, path: str) -> None:
        try:
            write_atomic(path, dump_preset(self.vm.policy, params_dict(self.vm.params), self.vm.tokenizer or ""), inputs=self._input_files())
        except CtxvizError as exc:
            self.show_error(str(exc))

    def load_preset_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load parameters", str(resource_path("presets")), "YAML (*.yaml *.yml)")
        if path:
            self.apply_preset(path)

    def apply_preset(self, path: str) -> None:
        """Every key `ctxviz plan --config` applies: the policy, its parameters and the tokenizer
        (a preset saved with cl100k_base was planned with the policy's own counter, 14,538 tokens
        by the command line, another figure in the app). A preset without a tokenizer keeps the
        one chosen, which "Copy as command" then gives as --tokenizer."""
        try:
            preset = load_preset(path)
            policy = preset.policy or self.vm.policy
            params = get_policy(policy).make_params(preset.params)
            if preset.tokenizer:
                try:
                    get_tokenizer(preset.tokenizer)
                except UnknownNameError as exc:  # the file's error, at its line, as `--config` says it
                    raise LoadError(preset.path, str(exc), field_line(preset.path, ("tokenizer",)), "tokenizer") from None
        except CtxvizError as exc:
            self.show_error(str(exc))
            return
        self.policy_box.blockSignals(True)
        self.policy_box.setCurrentText(policy)
        self.policy_box.blockSignals(False)
        if preset.tokenizer:
            self.show_tokenizer(preset.tokenizer)
        self.vm.set_params(params, policy, tokenizer=preset.tokenizer or None)
        self._policy_changed(policy)

    def show_tokenizer(self, name: str | None) -> None:
        """The Tokenizer box shows `name` (None: the policy's own) without re-planning: a model name
        given as a tokenizer (gpt-4o) is added to the box's choices."""
        box = self.tokenizer_box
        text = name or "policy's own"
        box.blockSignals(True)
        if box.findText(text) < 0:
            box.addItem(text)
        box.setCurrentText(text)
        box.blockSignals(False)
