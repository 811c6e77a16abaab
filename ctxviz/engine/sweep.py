"""Sweeps: replay every combination of a policy's settings on every session, and say which to ship.

`ctxviz sweep FILES... --policy P --grid trigger=0.5:0.95:0.05 --grid keep=10,20` runs one
simulation per (session, combination) and reports, per combination over all sessions: overflows,
compactions per 100 turns, retention (mean and worst, when the anchors module is present), input
cost with prompt caching and its cache hit share, tokens sent. It finds the Pareto front of cost
against retention and the cheapest combination that meets the user's floors (`--require
retention>=0.9 --require overflows=0`).

Work is split into independent tasks (one session, one combination), run in parallel processes by
default, or on a Dask distributed cluster (`--scheduler ADDRESS`, the optional `cluster` extra).
Each finished task is appended to a results file as one JSON line, so an interrupted sweep resumes
where it stopped; the tasks are pure, so local and cluster runs give identical results.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import IO, Any

from ..errors import LoadError, ParameterError
from .policies import get_policy
from .policies.base import coerce_value, param_fields

ProgressCallback = Callable[[int, int], None]

#: Metrics a combination gets, with the direction that is better.
METRICS = {
    "overflows": "min",  # turns whose context does not fit, over all sessions
    "compactions_per_100": "min",
    "retention_mean": "max",
    "retention_worst": "max",
    "cost": "min",  # USD of input over all sessions' turns, with prompt caching
    "cache_hit_share": "max",
    "tokens_sent": "min",
}
#: Metrics that are shares (0 to 1), shown as percents: `--require` takes them as 0.4 or 40%.
SHARE_METRICS = frozenset({"retention_mean", "retention_worst", "cache_hit_share"})
#: `--require retention>=0.9` is a floor that must hold for every session: the worst one.
ALIASES = {"retention": "retention_worst", "compactions": "compactions_per_100"}
COMPACTION_KINDS = frozenset({"summary", "consolidation", "compaction", "hard_threshold"})
MAX_COMBINATIONS = 100_000


def parse_grid(policy_name: str, specs: Sequence[str]) -> dict[str, list[Any]]:
    """`name=start:stop:step` (inclusive, exact decimal steps) or `name=v1,v2,...` per parameter."""
    policy = get_policy(policy_name)
    known = {f.name for f in param_fields(policy.params_type)}
    grid: dict[str, list[Any]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip()
        if not sep or not values.strip():
            raise ParameterError(f"--grid {spec}: expected NAME=START:STOP:STEP or NAME=V1,V2,...")
        if name not in known:
            raise ParameterError(f"--grid {spec}: {policy.name} has no parameter {name!r} (it takes: {', '.join(sorted(known))})")
        try:
            if ":" in values:
                grid[name] = [coerce_value(policy.params_type, name, v) for v in _range(spec, values)]
            else:
                grid[name] = [coerce_value(policy.params_type, name, v.strip()) for v in values.split(",") if v.strip()]
        except ParameterError as exc:
            if str(exc).startswith("--grid"):
                raise
            raise ParameterError(f"--grid {spec}: {exc}") from None
        if not grid[name]:
            raise ParameterError(f"--grid {spec}: no values")
    size = math.prod(len(v) for v in grid.values())
    if size > MAX_COMBINATIONS:
        raise ParameterError(f"--grid: {size:,} combinations is more than {MAX_COMBINATIONS:,}; use coarser steps")
    return grid


def _range(spec: str, text: str) -> list[str]:
    parts = text.split(":")
    if len(parts) != 3:
        raise ParameterError(f"--grid {spec}: a range is START:STOP:STEP")
    try:
        start, stop, step = (Decimal(p.strip().replace("_", "")) for p in parts)
    except InvalidOperation:
        raise ParameterError(f"--grid {spec}: START, STOP and STEP must be numbers") from None
    if step <= 0 or stop < start:
        raise ParameterError(f"--grid {spec}: needs STEP > 0 and STOP >= START")
    count = int((stop - start) / step) + 1
    if count > MAX_COMBINATIONS:
        raise ParameterError(f"--grid {spec}: {count:,} values")
    return [str(start + k * step) for k in range(count)]


def combinations(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    names = list(grid)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(grid[n] for n in names))]


@dataclass(frozen=True)
class Task:
    path: str
    policy: str
    params: Mapping[str, Any]  # the sweep's fixed settings and this combination
    cost_model: str = ""
    tokenizer: str | None = None
    #: Reads the session file (the caller's loader, `ctxviz.io.loaders.load_session`): the engine
    #: reads no files itself. A module-level function, so the task still pickles to a worker.
    load: Callable[[str], Any] | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return json.dumps([os.path.abspath(self.path), self.policy, dict(sorted(self.params.items())), self.cost_model, self.tokenizer],
                          sort_keys=True, default=str)


def run_task(task: Task) -> dict[str, Any]:
    """One session under one combination: its simulation's figures. Pure and picklable, so a
    process pool and a Dask cluster run the same code."""
    from .caching import cache_costs
    from .counting import CountStore
    from .simulate import simulate

    if task.load is None:
        raise ValueError("a sweep task needs `load`, the function that reads its session file")
    session = _load_cached(task.path, task.load)
    timeline = simulate(session, task.policy, dict(task.params), task.tokenizer, _STORE.setdefault("store", CountStore()))
    turns = len(timeline.turns)
    cache = cache_costs(timeline, task.cost_model or None)
    doc: dict[str, Any] = {
        "key": task.key,
        "path": task.path,
        "params": dict(task.params),
        "turns": turns,
        "overflows": sum(1 for t in timeline.turns if not t.fits),
        "compactions": sum(1 for e in timeline.events if e.kind in COMPACTION_KINDS),
        "cost": cache.cost,
        "cache_read": cache.cache_read,
        "input_tokens": cache.input_tokens,
        "tokens_sent": sum(t.tokens_sent for t in timeline.turns),
        "model": cache.model.name,
    }
    retention = _retention(timeline)
    if retention is not None:
        doc["retention"] = retention
    return doc


def _retention(timeline: Any) -> float | None:
    """The share of the session's anchors still sent at the last turn (engine/retention_timeline.py), when present."""
    try:
        from . import retention_timeline as retention_module
    except ImportError:
        return None
    score = getattr(retention_module, "timeline_retention_score", None)
    return float(score(timeline)) if score is not None else None


