"""What comes back to the view-model after a load or a plan: the session put in place (opened
under its agent's own policy unless the user chose one), the plan published, then what follows it
off the GUI thread: the real count filled in, and which anchors the plan still sends (retention).

A mixin of `ContextViewModel` (gui/viewmodel.py). Each handler runs on the GUI thread (Qt queues
the worker's signal) and drops a result that a newer request has superseded.
"""

from __future__ import annotations

import dataclasses
import gc
import time
from typing import Any

from ...engine.agent_policies import opened_under
from ...engine.checks import real_count
from ...engine.explain import Explanation
from ...engine.lost import lost
from ...engine.plan import Plan
from ...engine.planner import plan_session
from ...engine.policies import get_policy
from ...engine.session import Session


class PlanResults:
    """Loads, plans, real counts and retention as they come back, for `ContextViewModel`."""

    session: Session | None
    plan: Plan | None
    policy: str
    params: Any
    tokenizer: str | None
    options: Any
    store: Any
    timeline: Any
    opened: Any
    policy_chosen: bool
    _closed: bool
    _load_generation: int
    _generation: int
    _sim_generation: int
    _real_ready: set[tuple[int, str]]
    _real_counting: tuple[int, str] | None
    _plan_inputs: tuple[Any, ...] | None
    _submitted_inputs: tuple[Any, ...] | None
    _prepared: dict[int, tuple[Plan, dict[str, Any]]]
    _arrived: list[tuple[int, Session, Plan | None]]
    _arrival: Any
    _retention_timer: Any
    _retention_for: tuple[Session, Plan] | None
    _lock: Any
    _executor: Any
    _answer_executor: Any
    sessionLoaded: Any
    planReady: Any
    retentionReady: Any
    realCounting: Any
    realCountReady: Any
    explanationReady: Any
    busy: Any
    errorOccurred: Any
    pinsCleared: Any
    planFailed: Any
    policyChanged: Any
    paramsChanged: Any

    def _on_loaded(self, generation: int, session: Session) -> None:
        if generation != self._load_generation or self._closed:
            return
        if self.session is not None and self.session is not session:
            self.store.forget(self.session)  # its counts would otherwise live as long as the window
        self.session = session
        self.plan = None
        self.timeline = None
        # Pins are message numbers of the file they were made on: applied to the next file they pin
        # other messages, or fail the plan when past its end (#145 of a 57-message file).
        cleared = self.options.pins
        if cleared:
            self.options = dataclasses.replace(self.options, pins=())
        self._open_under_agents_policy(session)
        self._sim_generation += 1  # a replay of the previous session still running is of no use now
        self._end_simulation("")
        self._real_ready.clear()  # (keyed by the session's id, which a freed session's successor may reuse)
        # The session is immutable and lives as long as it is shown: out of the collector's
        # generations with it, or each full collection (on this thread, threads.py) rescans its
        # millions of objects and stalls the window (load_session freezes only where gc is Python's
        # to run). What cyclic garbage is pending now is kept too; `open` collects it before loading.
        gc.freeze()
        self.busy.emit(False, "")
        self.sessionLoaded.emit(session)
        if cleared:
            self.pinsCleared.emit(cleared)
        with self._lock:
            self._running = False
            self._pending = False
        self.replan()

    def _open_under_agents_policy(self, session: Session) -> None:
        """Unless the user chose a policy, a log opens under its agent's own (a Claude Code log under
        claude-code, with the window Claude Code uses for its model), else missy, and `opened` says so."""
        if self.policy_chosen:
            self.opened = None
            return
        self.opened = opened_under(session.format, session.model)
        if self.opened.policy != self.policy:
            self.policy, self.params = self.opened.policy, get_policy(self.opened.policy).default_params()
            self._replay_inputs_changed()
            self.policyChanged.emit(self.policy)
            self.paramsChanged.emit(self.params)

    #: How many plans' prepared summaries are kept: the one on screen and the one on its way (each holds its plan).
    PREPARED_KEPT = 2

    def _prepare(self, session: Session, plan: Plan) -> None:
        """On the plan worker, after the plan: what the views show of it that takes a pass over
        every message (what is not sent, the count of each reason code), so that the GUI thread
        only draws it. At 10,000 messages this was 4-5 ms of each parameter change's frame."""
        made = {"lost": lost(plan, session), "reason_counts": plan.reason_counts()}
        with self._lock:
            self._prepared[id(plan)] = (plan, made)
            for key in list(self._prepared)[:-self.PREPARED_KEPT]:
                del self._prepared[key]

    def prepared(self, plan: Plan, name: str) -> Any:
        """`name` of `plan` as the plan worker made it (`_prepare`), or None for a plan it did not
        prepare (`plan_now`'s): the view then works it out itself."""
        with self._lock:
            entry = self._prepared.get(id(plan))
            if entry is None or entry[0] is not plan:  # the plan with its real count filled in: the prepared one's messages
                entry = next((e for e in self._prepared.values() if e[0].messages is plan.messages), None)
        return entry[1][name] if entry is not None else None

    def _plan_arrived(self, generation: int, session: Session, plan: Plan | None) -> None:
        """A plan back from the worker is handled in the next round of the event loop, not in the
        round that delivered it. Qt delivers the events posted while it delivers others in the same
        round: a plan that landed while the previous one was being drawn was shown and drawn in
        that round too, and a slider drag held the window for two plans' drawing (68 ms at 10,000
        messages). In a round of its own, other timers (a drag's next step, input) are served between."""
        self._arrived.append((generation, session, plan))
        self._arrival.start()

    def _handle_arrived(self) -> None:
        arrived, self._arrived = self._arrived, []
        for generation, session, plan in arrived:  # in order: each one's bookkeeping starts the next plan asked for
            self._on_planned(generation, session, plan)  # type: ignore[arg-type]

    def _on_planned(self, generation: int, session: Session, plan: Plan) -> None:
        with self._lock:
            pending = self._pending
            self._pending = False
            if not pending:
                self._running = False
        if pending:
            self._submit_plan()
        if generation != self._generation or session is not self.session:
            return
        self.plan = plan
        self._plan_inputs = self._submitted_inputs  # the latest submission's: a change since would have superseded it
        self.busy.emit(False, "")
        self.planReady.emit(session, plan)
        self._start_real_count()  # after the plan is on screen (a no-op unless asked for and not counted yet)
        if self.options.real_count and plan.real is None and self._real_key() in self._real_ready:
            # Submitted while the count was still running (a policy switched meanwhile): fill it in now,
            # or this plan would never get its real count.
            self._on_counted(session, self._real_key()[1])
        self._start_retention(session, plan)

    #: Retention waits for the parameters to settle: during a drag every step would start a search
    #: that competes with the next plan for the interpreter.
    RETENTION_DELAY_MS = 400
    #: While a log is followed (gui/live.py sets it), retention takes at most this share of the time:
    #: each new state of a 200 MB log carries its anchor index over (engine/anchors.py, `previous=`),
    #: but still holds the interpreter the window needs for a tenth of a second or more. None: as
    #: soon as the plan settles.
    retention_share: float | None = None
    _retention_cost = 0.0

    def _start_retention(self, session: Session, plan: Plan) -> None:
        """The plan's retention, once it has stayed on screen a moment (the job checks again that it
        is still the plan on screen before the work, which the first time includes extracting anchors).
        One timer, restarted for each plan: a timer made per plan (and deleted later) cost each
        parameter change of a drag 0.2-0.3 ms, for plans that are no longer on screen when it fires."""
        delay = self.RETENTION_DELAY_MS
        if self.retention_share:
            delay = max(delay, int(self._retention_cost * (1 / self.retention_share - 1) * 1000))
        self._retention_for = (session, plan)
        self._retention_timer.start(delay)

    def _retention_due(self) -> None:
        if self._retention_for is not None:
            self._retention_job(*self._retention_for)

    def _current(self, plan: Plan) -> bool:
        """The plan on screen, or it with its real count filled in (the same decisions)."""
        return self.plan is not None and (plan is self.plan or plan.messages is self.plan.messages)

    def _retention_job(self, session: Session, plan: Plan) -> None:
        if not self._current(plan) or self._closed:
            return

        def job() -> None:
            if not self._current(plan) or self._closed:
                return
            started = time.perf_counter()
            try:
                from ...engine.retention import plan_retention

                found = plan_retention(plan, session)
            except Exception:  # an answer it cannot give: the card keeps its other lines
                return
            finally:
                self._retention_cost = time.perf_counter() - started
            self._post(self._retained, plan, found)

        self._answer_executor.submit(job)

    def _on_retained(self, plan: Plan, retention: Any) -> None:
        if self._current(plan):
            self.retentionReady.emit(self.plan, retention)

    def _on_load_failed(self, generation: int, message: str) -> None:
        if generation != self._load_generation or self._closed:
            return  # a load superseded by a newer one: its error is no longer news
        self.busy.emit(False, "")
        self.errorOccurred.emit(message)

    def _on_failed(self, generation: int, message: str) -> None:
        if generation >= 0:
            with self._lock:
                self._running = False
                self._pending = False
        self.busy.emit(False, "")
        self.errorOccurred.emit(message)
        if generation >= 0 and generation == self._generation and self.plan is None and self.session is not None:
            # No plan of this session was ever shown: what is on screen is the previous session's.
            self.planFailed.emit(self.session, message)

    def _on_counted(self, session: Session, model: str) -> None:
        if self._real_counting == (id(session), model):
            self._real_counting = None
        if session is not self.session:
            return
        self._real_ready.add((id(session), model))
        plan, store = self.plan, self.store
        if plan is None:
            self.realCounting.emit(False)
            return

        def job() -> None:  # on the plan worker, in order with the plans: cheap now that the messages are counted
            if self.session is not session:
                return
            try:
                filled = real_count(plan, session, model, store)
                if self.session is not session:  # another file was opened meanwhile: its counts must not outlive it
                    store.forget(session)
                    return
                self._post(self._real_filled, plan, filled)
            except Exception as exc:
                self._post(self._count_failed, session, f"real count failed ({type(exc).__name__}: {exc})")

        self._executor.submit(job)

    def _on_real_filled(self, plan: Plan, real: Any) -> None:
        self.realCounting.emit(False)
        if plan is self.plan:  # (a newer plan was made with the real count already)
            self.plan = dataclasses.replace(plan, real=real)
            self.realCountReady.emit(plan, self.plan)

    def _on_count_failed(self, session: Session, message: str) -> None:
        if self._real_counting is not None and self._real_counting[0] == id(session):
            self._real_counting = None
        if session is self.session:
            self.realCounting.emit(False)
            if message:
                self.errorOccurred.emit(message)

    def _on_explained(self, generation: int, explanation: Explanation) -> None:
        if generation == self._why_generation:
            self.explanationReady.emit(explanation)

    def plan_now(self) -> Plan | None:
        """Plan synchronously (tests, the report): same engine call, same result (with the real
        count when asked for: it is counted here and then, on the GUI thread)."""
        if self.session is None:
            return None
        plan = plan_session(self.session, self.policy, self.params, self.tokenizer, self.store, None, self.options)
        if self.options.real_count:
            self._real_ready.add(self._real_key())
        self.plan = plan
        self._plan_inputs = self._inputs()
        self.planReady.emit(self.session, plan)
        return plan
