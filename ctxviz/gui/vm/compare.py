"""The Compare tab's side of the view-model: both plans made on the side worker, then (for a
session short enough) both replayed and priced with prompt caching.

A mixin of `ContextViewModel` (gui/viewmodel.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...engine.checks import PlanOptions
from ...engine.plan import Plan
from ...engine.planner import plan_session
from ...engine.policies import get_policy
from ...errors import ParameterError


@dataclass(frozen=True)
class CompareInputs:
    """Everything A's plan is made of: the session (its file and length: a followed log grows), the
    policy and parameters, the tokenizer, and the options (pins, pair safety, the real count and
    its model). A comparison is of the current view only while all of them are unchanged."""

    source: str
    messages: int
    policy: str
    params: Any
    tokenizer: str | None
    options: PlanOptions


def _onoff(flag: bool) -> str:
    return "on" if flag else "off"


def input_changes(before: CompareInputs | None, now: CompareInputs | None) -> list[str]:
    """What changed in A's inputs since `before`, in words ("tokenizer: policy's own → cl100k_base");
    policy and parameters are said by the Compare tab from the plans themselves."""
    if before is None or now is None or before == now:
        return []
    if before.source != now.source:
        return ["another session"]
    out = [f"the session grew from {before.messages:,} to {now.messages:,} messages"] if before.messages != now.messages else []
    a, b = before.options, now.options
    for name, old, new in (("tokenizer", before.tokenizer or "policy's own", now.tokenizer or "policy's own"),
                           ("pins", ", ".join(a.pins) or "none", ", ".join(b.pins) or "none"),
                           ("pair-safe", _onoff(a.pair_safe), _onoff(b.pair_safe)),
                           ("real count", _onoff(a.real_count), _onoff(b.real_count)),
                           ("model", a.model or "the session's", b.model or "the session's")):
        if old != new:
            out.append(f"{name}: {old} → {new}")
    return out


class CompareRequests:
    """Compare two policies on the open session, for `ContextViewModel`."""

    session: Any
    policy: str
    params: Any
    tokenizer: str | None
    options: Any
    store: Any
    ANSWER_TURNS: int
    _generation: int
    _side_executor: Any
    compareReady: Any
    errorOccurred: Any
    #: The inputs of A in the comparison last shown (None: none yet).
    compared_inputs: CompareInputs | None = None

    def compare_inputs(self) -> CompareInputs | None:
        """The inputs a comparison requested now would plan A from."""
        if self.session is None:
            return None
        return CompareInputs(self.session.source, len(self.session.messages), self.policy, self.params, self.tokenizer, self.options)

    def request_compare(self, policy_b: str, overrides_b: dict[str, Any]) -> None:
        if self.session is None:
            return
        try:
            params_b = get_policy(policy_b).make_params(overrides_b, base=self.params if policy_b == self.policy else None)
        except ParameterError as exc:
            self.errorOccurred.emit(str(exc))
            return
        session, policy, params, tokenizer, options = self.session, self.policy, self.params, self.tokenizer, self.options
        inputs = self.compare_inputs()
        generation = self._generation

        def job() -> None:
            try:
                a = plan_session(session, policy, params, tokenizer, self.store, None, options)
                b = plan_session(session, policy_b, params_b, tokenizer, self.store, None, options)
            except Exception as exc:
                self._post(self._failed, -1, f"compare failed ({type(exc).__name__}: {exc})")
            else:
                self._post(self._compared, generation, a, b, len(session.summaries), inputs)
                if len(session.messages) <= self.ANSWER_TURNS:
                    self._post(self._compare_costed, a, b, *self._replay_costs(session, (policy, params), (policy_b, params_b), tokenizer=tokenizer))

        self._side_executor.submit(job)

    def _on_compared(self, generation: int, a: Plan, b: Plan, recorded: int, inputs: CompareInputs) -> None:
        """`recorded`: the summaries the compared session's file records, so that a summary both
        plans write now is "a new summary", not one the log recorded (`compare_summaries`)."""
        self.compared_inputs = inputs
        self.compareReady.emit(a, b, recorded)
