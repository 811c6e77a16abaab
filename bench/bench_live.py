"""Listing a thousand sessions, cold and warm, and following a growing log.

    python bench/bench_live.py [--sessions 1000] [--rounds 5]

**Listing.** A fake home is filled with `--sessions` session files copied from the real logs in
tests/data (Claude Code, Codex and Gemini CLI, each where its agent writes it, a Claude Code sub-agent
under every fifth session), 100 projects. Cold is a listing with an empty cache (a new
`SessionIndex`; the files are in the OS page cache after the first round, as on a machine where the
agents just wrote them); warm is a listing with the cache of the round before, nothing changed.
Rounds interleave cold and warm; the table reports the median and the spread of each, and the
warm/cold ratio per round. Goal: warm well under a second for 1,000 sessions.

**Following.** A Claude Code log is grown call by call from a real session tiled to `--megabytes`
(fresh ids, one chain); the time of each `Follower.poll()` after an append of one call's lines is
reported beside the time of a full `load_session` of the file as it then is, in the same rounds.

**The app following a large log** (`--app-megabytes`, default 200; 0 skips it). The window (offscreen)
follows a tiled Claude Code log while another process appends one call's lines `--rate` times a
second. The GUI thread's frame time is measured as a 60 Hz display would see it: frames fall due
every 16.7 ms, the window is repainted for the first due frame the event loop gets to, and a frame's
time is from when it fell due to when its repaint ended (a frame the GUI thread could not get to for
50 ms counts 50, 33 and 17 ms for the three frames it held up). Rounds interleave "idle" (the same
window, nothing written) and "following"; p50/p90/p99 of each are printed with the updates the
window showed and the write-to-screen delay. Goal: p90 ≤ 16.7 ms while following.
Frames fall due from the start of the event loop of a round, after the writer process is started
(forking this large process is the bench's, not the app's). Each thread's CPU seconds per kind of
round are printed (the GUI thread's extra while following is its own work per new state), and any
garbage collection while following.
`--profile FILE` writes cProfile statistics of the GUI thread's CPU time while following to FILE
(its own work, not its waits for the GIL; the profiler slows it, so the frame times of a profiled
run mean little) and of each worker's jobs to FILE.<worker>, and prints how long each worker ran:
the Python that competes with the window for the interpreter (the GIL). `--trace FILE` writes every
frame while following (when it fell due, how long it took) and when each state was shown and each
poll's result arrived, as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

from common import ROOT  # noqa: E402

sys.path.insert(0, ROOT)

from ctxviz.io.discovery import SessionIndex, discover  # noqa: E402
from ctxviz.io.follow import Follower  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

DATA = Path(ROOT) / "tests" / "data"
CLAUDE = sorted((DATA / "real" / "claude_code").glob("*.jsonl")) + sorted((DATA / "claude_code").glob("spotter-*.jsonl"))
CODEX = sorted((DATA / "real" / "codex").glob("*rollout-*.jsonl"))
GEMINI = sorted((DATA / "real" / "gemini_cli").glob("*.json*"))


def build_home(home: Path, sessions: int) -> int:
    """Lay out `sessions` session files as the agents do; returns how many bytes they hold."""
    total = 0
    sub = DATA / "real" / "claude_code" / "agent-a0b12ac0cae20818c.jsonl"
    for k in range(sessions):
        project = k % 100
        kind = k % 10
        if kind < 6:
            source = CLAUDE[k % len(CLAUDE)]
            sid = str(uuid.UUID(int=k))
            target = home / ".claude" / "projects" / f"-work-project-{project}" / f"{sid}.jsonl"
            if k % 5 == 0:
                extra = target.parent / sid / "subagents" / sub.name
                extra.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(sub, extra)
        elif kind < 9:
            source = CODEX[k % len(CODEX)]
            name = source.name[source.name.index("rollout-"):]
            target = home / ".codex" / "sessions" / "2026" / f"{1 + project % 12:02d}" / f"{1 + k % 28:02d}" / name.replace(".jsonl", f"-{k}.jsonl")
        else:
            source = GEMINI[k % len(GEMINI)]
            target = home / ".gemini" / "tmp" / f"project-{project}" / "chats" / f"session-{k}{source.suffix}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        stamp = 1_700_000_000 + k * 60
        os.utime(target, (stamp, stamp))
        total += target.stat().st_size
    return total


def bench_listing(sessions: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        size = build_home(home, sessions)
        env = {"HOME": str(home)}
        colds: list[float] = []
        warms: list[float] = []
        ratios: list[float] = []
        index = SessionIndex()
        discover(env=env, home=home, index=index)  # one listing first: the page cache as after the agents wrote the files
        count = 0
        for r in range(rounds):
            def cold() -> float:
                start = time.perf_counter()
                discover(env=env, home=home, index=SessionIndex())
                return time.perf_counter() - start

            def warm() -> float:
                nonlocal count
                start = time.perf_counter()
                listing = discover(env=env, home=home, index=index)
                count = sum(1 + len(s.subagents) for s in listing.sessions)
                return time.perf_counter() - start

            c, w = (cold(), warm()) if r % 2 == 0 else tuple(reversed((warm(), cold())))
            colds.append(c)
            warms.append(w)
            ratios.append(w / c)
        print(f"listing {count:,} session files ({size / 1e6:,.0f} MB) in {rounds} interleaved rounds")
        print(f"  cold  median {statistics.median(colds):.3f} s  [{min(colds):.3f}-{max(colds):.3f}]")
        print(f"  warm  median {statistics.median(warms):.3f} s  [{min(warms):.3f}-{max(warms):.3f}]  "
              f"(goal: well under 1 s; {'met' if statistics.median(warms) < 0.5 else 'NOT met'})")
        print(f"  warm/cold median {statistics.median(ratios):.3f}  [{min(ratios):.3f}-{max(ratios):.3f}]")


def _fresh_tool_ids(block: object, copy: int) -> object:
    if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
        return {**block, "id": f"{block['id']}-{copy}"}
    if isinstance(block, dict) and block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
        return {**block, "tool_use_id": f"{block['tool_use_id']}-{copy}"}
    return block


def tiled_claude_log(megabytes: float) -> list[str]:
    """A Claude Code session repeated to about `megabytes`, with fresh uuids, message and tool call
    ids, and one chain."""
    source = (DATA / "real" / "claude_code" / "spotter-4d5611e5.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in source]
    out: list[str] = []
    previous = None
    size = 0
    copy = 0
    while size < megabytes * 1e6:
        for record in records:
            r = dict(record)
            if r.get("isSidechain") or r.get("type") == "progress":
                continue
            if r.get("uuid"):  # lines without one (file-history snapshots) stay without: one uuid per line
                r["uuid"] = f"{copy:06d}-{r['uuid']}"
                r["parentUuid"] = previous
            if isinstance(r.get("message"), dict) and isinstance(r["message"].get("id"), str):
                r["message"] = {**r["message"], "id": f"{copy}-{r['message']['id']}"}
            if isinstance(r.get("message"), dict) and isinstance(r["message"].get("content"), list):
                # Fresh tool call ids too: an agent never reuses one (a reused id answered again on the
                # chain would leave an earlier parallel result out of a full load).
                r["message"] = {**r["message"], "content": [_fresh_tool_ids(block, copy) for block in r["message"]["content"]]}
            previous = r.get("uuid") or previous
            line = json.dumps(r, separators=(",", ":")) + "\n"
            out.append(line)
            size += len(line)
        copy += 1
    return out


def bench_follow(megabytes: float, appends: int) -> None:
    lines = tiled_claude_log(megabytes)
    calls = [k for k, line in enumerate(lines) if '"type":"assistant"' in line]
    start_at = calls[-appends - 1]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "live.jsonl"
        path.write_text("".join(lines[:start_at]), encoding="utf-8")
        follower = Follower(path)
        t = time.perf_counter()
        follower.poll()
        first = time.perf_counter() - t
        follower.plan("claude-code")
        polls, loads, plans = [], [], []
        for a, b in zip(calls[-appends - 1:-1], calls[-appends:], strict=True):
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("".join(lines[a:b]))
            t = time.perf_counter()
            follower.poll()
            polls.append(time.perf_counter() - t)
            t = time.perf_counter()
            follower.plan("claude-code")
            plans.append(time.perf_counter() - t)
            t = time.perf_counter()
            load_session(path)
            loads.append(time.perf_counter() - t)
        size = path.stat().st_size
        n = len(follower.session.messages) if follower.session else 0
        print(f"following a {size / 1e6:,.0f} MB Claude Code log ({n:,} messages), {appends} appends of one call each "
              f"(first read {first:.2f} s)")
        print(f"  poll             median {statistics.median(polls):.3f} s [{min(polls):.3f}-{max(polls):.3f}]")
        print(f"  plan (counts kept) median {statistics.median(plans):.3f} s [{min(plans):.3f}-{max(plans):.3f}]")
        print(f"  load_session     median {statistics.median(loads):.3f} s [{min(loads):.3f}-{max(loads):.3f}]  "
              f"(poll/load median {statistics.median([p / q for p, q in zip(polls, loads, strict=True)]):.2f})")


FRAME_S = 1 / 60

APPENDER = r"""
import sys, time
path, rate, count = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
chunks = open(sys.argv[4], encoding="utf-8").read().split("\x00")
start = time.perf_counter()
for k, chunk in enumerate(chunks[:count]):
    wait = start + k / rate - time.perf_counter()
    if wait > 0:
        time.sleep(wait)
    with open(path, "a", encoding="utf-8") as h:
        h.write(chunk)
    print(time.time(), flush=True)
