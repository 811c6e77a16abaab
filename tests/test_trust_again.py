"""Trust, again: no writer destroys its input, no stray output, no internal error.

Every reproduction of the issue is a test here. The writers are found from the CLI's parser (an
option that names a file the command writes is marked by `_output`), so a new output option is
held to the same rules without anyone remembering to add it.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from ctxviz import cli
from ctxviz.cli import main
from ctxviz.engine.checks import PlanOptions, real_count
from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import policy_names
from ctxviz.engine.simulate import simulate
from ctxviz.engine.tokenizers import TiktokenTokenizer, count_openai_chat
from ctxviz.io import source
from ctxviz.io.loaders import load_session
from ctxviz.terminal import LINE_LIMIT, visible

ROOT = Path(__file__).parent.parent
SAMPLES = ROOT / "sample_sessions"
REAL = Path(__file__).parent / "data" / "real"
ESC, BEL, CSI = "\x1b", "\x07", "\x9b"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    return lines[0]


def ctxviz(*argv: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "ctxviz", *argv], env=env, timeout=180, **kwargs)


@pytest.fixture
def session(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_bytes((SAMPLES / "support_chat.yaml").read_bytes())
    return path


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text("policy: missy\nrules:\n  max_tokens: 30000\n")
    return path


# --- every writer, found from the parser --------------------------------------------------------

def output_options() -> list[tuple[str, str]]:
    """(command, option string) for every option the parser marks as naming a file it writes."""
    cli._load()
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    found = []
    for name, command in sub.choices.items():
        for action in command._actions:
            if getattr(action, "writes_file", False):
                found.append((name, max(action.option_strings, key=len)))
    return found


def test_the_parser_marks_every_option_that_writes_a_file():
    """An option whose help says it writes, draws, renders or keeps something in a file is marked;
    the ones the issue names are among them."""
    cli._load()
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    marked = set(output_options())
    for name, command in sub.choices.items():
        for action in command._actions:
            takes_a_path = action.option_strings and action.nargs != 0
            words = (action.help or "").lower()
            someone_else_writes = re.search(r"(agent|tool|provider) writes|written by|being written", words)  # an input: a log its agent writes
            if takes_a_path and not someone_else_writes and any(w in words for w in ("write", "draw", "render", "keep each", "output file", "png")):
                assert (name, max(action.option_strings, key=len)) in marked, f"{name} {action.option_strings} writes a file but is not marked"
    assert {("export", "--output"), ("report", "--output"), ("sweep", "--output"), ("sweep", "--png"), ("sweep", "--results"),
            ("check", "--junit"), ("gui", "--screenshot")} <= marked


def base_argv(command: str, session: Path, rules: Path) -> list[str]:
    """A command line that would run; a command with an output option missing here fails the test."""
    table = {
        "export": ["export", str(session), "--to", "openai"],
        "report": ["report", str(session), "--no-timeline"],
        "sweep": ["sweep", str(session), "--policy", "missy", "--grid", "total=20000,30000", "--jobs", "1"],
        "check": ["check", str(session), "--rules", str(rules)],
        "gui": ["gui", str(session)],
    }
    assert command in table, f"ctxviz {command} has an output option: add it to this table so its writer is tested"
    return table[command]


def _targets(tmp_path: Path, session: Path) -> dict[str, tuple[str, str]]:
    """Paths no writer may write to, and a word of the one-line refusal each gets."""
    link = tmp_path / "link.png"
    link.symlink_to(session)
    hard = tmp_path / "hard.json"
    os.link(session, hard)
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    readonly = tmp_path / "ro.png"
    readonly.write_bytes(b"keep me")
    readonly.chmod(0o444)
    return {"the input": (str(session), "is the input session"), "a symlink to it": (str(link), "is the input session"),
            "a hard link to it": (str(hard), "is the input session"), "a FIFO": (str(fifo), "FIFO"),
            "a directory": (str(folder), "directory"), "a missing folder": (str(tmp_path / "nowhere" / "x.png"), "no such directory"),
            "a read-only file": (str(readonly), "read-only"), "the device /dev/null": ("/dev/null", "character device")}


@pytest.mark.parametrize("command, option", output_options())
def test_no_writer_writes_over_its_input_or_onto_what_is_not_a_file(tmp_path, capsys, session, rules, command, option):
    before = session.read_bytes()
    for what, (target, says) in _targets(tmp_path, session).items():
        readonly_before = Path(target).read_bytes() if what == "a read-only file" else None
        code, out, err = run(capsys, *base_argv(command, session, rules), option, target)
        assert code == 2, (what, err)
        assert says in one_line(err), (what, err)
        assert session.read_bytes() == before, f"{command} {option} onto {what} changed the input"
        if readonly_before is not None:
            assert Path(target).read_bytes() == readonly_before
            assert stat.S_IMODE(os.stat(target).st_mode) == 0o444


def test_a_session_file_inside_an_input_folder_is_never_written(tmp_path, capsys):
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "a.yaml").write_bytes((SAMPLES / "support_chat.yaml").read_bytes())
    for option, target in (("-o", folder / "a.yaml"), ("--png", folder / "a.yaml"), ("-o", folder / "new.json")):
        code, _, err = run(capsys, "sweep", str(folder), "--grid", "total=20000,30000", "--jobs", "1", option, str(target))
        assert code == 2 and ("input" in one_line(err))
    assert (folder / "a.yaml").read_bytes() == (SAMPLES / "support_chat.yaml").read_bytes()
    assert not (folder / "new.json").exists()


def test_the_sweep_png_onto_the_session_is_refused_before_any_replay(tmp_path, capsys, session):
    """The issue's first reproduction: `sweep s.yaml --png s.yaml` exited 0 and left a PNG."""
    before = session.read_bytes()
    code, _, err = run(capsys, "sweep", str(session), "--policy", "missy", "--grid", "total=20000,30000", "--png", str(session))
    assert code == 2 and "is the input session" in one_line(err)
    assert session.read_bytes() == before


