"""Reading never waits forever and writing never destroys: what a user's files and system rely on.

Each test here reproduces a way ctxviz once hung, crashed, lost data or overwrote the wrong file.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from ctxviz.cli import main
from ctxviz.engine.planner import plan_session
from ctxviz.errors import CtxvizError, LoadError
from ctxviz.io import output, source
from ctxviz.io.base import locate_line
from ctxviz.io.exporters import anthropic_messages, export
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).parent.parent
SAMPLES = sorted(p for p in (ROOT / "sample_sessions").iterdir() if p.suffix in (".yaml", ".json", ".jsonl", ".traj"))
NATIVE = str(Path(__file__).parent / "data" / "native_small.yaml")
CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def ctxviz(*argv, stdin=None, env=None, **kwargs):
    return subprocess.run([sys.executable, "-m", "ctxviz", *argv], capture_output=True, text=True, input=stdin,
                          env={**os.environ, **(env or {})}, timeout=120, **kwargs)


# --- never hang --------------------------------------------------------------------------------

def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path, capsys):
    fifo = tmp_path / "session.json"
    os.mkfifo(fifo)
    with pytest.raises(LoadError, match="is a FIFO"):
        load_session(fifo)
    code, _, err = run(capsys, "plan", str(fifo))
    assert code == 2 and "FIFO" in one_line(err)


@pytest.mark.parametrize("path, what", [("/dev/zero", "character device"), ("/dev/null", "character device"), ("/", "directory")])
def test_devices_and_directories_are_refused(path, what):
    with pytest.raises(LoadError, match=what):
        load_session(path)


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        with pytest.raises(LoadError, match="socket"):
            load_session(path)
    finally:
        server.close()


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_file_that_grows_while_it_is_read_still_ends(tmp_path, suffix):
    """A log an agent is still writing: read up to the size it had when opened."""
    path = tmp_path / f"live{suffix}"
    line = json.dumps({"role": "user", "content": "x" * 200}) + "\n"
    path.write_text(line * 6000)  # over 1 MB: the streamed path for .jsonl
    stop = threading.Event()

    def grow():
        with open(path, "a") as handle:
            while not stop.is_set():
                handle.write(line * 50)
                handle.flush()

    writer = threading.Thread(target=grow, daemon=True)
    writer.start()
    try:
        time.sleep(0.05)
        session = load_session(path, "openai") if suffix == ".jsonl" else None
        if session is not None:
            assert len(session.messages) >= 6000
        else:  # a .json that grew mid-record may be cut: then one line, never a wait
            try:
                load_session(path)
            except LoadError as exc:
                assert "\n" not in str(exc)
    finally:
        stop.set()
        writer.join()


def test_standard_input_is_read_with_plan_dash(monkeypatch, capsys):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(CHAT).encode())))
    code, out, err = run(capsys, "plan", "-", "--json")
    assert code == 0, err
    assert [m["role"] for m in json.loads(out)["messages"]] == ["user", "assistant"]


def test_standard_input_keeps_the_size_limit():
    big = json.dumps([{"role": "user", "content": "x" * 1000}] * 2500)  # 2.5 MB
    result = ctxviz("plan", "-", stdin=big, env={"CTXVIZ_MAX_FILE_MB": "1"})
    assert result.returncode == 2
    assert "over the 1 MB limit" in one_line(result.stderr)


# --- never clobber -----------------------------------------------------------------------------

@pytest.fixture
def session_file(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(CHAT))
    return path


def test_export_refuses_devices_fifos_and_directories(tmp_path, session_file, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in ("/dev/full", "/dev/null", str(fifo), str(tmp_path)):
        before = os.stat(target)
        code, _, err = run(capsys, "export", str(session_file), "--to", "openai", "-o", target)
        assert code == 2 and "ctxviz writes only to a regular file or a new path" in one_line(err)
        after = os.stat(target)
        assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino


def test_report_refuses_a_device_before_rendering(capsys, session_file):
    code, _, err = run(capsys, "report", str(session_file), "-o", "/dev/full")
    assert code == 2 and "character device" in one_line(err)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_symlink_to_a_device_is_refused_and_a_symlink_to_a_file_is_followed(tmp_path, session_file, capsys):
    to_device = tmp_path / "dev"
    to_device.symlink_to("/dev/null")
    code, _, err = run(capsys, "export", str(session_file), "--to", "openai", "-o", str(to_device))
    assert code == 2 and "the link points at /dev/null" in one_line(err)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)

    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    code, _, err = run(capsys, "export", str(session_file), "--to", "openai", "-o", str(link))
    assert code == 0, err
    assert link.is_symlink() and json.loads(real.read_text())["messages"][-2]["content"] == "hi"


@pytest.mark.parametrize("command", [["export", "--to", "openai"], ["export", "--to", "markdown"], ["report"]])
def test_the_input_session_is_never_overwritten(tmp_path, session_file, capsys, command):
    before = session_file.read_bytes()
    hard = tmp_path / "hard.json"
    os.link(session_file, hard)
    for target in (session_file, hard):
        code, _, err = run(capsys, command[0], str(session_file), *command[1:], "-o", str(target))
        assert code == 2 and "is the input session" in one_line(err)
    assert session_file.read_bytes() == before


def test_export_to_dash_is_standard_output(session_file, capsys):
    code, out, err = run(capsys, "export", str(session_file), "--to", "jsonl", "-o", "-")
    assert code == 0
    # (no empty system message first: the session records no system prompt, and the export says so)
    assert [json.loads(line)["content"] for line in out.splitlines()] == ["hi", "hello"]
    assert "wrote standard output: 2 messages (jsonl)" in err
    assert "note: the session records no system prompt; the request has no system message" in err


def test_export_keeps_the_replaced_files_permissions(tmp_path, session_file, capsys):
    target = tmp_path / "out.json"
    target.write_text("old")
    target.chmod(0o640)
    assert run(capsys, "export", str(session_file), "--to", "openai", "-o", str(target))[0] == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


KILL_MID_WRITE = """
import os, signal, sys
from ctxviz.io import output
real_write = os.write
def write(fd, data):
    real_write(fd, bytes(data[:10]))
    os.kill(os.getpid(), signal.SIG{sig})