_SESSIONS: dict[str, Any] = {}
_STORE: dict[str, Any] = {}


def _load_cached(path: str, load: Callable[[str], Any]) -> Any:
    """A worker keeps the sessions it loaded: the same file is replayed under every combination."""
    if path not in _SESSIONS:
        if len(_SESSIONS) > 8:
            _SESSIONS.clear()
            _STORE.clear()
        _SESSIONS[path] = load(path)
    return _SESSIONS[path]


def read_results(path: str) -> dict[str, dict[str, Any]]:
    """The tasks an earlier run finished (one JSON line each); a torn last line is ignored."""
    done: dict[str, dict[str, Any]] = {}
    if not path or not os.path.exists(path):
        return done
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                if f.read().strip():  # only the last line may be torn by an interruption
                    raise LoadError(path, "not a sweep results file (a line is not JSON)", line=number) from None
                break
            if not isinstance(doc, dict) or "key" not in doc:
                raise LoadError(path, "not a sweep results file", line=number, field="key")
            done[doc["key"]] = doc
    return done


def run(tasks: Sequence[Task], jobs: int = 0, results_path: str = "", scheduler: str = "",
        progress: ProgressCallback | None = None, open_results: Callable[[str], IO[str]] | None = None) -> list[dict[str, Any]]:
    """Run every task not already in `results_path` (appending each as it finishes), in `jobs`
    processes (0: one per core; 1: in this process) or on the Dask scheduler at `scheduler`.
    `open_results` opens the results file for appending (the CLI's checked writer; by default a
    plain append): the caller vets the path before the first replay."""
    done = read_results(results_path)
    todo = [t for t in tasks if t.key not in done]
    total, finished = len(tasks), len(tasks) - len(todo)
    if progress is not None:
        progress(finished, total)
    opener = open_results or (lambda path: open(path, "a", encoding="utf-8"))  # noqa: SIM115 (closed below)
    sink = opener(results_path) if results_path else None
    try:
        for doc in _execute(todo, jobs, scheduler):
            done[doc["key"]] = doc
            if sink is not None:
                sink.write(json.dumps(doc, sort_keys=True) + "\n")
                sink.flush()
            finished += 1
            if progress is not None:
                progress(finished, total)
    finally:
        if sink is not None:
            sink.close()
    return [done[t.key] for t in tasks]