@pytest.mark.parametrize("argv, kind", [
    (["export", "{s}", "--to", "openai", "-o", "/dev/stdout"], "json"),
    (["sweep", "{s}", "--grid", "total=20000,30000", "--jobs", "1", "-o", "/dev/stdout"], "csv"),
    (["check", "{s}", "--rules", "{r}", "--junit", "/dev/stdout"], "xml"),
    (["report", "{s}", "--no-timeline", "-o", "/dev/stdout"], "html"),
    (["gui", "{s}", "--screenshot", "/dev/stdout", "--size", "640x480"], "png"),
    (["sweep", "{s}", "--grid", "total=20000,30000", "--jobs", "1", "--png", "/dev/stdout"], "png"),
])
def test_writing_to_dev_stdout_appends_where_the_shell_says(tmp_path, session, rules, argv, kind):
    """`ctxviz export S -o /dev/stdout >> ci.log` keeps what the log had."""
    log = tmp_path / "ci.log"
    log.write_bytes(b"earlier line\n")
    with open(log, "ab") as out:
        done = ctxviz(*(a.format(s=session, r=rules) for a in argv), stdout=out, stderr=subprocess.PIPE)
    assert done.returncode in (0, 1), done.stderr  # check exits 1 when a rule breaks; the JUnit is written either way
    data = log.read_bytes()
    assert data.startswith(b"earlier line\n"), data[:80]
    rest = data[len(b"earlier line\n"):]
    magic = {"json": b"{", "csv": b"total,", "xml": b"<?xml", "html": b"<!DOCTYPE html", "png": b"\x89PNG"}[kind]
    assert magic in rest[:200], rest[:200]


def test_the_results_file_is_a_file(tmp_path, capsys, session):
    code, _, err = run(capsys, "sweep", str(session), "--grid", "total=20000,30000", "--results", "/dev/stdout")
    assert code == 2 and "must be a file" in one_line(err)


def test_the_screenshot_onto_a_fifo_is_refused_at_once(tmp_path, session):
    """It used to block on a FIFO with no reader, deaf to SIGTERM and SIGINT."""
    fifo = tmp_path / "shot.png"
    os.mkfifo(fifo)
    done = ctxviz("gui", str(session), "--screenshot", str(fifo), capture_output=True, text=True)
    assert done.returncode == 2 and "FIFO" in one_line(done.stderr)


