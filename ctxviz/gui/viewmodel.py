"""The one object the views talk to: session, policy, parameters and options in; plans out.

It holds no engine logic: every number comes from `ctxviz.engine`. Work that can take longer than a
frame (loading, counting, simulating, the `why` search) runs on a worker thread; a newer request
supersedes an older one, so dragging a slider never queues up stale plans. Each load has a thread of
its own, so one that never returns (a FIFO) blocks neither later loads nor closing the window. While
a view-model lives, Python's cyclic garbage collector runs on the GUI thread only (`threads.py`).

This module holds the inputs and starts the work; what changes the inputs and what comes back are
its parts in `gui/vm/` (parameters and their history, the plan's results, the replay, Compare).
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import sys
import threading
import time
import weakref
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from ..engine.agent_policies import DEFAULT_POLICY, OpenedUnder
from ..engine.catalog import find_model
from ..engine.checks import PlanOptions, chat_scheme
from ..engine.counting import CountStore
from ..engine.explain import Cancelled, why
from ..engine.plan import Plan
from ..engine.planner import plan_session
from ..engine.policies import get_policy, policy_names
from ..engine.session import Session
from ..engine.simulate import Timeline, simulate
from ..engine.tokenizers import TiktokenTokenizer, real_encoding_for_model
from ..engine.voices import voices_of
from ..errors import CtxvizError
from ..io.loaders import load_session
from .threads import COLLECTOR, Worker, start_daemon, throttled
from .vm.compare import CompareRequests
from .vm.parameters import ParameterHistory
from .vm.replay import ReplayResults
from .vm.results import PlanResults

__all__ = ["ContextViewModel", "real_count_scheme", "throttled"]

#: How long closing the window waits for a running plan or search to notice it is no longer wanted.
SHUTDOWN_WAIT_S = 5.0
#: A running replay's turns so far are drawn at most this often (each drawing copies them).
PARTIAL_INTERVAL_S = 0.25
#: View-models not shut down yet.
_LIVE: set[ContextViewModel] = set()



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



class ContextViewModel(ParameterHistory, PlanResults, ReplayResults, CompareRequests, QObject):
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
    compareReady = Signal(object, object, int)  # (Plan A, Plan B, the summaries the file records)
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
    #: (the pins a newly opened file cleared): pins are message numbers of the file they were made on.
    pinsCleared = Signal(object)
    #: (Session, message): the first plan of a newly opened session failed, so none of it is on screen.
    planFailed = Signal(object, str)

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
    _compared = Signal(int, object, object, int, object)

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
        #: What the views show of the latest plans, made on the plan worker (`PlanResults.prepared`).
        self._prepared: dict[int, tuple[Plan, dict[str, Any]]] = {}
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
        #: Plans back from the worker, handled in the next round of the event loop (`PlanResults._plan_arrived`).
        self._arrived: list[tuple[int, Session, Plan | None]] = []
        self._arrival = QTimer(self)
        self._arrival.setSingleShot(True)
        self._arrival.setInterval(0)
        self._arrival.timeout.connect(self._handle_arrived)
        #: A plan's retention waits for it to stay on screen (`PlanResults._start_retention`): one timer, restarted per plan.
        self._retention_timer = QTimer(self)
        self._retention_timer.setSingleShot(True)
        self._retention_timer.timeout.connect(self._retention_due)
        self._retention_for: tuple[Session, Plan] | None = None
        self._loaded.connect(self._on_loaded)
        self._load_failed.connect(self._on_load_failed)
        self._planned.connect(self._plan_arrived)
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

    # --- planning -----------------------------------------------------------------------------
    def _inputs(self) -> tuple[Any, ...]:
        """What decides both the plan's figures and the replay (not the real count or the model)."""
        return (id(self.session), self.policy, self.params, self.tokenizer, self.options.pair_safe, self.options.pins)

    def replay_options(self) -> PlanOptions:
        """The options the replay and the "why" search share with the plan on screen (pair safety;
        the real count and the model change no decision)."""
        return PlanOptions(pair_safe=self.options.pair_safe, pins=self.options.pins)

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
                plan.sent_mask  # noqa: B018
                plan.distinct  # noqa: B018  (the table's column widths)
                voices_of(session)  # whose words each message holds (cached per session): the table and strip show it
                self._prepare(session, plan)  # what the lost card and the reason filter show
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
        self._arrival.stop()
        self._arrived.clear()
        self._retention_timer.stop()
        self._retention_for = None
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