os.write = write
if {named}:
    def no_unnamed(*args):
        raise output._NoUnnamedFiles
    output._write_unnamed = no_unnamed
output.write_atomic(sys.argv[1], "new content " * 1000)
"""


def default_sigint() -> None:
    """In a child before it starts: SIGINT does what it does in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig, named", [("KILL", False), ("TERM", True), ("INT", True)])
def test_an_export_killed_mid_write_leaves_the_target_as_it_was(tmp_path, sig, named):
    target = tmp_path / "out.json"
    target.write_text("old content")
    # TERM and INT unwind (the CLI turns SIGTERM into an exit) and remove the named temporary
    # file; KILL cannot be caught, so only an unnamed (O_TMPFILE) file leaves nothing behind.
    code = KILL_MID_WRITE.format(sig=sig, named=named)
    if sig == "TERM":
        code = "import signal, sys\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(143))\n" + code
    # The child gets Ctrl+C's default action, as in a terminal, whatever this run inherited (a shell's
    # background job ignores SIGINT, and an ignored SIGINT passes to every child).
    result = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, timeout=60,
                            preexec_fn=default_sigint)
    assert result.returncode != 0
    assert target.read_text() == "old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_an_unwritable_folder_is_one_line(tmp_path, session_file, capsys):
    code, _, err = run(capsys, "export", str(session_file), "--to", "openai", "-o", str(tmp_path / "missing" / "x.json"))
    assert code == 2 and "no such directory" in one_line(err)


def test_a_full_or_closed_standard_output_is_one_line():
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "ctxviz", "plan", NATIVE], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert result.returncode == 2 and "cannot write to standard output (No space left on device)" in one_line(result.stderr)
    result = subprocess.run([sys.executable, "-m", "ctxviz", "plan", NATIVE], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, timeout=60, preexec_fn=lambda: os.close(1))
    assert result.returncode == 2 and "standard output" in one_line(result.stderr)


