"""The one object the views talk to: session, policy, parameters and options in; plans out.

It holds no engine logic: every number comes from `ctxviz.engine`. Work that can take longer than a
frame (loading, counting, simulating, the `why` search) runs on a worker thread; a newer request
supersedes an older one, so dragging a slider never queues up stale plans. Each load has a thread of
its own, so one that never returns (a FIFO) blocks neither later loads nor closing the window. While
a view-model lives, Python's cyclic garbage collector runs on the GUI thread only (`threads.py`).
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import os
import shlex
import sys
import threading
import time
import weakref
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from ..engine.agent_policies import DEFAULT_POLICY, OpenedUnder, opened_under
from ..engine.catalog import find_model
from ..engine.checks import PlanOptions, chat_scheme, real_count
from ..engine.counting import CountStore, ProgressCallback
from ..engine.explain import Cancelled, Explanation, why
from ..engine.plan import Plan
from ..engine.planner import plan_session
from ..engine.policies import get_policy, policy_names
from ..engine.policies.base import params_dict
from ..engine.session import Session
from ..engine.simulate import Timeline, plan_versus_replay, simulate
from ..engine.tokenizers import TiktokenTokenizer, real_encoding_for_model
from ..engine.voices import voices_of
from ..errors import CtxvizError, ParameterError
from ..io.loaders import load_session
from .threads import COLLECTOR, Worker, start_daemon

#: How long closing the window waits for a running plan or search to notice it is no longer wanted.
SHUTDOWN_WAIT_S = 5.0
#: A worker's progress reaches the GUI thread at most this often (each report is a queued event).
PROGRESS_INTERVAL_S = 0.05
#: A running replay's turns so far are drawn at most this often (each drawing copies them).
PARTIAL_INTERVAL_S = 0.25
#: View-models not shut down yet.
_LIVE: set[ContextViewModel] = set()


def throttled(report: ProgressCallback, interval: float = PROGRESS_INTERVAL_S) -> ProgressCallback:
    """`report`, called at most every `interval` seconds (and always for the last step), so that a
    worker counting or replaying 100,000 messages does not flood the GUI thread's event queue."""
    last = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal last
        now = time.perf_counter()
        if done >= total or now - last >= interval:
            last = now
            report(done, total)

    return progress


def real_count_scheme(model: str) -> Any:
    """The per-message scheme `checks.real_count` counts with (its encoding chosen the same way),
    so that a worker can fill the store with it beforehand, with progress."""
    entry = find_model(model)
    encoding = entry.encoding if entry and entry.encoding else real_encoding_for_model(model)
    return chat_scheme(model, TiktokenTokenizer(encoding))


def _shutdown_when_destroyed(ref: weakref.ref[ContextViewModel]) -> Any:
    def slot(*_args: Any) -> None:
        vm = ref()
        if vm is not None and not sys.is_finalizing():
            vm.shutdown()

    return slot


