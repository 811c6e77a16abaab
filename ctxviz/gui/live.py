"""Your agent, live, in the app: the sessions on this machine, a log followed as it grows, and the
next compaction's forecast, each worked out off the GUI thread.

- **Listing** (`refresh_listing`): `io.discovery.discover` on a worker; the browser shows the result.
- **Following** (`follow`): a `QFileSystemWatcher` on the file, and a timer as the fallback (a
  watcher misses writes on some file systems, and stops watching a file that is replaced), each
  asking for a poll. A poll (`io.follow.Follower.poll`) runs on a worker of its own; polls asked
  for while one runs become one more poll after it. Before and after each poll the counts the
  view-model holds for the session (the policy's, and the real count's) are carried to the new
  state by `engine.counting.extend_counts`, so only new or changed messages are measured; the
  view-model then plans the new state (`ContextViewModel.grow`) and, when a timeline was replayed,
  replays it again quietly (one at a time: a write during a replay waits for the next).
- **Forecast** (`engine.forecast.forecast`): after each plan of the whole session, for the policy on
  screen, on a worker; its back-test (re-planning before each recorded compaction) is kept while
  the log's compactions stay the same, as they do while a log only grows.
- **Sharing the interpreter.** Every worker's Python holds the GIL the window needs to paint. Each
  new state of a 200 MB log builds its anchor index again (seconds, shared by the forecast and the
  lost card's retention), so while a log is followed both take at most FORECAST_SHARE of the time,
  and a new state is handed to the window at most every HAND_OVER_GAP_S.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal

from ..engine.counting import CountingScheme, extend_counts
from ..engine.forecast import Forecast, forecast
from ..engine.plan import Plan
from ..engine.policies import get_policy
from ..engine.session import Session
from ..engine.verify import AGENT_POLICIES
from ..engine.wording import counted
from ..errors import CtxvizError
from ..io.discovery import Listing, discover, locations
from ..io.follow import Follower
from .viewmodel import ContextViewModel, real_count_scheme

#: The fallback's interval: a write is seen within this long even when the watcher misses it.
POLL_INTERVAL_MS = 500
#: Polls start at most this often: an agent writing ten lines a second gets two updates a second on
#: screen, not ten (each update re-plans and repaints; more would only hold up the window).
POLL_GAP_S = 0.5
#: While a log is followed, forecasts take at most this share of the time (see `_plan_ready`).
FORECAST_SHARE = 0.25
#: A new state of a followed log waits at most this long for the plan of the one before it.
HAND_OVER_WAIT_S = 10.0
#: New states of a followed log reach the window at most this often (each one is planned again, 0.8 s
#: of a worker's Python at 200 MB, and repaints the window, 50-60 ms of the GUI thread's); those read
#: meanwhile become the latest one.
HAND_OVER_GAP_S = 1.0
#: A session written this recently is followed by default when opened from the browser or a live folder.
FOLLOW_RECENT_S = 300.0
#: The forecast waits this long after a plan (a slider drag re-plans every frame; a forecast plans several times).
FORECAST_DELAY_MS = 200


def recently_written(path: str, now: float | None = None) -> bool:
    try:
        return (time.time() if now is None else now) - os.stat(path).st_mtime <= FOLLOW_RECENT_S
    except OSError:
        return False


def in_live_folder(path: str, roots: list[str] | tuple[str, ...] = ()) -> bool:
    """Whether `path` is under a folder where an agent writes its sessions (or a root from the settings)."""
    real = os.path.realpath(path)
    for loc in locations(roots=roots):
        folder = os.path.realpath(loc.folder)
        if real.startswith(folder.rstrip(os.sep) + os.sep):
            return True
    return False


def applies(policy: str) -> str:
    """"" when a forecast of the next compaction means something under `policy`, else why not (one line)."""
    pol = get_policy(policy)
    if pol.compact is None and pol.trigger_level is None:
        return f"{policy} does not compact (it trims or summarises by its own rule): there is no next compaction to forecast"
    return ""


@dataclass(frozen=True)
class Polled:
    """What one poll of the followed file brought back to the GUI thread."""

    session: Session | None
    notes: tuple[str, ...]
    grown: bool  # a new state of the session to show
    first: bool  # the first read of the file
    real_model: str | None  # the model whose real count was carried forward (None: not asked for)
    appended: int


@dataclass(frozen=True)
class ForecastResult:
    session: Session
    plan: Plan
    policy: str
    forecast: Forecast | None
    #: Why there is no forecast for this policy ("" when there is one).
    why_not: str = ""


class LiveController(QObject):
    """Lists sessions, follows one log, forecasts the next compaction; talks to the view-model."""

    listingReady = Signal(object)  # Listing
    #: (following, path): following started or stopped.
    followChanged = Signal(bool, str)
    #: (one line for the status bar, the notes so far): after every poll that found something.
    followUpdated = Signal(str, str)
    #: Something happened to the followed file (replaced, truncated, deleted, unreadable).
    followNote = Signal(str)
    forecastReady = Signal(object)  # ForecastResult
    busy = Signal(bool, str)
    errorOccurred = Signal(str)

    _listed = Signal(object)
    _polled = Signal(int, object)
    _poll_failed = Signal(int, str)
    _forecasted = Signal(int, object)

    def __init__(self, vm: ContextViewModel, roots: Callable[[], list[str]] | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.vm = vm
        self.roots = roots or (lambda: [])
        self._list_worker = vm.add_worker("sessions")
        self._follow_worker = vm.add_worker("follow")
        self._forecast_worker = vm.add_worker("forecast")
        self.listing: Listing | None = None
        self._listing_running = False
        self._listing_again = False
        # following
        self.follower: Follower | None = None
        self.path = ""
        self._generation = 0
        self._poll_running = False
        self._poll_again = False
        self._expected: Session | None = None  # the followed session the view-model is about to load
        self._adopt: Session | None = None  # the session on screen a first read of the same file continues
        self._notes: list[str] = []
        #: The states of the followed log shown lately, oldest first: their counts stay in the store
        #: while a worker may still be busy with one (a plan, a forecast), then are forgotten.
        self._states: list[Session] = []
        self._messages_before = 0
        #: The state handed to the view-model whose plan is not in yet, when it was handed, and the
        #: newest state read meanwhile (handed over when that plan is in).
        self._planning: Session | None = None
        self._handed_at = 0.0
        self._held: Polled | None = None
        self._hand_timer = QTimer(self)
        self._hand_timer.setSingleShot(True)
        self._hand_timer.timeout.connect(self._hand_over_held)
        self.polls = 0  # polls that found something (tests, the indicator)
        self._last_poll = 0.0
        self._gap_timer = QTimer(self)
        self._gap_timer.setSingleShot(True)
        self._gap_timer.timeout.connect(self.poke)
        self.watcher = QFileSystemWatcher(self)
        self.watcher.fileChanged.connect(lambda _p: self.poke())
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_INTERVAL_MS)
        self.timer.timeout.connect(self.poke)
        # the forecast
        self._forecast_generation = 0
        self._forecast_running = False  # one forecast at a time: a plan made meanwhile is forecast after it
        self._backtests: dict[Any, Any] = {}
        self._forecast_started = 0.0
        self._forecast_cost = 0.0  # how long the last forecast took
        self.forecast: ForecastResult | None = None
        self._forecast_timer = QTimer(self)
        self._forecast_timer.setSingleShot(True)
        self._forecast_timer.setInterval(FORECAST_DELAY_MS)
        self._forecast_timer.timeout.connect(self._start_forecast)
        self._listed.connect(self._on_listed)
        self._polled.connect(self._on_polled)
        self._poll_failed.connect(self._on_poll_failed)
        self._forecasted.connect(self._on_forecasted)
        vm.sessionLoaded.connect(self._session_loaded)
        vm.planReady.connect(self._plan_ready)
        vm.errorOccurred.connect(self._plan_failed)
        vm.timelineReady.connect(self._timeline_ready)

    def _post(self, signal: Any, *args: Any) -> None:
        try:
            signal.emit(*args)
        except RuntimeError:  # the window (and this object) went away while the job ran
            pass

    # --- the listing ---------------------------------------------------------------------------
    def refresh_listing(self) -> None:
        """List the sessions on this machine (and under the settings' roots) on a worker."""
        if self._listing_running:
            self._listing_again = True
            return
        self._listing_running = True
        roots = list(self.roots())

        def job() -> None:
            try:
                listing = discover(roots=roots)
            except Exception as exc:  # a listing it cannot make is one note, never a traceback
                listing = Listing((), tuple(locations(roots=roots)), (f"listing failed ({type(exc).__name__}: {exc})",))
            self._post(self._listed, listing)

        self._list_worker.submit(job)

    def _on_listed(self, listing: Listing) -> None:
        self._listing_running = False
        self.listing = listing
        self.listingReady.emit(listing)
        if self._listing_again:
            self._listing_again = False
            self.refresh_listing()

    def should_follow(self, path: str) -> bool:
        """On by default for a session written in the last few minutes in a folder an agent writes to."""
        return recently_written(path) and in_live_folder(path, self.roots())

    # --- following -----------------------------------------------------------------------------
    @property
    def following(self) -> bool:
        return self.follower is not None

    def follow(self, path: str) -> None:
        """Read `path` (on the follow worker) and keep reading what is appended to it. When the
        session on screen is of this file it stays, and what was counted carries over."""
        self.stop(quiet=True)
        self._generation += 1
        self.path = os.path.abspath(path)
        shown = self.vm.session
        self._adopt = shown if shown is not None and shown.source and os.path.abspath(shown.source) == self.path else None
        self.follower = Follower(self.path, store=self.vm.store, forget_previous=False)
        self._notes = []
        self.polls = 0
        if self._adopt is None:
            self.busy.emit(True, f"Loading {path}… (following it)")
        if os.path.exists(self.path):
            self.watcher.addPath(self.path)
        self.timer.start()
        self.vm.retention_share = FORECAST_SHARE  # the lost card's retention, too, takes a share of the time (gui/vm/results.py)
        self.followChanged.emit(True, self.path)
        self.poke()

    def stop(self, quiet: bool = False) -> None:
        """Stop following; what was read stays on screen."""
        was = self.follower is not None
        self._generation += 1
        self.follower = None
        self.vm.retention_share = None
        self._expected = self._adopt = None
        self.timer.stop()
        self._gap_timer.stop()
        if self.watcher.files():
            self.watcher.removePaths(self.watcher.files())
        self._poll_running = self._poll_again = False
        if self._held is not None and self._held.session is not self.vm.session:
            self.vm.store.forget(self._held.session)
        self._held = self._planning = None
        self._hand_timer.stop()
        for state in self._states:
            if state is not self.vm.session:
                self.vm.store.forget(state)
        self._states = []
        if was and not quiet:
            self.followChanged.emit(False, self.path)

    def poke(self) -> None:
        """The file may have changed: poll it (once more after the running poll, if one runs)."""
        if self.follower is None:
            return
        if self._poll_running:
            self._poll_again = True
            return
        wait = self._last_poll + POLL_GAP_S - time.perf_counter()
        if wait > 0:
            if not self._gap_timer.isActive():
                self._gap_timer.start(int(wait * 1000) + 1)
            return
        self._poll_running = True
        self._last_poll = time.perf_counter()
        self._submit_poll()

    def _wanted(self) -> tuple[list[CountingScheme], str | None]:
        """The counting schemes the view-model plans with now: the policy's, and the real count's when asked for."""
        vm = self.vm
        session = vm.session if vm.session is not None else self._adopt
        model = session.model if session is not None else ""
        schemes = [get_policy(vm.policy).scheme(vm.tokenizer, model)]
        real_model = None
        if vm.options.real_count:
            real_model = vm.options.model or model
            schemes.append(real_count_scheme(real_model))
        return schemes, real_model

    def _submit_poll(self) -> None:
        follower, generation, store = self.follower, self._generation, self.vm.store
        adopt = self._adopt
        schemes, real_model = self._wanted()

        def job() -> None:
            if generation != self._generation or follower is None:
                return
            try:
                previous = follower.session
                if previous is not None:  # what was counted for the state on screen is carried to the next one
                    for scheme in schemes:
                        if store.find(previous, scheme) is not None:
                            follower.counts(scheme)
                update = follower.poll()
                session = follower.session
                if update is None or session is None:
                    self._post(self._polled, generation, Polled(None, (), False, False, None, 0))
                    return
                first = previous is None
                grown = session is not previous
                real = None
                if first and adopt is not None:  # the file on screen, read again to follow it: carry its counts
                    for scheme in schemes:
                        old = store.find(adopt, scheme)
                        if old is not None:
                            store.put(extend_counts(old, session))
                if grown and (adopt is not None or not first):
                    # Extended above (found in the store), or counted here once and extended at every
                    # poll after. The real count too: the view-model's own count of a log that grows
                    # faster than it counts would start again at every write.
                    for scheme in schemes:
                        follower.counts(scheme)
                    real = real_model
                if grown:
                    gc.freeze()  # out of the collector's generations here, not rescanned on the GUI thread
                self._post(self._polled, generation, Polled(session, update.notes, grown, first, real, update.appended_bytes))
            except CtxvizError as exc:
                self._post(self._poll_failed, generation, str(exc))
            except Exception as exc:  # a loader bug must not take the window down
                self._post(self._poll_failed, generation, f"{follower.path}: cannot follow ({type(exc).__name__}: {exc})")

        self._follow_worker.submit(job)

    def _on_polled(self, generation: int, polled: Polled) -> None:
        if generation != self._generation:
            return
        self._poll_running = False
        vm = self.vm
        if polled.session is not None:
            for note in polled.notes:
                self._notes.append(note)
                self.followNote.emit(note)
            if polled.first and self._adopt is None:
                self.busy.emit(False, "")
                self._expected = polled.session
                self._messages_before = len(polled.session.messages)
                vm.set_session(polled.session)
                self._keep(polled.session)
            elif polled.grown:
                since = time.perf_counter() - self._handed_at
                if self._planning is not None and since < HAND_OVER_WAIT_S or since < HAND_OVER_GAP_S:
                    # The state on screen is still being planned: this one waits for that plan (a newer
                    # poll replaces it). Handing over every state would throw away each plan unfinished
                    # when a log grows faster than it is planned, and repaint the window for each.
                    if self._held is not None:
                        self.vm.store.forget(self._held.session)
                    self._held = polled
                    if self._planning is None and not self._hand_timer.isActive():
                        self._hand_timer.start(int((HAND_OVER_GAP_S - since) * 1000) + 1)
                else:
                    self._hand_over(polled)
            elif polled.notes:
                self.polls += 1
                self._say(polled)
        if self.path and os.path.exists(self.path) and self.path not in self.watcher.files():
            self.watcher.addPath(self.path)  # a replaced file is a new file to watch
        if self._poll_again:
            self._poll_again = False
            self.poke()

    def _hand_over_held(self) -> None:
        """The gap after the last new state is over: the state read meanwhile goes on (unless its
        predecessor is still being planned: that plan's end hands it over)."""
        if self._held is not None and self.follower is not None and self._planning is None:
            self._hand_over(self._held)

    def _hand_over(self, polled: Polled) -> None:
        """Show a new state of the followed log: the view-model plans it (and replays the timeline)."""
        vm = self.vm
        self._held = None
        self._messages_before = len(vm.session.messages) if vm.session is not None else 0
        self._planning, self._handed_at = polled.session, time.perf_counter()
        vm.grow(polled.session, polled.real_model)
        self._adopt = None
        self._keep(polled.session)
        if vm.timeline is not None and vm.timeline_state != "running":
            vm.request_timeline(quiet=True)
        self.polls += 1
        self._say(polled)

    #: States of the followed log whose counts are kept (the one on screen and those just before it).
    KEPT_STATES = 3

    def _keep(self, session: Session) -> None:
        self._states.append(session)
        while len(self._states) > self.KEPT_STATES:
            self.vm.store.forget(self._states.pop(0))

    def _say(self, polled: Polled) -> None:
        session = polled.session
        n = len(session.messages) if session is not None else 0
        added = n - self._messages_before if not polled.first else n
        stamp = time.strftime("%H:%M:%S")
        text = f"Following {os.path.basename(self.path)}: {counted(n, 'message')}"
        if not polled.first:
            text += f" ({added:+,} at {stamp})"
        if polled.notes:
            text += f"; {polled.notes[-1]}"
        self.followUpdated.emit(text, "\n".join([self.path, *self._notes]))

    def _on_poll_failed(self, generation: int, message: str) -> None:
        """A file that cannot be read (any more): one line, and following stops; what was read stays."""
        if generation != self._generation:
            return
        read_before = self.polls > 0 or self._expected is not None or self._adopt is not None
        self.busy.emit(False, "")
        self.stop()
        note = f"stopped following: {message}" if read_before else message
        self._notes.append(note)
        self.followNote.emit(note)
        self.errorOccurred.emit(note)

    def _session_loaded(self, session: Session) -> None:
        """Another file opened: this one is no longer followed."""
        if self.follower is not None and session is not self._expected:
            self.stop()

    def _timeline_ready(self, timeline: Any) -> None:
        """A replay finished of a state the followed log has since grown past: replay the latest (one at a time)."""
        vm = self.vm
        if self.follower is not None and vm.session is not None and timeline.session is not vm.session and vm.timeline_state != "running":
            vm.request_timeline(quiet=True)

    # --- the forecast ---------------------------------------------------------------------------
    def _plan_ready(self, session: Session, plan: Plan) -> None:
        if session is self._planning:
            self._planning = None
            # The plan's records (one per message: 14,000 at 200 MB) out of the collector's young
            # generations, as the poll's are: else each collection on this thread walks them (40 ms).
            gc.freeze()
            if self._held is not None and self.follower is not None:
                wait = HAND_OVER_GAP_S - (time.perf_counter() - self._handed_at)
                if wait <= 0:
                    self._hand_over(self._held)
                elif not self._hand_timer.isActive():
                    self._hand_timer.start(int(wait * 1000) + 1)
        if session is self.vm.session and plan is self.vm.plan:
            # A forecast holds the interpreter the window needs while it runs: while a log is followed,
            # forecasts take at most FORECAST_SHARE of the time (a first forecast of a large log takes seconds).
            wait = self._forecast_cost * (1 / FORECAST_SHARE - 1) if self.follower is not None else 0.0
            self._forecast_timer.start(max(FORECAST_DELAY_MS, int(wait * 1000)))

    def _plan_failed(self, _message: str) -> None:
        """The view-model said something failed (perhaps the plan of the state handed over): the
        state held back goes on, rather than wait for a plan that will not come."""
        if self._planning is not None:
            self._planning = None
            if self._held is not None and self.follower is not None:
                self._hand_over(self._held)

    def _start_forecast(self) -> None:
        if self._forecast_running:
            return  # the running one's end starts the next (of the plan on screen then)
        vm = self.vm
        session, plan = vm.session, vm.plan
        if session is None or plan is None:
            return
        self._forecast_generation += 1
        generation = self._forecast_generation
        policy, params, tokenizer, store = vm.policy, vm.params, vm.tokenizer, vm.store
        why_not = applies(policy)
        if why_not:
            self._on_forecast_done(generation, ForecastResult(session, plan, policy, None, why_not))
            return
        self._forecast_running = True
        self._forecast_started = time.perf_counter()
        key = (session.source, policy, repr(params), tokenizer, tuple((c.before_index, c.trigger, c.pre_tokens) for c in session.compactions))

        def job() -> None:
            if generation != self._forecast_generation or session is not self.vm.session:
                self._post(self._forecasted, generation, None)
                return  # a newer plan (or a later state of a followed log) superseded it before it started
            try:
                counts = store.get(session, get_policy(policy).scheme(tokenizer, session.model))
                kept = self._backtests.get(key)
                # The back-tests and the last compaction's drop depend only on what came before the
                # log's compactions: kept while they stay the same (two plans and more per forecast).
                found = forecast(session, policy, params, tokenizer, counts=counts, with_backtest=kept is None, with_last=kept is None)
                if kept is not None:
                    found = dataclasses.replace(found, backtests=kept[0], last_compaction=kept[1])
                else:
                    self._backtests = {key: (found.backtests, found.last_compaction)}
                result = ForecastResult(session, plan, policy, found)
            except Exception as exc:  # the card says it; the rest of the window is unaffected
                result = ForecastResult(session, plan, policy, None, f"no forecast ({type(exc).__name__}: {exc})")
            self._post(self._forecasted, generation, result)

        self._forecast_worker.submit(job)

    def forecast_pending(self) -> bool:
        """A plan is on screen whose forecast is not (yet) on the card."""
        vm = self.vm
        if vm.session is None or vm.plan is None:
            return False
        return self._forecast_timer.isActive() or self.forecast is None or not _same_plan(self.forecast.plan, vm.plan)

    def _on_forecasted(self, generation: int, result: ForecastResult | None) -> None:
        if result is not None:
            # What the next forecast will cost: not the back-tests and last compaction a first one made (kept after it).
            kept = result.forecast.kept_seconds if result.forecast is not None else 0.0
            self._forecast_cost = max(0.0, time.perf_counter() - self._forecast_started - kept)
        self._on_forecast_done(generation, result)

    def _on_forecast_done(self, generation: int, result: ForecastResult | None) -> None:
        """A forecast is in (None: skipped, superseded before it started). It goes on the card when it
        is of the plan on screen; when the plan changed while it ran, the plan on screen is forecast
        now (one at a time: a log growing ten times a second gets the latest state's, not each one's)."""
        self._forecast_running = False
        vm = self.vm
        if result is not None and _same_plan(result.plan, vm.plan):
            self.forecast = result
            self.forecastReady.emit(result)
        elif vm.plan is not None and not self._forecast_timer.isActive() and not (self.forecast is not None and _same_plan(self.forecast.plan, vm.plan)):
            self._start_forecast()

    def agent_policy_for(self, agent: str) -> str | None:
        """The policy that replays an agent's own context management (None: not an agent ctxviz knows)."""
        return AGENT_POLICIES.get(agent)


def _same_plan(a: Plan | None, b: Plan | None) -> bool:
    """The same plan, or it with its real count filled in (the same decisions, another object)."""
    return a is not None and b is not None and (a is b or a.messages is b.messages)
