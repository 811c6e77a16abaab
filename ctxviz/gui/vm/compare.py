"""The Compare tab's side of the view-model: both plans made on the side worker, then (for a
session short enough) both replayed and priced with prompt caching.

A mixin of `ContextViewModel` (gui/viewmodel.py).
"""

from __future__ import annotations

from typing import Any

from ...engine.plan import Plan
from ...engine.planner import plan_session
from ...engine.policies import get_policy
from ...errors import ParameterError


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

    def request_compare(self, policy_b: str, overrides_b: dict[str, Any]) -> None:
        if self.session is None:
            return
        try:
            params_b = get_policy(policy_b).make_params(overrides_b, base=self.params if policy_b == self.policy else None)
        except ParameterError as exc:
            self.errorOccurred.emit(str(exc))
            return
        session, policy, params, tokenizer, options = self.session, self.policy, self.params, self.tokenizer, self.options
        generation = self._generation

        def job() -> None:
            try:
                a = plan_session(session, policy, params, tokenizer, self.store, None, options)
                b = plan_session(session, policy_b, params_b, tokenizer, self.store, None, options)
            except Exception as exc:
                self._post(self._failed, -1, f"compare failed ({type(exc).__name__}: {exc})")
            else:
                self._post(self._compared, generation, a, b, len(session.summaries))
                if len(session.messages) <= self.ANSWER_TURNS:
                    self._post(self._compare_costed, a, b, *self._replay_costs(session, (policy, params), (policy_b, params_b), tokenizer=tokenizer))

        self._side_executor.submit(job)

    def _on_compared(self, generation: int, a: Plan, b: Plan, recorded: int) -> None:
        """`recorded`: the summaries the compared session's file records, so that a summary both
        plans write now is "a new summary", not one the log recorded (`compare_summaries`)."""
        self.compareReady.emit(a, b, recorded)