def test_the_app_never_exports_or_saves_a_preset_over_the_open_session(qtbot, tmp_path, session):
    from PySide6.QtCore import QSettings

    from ctxviz.gui.main_window import MainWindow

    window = MainWindow(settings=QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    try:
        with qtbot.waitSignal(window.vm.planReady, timeout=30000):
            window.open_path(str(session))
        window.vm.wait()
        before = session.read_bytes()
        link = tmp_path / "context.json"
        link.symlink_to(session)
        for target in (session, link):
            window.write_export(str(target), "openai")
            assert "is the input session" in window.status_label.text()
            window.write_preset(str(target))
            assert "is the input session" in window.status_label.text()
        assert session.read_bytes() == before
        out = tmp_path / "ok.json"
        window.write_export(str(out), "openai")
        assert json.loads(out.read_text())["messages"]
    finally:
        window.vm.shutdown()


# --- terminal and plugin output -----------------------------------------------------------------

@pytest.fixture
def escapes(tmp_path: Path) -> Path:
    path = tmp_path / "esc.yaml"
    text = f"hi {ESC}]0;PWNED{BEL} there {ESC}[2J wiped {CSI}31m red /tmp/project/a.py"
    path.write_text(yaml.safe_dump({"messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"},
                                                 {"role": "user", "content": "Never touch /tmp/project/a.py " + ESC + "[2J"},
                                                 {"role": "assistant", "content": "fine"}]}))
    return path


@pytest.mark.parametrize("argv", [
    ["plan", "{s}", "--policy", "langchain-trim", "--set", "max_tokens=5"],
    ["where", "{s}", "a.py"],
    ["compare", "{s}", "--policy", "missy", "--set-a", "total=30000", "--set-b", "total=5000"],
    ["simulate", "{s}", "--policy", "langchain-trim", "--set", "max_tokens=5"],
    ["why", "{s}", "--message", "0", "--policy", "langchain-trim", "--set", "max_tokens=5"],
    ["info", "{s}"],
])
def test_escape_sequences_in_session_text_never_reach_the_terminal(capsys, escapes, argv):
    code, out, err = run(capsys, *(a.format(s=escapes) for a in argv))
    assert code in (0, 1), err
    for raw in (ESC, BEL, CSI):
        assert raw not in out and raw not in err
    if argv[0] in ("plan", "simulate"):  # these quote the message's text: shown, spelled out
        assert "\\x1b" in out


def test_json_output_keeps_the_text_exact(capsys, escapes):
    code, out, _ = run(capsys, "plan", str(escapes), "--json")
    assert code == 0
    doc = json.loads(out)
    assert any(ESC in str(m.get("content")) for m in doc["context"])


def test_visible_spells_out_every_control_but_newline_and_tab():
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible("\x1b[2J\x07\x9b\x7f\r") == "\\x1b[2J\\x07\\x9b\\x7f\\x0d"


PLUGIN = textwrap.dedent('''
    from dataclasses import dataclass
    from ctxviz.api import Policy, plan_from_decisions

    print("loading the plugin")

    @dataclass(frozen=True)
    class Settings:
        max_tokens: int = 4000

    def measure(message, tokenizer):
        print("measuring", message.index)
        return {measure_result}

    def plan(session, params, counts):
        print("planning")
        {plan_body}

    NAME = Policy(name="chatty", title="Chatty", params_type=Settings, measure_name="chatty", measure=measure,
                  default_tokenizer="o200k_base", plan=plan)
''')
GOOD_PLAN = ('return plan_from_decisions("chatty", session, params, counts, ["kept"] * len(session.messages), '
             '["kept"] * len(session.messages), params.max_tokens)')


def write_plugin(tmp_path: Path, measure_result: str = "tokenizer.count(message.text or '')", plan_body: str = GOOD_PLAN) -> str:
    path = tmp_path / f"chatty_{abs(hash((measure_result, plan_body)))}.py"
    path.write_text(PLUGIN.format(measure_result=measure_result, plan_body=plan_body))
    return f"{path}:NAME"


@pytest.mark.parametrize("argv, parse", [
    (["plan", "{s}", "--policy", "{p}", "--json"], json.loads),
    (["export", "{s}", "--policy", "{p}", "--to", "openai", "-o", "-"], json.loads),
    (["simulate", "{s}", "--policy", "{p}", "--json"], json.loads),
    (["sweep", "{s}", "--policy", "{p}", "--grid", "max_tokens=2000,4000", "--jobs", "1", "--json"], json.loads),
])
def test_a_plugins_prints_never_corrupt_machine_output(tmp_path, capsys, session, argv, parse):
    spec = write_plugin(tmp_path)
    code, out, err = run(capsys, *(a.format(s=session, p=spec) for a in argv))
    assert code in (0, 1), err
    parse(out)
    assert "loading the plugin" not in out and "planning" not in out and "measuring" not in out


