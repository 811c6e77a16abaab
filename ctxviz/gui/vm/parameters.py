"""The view-model's inputs the user changes: policy, parameters, tokenizer and options, with undo
and redo (a slider drag is one step), pins, and the `ctxviz plan` command that reproduces them.

A mixin of `ContextViewModel` (gui/viewmodel.py).
"""

from __future__ import annotations

import dataclasses
import shlex
import time
from typing import Any

from ...engine.policies import get_policy
from ...engine.policies.base import params_dict
from ...errors import ParameterError


class ParameterHistory:
    """Policy, parameters and options in force, and their history, for `ContextViewModel`."""

    session: Any
    policy: str
    params: Any
    tokenizer: str | None
    options: Any
    timeline: Any
    _undo: list[tuple[str, Any]]
    _redo: list[tuple[str, Any]]
    _last_change: tuple[str, float]
    _sim_generation: int

    # --- undo and redo of parameter changes ---------------------------------------------------------
    #: Changes of one parameter closer together than this are one step (a slider drag is one undo).
    COALESCE_SECONDS = 0.8

    def _remember(self, field: str = "") -> None:
        """Push the state in force before a change, unless it continues the same field's drag."""
        now = time.monotonic()
        last_field, last_time = self._last_change
        if not (field and last_field == field and now - last_time < self.COALESCE_SECONDS and self._undo):
            self._undo.append((self.policy, self.params))
            del self._undo[:-200]
        self._last_change = (field, now)
        self._redo = []
        self.historyChanged.emit(True, False)

    def undo(self) -> None:
        self._step(self._undo, self._redo)

    def redo(self) -> None:
        self._step(self._redo, self._undo)

    def _step(self, source: list[Any], target: list[Any]) -> None:
        if not source:
            return
        target.append((self.policy, self.params))
        policy, params = source.pop()
        self._last_change = ("", 0.0)
        self._apply(policy, params)
        self.historyChanged.emit(bool(self._undo), bool(self._redo))

    def reset_params(self) -> None:
        """Every parameter back to the policy's (the framework's) default, as one undoable step."""
        defaults = get_policy(self.policy).default_params()
        if defaults != self.params:
            self._remember()
            self._apply(self.policy, defaults)

    def _apply(self, policy: str, params: Any) -> None:
        """Put a policy and its parameters in force: both are set before any view hears of either
        (the parameter panel rebuilds from the new policy's parameters on policyChanged)."""
        switched = policy != self.policy
        self.policy, self.params = policy, params
        self._replay_inputs_changed()
        if switched:
            self.policyChanged.emit(policy)
        self.paramsChanged.emit(params)
        self.replan()

    def set_policy(self, name: str) -> None:
        self.policy_chosen = True
        if name == self.policy:
            return
        self._remember()
        self._apply(name, get_policy(name).default_params())

    def set_param(self, name: str, value: Any) -> bool:
        """Apply one parameter; the framework's validation message goes back inline on failure."""
        try:
            params = get_policy(self.policy).make_params({name: value}, base=self.params)
        except ParameterError as exc:
            self.paramError.emit(name, str(exc))
            return False
        self.paramError.emit(name, "")
        if params != self.params:
            self._remember(name)
            self._apply(self.policy, params)
        return True

    def set_params(self, params: Any, policy: str | None = None, tokenizer: str | None = None) -> None:
        """`tokenizer`: also count with it (a preset that names one, as `--config` does), in the same plan."""
        if policy:
            self.policy_chosen = True
        if params != self.params or (policy and policy != self.policy):
            self._remember()
        if tokenizer:
            self.tokenizer = tokenizer
        self._apply(policy or self.policy, params)

    def set_tokenizer(self, name: str | None) -> None:
        self.tokenizer = name or None
        self._replay_inputs_changed()
        self.replan()

    def set_options(self, **changes: Any) -> None:
        before = self.options
        self.options = dataclasses.replace(self.options, **changes)
        # the replay is pair-safe (and pinned) or not like the plan; the real count is not replayed
        if (self.options.pair_safe, self.options.pins) != (before.pair_safe, before.pins):
            self._replay_inputs_changed()
        self.replan()

    def toggle_pin(self, index: int) -> bool:
        """Pin message `index` (it is sent whatever the policy decides) or unpin it; True when pinned."""
        rule = f"#{index}"
        pins = tuple(p for p in self.options.pins if p != rule)
        pinned = len(pins) == len(self.options.pins)
        self.set_options(pins=tuple(sorted((*pins, rule), key=lambda r: int(r[1:]))) if pinned else pins)
        return pinned

    def _replay_inputs_changed(self) -> None:
        """The timeline replays the plan's inputs: once they change, the one held (and any still
        being simulated) is of another plan. It is dropped, a running simulation abandoned at its
        next progress report, and the views told."""
        self._sim_generation += 1
        had = self.timeline is not None
        self.timeline = None
        self._end_simulation("")
        if had or self.session is not None:
            self.timelineStale.emit()

    def command_line(self) -> str:
        """The `ctxviz plan` command that reproduces this view headlessly."""
        if self.session is None:
            return ""
        defaults = params_dict(get_policy(self.policy).default_params())
        parts = ["ctxviz", "plan", self.session.source, "--policy", self.policy]
        for key, value in params_dict(self.params).items():
            if value != defaults.get(key):
                parts += ["--set", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
        if self.tokenizer:
            parts += ["--tokenizer", self.tokenizer]
        if self.options.pair_safe:
            parts.append("--pair-safe")
        for rule in self.options.pins:  # a pinned message changes what is sent: without it the command plans another view
            parts += ["--pin", rule]
        if self.options.real_count:
            parts.append("--real-count")
        if self.options.model:
            parts += ["--model", self.options.model]
        return shlex.join(parts)
