"""Shared by the benchmarks: interleaved rounds, per-round ratios, fresh child processes, result rows.

A comparison runs baseline and candidate alternately, round after round (never all of one, then all
of the other, and never the best of several), and reports the median of the per-round ratios with
their spread, so a machine that gets busier half-way through shows up as spread, not as a result.
"""

from __future__ import annotations

import compileall
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def compile_package() -> None:
    """Write ctxviz's bytecode cache now, as an installed package has it. A child process started
    with PYTHONDONTWRITEBYTECODE set (some shells and CI set it) otherwise compiles every module
    it imports whose cache is missing or stale, every run, inside the time measured: a loader's
    module is imported when detection first reaches it, so the 8 MB Gemini CLI load counted 5-6 ms
    of compiling its loader (1.99x against 1.82x `json.loads` with the cache written)."""
    compileall.compile_dir(os.path.join(ROOT, "ctxviz"), quiet=1)


compile_package()  # (every bench imports this module before it starts a child)


@dataclass
class Row:
    """One line of the summary table: a measured ratio (median [min-max] over rounds) against its goal.

    `note` instead of ratios: a row that was not measured, saying why (the table shows the note, and
    the goal as not met). `parts`: one line for several measurements of one case (a replay's cost
    exponent and its ratio to one plan; a re-plan at three budgets), shown side by side, met when
    every part is."""

    name: str
    ratios: list[float]
    goal: str
    met: bool
    detail: str = ""
    unit: str = "x"
    note: str = ""
    parts: tuple[Row, ...] = ()
    group: str = ""  # the summary's section (bench/run.py prints one table per group)

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)

    def measured(self) -> str:
        if self.parts:
            return " / ".join(p.measured() for p in self.parts)
        if self.note or not self.ratios:
            return self.note or "not measured"
        lo, hi = min(self.ratios), max(self.ratios)
        if self.unit == "n^":  # a cost exponent: n^1.05 [1.01-1.09]
            return f"n^{self.median:.2f} [{lo:.2f}-{hi:.2f}]"
        fmt = (lambda v: f"{v:.1f}") if self.unit == "%" else (lambda v: f"{v:.2f}")
        return f"{fmt(self.median)}{self.unit} [{fmt(lo)}-{fmt(hi)}]"

    def result(self) -> str:
        """'met', 'not met', or per part ('met / not met')."""
        if self.parts:
            return " / ".join(p.result() for p in self.parts)
        return "met" if self.met else "not met"


def compound(name: str, parts: list[Row], detail: str = "", group: str = "") -> Row:
    """One row for several measurements of one case: its goal and result read part by part."""
    return Row(name, [], " / ".join(p.goal for p in parts), all(p.met for p in parts), detail=detail, parts=tuple(parts), group=group)


def within(goal: float, rounds: list[float]) -> bool:
    """A goal 'at most `goal`' is met when the median round meets it."""
    return statistics.median(rounds) <= goal


def interleaved(baseline: Callable[[], float], candidate: Callable[[], float], rounds: int = 3, warmup: bool = False) -> tuple[list[float], list[float], list[float]]:
    """Run baseline and candidate alternately (the order flips every round); each returns a measurement
    (seconds, bytes...). Returns (baseline values, candidate values, candidate/baseline per round)."""
    if warmup:
        baseline()
        candidate()
    base, cand, ratios = [], [], []
    for r in range(rounds):
        if r % 2 == 0:
            b = baseline()
            c = candidate()
        else:
            c = candidate()
            b = baseline()
        base.append(b)
        cand.append(c)
        ratios.append(c / b)
    return base, cand, ratios


def _last_level_cache_bytes() -> int:
    """The largest CPU cache this machine reports (Linux sysfs), 32 MiB when it says nothing."""
    largest = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    for index in os.listdir(base) if os.path.isdir(base) else ():
        try:
            with open(os.path.join(base, index, "size")) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            largest = max(largest, int(digits) * scale)
    return largest or 32 << 20


_EVICTION = bytearray(2 * _last_level_cache_bytes())
_LINE = 64


def evict_cpu_caches() -> None:
    """Write one byte in every cache line of a buffer twice the size of the largest CPU cache, so
    the next call timed finds none of the previous call's data in the caches.

    Why: a benchmark that repeats one call back to back times every call after the first with its
    data already in the CPU caches, a state the user's one call never has. How much that flatters a
    call depends on how much of its data fits: nearly all of a 1,000-message replay, a smaller part
    at 4,000. Measured on a 2-core EPYC (32 MiB L3), repeating codex-compaction's replay back to
    back fitted n^1.11 over 1,000-4,000 messages, interleaving the sizes n^1.01 and evicting before
    every call n^0.98, with instruction counts (callgrind) n^1.00: the warm repetition put the
    caches' size into the fitted exponent."""
    _EVICTION[::_LINE] = bytes([_EVICTION[0] ^ 1]) * (len(_EVICTION) // _LINE)


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def child(code: str, *args: str, env: dict[str, str] | None = None) -> dict:
    """Run `code` in a fresh interpreter started from here (this parent stays small: its memory is not
    the child's) and return the JSON object it prints on its last line."""
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(f"child failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def wall(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Wall-clock seconds of one process, start to exit."""
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env, cwd=ROOT)
    return time.perf_counter() - t


def spread(values: list[float], scale: float = 1.0, fmt: str = "{:.2f}") -> str:
    vals = [v * scale for v in values]
    return f"{fmt.format(statistics.median(vals))} [{fmt.format(min(vals))}-{fmt.format(max(vals))}]"


def in_forked_child(fn: Callable[[], object]) -> tuple[bool, object]:
    """`fn()` in a child forked from this process, which keeps what the parent built and nothing
    the child's own work leaves: (True, its value) or (False, the last line of the child's error)."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_run_in_child, args=(fn, send))
    child.start()
    send.close()
    try:
        ok, value = receive.recv()
    except EOFError:
        ok, value = False, "the child ended without a result"
    child.join()
    return ok, value


def _run_in_child(fn: Callable[[], object], out: Connection) -> None:
    try:
        out.send((True, fn()))
    except BaseException:  # noqa: BLE001 - the parent says what failed
        out.send((False, traceback.format_exc(limit=3).strip().splitlines()[-1]))
    finally:
        out.close()