def _execute(tasks: Sequence[Task], jobs: int, scheduler: str) -> Iterator[dict[str, Any]]:
    if not tasks:
        return
    if scheduler:
        yield from _on_dask(tasks, scheduler)
        return
    workers = jobs or os.cpu_count() or 1
    if workers == 1 or len(tasks) == 1:
        for task in tasks:
            yield run_task(task)
        return
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks))) as pool:
        futures = [pool.submit(run_task, t) for t in tasks]
        for future in as_completed(futures):
            yield future.result()


_SCHEDULER = re.compile(r"^(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+):(?P<port>\d{1,5})/?$")


def check_scheduler_address(address: str) -> str:
    """The address as given when it can name a Dask scheduler (`tcp://HOST:PORT`, `tls://`, `ws://`,
    `wss://`, or `HOST:PORT`), else a one-line ParameterError: said before any session is read,
    not after the connection times out."""
    shown = address if len(address) <= 200 else address[:200] + "…"
    match = _SCHEDULER.match(address.strip())
    if match is None:
        raise ParameterError(f"--scheduler {shown}: not a Dask scheduler address; expected tcp://HOST:PORT (e.g. tcp://127.0.0.1:8786)")
    scheme = match["scheme"] or "tcp"
    if scheme not in ("tcp", "tls", "ws", "wss"):
        raise ParameterError(f"--scheduler {shown}: {scheme}:// is not a scheme a Dask scheduler listens on; "
                             "expected tcp://, tls://, ws:// or wss://")
    if not 0 < int(match["port"]) < 65536:
        raise ParameterError(f"--scheduler {shown}: port {int(match['port'])} is out of range (1-65535)")
    return address.strip()


#: Seconds to wait for a Dask scheduler's handshake. `Client(timeout=...)` bounds the TCP connect,
#: not the handshake: a port that accepts and then says nothing (an HTTP server, the dashboard, a
#: silent socket) held it for minutes.
CONNECT_SECONDS = 15.0


def _connect(client_type: Any, address: str) -> Any:
    """A connected Dask client, or TimeoutError when no scheduler answers within CONNECT_SECONDS."""
    import threading

    outcome: dict[str, Any] = {}

    def attempt() -> None:
        try:
            outcome["client"] = client_type(address, timeout=CONNECT_SECONDS)
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=attempt, name="ctxviz-dask-connect", daemon=True)
    worker.start()
    worker.join(CONNECT_SECONDS + 2)
    if worker.is_alive():
        raise TimeoutError(f"no Dask scheduler answered within {CONNECT_SECONDS:.0f} s: something listens on that port "
                           "(an HTTP server, the dashboard?) but does not speak Dask's protocol")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["client"]


def _on_dask(tasks: Sequence[Task], address: str) -> Iterator[dict[str, Any]]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError:
        raise ParameterError("--scheduler needs Dask distributed: pip install 'ctxviz[cluster]'") from None
    try:
        client = _connect(Client, address)
    except (OSError, TimeoutError) as exc:
        raise ParameterError(f"--scheduler {address}: cannot reach the Dask scheduler ({' '.join(str(exc).split())[:200]})") from None
    except Exception as exc:  # distributed says a malformed address many ways (ValueError, TypeError, ...)
        raise ParameterError(f"--scheduler {address[:200]}: not a Dask scheduler address ({type(exc).__name__}: "
                             f"{' '.join(str(exc).split())[:200]}); expected tcp://HOST:PORT") from None
    try:
        futures = client.map(run_task, list(tasks), pure=False)
        for future in dask_completed(futures):
            yield future.result()
    finally:
        client.close()


@dataclass(frozen=True)
class Row:
    """One combination over every session of the sweep."""

    params: Mapping[str, Any]
    sessions: int
    metrics: Mapping[str, float]
    pareto: bool = False
    meets: bool = True
    failed: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"params": dict(self.params), "sessions": self.sessions, **{k: _round(v) for k, v in self.metrics.items()},
                "pareto": self.pareto, "meets_requirements": self.meets, **({"failed": list(self.failed)} if self.failed else {})}


def _round(value: float) -> float:
    return round(value, 8) if isinstance(value, float) else value


