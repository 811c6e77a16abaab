"""Sweeps: every combination on every session, the trade-off, the cheapest setting meeting the floors,
resumable, and the same on a Dask cluster as locally."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine import sweep
from ctxviz.engine.session import Message, Session, TextPart, default_category
from ctxviz.errors import ParameterError
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = [str(ROOT / "sample_sessions" / n) for n in ("support_chat.yaml", "coding_agent.yaml")]


def test_grids_are_exact_and_validated() -> None:
    grid = sweep.parse_grid("missy-consolidator", ["threshold_pct=0.5:0.95:0.05", "max_tokens=1000,2000"])
    assert grid["threshold_pct"] == [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]  # no 0.6000000000000001
    assert len(sweep.combinations(grid)) == 20
    for bad, message in (("nope=1,2", "has no parameter 'nope'"), ("max_tokens=5:1:1", "STOP >= START"), ("max_tokens", "expected NAME="),
                         ("max_tokens=a:b:c", "must be numbers"), ("threshold_pct=0:1:0.0000001", "values")):
        with pytest.raises(ParameterError, match=message):
            sweep.parse_grid("missy-consolidator", [bad])
    with pytest.raises(ParameterError, match="unknown metric 'speed'"):
        sweep.parse_requirement("speed>=1")
    assert sweep.parse_requirement("retention>=0.9").metric == "retention_worst"


def chat(n: int) -> Session:
    messages = [Message(id=f"m{i}", index=i, role=r, parts=(TextPart(f"{i:03d} " + "x" * 96),), category=default_category(r))
                for i, r in enumerate(("user", "assistant") * (n // 2))]
    return Session(messages=tuple(messages), source="<hand>", format="test", model="gpt-4o")


def test_the_summary_counts_overflows_and_marks_the_front(tmp_path: Path) -> None:
    # A session of 40 messages of 25 missy tokens each (100 characters / 4): missy keeps the fresh tail
    # of 16 (400 tokens) whatever the budget, so a history budget under 400 overflows at every turn
    # from the 16th on, and anything above never does.
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"format": "ctxviz", "model": "gpt-4o",
                                "messages": [{"role": m.role, "content": m.text} for m in chat(40).messages]}))
    grid = sweep.parse_grid("missy", ["total=4400,4600,8000"])
    tasks = [sweep.Task(str(path), "missy", {"system_reserve": 0, "tool_definitions_reserve": 0, **c}, load=load_session) for c in sweep.combinations(grid)]
    rows = sweep.summarise(sweep.run(tasks, jobs=1), [sweep.parse_requirement("overflows=0")])
    by_total = {r.params["total"]: r for r in rows}
    assert by_total[8000].metrics["overflows"] == 0
    assert all(r.metrics["compactions_per_100"] == 0 for r in rows)
    assert sweep.cheapest(rows) is not None and sweep.cheapest(rows).metrics["overflows"] == 0
    # the cheapest row meeting the floor has no cheaper row meeting it
    best = sweep.cheapest(rows)
    assert all(r.metrics["cost"] >= best.metrics["cost"] for r in rows if r.meets)
    front = [r for r in rows if r.pareto]
    assert front and all(not any(o.metrics["cost"] <= r.metrics["cost"] and o.metrics["overflows"] < r.metrics["overflows"] for o in rows) for r in front)


def test_an_interrupted_sweep_resumes_without_replaying_what_it_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results.jsonl"
    grid = sweep.parse_grid("missy", ["fresh_tail_count=4,8,12"])
    tasks = [sweep.Task(SAMPLES[0], "missy", c, load=load_session) for c in sweep.combinations(grid)]
    first = sweep.run(tasks[:2], jobs=1, results_path=str(results))
    with results.open("a") as f:
        f.write('{"key": "torn')  # an interruption mid-line
    ran: list[sweep.Task] = []
    real = sweep.run_task
    monkeypatch.setattr(sweep, "run_task", lambda t: ran.append(t) or real(t))
    every = sweep.run(tasks, jobs=1, results_path=str(results))
    assert ran == [tasks[2]]
    assert every[:2] == first and len(every) == 3


def test_the_cli_writes_csv_and_names_the_cheapest_setting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sweep.csv"
    code = main(["sweep", *SAMPLES, "--policy", "missy", "--grid", "total=10000:20000:5000", "--require", "overflows=0", "--jobs", "2", "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    # missy's fresh tail of 16 overflows 15,000 tokens at some turns of the coding session; 20,000 never
    assert "cheapest that meets overflows=0: total=20000" in text
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [r["total"] for r in rows] == ["10000", "15000", "20000"]
    assert int(rows[0]["overflows"]) > int(rows[1]["overflows"]) > 0 and rows[2]["overflows"] == "0"
    assert [r["meets_requirements"] for r in rows] == ["False", "False", "True"]
    code = main(["sweep", *SAMPLES, "--policy", "missy", "--grid", "total=10000", "--require", "overflows=0", "--jobs", "1"])
    assert code == 1 and "no combination meets overflows=0" in capsys.readouterr().out


def test_a_dask_cluster_gives_the_local_results() -> None:
    distributed = pytest.importorskip("distributed")
    grid = sweep.parse_grid("missy", ["total=12000,20000"])
    tasks = [sweep.Task(SAMPLES[0], "missy", c, load=load_session) for c in sweep.combinations(grid)]
    local = sweep.run(tasks, jobs=1)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        remote = sweep.run(tasks, scheduler=cluster.scheduler_address)
    assert remote == local


# --- a real Dask scheduler and worker, started by the test ------------------------------------------

def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def dask_cluster(tmp_path):
    """`dask scheduler` and one `dask worker` as separate processes, the worker in another folder
    than the CLI's (as on a cluster), on loopback only."""
    import shutil
    import subprocess
    import time

    dask = shutil.which("dask")
    if dask is None:
        pytest.skip("the dask command is not installed")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    elsewhere = tmp_path / "worker-home"
    elsewhere.mkdir()
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=elsewhere)]
    time.sleep(1.0)
    procs.append(subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=elsewhere))
    try:
        from distributed import Client

        deadline = time.monotonic() + 60
        while True:
            try:
                with Client(address, timeout=5) as client:
                    client.wait_for_workers(1, timeout=30)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield address
    finally:
        # The worker's graceful shutdown waits seconds for a scheduler that is gone: nothing of
        # the test depends on it, so it gets two seconds and is then killed.
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)