def test_a_reader_that_stops_early_is_not_an_error():
    result = subprocess.run(f"{sys.executable} -m ctxviz plan {NATIVE} --json | head -c 10", shell=True, capture_output=True, text=True, timeout=60)
    assert result.stderr == "" and len(result.stdout) == 10


# --- errors that point at the right thing -----------------------------------------------------

def test_a_refused_summariser_endpoint_is_the_endpoints_error(capsys):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    port = closed.getsockname()[1]
    try:
        sample = str(ROOT / "sample_sessions" / "support_chat.yaml")
        code, _, err = run(capsys, "simulate", sample, "--policy", "supyagent", "--summarizer-url", f"http://127.0.0.1:{port}")
    finally:
        closed.close()
    line = one_line(err)
    assert code == 2 and line.startswith(f"--summarizer-url http://127.0.0.1:{port}: cannot reach the endpoint")
    assert "support_chat" not in line


@pytest.mark.parametrize("policy", ["missy-consolidator", "mnesis", "missy", "categories"])
def test_summarizer_url_is_refused_where_the_policy_does_not_use_it(capsys, policy):
    code, _, err = run(capsys, "simulate", NATIVE, "--policy", policy, "--summarizer-url", "http://127.0.0.1:9")
    assert code == 2 and f"--summarizer-url: {policy} does not ask an LLM" in one_line(err)


def test_an_unknown_model_is_unknown_and_close_names_are_offered(capsys):
    code, _, err = run(capsys, "plan", NATIVE, "--model", "gpt-99")
    line = one_line(err)
    assert code == 2 and line.startswith("unknown model 'gpt-99'; did you mean") and "gpt-4" in line
    assert "tokenizer" not in line
    assert run(capsys, "plan", NATIVE, "--model", "claude-sonnet-4-5-20250929")[0] == 0  # dated names resolve


def test_a_forced_format_says_what_it_ignores(capsys):
    sample = str(ROOT / "sample_sessions" / "support_chat.yaml")
    code, out, _ = run(capsys, "plan", sample, "--input-format", "openai", "--json")
    notes = json.loads(out)["notes"]
    assert code == 0
    assert any("although it looks like ctxviz session" in n for n in notes)
    ignored = next(n for n in notes if n.startswith("--input-format openai ignores"))
    assert {"memory", "learnings", "summaries", "system_prompt"} <= set(ignored.split(" ignores ")[1].split(" in ")[0].split(", "))
    code, out, _ = run(capsys, "plan", sample, "--input-format", "openai")
    assert "note: --input-format openai ignores" in out


def test_a_bad_preset_is_blamed_on_the_preset(tmp_path, capsys):
    bad = {"p1.yaml": "policy: nonexistent\n", "p2.yaml": "params:\n  total: 9" + "9" * 5000 + "\n", "p3.yaml": "params:\n  total: -5\n"}
    for name, text in bad.items():
        (tmp_path / name).write_text(text)
        code, _, err = run(capsys, "plan", NATIVE, "--config", str(tmp_path / name))
        assert code == 2 and one_line(err).startswith(str(tmp_path / name)), err
    fifo = tmp_path / "preset.yaml"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "plan", NATIVE, "--config", str(fifo))
    assert code == 2 and "not a preset file" in one_line(err)


def test_the_readme_stands_on_its_own():
    readme = (ROOT / "README.md").read_text()
    assert "../shared" not in readme and "shared/reference" not in readme and "shared/seeds" not in readme


# --- bad input, found by fuzzing ----------------------------------------------------------------

def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


def test_lone_surrogates_are_replaced_and_everything_can_be_written(tmp_path, capsys):
    json_file = write(tmp_path, "s.json", '{"messages":[{"role":"user","content":"a\\ud800b \\ud83d\\ude00"}]}')
    yaml_file = write(tmp_path, "s.yaml", 'messages:\n  - role: user\n    content: "a\\ud800b \\ud83d\\ude00"\n')
    for path in (json_file, yaml_file):
        session = load_session(path)
        assert session.messages[0].text == "a\ufffdb \U0001F600"
        assert any("U+FFFD" in n for n in session.notes)
        code, out, err = run(capsys, "plan", str(path), "--json")
        assert code == 0, err
        assert json.loads(out)["messages"][0]["role"] == "user"
        for fmt in ("openai", "anthropic", "jsonl", "markdown"):
            target = tmp_path / f"out.{fmt}"
            assert run(capsys, "export", str(path), "--to", fmt, "-o", str(target))[0] == 0
            target.read_text(encoding="utf-8")  # valid UTF-8
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ctxviz-")]