def summarise(results: Iterable[Mapping[str, Any]], requirements: Sequence[Requirement] = ()) -> list[Row]:
    by_combination: dict[str, list[Mapping[str, Any]]] = {}
    params_of: dict[str, Mapping[str, Any]] = {}
    for doc in results:
        key = json.dumps(doc["params"], sort_keys=True, default=str)
        by_combination.setdefault(key, []).append(doc)
        params_of[key] = doc["params"]
    rows: list[Row] = []
    for key, docs in by_combination.items():
        turns = sum(d["turns"] for d in docs)
        inputs = sum(d["input_tokens"] for d in docs)
        metrics: dict[str, float] = {
            "overflows": sum(d["overflows"] for d in docs),
            "compactions_per_100": 100 * sum(d["compactions"] for d in docs) / turns if turns else 0.0,
            "cost": sum(d["cost"] for d in docs),
            "cache_hit_share": sum(d["cache_read"] for d in docs) / inputs if inputs else 0.0,
            "tokens_sent": sum(d["tokens_sent"] for d in docs),
        }
        scores = [d["retention"] for d in docs if "retention" in d]
        if scores:
            metrics["retention_mean"] = sum(scores) / len(scores)
            metrics["retention_worst"] = min(scores)
        failed = tuple(r.text for r in requirements if not r.holds(metrics))
        rows.append(Row(params_of[key], len(docs), metrics, meets=not failed, failed=failed))
    return mark_pareto(rows)


def mark_pareto(rows: list[Row]) -> list[Row]:
    """Mark the combinations no other beats on both cost and retention (or, without retention, on
    cost and overflows): the trade-off worth choosing from."""
    quality = "retention_worst" if rows and all("retention_worst" in r.metrics for r in rows) else "overflows"
    sign = 1 if METRICS[quality] == "max" else -1

    def dominated(r: Row) -> bool:
        return any(o is not r and o.metrics["cost"] <= r.metrics["cost"] and sign * o.metrics[quality] >= sign * r.metrics[quality]
                   and (o.metrics["cost"] < r.metrics["cost"] or sign * o.metrics[quality] > sign * r.metrics[quality]) for o in rows)

    return [Row(r.params, r.sessions, r.metrics, not dominated(r), r.meets, r.failed) for r in rows]


def cheapest(rows: Sequence[Row]) -> Row | None:
    """The cheapest combination that meets every requirement (ties: fewer tokens sent)."""
    meeting = [r for r in rows if r.meets]
    return min(meeting, key=lambda r: (r.metrics["cost"], r.metrics["tokens_sent"])) if meeting else None


_REQUIREMENT = re.compile(r"^\s*([a-z_0-9]+)\s*(>=|<=|==|=|>|<)\s*([-+0-9.eE]+)\s*(%?)\s*$")


@dataclass(frozen=True)
class Requirement:
    text: str
    metric: str
    op: str
    value: float

    def holds(self, metrics: Mapping[str, float]) -> bool:
        if self.metric not in metrics:
            return False
        v = metrics[self.metric]
        return {">=": v >= self.value, "<=": v <= self.value, "==": v == self.value, "=": v == self.value,
                ">": v > self.value, "<": v < self.value}[self.op]


def parse_requirement(text: str) -> Requirement:
    match = _REQUIREMENT.match(text)
    if not match:
        raise ParameterError(f"--require {text}: expected METRIC>=NUMBER (or <=, =, >, <); metrics: {', '.join([*METRICS, *ALIASES])}")
    name, op, number, percent = match.groups()
    metric = ALIASES.get(name, name)
    if metric not in METRICS:
        raise ParameterError(f"--require {text}: unknown metric {name!r}; metrics: {', '.join([*METRICS, *ALIASES])}")
    try:
        value = float(number)
    except ValueError:
        raise ParameterError(f"--require {text}: {number!r} is not a number") from None
    if metric in SHARE_METRICS:
        # The table shows shares as percents: "retention_mean>=40" would silently mean 4,000 %.
        if percent:
            value = float(Decimal(number) / 100)  # exact: 57% is the float 0.57
        if not percent and 1 < value <= 100:
            raise ParameterError(f"--require {text.strip()}: {name} is a share between 0 and 1; "
                                 f"write {_decimal_share(number)} or {number.lstrip('+')}%")
        if not 0 <= value <= 1:
            raise ParameterError(f"--require {text.strip()}: {name} is a share between 0 and 1 (0% to 100%)")
    elif percent:
        raise ParameterError(f"--require {text}: {name} is not a share; write it without %")
    return Requirement(text.strip(), metric, op, value)


def _decimal_share(number: str) -> str:
    """`40` as a share, written exactly: `0.4`."""
    try:
        share = format(Decimal(number.lstrip("+")) / 100, "f")
    except InvalidOperation:
        return number
    return share.rstrip("0").rstrip(".") if "." in share else share