@pytest.mark.parametrize("measure_result, plan_body, says", [
    ("tokenizer.count(message.text or '')", "return None", "returned None, not a ctxviz Plan"),
    ("tokenizer.count(message.text or '')", "raise SystemExit(3)", "raised SystemExit"),
    ("-22540", GOOD_PLAN, "a count is 0 or more"),
    ("float('nan')", GOOD_PLAN, "a count is a whole number"),
    ("'12'", GOOD_PLAN, "not a token count"),
])
def test_a_plugins_bad_return_or_exit_is_one_line_naming_it(tmp_path, capsys, session, measure_result, plan_body, says):
    spec = write_plugin(tmp_path, measure_result, plan_body)
    code, out, err = run(capsys, "plan", str(session), "--policy", spec)
    chatter = ("loading the plugin", "measuring ", "planning")  # the plugin's own prints, sent to stderr
    line = one_line("\n".join(x for x in err.splitlines() if not x.startswith(chatter)))
    assert code == 2 and says in line and "chatty" in line, line
    assert out == ""


# --- internal errors left by the fuzzing ----------------------------------------------------------

@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e999", "-5"])
def test_swe_agent_statistics_that_are_not_figures_are_skipped(tmp_path, capsys, value):
    doc = json.loads((REAL / "swe_agent" / "swe-agent__test-repo-i1.traj").read_text())
    doc["info"]["model_stats"] = {"tokens_sent": "@", "tokens_received": 7, "api_calls": 2}
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(doc).replace('"@"', value))
    for command in ("plan", "info"):
        code, out, err = run(capsys, command, str(path))
        assert code == 0, err
    session = load_session(path)
    note = next(n for n in session.notes if n.startswith("info.model_stats"))
    assert "7 received" in note and "tokens sent" not in note


@pytest.mark.parametrize("policy", policy_names(plugins=False))
def test_pins_with_pair_safety_plan_under_every_policy(policy):
    session = load_session(SAMPLES / "coding_agent.yaml")
    plan = plan_session(session, policy, None, options=PlanOptions(pair_safe=True, pins=("role:tool",)))
    tool_results = [m.index for m in session.messages if m.role == "tool"]
    sent = {m.index for m in plan.messages if m.sent}
    # a pinned tool result is sent unless pair safety had to drop it with its unsent call
    assert all(i in sent or "pair-safe" in plan.messages[i].reason for i in tool_results)


def test_simulate_honours_pins_as_plan_does(capsys):
    sample = str(SAMPLES / "support_chat.yaml")
    code, out, _ = run(capsys, "plan", sample, "--pin", "#1", "--json")
    planned = json.loads(out)["totals"]["used"]
    code, out, _ = run(capsys, "simulate", sample, "--pin", "#1", "--json")
    doc = json.loads(out)
    assert doc["turns"][-1]["tokens_sent"] == planned == doc["versus_plan"]["plan_used"]
    code, out, _ = run(capsys, "plan", sample, "--json")
    assert json.loads(out)["totals"]["used"] != planned  # the pin changes what is sent


@pytest.mark.parametrize("policy", ["mnesis", "autogen-buffered", "autogen-head-and-tail", "autogen-token-limited"])
def test_the_real_count_counts_messages_as_the_policy_sends_them(policy):
    """mnesis and AutoGen rewrite kept messages (images become text): the real count is of what is sent."""
    session = load_session(SAMPLES / "multimodal_review.yaml")
    store = CountStore()
    plan = plan_session(session, policy, None, store=store)
    assert real_count(plan, session, "gpt-4o", store).tokens == counted_afresh(plan, session)


def counted_afresh(plan, session) -> int:
    """The context as sent, every item counted on its own with o200k (no cached per-message count)."""
    tokenizer = TiktokenTokenizer("o200k_base")
    total = 3 + sum(count_openai_chat([item], model="gpt-4o", tokenizer=tokenizer) - 3 for item in plan.context)
    if session.tools:
        total += tokenizer.count(json.dumps([t.to_openai() for t in session.tools]))
    return total + (plan.reported.unseen if plan.reported is not None else 0)