def test_integers_over_pythons_digit_limit_are_one_line(tmp_path):
    long = "9" * 5000
    cases = {"a.json": '{"messages": [{"role": "user", "content": "x"}],\n "n": ' + long + "}",
             "b.yaml": "messages:\n  - role: user\n    content: x\nn: " + long + "\n",
             "c.jsonl": '{"role": "user", "content": "x"}\n{"role": "assistant", "content": "y", "n": ' + long + "}\n"}
    expected_line = {"a.json": 2, "b.yaml": 4, "c.jsonl": 2}
    for name, text in cases.items():
        with pytest.raises(LoadError) as err:
            load_session(write(tmp_path, name, text))
        assert err.value.line == expected_line[name] and "4,300 digits" in str(err.value)


@pytest.mark.parametrize("record", [
    {"role": ["user"], "content": "x"},
    {"role": {"a": 1}, "content": "x"},
    {"role": "user", "content": [{"type": ["text"], "text": "x"}]},
    {"role": "user", "content": [{"type": {"k": 1}, "text": "x"}]},
])
def test_unhashable_values_where_names_are_expected(tmp_path, record, capsys):
    path = write(tmp_path, "u.json", json.dumps([record]))
    code, _, err = run(capsys, "plan", str(path))
    assert code == 2 and "internal error" not in one_line(err) and "expected" in err


def test_recursive_and_exponential_yaml_aliases_are_refused(tmp_path):
    head = 'messages:\n  - role: assistant\n    content: ""\n    tool_calls:\n      - id: c1\n        name: f\n'
    recursive = write(tmp_path, "r.yaml", head + "        arguments: &a [*a]\n")
    with pytest.raises(LoadError, match="recursive"):
        load_session(recursive)
    levels = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
    laughs = write(tmp_path, "l.yaml", levels + head + "        arguments: {x: *i}\n")
    assert laughs.stat().st_size < 1000
    with pytest.raises(LoadError, match="billion laughs"):
        load_session(laughs)
    shared = write(tmp_path, "ok.yaml", "defaults: &d {path: a.py}\n" + head + "        arguments: *d\n")
    assert json.loads(load_session(shared).messages[0].tool_calls[0].arguments) == {"path": "a.py"}