@pytest.mark.slow
def test_sweep_on_a_real_scheduler_resolves_relative_paths(tmp_path, dask_cluster, monkeypatch, capsys):
    """Relative session paths were resolved on the workers, so every task failed with 'no such file'."""
    from ctxviz.cli import main

    work = tmp_path / "here"
    work.mkdir()
    (work / "s.yaml").write_bytes((Path(__file__).parent.parent / "sample_sessions" / "support_chat.yaml").read_bytes())
    monkeypatch.chdir(work)
    code = main(["sweep", "s.yaml", "--grid", "total=20000,30000", "--scheduler", dask_cluster, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    local = main(["sweep", "s.yaml", "--grid", "total=20000,30000", "--jobs", "1", "--json"])
    out_local, _ = capsys.readouterr()
    assert local == 0
    assert json.loads(out)["rows"] == json.loads(out_local)["rows"]


def test_a_port_that_does_not_speak_dask_is_one_line_in_bounded_time(tmp_path, monkeypatch, capsys):
    """An HTTP server on the port held the sweep for minutes with no output."""
    import socket
    import threading
    import time

    from ctxviz.cli import main
    from ctxviz.engine import sweep as sweep_module

    monkeypatch.setattr(sweep_module, "CONNECT_SECONDS", 2.0)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # accept and say nothing, as a silent port does
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    session = tmp_path / "s.yaml"
    session.write_bytes((Path(__file__).parent.parent / "sample_sessions" / "support_chat.yaml").read_bytes())
    try:
        started = time.monotonic()
        code = main(["sweep", str(session), "--grid", "total=20000,30000", "--scheduler", f"tcp://127.0.0.1:{server.getsockname()[1]}"])
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        thread.join()
        for c in accepted:
            c.close()
        server.close()
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--scheduler" in err
    assert elapsed < 60  # bounded (it hung past 90 s); the bound itself is CONNECT_SECONDS
