"""The view-model's replay: a simulation's progress, end and cancellation, the turn shown, and
what is worked out after it on the answers worker (retention per turn, the cost with caching,
the composition bands), plus the searches and sweeps that run over it.

A mixin of `ContextViewModel` (gui/viewmodel.py); the simulation itself is started there
(`request_timeline`).
"""

from __future__ import annotations

import os
from typing import Any

from ...engine.policies import get_policy
from ...engine.policies.base import params_dict
from ...engine.simulate import Timeline, plan_versus_replay
from ...errors import CtxvizError
from ...io.loaders import load_session
from ..threads import throttled


class ReplayResults:
    """The Timeline tab's side of the view-model, for `ContextViewModel`."""

    session: Any
    plan: Any
    policy: str
    params: Any
    tokenizer: str | None
    timeline: Timeline | None
    answers: tuple[Any, Any, str] | None
    timeline_state: str
    _sim_running: tuple[Any, ...] | None
    _sim_generation: int
    _sim_progress: tuple[int, int]
    _closed: bool
    _answer_executor: Any
    _plan_inputs: tuple[Any, ...] | None
    _timeline_inputs: tuple[Any, ...] | None
    busy: Any
    progress: Any
    simulating: Any
    timelineReady: Any
    timelineCancelled: Any
    timelinePartial: Any
    answersReady: Any
    compositionReady: Any
    whereReady: Any
    sweepReady: Any
    planReady: Any
    errorOccurred: Any

    def cancel_timeline(self) -> bool:
        """Stop the running simulation (it stops at its next progress report, every few turns):
        no timeline, the state "cancelled", and the views told. False when none was running."""
        if self._sim_running is None:
            return False
        self._sim_generation += 1
        done, total = self._sim_progress
        self._end_simulation("cancelled")
        self.busy.emit(False, "")
        self.timelineCancelled.emit(f"Simulation cancelled after {done:,} of {total:,} turns. Simulate to run it again.")
        return True

    def _end_simulation(self, state: str) -> None:
        running = self._sim_running is not None
        self._sim_running = None
        if running or state:
            self.timeline_state = state
        if running:
            self.simulating.emit(False)

    def plan_versus_replay(self) -> str:
        """The engine's sentence on the plan and the replay of the same inputs, or "" while either
        is missing (a change of inputs drops the timeline, so the two held are always of the same
        session, policy, parameters, tokenizer and pair safety)."""
        plan, timeline = self.plan, self.timeline
        if plan is None or timeline is None or timeline.session is not self.session or self._plan_inputs != self._timeline_inputs:
            return ""
        return plan_versus_replay(plan, timeline)

    def show_turn(self, turn: int) -> None:
        """Publish the context as it was at `turn` (from the timeline; no recounting)."""
        if self.timeline is None:
            return
        self.planReady.emit(self.timeline.session_at(turn), self.timeline.plan_at(turn))

    def show_latest(self) -> None:
        if self.session is not None and self.plan is not None:
            self.planReady.emit(self.session, self.plan)

    def _on_sim_partial(self, generation: int, partial: Timeline, total: int) -> None:
        if generation == self._sim_generation and self._sim_running is not None:
            self.timelinePartial.emit(partial, total)

    def _on_simulated(self, generation: int, result: tuple[Timeline, tuple[Any, ...]]) -> None:
        if generation != self._sim_generation:
            return
        timeline, self._timeline_inputs = result
        self.timeline = timeline
        self._end_simulation("done")
        self.busy.emit(False, "")
        self.timelineReady.emit(timeline)
        self._answer(generation, timeline)

    #: Replays longer than this get no per-turn cost: pricing rebuilds every turn's request.
    ANSWER_TURNS = 3000

    def _answer(self, generation: int, timeline: Timeline) -> None:
        """Retention per turn and the prompt-caching cost of the replay, on the simulation's worker."""

        def job() -> None:
            from ...engine.caching import cache_costs
            from ...engine.retention_timeline import timeline_retention

            notes: list[str] = []
            try:
                retention = timeline_retention(timeline)
            except Exception as exc:  # an answer the replay cannot give is said, the timeline stays
                retention, notes = None, [f"retention failed ({type(exc).__name__}: {exc})"]
            cache = None
            if len(timeline.turns) <= self.ANSWER_TURNS:
                try:
                    cache = cache_costs(timeline)
                except Exception as exc:
                    notes.append(f"cost failed ({type(exc).__name__}: {exc})")
            else:
                notes.append(f"cost with prompt caching is priced for replays of up to {self.ANSWER_TURNS:,} turns "
                             "(`ctxviz simulate --cost` prices any)")
            self._post(self._answered, generation, timeline, retention, cache, "; ".join(notes))

        def bands() -> None:  # after the answers, on the same worker: a plan per (sampled) step
            from ...engine.composition import composition

            try:
                found = composition(timeline, should_stop=lambda: generation != self._sim_generation or self._closed)
            except Exception:  # the bands are an extra: the timeline keeps its total line
                return
            if found is not None:
                self._post(self._composed, generation, timeline, found)

        self._answer_executor.submit(job)
        self._answer_executor.submit(bands)

    def _on_answered(self, generation: int, timeline: Timeline, retention: Any, cache: Any, note: str) -> None:
        if generation == self._sim_generation and timeline is self.timeline:
            self.answers = (retention, cache, note)
            self.answersReady.emit(timeline, retention, cache, note)

    def _on_composed(self, generation: int, timeline: Timeline, composition: Any) -> None:
        if generation == self._sim_generation and timeline is self.timeline:
            self.compositionReady.emit(timeline, composition)

    def _on_sim_failed(self, generation: int, message: str) -> None:
        if generation != self._sim_generation:
            return
        self._end_simulation("failed")
        self.busy.emit(False, "")
        self.errorOccurred.emit(message)

    def find_term(self, term: str) -> None:
        """Where `term` was in the current replay's context, turn by turn, and what removed it (off the GUI thread)."""
        timeline, term = self.timeline, term.strip()
        if timeline is None or not term:
            return

        def job() -> None:
            from ...engine.where import where

            try:
                found, message = where(timeline, term), ""
            except Exception as exc:
                found, message = None, f"search failed ({type(exc).__name__}: {exc})"
            self._post(self._found, timeline, term, found, message)

        self._answer_executor.submit(job)

    def _on_found(self, timeline: Timeline, term: str, found: Any, message: str) -> None:
        if timeline is self.timeline:
            self.whereReady.emit(timeline, term, found, message)

    def run_sweep(self, grid: list[str], requirements: list[str]) -> None:
        """Replay every combination of `grid` (NAME=START:STOP:STEP or NAME=V1,V2) on the open session,
        priced with caching, on a worker (one process: the window's), with progress."""
        from ...engine import sweep

        session, policy, params = self.session, self.policy, self.params
        if session is None:
            return
        try:
            parsed = sweep.parse_grid(policy, grid)
            floors = [sweep.parse_requirement(r) for r in requirements if r.strip()]
            fixed = {k: v for k, v in params_dict(params).items() if k not in parsed}
            for combination in sweep.combinations(parsed):
                get_policy(policy).make_params({**fixed, **combination})
        except CtxvizError as exc:
            self.sweepReady.emit([], None, str(exc))
            return
        if not os.path.isfile(session.source):
            self.sweepReady.emit([], None, "a sweep re-reads the session from its file; this one has none (standard input)")
            return
        tasks = [sweep.Task(session.source, policy, {**fixed, **c}, "", self.tokenizer, load=load_session) for c in sweep.combinations(parsed)]
        shown = throttled(lambda done, total: self._post(self.progress, done, total))

        def job() -> None:
            try:
                rows = sweep.summarise(sweep.run(tasks, jobs=1, progress=shown), floors)
                self._post(self._swept, rows, sweep.cheapest(rows) if floors else None, "")
            except Exception as exc:
                self._post(self._swept, [], None, f"sweep failed ({type(exc).__name__}: {exc})")

        self._answer_executor.submit(job)