def test_deep_nesting_is_one_line_and_never_crashes(tmp_path, capsys):
    deep = "[" * 100_000 + "]" * 100_000
    args = write(tmp_path, "args.json", json.dumps([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": deep}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}]))
    for fmt in ("openai", "anthropic", "markdown"):
        code, _, err = run(capsys, "export", str(args), "--to", fmt, "-o", str(tmp_path / f"o.{fmt}"))
        assert code == 0, err
    request = json.loads((tmp_path / "o.anthropic").read_text())
    assert request["messages"][-2]["content"][0]["input"] == {"_raw_arguments": deep}
    write(tmp_path, "deep.json", deep)
    code, _, err = run(capsys, "count", "--messages", str(tmp_path / "deep.json"))
    assert code == 2 and "nested too deeply" in one_line(err)
    # libyaml would overflow the C stack here; the document is handed to the pure-Python parser
    for text in (deep, "- " * 50_000 + "x"):
        path = write(tmp_path, "deep.yaml", text)
        with pytest.raises(LoadError, match="nested too deeply"):
            load_session(path)


def test_a_control_character_in_yaml_is_one_line(tmp_path, capsys):
    path = write(tmp_path, "c.yaml", 'messages:\n  - role: user\n    content: "a\x07b"\n')
    code, _, err = run(capsys, "plan", str(path))
    assert code == 2 and one_line(err).startswith(f"{path}:3: invalid YAML: character U+0007")


def test_yaml_is_parsed_by_libyaml_when_it_is_installed():
    if getattr(yaml, "__with_libyaml__", False):
        assert source._FAST_YAML is yaml.CSafeLoader


def test_a_bad_field_in_huge_json_is_located_without_reparsing_as_yaml(tmp_path, monkeypatch):
    records = [{"role": "user", "content": "x" * 50}] * 3000 + [{"role": "user", "content": 5}]

    def no_yaml(*args, **kwargs):
        raise AssertionError("composed the JSON document as YAML")

    monkeypatch.setattr(yaml, "compose", no_yaml)
    one_line_file = write(tmp_path, "one.json", json.dumps({"messages": records}))
    with pytest.raises(LoadError) as err:
        load_session(one_line_file)
    assert err.value.line == 1 and err.value.field == "messages[3000].content"
    indented = write(tmp_path, "many.json", json.dumps({"messages": records}, indent=1))
    with pytest.raises(LoadError) as err:
        load_session(indented)
    assert indented.read_text().splitlines()[err.value.line - 1].strip() == '"content": 5'
    text = json.dumps({"a": [1, {"b": {"c": 2}}]}, indent=2)
    assert text.splitlines()[locate_line(text, ("a", 1, "b", "c")) - 1].strip() == '"c": 2'
    assert text.splitlines()[locate_line(text, ("a", 1, "missing")) - 1].strip() == "{"


def test_nan_and_infinity_never_reach_an_export(tmp_path, capsys):
    path = write(tmp_path, "n.yaml", "tools:\n  - name: f\n    parameters: {type: object, default: .nan}\nmessages:\n"
                 "  - role: user\n    content: x\n  - role: assistant\n    content: ''\n"
                 "    tool_calls: [{id: c1, name: f, arguments: '{\"v\": NaN}'}]\n  - role: tool\n    tool_call_id: c1\n    content: ok\n")

    def strict(constant):
        raise ValueError(f"{constant} in an export")

    for fmt in ("openai", "anthropic", "jsonl"):
        code, out, err = run(capsys, "export", str(path), "--to", fmt)
        assert code == 0, err
        for chunk in ([out] if fmt != "jsonl" else out.splitlines()):
            json.loads(chunk, parse_constant=strict)
    code, out, err = run(capsys, "export", str(path), "--to", "anthropic")
    assert "non-finite" in err
    assert json.loads(out)["messages"][1]["content"][0]["input"] == {"_raw_arguments": '{"v": NaN}'}


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_anthropic_exports_are_valid_messages_api_requests(sample):
    session = load_session(sample)
    for policy in ("missy", "supyagent", "categories", "mnesis", "missy-consolidator"):
        plan = plan_session(session, policy)
        request = json.loads(export(plan, session, "anthropic").text)
        assert_valid_anthropic(request["messages"])


def assert_valid_anthropic(messages):
    assert messages and messages[0]["role"] == "user"
    for i, turn in enumerate(messages):
        assert i == 0 or turn["role"] != messages[i - 1]["role"]
        if turn["role"] == "user":
            asked = {b["id"] for b in messages[i - 1]["content"] if b["type"] == "tool_use"} if i else set()
            assert {b["tool_use_id"] for b in turn["content"] if b["type"] == "tool_result"} <= asked
        elif i + 1 < len(messages):
            answered = {b["tool_use_id"] for b in messages[i + 1]["content"] if b["type"] == "tool_result"}
            assert {b["id"] for b in turn["content"] if b["type"] == "tool_use"} <= answered


def test_anthropic_export_says_what_it_fixed_and_strict_refuses(tmp_path, capsys):
    context = [{"role": "assistant", "content": "earlier answer"},
               {"role": "tool", "tool_call_id": "gone", "content": "orphan result"},
               {"role": "user", "content": "next question"},
               {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}]},
               {"role": "user", "content": "never answered"},
               {"role": "assistant", "content": "done"}]
    fixes: list[str] = []
    _, messages = anthropic_messages(context, fixes)
    assert_valid_anthropic(messages)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[0]["content"] == [{"type": "text", "text": "[earlier conversation not sent]"}]
    assert messages[1]["content"] == [{"type": "text", "text": "earlier answer"}]  # kept, not dropped
    assert messages[2]["content"] == [{"type": "text", "text": "next question"}, {"type": "text", "text": "never answered"}]
    assert any("added a user turn" in f for f in fixes) and any("tool_use block" in f for f in fixes) and any("tool_result block" in f for f in fixes)
    # a tail of tool work with no user turn at all is still exported whole
    tail = [{"role": "assistant", "content": None, "tool_calls": [{"id": "c9", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c9", "content": "ok"}, {"role": "assistant", "content": "next step"}]
    _, messages = anthropic_messages(tail, [])
    assert_valid_anthropic(messages)
    assert [b["type"] for m in messages for b in m["content"]] == ["text", "tool_use", "tool_result", "text"]
    path = write(tmp_path, "orphans.json", json.dumps(context))
    code, _, err = run(capsys, "export", str(path), "--to", "anthropic", "--strict", "-o", str(tmp_path / "x.json"))
    assert code == 1 and "refused: the request starts with an assistant turn" in err and "added a user turn" not in err and not (tmp_path / "x.json").exists()
    code, _, err = run(capsys, "export", str(path), "--to", "anthropic", "-o", str(tmp_path / "x.json"))
    assert code == 0 and "fixed: added a user turn" in err and "broken tool-call pair" in err


def test_markdown_export_fences_text_that_holds_fences(tmp_path):
    tricky = "````\n# not a heading\n<script>alert(1)</script>\n```"
    path = write(tmp_path, "t.json", json.dumps([{"role": "user", "content": tricky}]))
    session = load_session(path)
    text = export(plan_session(session), session, "markdown").text
    assert "\n`````\n" + tricky + "\n`````\n" in text


def test_cr_only_line_ends_read_the_same_small_and_large(tmp_path):
    records = [json.dumps({"role": r, "content": f"{r} {i} " + "x" * 100}) for i in range(5000) for r in ("user", "assistant")]
    small = write(tmp_path, "small.jsonl", "\r".join(records[:4]) + "\r")
    large = write(tmp_path, "large.jsonl", "\r".join(records) + "\r")  # over 1 MB: streamed
    crlf = write(tmp_path, "crlf.jsonl", "\r\n".join(records) + "\r\n")
    assert large.stat().st_size > source.HEAD_BYTES
    assert [m.text.split()[:2] for m in load_session(small).messages] == [["user", "0"], ["assistant", "0"], ["user", "1"], ["assistant", "1"]]
    assert len(load_session(large).messages) == len(load_session(crlf).messages) == 10_000
    bad = write(tmp_path, "bad.jsonl", "\r".join([*records[:3], "{nope", *records[3:6]]))
    with pytest.raises(LoadError) as err:
        load_session(bad)
    assert err.value.line == 4


def test_sigterm_unwinds_the_cli(monkeypatch):
    """The CLI turns SIGTERM into an exit, so `finally` blocks (temporary files) run."""
    main(["policies"])
    assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)


def test_output_paths_are_resolved_before_any_work(tmp_path):
    with pytest.raises(CtxvizError, match="empty"):
        output.check_output_path("")
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "new.json")
    assert output.check_output_path(dangling) == str(tmp_path / "new.json")


@pytest.mark.parametrize("value", [str(3 * 10**19), "9" * 401, "1e300"])
def test_absurd_parameters_are_one_line(capsys, value):
    code, _, err = run(capsys, "plan", NATIVE, "--set", f"total={value}")
    assert code == 2 and one_line(err).startswith("total: ")


def test_the_largest_accepted_total_still_adds_up(capsys):
    from ctxviz.engine.policies.base import MAX_EXACT_INT

    for policy in ("missy", "supyagent", "categories", "mnesis"):
        name = {"missy": "total", "supyagent": "context_limit", "categories": "max_tokens", "mnesis": "context_limit"}[policy]
        code, out, err = run(capsys, "plan", NATIVE, "--policy", policy, "--set", f"{name}={MAX_EXACT_INT}", "--json")
        assert code == 0, err
        doc = json.loads(out)
        assert doc["totals"]["budget"] > 10**15
        if doc["totals"]["allocation_kind"] == "division":
            assert sum(doc["allocation"].values()) == doc["totals"]["budget"]