"""


def _thread_cpu() -> dict[str, float]:
    """CPU seconds (user + system) each thread of this process has used, by thread name (Linux)."""
    import threading

    names = {t.native_id: t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            name = names.get(int(tid)) or f"native-{tid}"
            out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    except OSError:
        return {}
    return out


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def bench_app_follow(megabytes: float, rate: float, rounds: int, seconds: float, profile: str = "", trace_file: str = "") -> None:
    """The window following a large log while it grows (see the module docstring)."""
    import subprocess

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop, QSettings, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    from ctxviz.gui.app import application
    from ctxviz.gui.main_window import MainWindow

    lines = tiled_claude_log(megabytes)
    calls = [k for k, line in enumerate(lines) if '"type":"assistant"' in line]
    appends_needed = int(rate * seconds * rounds) + 2
    start_at = calls[-appends_needed - 1]
    chunks = ["".join(lines[a:b]) for a, b in zip(calls[-appends_needed - 1:-1], calls[-appends_needed:], strict=True)]
    app = application("light")
    if os.environ.get("SWITCH"):
        sys.setswitchinterval(float(os.environ["SWITCH"]))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "live.jsonl"
        path.write_text("".join(lines[:start_at]), encoding="utf-8")
        del lines
        window = MainWindow(settings=QSettings(str(Path(folder) / "s.ini"), QSettings.Format.IniFormat))
        window.resize(1440, 900)
        window.show()
        t = time.perf_counter()
        window.open_live(str(path), agent="claude-code", follow=True)
        while window.vm.plan is None or window.vm.real_count_pending or window.live.forecast_pending():
            app.processEvents()
            time.sleep(0.005)
        first = time.perf_counter() - t
        n0 = len(window.vm.session.messages)
        print(f"the app following a {path.stat().st_size / 1e6:,.0f} MB Claude Code log ({n0:,} messages; first plan, real count and "
              f"forecast in {first:.1f} s), {rate:g} appends of one call per second, {rounds} interleaved rounds of {seconds:g} s")

        frames: list[float] = []
        state = {"next_due": 0.0}

        def tick() -> None:
            now = time.perf_counter()
            if now < state["next_due"]:
                return
            window.statusBar().repaint()  # a frame: what the event loop holds up, plus a small paint of its own
            end = time.perf_counter()
            due = state["next_due"]
            while due <= now:
                frames.append(end - due)
                if trace is not None and state.get("following"):
                    trace["frames"].append((due, end - due))
                due += FRAME_S
            state["next_due"] = due

        timer = QTimer()
        timer.setTimerType(Qt.TimerType.PreciseTimer)
        timer.setInterval(2)
        timer.timeout.connect(tick)
        timer.start()
        shown: list[tuple[float, int]] = []  # (time.time() the window showed a new state, messages)
        window.vm.planReady.connect(lambda s, _p: shown.append((time.time(), len(s.messages))) if s is window.vm.session else None)
        trace: dict[str, list[Any]] | None = {"frames": [], "shown": [], "polled": []} if trace_file else None
        if trace is not None:  # when each new state was shown (its slots done) and each poll's result arrived
            window.vm.planReady.connect(lambda *_: trace["shown"].append(time.perf_counter()))
            window.live._polled.connect(lambda *_: trace["polled"].append(time.perf_counter()))
            window.live.forecastReady.connect(lambda *_: trace.setdefault("forecast", []).append(time.perf_counter()))
        results: dict[str, list[float]] = {"idle": [], "following": []}
        profiler = None
        worker_profiles: dict[str, Any] = {}
        busy: dict[str, float] = {}
        if profile:  # what the GUI thread runs while following (cProfile sees this thread only), and each worker's jobs
            import cProfile

            from ctxviz.gui import threads

            profiler = cProfile.Profile(time.thread_time)  # CPU time: what the GUI thread runs, not its waits for the GIL
            submit = threads.Worker.submit

            def profiled_submit(worker: Any, fn: Any) -> Any:
                def job() -> Any:
                    prof = worker_profiles.setdefault(worker.name, cProfile.Profile())
                    t0 = time.perf_counter()
                    prof.enable()
                    try:
                        return fn()
                    finally:
                        prof.disable()
                        busy[worker.name] = busy.get(worker.name, 0.0) + time.perf_counter() - t0
                return submit(worker, job)

            threads.Worker.submit = profiled_submit  # type: ignore[method-assign]
        delays: list[float] = []
        written = 0
        import gc

        pauses: list[tuple[int, float]] = []  # (generation, seconds) of each collection while following
        gc_started = [0.0]

        def on_gc(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                gc_started[0] = time.perf_counter()
            elif state.get("following"):
                pauses.append((info["generation"], time.perf_counter() - gc_started[0]))

        gc.callbacks.append(on_gc)
        cpu: dict[tuple[str, str], float] = {}  # CPU seconds per (round kind, thread)
        for r in range(rounds * 2):
            mode = ("idle", "following")[(r + (r // 2)) % 2]  # idle, following, following, idle, idle, following...
            frames.clear()
            if mode == "following":
                count = int(rate * seconds)
                round_file = Path(folder) / f"chunks-{r}.txt"  # this round's calls, in a file of its own before the writer starts
                round_file.write_text("\x00".join(chunks[:count]), encoding="utf-8")
                chunks = chunks[count:]
                writer = subprocess.Popen([sys.executable, "-c", APPENDER, str(path), str(rate), str(count), str(round_file)],
                                          stdout=subprocess.PIPE, text=True)
            # Frames fall due from here: starting the writer (a fork of this large process) is the bench's, not the app's.
            state["next_due"] = time.perf_counter() + FRAME_S
            loop = QEventLoop()  # the window's own event loop, as `app.exec()` runs it
            QTimer.singleShot(int(seconds * 1000), loop.quit)
            if profiler is not None and mode == "following":
                if not state.get("profiling"):  # the workers' figures: while following only (not the first load)
                    state["profiling"] = 1.0
                    worker_profiles.clear()
                    busy.clear()
                profiler.enable()
            state["following"] = 1.0 if mode == "following" else 0.0
            before = _thread_cpu()
            loop.exec()
            for name, t in _thread_cpu().items():
                cpu[(mode, name)] = cpu.get((mode, name), 0.0) + t - before.get(name, 0.0)
            state["following"] = 0.0
            if profiler is not None:
                profiler.disable()
            if mode == "following":
                out, _ = writer.communicate(timeout=60)
                stamps = [float(x) for x in out.split()]
                written += len(stamps)
                # Let the last write reach the screen, outside the measured window.
                settle = time.perf_counter() + 30
                while time.perf_counter() < settle:
                    app.processEvents()
                    time.sleep(0.005)
                    if window.live.follower is not None and window.live.follower.session is window.vm.session and not window.live._poll_running:
                        if os.path.getsize(path) == window.live.follower._offset + len(window.live.follower._pending):
                            break
                for stamp in stamps:
                    after = [when for when, _n in shown if when >= stamp]
                    if after:
                        delays.append(after[0] - stamp)
            results[mode].append(list(frames))
        timer.stop()
        n1 = len(window.vm.session.messages)
        follower = window.live.follower
        if follower is not None:
            print(f"  the follower's reads: {follower.incremental_loads} carried on, {follower.full_loads} whole (the first included"
                  + (f"; the last whole one because: {follower.why_full}" if follower.why_full else "") + ")")
        for mode in ("idle", "following"):
            every = [f * 1000 for batch in results[mode] for f in batch]
            per_round = ", ".join(f"{_percentile([f * 1000 for f in b], 0.9):.1f}" for b in results[mode])
            goal = "" if mode == "idle" else (f"  (goal p90 <= {FRAME_S * 1000:.1f} ms: "
                                              + ("met" if _percentile(every, 0.9) <= FRAME_S * 1000 else
                                                 f"NOT met, by {_percentile(every, 0.9) - FRAME_S * 1000:.1f} ms") + ")")
            print(f"  {mode:9s} frame time p50 {_percentile(every, 0.5):5.1f} ms  p90 {_percentile(every, 0.9):5.1f} ms  "
                  f"p99 {_percentile(every, 0.99):6.1f} ms  max {max(every):6.1f} ms  ({len(every):,} frames; p90 per round {per_round}){goal}")
        print(f"  {written} appends, {n1 - n0:+,} messages; the window showed {len(shown)} new states; write -> window "
              + (f"median {statistics.median(delays):.2f} s, p90 {_percentile(delays, 0.9):.2f} s, max {max(delays):.2f} s" if delays else "-"))
        gc.callbacks.remove(on_gc)
        for mode in ("idle", "following"):
            print(f"  CPU seconds per thread, {mode}: " + ", ".join(f"{k} {v:.2f}" for (m, k), v in sorted(cpu.items(), key=lambda kv: -kv[1])
                                                                  if m == mode and v >= 0.01))
        for generation in range(3):
            took = [t * 1000 for g, t in pauses if g == generation]
            if took:
                print(f"  garbage collections of generation {generation} while following: {len(took)}, "
                      f"{sum(took):.0f} ms in all, the longest {max(took):.0f} ms")
        if trace is not None:
            Path(trace_file).write_text(json.dumps(trace), encoding="utf-8")
        if profiler is not None:
            profiler.dump_stats(profile)
            for name, prof in worker_profiles.items():
                prof.dump_stats(f"{profile}.{name}")
            print(f"  the GUI thread's profile while following: {profile}; the workers' busy seconds: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in sorted(busy.items())) + " (from the first following round on)")
        window.close()
        QApplication.processEvents()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--megabytes", type=float, default=20.0)
    parser.add_argument("--appends", type=int, default=5)
    parser.add_argument("--app-megabytes", type=float, default=200.0, help="the log the app follows (0: skip)")
    parser.add_argument("--rate", type=float, default=10.0, help="appends per second while the app follows")
    parser.add_argument("--app-rounds", type=int, default=2, help="rounds of each: idle, following")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of a round")
    parser.add_argument("--only-app", action="store_true", help="only the app's row")
    parser.add_argument("--profile", default="", metavar="FILE", help="cProfile the GUI thread while following, to FILE")
    parser.add_argument("--trace", default="", metavar="FILE",
                        help="write each frame while following (when due, how long) and when each state was shown, as JSON")
    args = parser.parse_args()
    if not args.only_app:
        bench_listing(args.sessions, args.rounds)
        bench_follow(args.megabytes, args.appends)
    if args.app_megabytes > 0:
        bench_app_follow(args.app_megabytes, args.rate, args.app_rounds, args.seconds, args.profile, args.trace)


if __name__ == "__main__":
    main()