def test_the_real_count_still_uses_the_cached_count_for_unchanged_messages():
    session = load_session(SAMPLES / "support_chat.yaml")
    store = CountStore()
    plan = plan_session(session, "missy", None, store=store)
    assert real_count(plan, session, "gpt-4o", store).tokens == counted_afresh(plan, session)


@pytest.mark.parametrize("address", ["http://localhost:8786", "localhost:99999", "tcp://localhost:-1", "inproc://x", "ucx://localhost:1",
                                     "tcp://", "::::", "tcp://[::1", "%%%", "tcp://localhost:abc"])
def test_bad_scheduler_addresses_are_one_line_before_any_work(capsys, session, address):
    code, _, err = run(capsys, "sweep", str(session), "--grid", "total=20000,30000", "--scheduler", address)
    assert code == 2
    assert "--scheduler" in one_line(err)


# --- slow inputs and messages -----------------------------------------------------------------------

def test_blank_lines_are_not_handed_to_the_json_parser(tmp_path, monkeypatch):
    """3,000,000 blank lines took 56 s: each was a failed json.loads. bench/bench_slow_inputs.py times it."""
    path = tmp_path / "blank.jsonl"
    path.write_text("\n" * 2_000_000 + json.dumps({"role": "user", "content": "hi"}) + "\n" + "   \n" * 1000)
    calls = []
    real_loads, real_scan = json.loads, source._SCAN_JSON
    # The loader parses a line with json.loads or, on its hot path, with the json module's scanner
    # straight: every call to either is a line handed to the parser.
    monkeypatch.setattr(json, "loads", lambda text, *a, **k: calls.append(1) or real_loads(text, *a, **k))
    monkeypatch.setattr(source, "_SCAN_JSON", lambda text, at: calls.append(1) or real_scan(text, at))
    records = source.read_source(str(path)).jsonl_records
    assert [r for _, r in records] == [{"role": "user", "content": "hi"}] and records[0][0] == 2_000_001
    assert len(calls) == 1


def test_a_file_of_blank_lines_is_empty_once_not_per_loader(tmp_path, capsys, monkeypatch):
    path = tmp_path / "blank.jsonl"
    path.write_text("\n" * 200_000)
    code, _, err = run(capsys, "plan", str(path))
    assert code == 2 and "the file is empty" in one_line(err)


def nested(depth: int) -> str:
    return "messages:\n  - role: user\n    content: hi\n    extra: " + "[" * depth + "]" * depth + "\n"


def test_yaml_nested_past_the_c_parsers_limit_is_refused_without_the_slow_parser(tmp_path, capsys, monkeypatch):
    """Over 1,000 levels went to the pure-Python composer, 4-5x slower, only to fail at its recursion limit."""
    deep, fine = tmp_path / "deep.yaml", tmp_path / "fine.yaml"
    deep.write_text(nested(1001))
    fine.write_text(nested(999))
    composed_in_python = []
    monkeypatch.setattr(yaml.SafeLoader, "get_single_node", lambda self: composed_in_python.append(1))
    code, _, err = run(capsys, "plan", str(deep))
    assert code == 2 and "nested too deeply" in one_line(err)
    code, _, err = run(capsys, "plan", str(fine))
    assert code == 0, err
    assert not composed_in_python


def test_the_stdin_limit_message_reads_right(monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * 2000)))
    with pytest.raises(Exception) as caught:
        source.read_source("-", max_bytes=1000)
    assert "standard input is over the 0 MB limit" in str(caught.value) or "standard input is over the" in str(caught.value)
    assert "is," not in str(caught.value)


def test_an_error_quotes_a_long_value_cut(tmp_path, capsys):
    path = tmp_path / "long.json"
    path.write_text(json.dumps({"messages": [{"role": "x" * 400_000, "content": "hi"}]}))
    code, _, err = run(capsys, "plan", str(path))
    line = one_line(err)
    assert code == 2 and len(line) < LINE_LIMIT and "400,000 characters" in line


def test_simulate_with_pins_matches_the_reference_replay():
    session = load_session(SAMPLES / "support_chat.yaml")
    options = PlanOptions(pins=("#1",))
    timeline = simulate(session, "missy", None, options=options)
    assert timeline.plan_at(len(timeline.turns) - 1).totals.used == timeline.turns[-1].tokens_sent