class ContextViewModel(QObject):
    sessionLoaded = Signal(object)  # Session
    #: A later state of the open session (a followed log grew): planned again with the same inputs.
    sessionGrown = Signal(object)  # Session
    planReady = Signal(object, object)  # (Session shown, Plan)
    timelineReady = Signal(object)  # Timeline
    #: (Plan, Retention): which of the session's anchors the plan on screen still sends (after each plan, off the GUI thread).
    retentionReady = Signal(object, object)
    #: (rows, the cheapest row meeting the floors or None, message): a sweep of the current session.
    sweepReady = Signal(object, object, str)
    #: (Timeline, term, Where | None, message): where a searched term was in the replay, and when it left.
    whereReady = Signal(object, str, object, str)
    #: (Timeline, TimelineRetention | None, CacheReport | None, note): the replay's answers, computed after it.
    answersReady = Signal(object, object, object, str)
    #: (Timeline, Composition): tokens sent per category at each (sampled) step, computed after the answers.
    compositionReady = Signal(object, object)
    #: The inputs changed since the timeline on screen was simulated: it no longer replays this plan.
    timelineStale = Signal()
    #: A simulation started (True) or ended, finished or not (False): the window's Cancel button.
    simulating = Signal(bool)
    #: (Timeline with the turns replayed so far, the session's length): the chart fills as it runs.
    timelinePartial = Signal(object, int)
    #: The running simulation was cancelled (by `cancel_timeline`): no timeline, and why.
    timelineCancelled = Signal(str)
    #: The real count of the session's messages is being counted (True) or is in (False).
    realCounting = Signal(bool)
    #: The plan on screen, now with its real count (`plan.real`): the same plan otherwise, so not a
    #: `planReady` (whose next emission a caller reads as the plan of the change it just made).
    realCountReady = Signal(object, object)  # (the plan as it was, the plan with its real count)
    explanationReady = Signal(object)  # Explanation
    compareReady = Signal(object, object)  # (Plan A, Plan B)
    #: (Plan A, Plan B, CacheReport A | None, CacheReport B | None): both sides replayed and priced with caching.
    compareCosted = Signal(object, object, object, object)
    paramsChanged = Signal(object)  # the policy's parameter dataclass
    paramError = Signal(str, str)  # (parameter, message; "" clears)
    policyChanged = Signal(str)
    #: (can undo, can redo) after any parameter or policy change.
    historyChanged = Signal(bool, bool)
    busy = Signal(bool, str)
    progress = Signal(int, int)
    errorOccurred = Signal(str)

    # results coming back from the worker thread (queued to the GUI thread by Qt)
    _loaded = Signal(int, object)
    _load_failed = Signal(int, str)
    _planned = Signal(int, object, object)
    _failed = Signal(int, str)
    _sim_failed = Signal(int, str)
    _simulated = Signal(int, object)
    _sim_partial = Signal(int, object, int)
    _answered = Signal(int, object, object, object, str)
    _composed = Signal(int, object, object)
    _found = Signal(object, str, object, str)
    _swept = Signal(object, object, str)
    _retained = Signal(object, object)
    _compare_costed = Signal(object, object, object, object)
    _counted = Signal(object, str)
    _real_filled = Signal(object, object)
    _count_failed = Signal(object, str)
    _explained = Signal(int, object)
    _compared = Signal(int, object, object)

    _load_ids = itertools.count()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        # Before any worker thread exists: from here on, cyclic garbage is collected on this thread only.
        COLLECTOR.acquire()
        self._closed = False
        # Parameter history: (policy, params) before each change, newest last.
        self._undo: list[tuple[str, Any]] = []
        self._redo: list[tuple[str, Any]] = []
        self._last_change: tuple[str, float] = ("", 0.0)
        # Alive until shut down (and then until its workers have ended, see COLLECTOR.release): the
        # jobs hold references to it, and the last one must never be dropped on a worker thread.
        _LIVE.add(self)
        self.destroyed.connect(_shutdown_when_destroyed(weakref.ref(self)))  # a parent deleted it
        self.store = CountStore()
        self.session: Session | None = None
        self.policy = DEFAULT_POLICY
        self.params: Any = get_policy(self.policy).default_params()
        #: The user chose the policy (the Policy box, --policy, a preset): a file opened later keeps it.
        #: Until then each file opens under its agent's own policy (`engine.agent_policies`).
        self.policy_chosen = False
        #: Why the open session's policy is the one it opened under (None: the user's choice).
        self.opened: OpenedUnder | None = None
        self.tokenizer: str | None = None
        self.options = PlanOptions(real_count=True)
        self.plan: Plan | None = None
        self.timeline: Timeline | None = None
        #: The current timeline's (retention, cache report, note), once computed.
        self.answers: tuple[Any, Any, str] | None = None
        #: The inputs `plan` and `timeline` were made from (see `_inputs`), to pair only a plan and a
        #: replay of the same inputs.
        self._plan_inputs: tuple[Any, ...] | None = None
        self._timeline_inputs: tuple[Any, ...] | None = None
        self._submitted_inputs: tuple[Any, ...] | None = None
        self._executor = Worker("plan")
        self._side_executor = Worker("side")  # the "why" search and Compare
        # The replay's answers, retention, sweeps and term searches: long, and never in the way of a
        # simulation, a "why" or a compare.
        self._answer_executor = Worker("answers")
        self._sim_executor = Worker("sim")  # a long replay never holds up a "why" answer
        self._count_executor = Worker("count")  # the real count's tokenizing, after the first plan
        #: Workers others start through `add_worker` (following a log, listing sessions, the forecast).
        self._extra_workers: list[Worker] = []
        #: (session id, model) whose real-count per-message counts are in the store; the one being counted.
        self._real_ready: set[tuple[int, str]] = set()
        self._real_counting: tuple[int, str] | None = None
        #: The inputs of the simulation running now (None: none runs); `timeline_state` says what
        #: the Timeline shows: "" (nothing yet), "running", "done", "cancelled", "failed".
        self._sim_running: tuple[Any, ...] | None = None
        self.timeline_state = ""
        self._sim_progress = (0, 0)
        self.simulations = 0  # started, for tests (the Timeline tab and --screenshot simulate once)
        self._load_thread: threading.Thread | None = None
        self._load_threads: list[threading.Thread] = []
        self._load_generation = 0
        self._generation = 0
        self._why_generation = 0
        self._sim_generation = 0
        self._pending = False
        self._running = False
        self._lock = threading.Lock()
        self._loaded.connect(self._on_loaded)
        self._load_failed.connect(self._on_load_failed)
        self._planned.connect(self._on_planned)
        self._failed.connect(self._on_failed)
        self._sim_failed.connect(self._on_sim_failed)
        self._sim_partial.connect(self._on_sim_partial)
        self._simulated.connect(self._on_simulated)
        self._answered.connect(self._on_answered)
        self._composed.connect(self._on_composed)
        self._found.connect(self._on_found)
        self._swept.connect(self.sweepReady.emit)
        self._retained.connect(self._on_retained)
        self._compare_costed.connect(self.compareCosted.emit)
        self._counted.connect(self._on_counted)
        self._real_filled.connect(self._on_real_filled)
        self._count_failed.connect(self._on_count_failed)
        self._explained.connect(self._on_explained)
        self._compared.connect(self._on_compared)

    # --- inputs -------------------------------------------------------------------------------
    def open(self, path: str) -> None:
        """Load in the background, on a thread of its own; the window stays responsive and shows
        progress. A newer open (or `set_session`) supersedes this one, even if it never returns."""
        if self._closed:
            return
        self._load_generation += 1
        generation = self._load_generation
        # The young garbage now, while it is small: the loaded session is frozen with what is pending then.
        gc.collect(1)
        self.busy.emit(True, f"Loading {path}…")

        def job() -> None:
            try:
                session = load_session(path)
            except CtxvizError as exc:
                self._post(self._load_failed, generation, str(exc))
            except Exception as exc:  # a loader bug must still not take the window down
                self._post(self._load_failed, generation, f"{path}: cannot load ({type(exc).__name__}: {exc})")
            else:
                self._post(self._loaded, generation, session)

        self._load_thread = start_daemon(f"load_{next(self._load_ids)}", job)
        self._load_threads = [t for t in self._load_threads if t.is_alive()] + [self._load_thread]

    def _post(self, signal: Any, *args: Any) -> None:
        """Emit a result from a worker thread, unless the view-model has shut down (or is gone)."""
        if self._closed:
            return
        try:
            signal.emit(*args)
        except RuntimeError:  # the C++ object was deleted while the job ran
            pass

    def set_session(self, session: Session) -> None:
        self._load_generation += 1
        self._on_loaded(self._load_generation, session)

    def add_worker(self, name: str) -> Worker:
        """A worker thread of the view-model's own: waited for by `wait` and stopped by `shutdown`
        with the others (what follows a log, lists sessions or forecasts runs on these)."""
        worker = Worker(name)
        self._extra_workers.append(worker)
        return worker

    def grow(self, session: Session, real_model: str | None = None) -> None:
        """Show `session`, a later state of the open one (a followed log grew, or was re-read),
        planned with the same policy, parameters and options. Unlike opening a file nothing is
        reset: the counts were extended in `store` by whoever read it (io/follow.py), so nothing
        counted is counted again; `real_model` names the model whose real count is in the store
        for `session` too. The timeline on screen stays until a replay of the new state replaces it."""
        if self._closed or self.session is None or session is self.session:
            return
        self._real_ready.discard(self._real_key())  # (keyed by id: a freed session's successor may reuse it)
        self.session = session
        if real_model is not None and real_model == self._real_key()[1]:
            self._real_ready.add(self._real_key())
        gc.freeze()  # as after a load: the collector on this thread never rescans the session (see _on_loaded)
        self.sessionGrown.emit(session)
        self.replan()

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

    def set_params(self, params: Any, policy: str | None = None) -> None:
        if policy:
            self.policy_chosen = True
        if params != self.params or (policy and policy != self.policy):
            self._remember()
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

    def _inputs(self) -> tuple[Any, ...]:
        """What decides both the plan's figures and the replay (not the real count or the model)."""
        return (id(self.session), self.policy, self.params, self.tokenizer, self.options.pair_safe, self.options.pins)

    def replay_options(self) -> PlanOptions:
        """The options the replay and the "why" search share with the plan on screen (pair safety;
        the real count and the model change no decision)."""
        return PlanOptions(pair_safe=self.options.pair_safe, pins=self.options.pins)

    # --- planning -----------------------------------------------------------------------------
    def replan(self) -> None:
        """Schedule a plan of the current inputs; coalesces requests made while one is running."""
        if self.session is None:
            return
        COLLECTOR.input_changed()  # no collection pause in the middle of a drag (threads.py)
        with self._lock:
            if self._running:
                self._pending = True
                return
            self._running = True
        self._submit_plan()

    def _submit_plan(self) -> None:
        self._generation += 1
        generation = self._generation
        session, policy, params, tokenizer, options = self.session, self.policy, self.params, self.tokenizer, self.plan_options()
        self._submitted_inputs = self._inputs()

        def report(done: int, total: int) -> None:
            self._post(self.progress, done, total)

        progress = throttled(report)

        def job() -> None:
            if session is not self.session:  # a followed log grew meanwhile: a plan of the state before is of no use
                self._post(self._planned, generation, session, None)
                return
            try:
                plan = plan_session(session, policy, params, tokenizer, self.store, progress, options)
                # Summaries the views read, built here on the worker rather than on the GUI thread.
                plan.columns  # noqa: B018
                plan.category_totals  # noqa: B018
                voices_of(session)  # whose words each message holds (cached per session): the table and strip show it
            except CtxvizError as exc:
                self._post(self._failed, generation, str(exc))
            except Exception as exc:
                self._post(self._failed, generation, f"planning failed ({type(exc).__name__}: {exc})")
            else:
                self._post(self._planned, generation, session, plan)

        self._executor.submit(job)

    def plan_options(self) -> PlanOptions:
        """The options a plan runs with now. The real count tokenizes every message with the
        model's real encoding (most of a first plan's time at 100,000 messages), so a plan asks for
        it only once a worker of its own has counted them (`_start_real_count`, with progress):
        the first plan shows at once, and the real count fills in afterwards."""
        if self.options.real_count and self.session is not None and self._real_key() not in self._real_ready:
            return dataclasses.replace(self.options, real_count=False)
        return self.options

    def _real_key(self) -> tuple[int, str]:
        session = self.session
        return (id(session), self.options.model or (session.model if session is not None else ""))

    @property
    def real_count_pending(self) -> bool:
        """The real count was asked for and its counting is not done yet."""
        return self.options.real_count and self.session is not None and self._real_key() not in self._real_ready

    def _start_real_count(self) -> None:
        """Count the session with the model's real encoding on the count worker; the plan on
        screen then gets its real count (`realCountReady`), and later plans have it at once."""
        if not self.real_count_pending or self._real_counting == self._real_key() or self._closed:
            return
        key = self._real_counting = self._real_key()
        session, model = self.session, key[1]
        self.realCounting.emit(True)

        shown = throttled(lambda done, total: self._post(self.progress, done, total))

        def progress(done: int, total: int) -> None:
            if self.session is not session or self._closed:
                raise Cancelled  # another session was opened: these counts are of no use now
            shown(done, total)

        def job() -> None:
            try:
                if self.session is not session:
                    raise Cancelled  # another session (or a later state of a followed log) is on screen
                self.store.get(session, real_count_scheme(model), progress)
                if self.session is not session:  # another file was opened as the last messages were counted
                    self.store.forget(session)
                    raise Cancelled
            except Cancelled:
                self._post(self._count_failed, session, "")
            except Exception as exc:
                self._post(self._count_failed, session, f"real count failed ({type(exc).__name__}: {exc})")
            else:
                self._post(self._counted, session, model)

        self._count_executor.submit(job)

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

    def wait(self, timeout: float | None = None) -> None:
        """Block until queued work and the latest load are done (tests and headless rendering)."""
        if self._closed:
            return
        load = self._load_thread
        if load is not None:
            load.join(timeout)
        for worker in (self._executor, self._count_executor, self._sim_executor, self._side_executor, self._answer_executor,
                       *self._extra_workers):
            worker.submit(lambda: None).result(timeout)

    # --- timeline, why, compare ---------------------------------------------------------------
    def request_timeline(self, quiet: bool = False) -> None:
        """Replay the current inputs turn by turn on the simulation worker, with progress. A
        replay of these inputs already running or done is not started again (the Timeline tab,
        Simulate and `--screenshot` may all ask); `cancel_timeline` stops a running one.

        `quiet`: a replay of a followed log that grew: the timeline on screen stays until the new
        one is in (no "Simulating…", no partial drawing, no progress bar), so it does not flicker
        at every write."""
        if self.session is None or self._closed:
            return
        inputs = self._inputs()
        if self._sim_running == inputs or (self.timeline is not None and self._timeline_inputs == inputs):
            return
        self._sim_generation += 1
        generation = self._sim_generation
        session, policy, params, tokenizer, options = self.session, self.policy, self.params, self.tokenizer, self.replay_options()
        self._sim_running = inputs
        self.timeline_state = "running"
        self.simulations += 1
        self._sim_progress = (0, len(session.messages))
        if not quiet:
            self.busy.emit(True, "Simulating turn by turn…")
            self.simulating.emit(True)

        shown = throttled(lambda done, total: None if quiet else self._post(self.progress, done, total))

        def progress(done: int, total: int) -> None:
            if generation != self._sim_generation:
                raise Cancelled  # cancelled, or the inputs changed: stop at this report (every one is checked)
            self._sim_progress = (done, total)
            shown(done, total)

        last_partial = time.perf_counter()

        def turns_so_far(turns: list[Any], total: int) -> None:
            # A copy of the turns so far, at most every PARTIAL_INTERVAL_S: a copy per report would
            # make a 100,000-turn replay quadratic; the GUI thread draws each as it arrives.
            nonlocal last_partial
            now = time.perf_counter()
            if not quiet and now - last_partial >= PARTIAL_INTERVAL_S and len(turns) < total and generation == self._sim_generation:
                last_partial = now
                self._post(self._sim_partial, generation, Timeline(session, policy, params, None, tuple(turns), (), options), total)  # type: ignore[arg-type]

        def job() -> None:
            if generation != self._sim_generation:
                return  # cancelled before it started
            try:
                timeline = simulate(session, policy, params, tokenizer, self.store, progress=progress, options=options, turns_so_far=turns_so_far)
            except Cancelled:
                return
            except Exception as exc:
                self._post(self._sim_failed, generation, f"simulation failed ({type(exc).__name__}: {exc})")
            else:
                self._post(self._simulated, generation, (timeline, inputs))

        self._sim_executor.submit(job)

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

    def request_explanation(self, index: int) -> None:
        """Search, off the GUI thread, for the smallest change that would keep message `index`.
        A newer request (or `cancel_explanation`) abandons the running search at its next probe."""
        if self.session is None or self.plan is None:
            return
        session, policy, params, tokenizer, options = self.session, self.policy, self.params, self.tokenizer, self.replay_options()
        self._why_generation += 1
        generation = self._why_generation

        def stale() -> bool:
            return generation != self._why_generation

        def job() -> None:
            if stale():
                return
            try:
                counts = self.store.get(session, get_policy(policy).scheme(tokenizer, session.model))
                self._post(self._explained, generation, why(session, policy, params, counts, index, should_stop=stale,
                                                                     options=options))
            except Cancelled:
                return
            except Exception as exc:
                self._post(self._failed, -1, f"why failed ({type(exc).__name__}: {exc})")

        self._side_executor.submit(job)

    def cancel_explanation(self) -> None:
        self._why_generation += 1

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
                self._post(self._compared, generation, a, b)
                if len(session.messages) <= self.ANSWER_TURNS:
                    self._post(self._compare_costed, a, b, *self._replay_costs(session, (policy, params), (policy_b, params_b), tokenizer=tokenizer))

        self._side_executor.submit(job)

    def _replay_costs(self, session: Session, *sides: tuple[str, Any], tokenizer: str | None = None) -> tuple[Any, ...]:
        """Each side replayed turn by turn and priced with prompt caching (the Compare tab's cost row)."""
        from ..engine.caching import cache_costs

        out = []
        for policy, params in sides:
            try:
                out.append(cache_costs(simulate(session, policy, params, tokenizer, self.store, options=self.replay_options())))
            except Exception:
                out.append(None)
        return tuple(out)

    # --- results ------------------------------------------------------------------------------
    def _on_loaded(self, generation: int, session: Session) -> None:
        if generation != self._load_generation or self._closed:
            return
        if self.session is not None and self.session is not session:
            self.store.forget(self.session)  # its counts would otherwise live as long as the window
        self.session = session
        self.plan = None
        self.timeline = None
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

    def _start_retention(self, session: Session, plan: Plan) -> None:
        """The plan's retention, once it has stayed on screen a moment (the job checks again that it
        is still the plan on screen before the work, which the first time includes extracting anchors)."""
        QTimer.singleShot(self.RETENTION_DELAY_MS, lambda: self._retention_job(session, plan))

    def _current(self, plan: Plan) -> bool:
        """The plan on screen, or it with its real count filled in (the same decisions)."""
        return self.plan is not None and (plan is self.plan or plan.messages is self.plan.messages)

    def _retention_job(self, session: Session, plan: Plan) -> None:
        if not self._current(plan) or self._closed:
            return

        def job() -> None:
            if not self._current(plan) or self._closed:
                return
            try:
                from ..engine.retention import plan_retention

                found = plan_retention(plan, session)
            except Exception:  # an answer it cannot give: the card keeps its other lines
                return
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
            from ..engine.caching import cache_costs
            from ..engine.retention import timeline_retention

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
            from ..engine.composition import composition

            try:
                found = composition(timeline, should_stop=lambda: generation != self._sim_generation or self._closed)
            except Exception:  # the bands are an extra: the timeline keeps its total line
                return
            if found is not None:
                self._post(self._composed, generation, timeline, found)

        self._answer_executor.submit(job)
        self._answer_executor.submit(bands)

    def run_sweep(self, grid: list[str], requirements: list[str]) -> None:
        """Replay every combination of `grid` (NAME=START:STOP:STEP or NAME=V1,V2) on the open session,
        priced with caching, on a worker (one process: the window's), with progress."""
        from ..engine import sweep

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

    def find_term(self, term: str) -> None:
        """Where `term` was in the current replay's context, turn by turn, and what removed it (off the GUI thread)."""
        timeline, term = self.timeline, term.strip()
        if timeline is None or not term:
            return

        def job() -> None:
            from ..engine.retention import where

            try:
                found, message = where(timeline, term), ""
            except Exception as exc:
                found, message = None, f"search failed ({type(exc).__name__}: {exc})"
            self._post(self._found, timeline, term, found, message)

        self._answer_executor.submit(job)

    def _on_found(self, timeline: Timeline, term: str, found: Any, message: str) -> None:
        if timeline is self.timeline:
            self.whereReady.emit(timeline, term, found, message)

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

    def _on_explained(self, generation: int, explanation: Explanation) -> None:
        if generation == self._why_generation:
            self.explanationReady.emit(explanation)

    def _on_compared(self, generation: int, a: Plan, b: Plan) -> None:
        self.compareReady.emit(a, b)

    # --- reproducibility ----------------------------------------------------------------------
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
        if self.options.real_count:
            parts.append("--real-count")
        if self.options.model:
            parts += ["--model", self.options.model]
        return shlex.join(parts)

    @staticmethod
    def policies() -> list[str]:
        return policy_names()

    def shutdown(self) -> None:
        """Stop for good: queued work is dropped, running searches and simulations abandoned, and a
        plan still running gets a few seconds (a load is not waited for: it may never return).
        Results that arrive later are ignored. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._load_generation += 1
        self._sim_generation += 1
        self._why_generation += 1
        self._executor.shutdown(SHUTDOWN_WAIT_S)
        self._sim_executor.shutdown(SHUTDOWN_WAIT_S)
        self._side_executor.shutdown(SHUTDOWN_WAIT_S)
        self._count_executor.shutdown(SHUTDOWN_WAIT_S)
        self._answer_executor.shutdown(SHUTDOWN_WAIT_S)
        for worker in self._extra_workers:
            worker.shutdown(SHUTDOWN_WAIT_S)
        workers = (self._executor, self._sim_executor, self._side_executor, self._count_executor, self._answer_executor,
                   *self._extra_workers)
        threads = [t for t in (*(w.thread for w in workers), *self._load_threads) if t is not None]
        # gc is restored once no worker thread is left; this object lives until its own have ended.
        COLLECTOR.release(self, threads)
        _LIVE.discard(self)
