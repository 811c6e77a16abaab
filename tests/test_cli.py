"""The CLI as a user drives it: plan, --json, export, count, presets, and one-line errors with exit 2."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.resources import resource_path

DATA = Path(__file__).parent / "data"
NATIVE = str(DATA / "native_small.yaml")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_json_document_is_stable(capsys):
    code, out, err = run(capsys, "plan", NATIVE, "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert list(doc) == ["policy", "params", "tokenizer", "allocation", "usage", "system_prompt", "messages", "summaries",
                         "context", "context_sources", "totals", "notes", "orphans", "extra", "reported", "retention"]
    assert doc["policy"] == "missy" and doc["tokenizer"] == "missy-content/missy"
    assert doc["allocation"] == {"system_reserve": 2000, "tool_definitions_reserve": 2000, "memory": 3900, "learnings": 1300, "history": 20800}
    assert set(doc["messages"][0]) == {"index", "id", "role", "category", "tokens", "decision", "zone", "reason", "reason_code", "sent_tokens"}
    assert all(m["sent_tokens"] == (m["tokens"] if m["decision"] == "kept" else 0) for m in doc["messages"])
    assert [m["zone"] for m in doc["messages"]] == ["fresh_tail"] * 4 + ["new_message"]
    assert doc["context"][0]["role"] == "system" and "## Relevant Memory" in doc["context"][0]["content"]
    assert doc["context"][1]["content"].startswith("[Conversation Summary \u2014 depth 2, 45 messages, covers 2024-01-15 to 2024-01-16]")
    assert doc["context"][-1] == {"role": "user", "content": "Great, ship it."}
    assert set(doc["totals"]) >= {"budget", "used", "kept", "dropped", "fits"}
    assert doc["totals"]["fits"] is True


def test_plan_text_summary(capsys):
    code, out, _ = run(capsys, "plan", NATIVE, "--set", "total=5000", "--set", "fresh_tail_count=1")
    assert code == 0
    assert "history" in out and "allocation" in out and "fresh_tail" in out
    assert "policy missy (total=5000" in out


def test_set_invalid_value_gives_missys_message(capsys):
    code, out, err = run(capsys, "plan", NATIVE, "--set", "fresh_tail_count=-1")
    assert code == 2 and out == ""
    assert err == "fresh_tail_count must be >= 0, got -1\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["--policy", "nope"], "unknown policy 'nope'"),
    (["--set", "colour=blue"], "unknown parameter 'colour'"),
    (["--set", "total=lots"], "total: expected an integer, got 'lots'"),
    (["--set", "total"], "--set 'total': expected KEY=VALUE"),
    (["--tokenizer", "nope"], "unknown tokenizer 'nope'"),
])
def test_bad_options_one_line_exit_2(capsys, argv, message):
    code, out, err = run(capsys, "plan", NATIVE, *argv)
    assert code == 2
    assert err.count("\n") == 1 and message in err


def test_fail_over_budget_gate(capsys):
    assert run(capsys, "plan", NATIVE, "--fail-over-budget")[0] == 0
    code, _, _ = run(capsys, "plan", NATIVE, "--fail-over-budget", "--set", "total=4000", "--set", "fresh_tail_count=16")
    assert code == 1


def test_config_preset_then_set_overrides(capsys):
    preset = str(resource_path("presets", "missy-premium.yaml"))
    code, out, _ = run(capsys, "plan", NATIVE, "--config", preset, "--set", "fresh_tail_count=2", "--json")
    doc = json.loads(out)
    assert doc["params"]["total"] == 50000 and doc["params"]["memory_fraction"] == 0.2 and doc["params"]["fresh_tail_count"] == 2


def test_bad_preset_names_file_and_line(capsys, tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("policy: missy\nparams:\n  total: 1000\n  memory_fraction: 3\n")
    code, _, err = run(capsys, "plan", NATIVE, "--config", str(bad))
    assert code == 2 and err == f"{bad}:4: memory_fraction must be 0.0-1.0, got 3.0\n"
    bad.write_text("params: [1, 2\n")
    code, _, err = run(capsys, "plan", NATIVE, "--config", str(bad))
    assert code == 2 and err.startswith(f"{bad}:2: invalid YAML")


def test_bad_session_file(capsys, tmp_path):
    path = tmp_path / "s.json"
    path.write_text("{\"messages\": [}")
    code, _, err = run(capsys, "plan", str(path))
    assert code == 2 and err.startswith(f"{path}:1: invalid JSON") and err.count("\n") == 1


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "jsonl", "markdown"])
def test_export_atomic_and_parseable(capsys, tmp_path, fmt):
    out_path = tmp_path / f"ctx.{fmt}"
    code, _, err = run(capsys, "export", NATIVE, "--to", fmt, "-o", str(out_path))
    assert code == 0 and "wrote" in err
    text = out_path.read_text(encoding="utf-8")
    assert [p.name for p in tmp_path.iterdir()] == [out_path.name]  # no temporary file left behind
    if fmt == "openai":
        doc = json.loads(text)
        assert doc["model"] == "gpt-4o" and doc["messages"][-1]["content"] == "Great, ship it." and doc["tools"][0]["function"]["name"] == "shell_exec"
    elif fmt == "anthropic":
        doc = json.loads(text)
        roles = [m["role"] for m in doc["messages"]]
        assert all(a != b for a, b in zip(roles, roles[1:], strict=False))  # the Messages API needs alternating roles
        blocks = [b for m in doc["messages"] for b in m["content"]]
        assert {"type": "tool_use", "id": "call_1", "name": "shell_exec", "input": {"cmd": "kubectl get pods"}} in blocks
        assert any(b["type"] == "tool_result" and b["tool_use_id"] == "call_1" for b in blocks)
        assert any(b["type"] == "image" and b["source"]["type"] == "base64" for b in blocks)
        assert "## Relevant Memory" in doc["system"]
    elif fmt == "jsonl":
        lines = [json.loads(line) for line in text.splitlines()]
        assert lines[0]["role"] == "system" and len(lines) == 7
    else:
        assert text.startswith("# Context sent by missy") and "Great, ship it." in text


def test_export_to_stdout_matches_plan_context(capsys):
    code, out, _ = run(capsys, "export", NATIVE, "--to", "jsonl")
    _, plan_out, _ = run(capsys, "plan", NATIVE, "--json")
    assert [json.loads(line) for line in out.splitlines()] == json.loads(plan_out)["context"]


def test_export_does_not_touch_existing_file_on_failure(capsys, tmp_path):
    target = tmp_path / "keep.json"
    target.write_text("precious")
    code, _, err = run(capsys, "export", NATIVE, "--to", "openai", "-o", str(target), "--set", "total=-1")
    assert code == 2 and target.read_text() == "precious"


def test_count_text_and_messages(capsys, tmp_path, monkeypatch):
    f = tmp_path / "t.txt"
    f.write_text("tiktoken is great!")
    assert run(capsys, "count", str(f))[1] == "6\n"
    assert run(capsys, "count", str(f), "--tokenizer", "missy")[1] == "4\n"
    msgs = tmp_path / "m.json"
    msgs.write_text(json.dumps([{"role": "user", "content": "hello"}]))
    code, out, _ = run(capsys, "count", str(msgs), "--messages", "--model", "gpt-4o")
    assert out == "8\n"  # 3 per message + 1 ("user") + 1 ("hello") + 3 reply priming


def test_count_messages_reads_json_lines_and_refuses_a_log(capsys, tmp_path):
    """`count --messages` of an OpenAI chat JSONL file counts as the same messages in a JSON list;
    an agent's log (JSON Lines of records, not messages) gets one line saying where to go."""
    listed, lines = tmp_path / "m.json", tmp_path / "m.jsonl"
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi there"}]
    listed.write_text(json.dumps(chat))
    lines.write_text("\n".join(json.dumps(m) for m in chat) + "\n\n")
    assert run(capsys, "count", str(lines), "--messages")[:2] == run(capsys, "count", str(listed), "--messages")[:2]
    assert run(capsys, "count", str(lines), "--messages")[1] != "0\n"
    code, out, err = run(capsys, "count", str(DATA.parent.parent / "sample_sessions" / "claude_code_compaction.jsonl"), "--messages")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "claude_code_compaction.jsonl:1:" in err and "no `role`" in err and "ctxviz info" in err
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(chat[0]) + "\n{\"role\": \"user\", \"content\": \n")
    code, _, err = run(capsys, "count", str(broken), "--messages")
    assert code == 2 and "broken.jsonl:2: invalid JSON" in err


def test_python_dash_m_and_stdin():
    out = subprocess.run([sys.executable, "-m", "ctxviz", "count", "-"], input="tiktoken is great!", capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout == "6\n"


def test_policies_lists_parameters(capsys):
    code, out, _ = run(capsys, "policies")
    assert code == 0 and "fresh_tail_count = 16" in out


def test_engine_never_imports_qt():
    code = "import ctxviz.engine, ctxviz.io.loaders, ctxviz.cli, sys; print(sorted(m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_export_gets_normal_permissions(capsys, tmp_path):
    out_path = tmp_path / "ctx.json"
    assert main(["export", NATIVE, "--to", "openai", "-o", str(out_path)]) == 0
    umask = os.umask(0)
    os.umask(umask)
    assert out_path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_gui_without_a_display_says_so_instead_of_hanging(capsys, monkeypatch):
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    code, out, err = run(capsys, "gui", NATIVE)
    assert code == 2 and "no display" in err and "--screenshot" in err and len(err.strip().splitlines()) == 1


def test_gui_starts_with_preset_and_set_values(capsys, monkeypatch, tmp_path):
    started = {}

    def fake_run(session, screenshot, scheme, policy, tab, params=None, tokenizer=None, **_):
        started.update(policy=policy, params=params, tokenizer=tokenizer)
        return 0

    monkeypatch.setattr("ctxviz.gui.app.run", fake_run)
    preset = resource_path("presets", "categories-later.yaml")
    code, _, err = run(capsys, "gui", NATIVE, "--config", str(preset), "--set", "max_tokens=40000", "--screenshot", str(tmp_path / "s.png"))
    assert code == 0, err
    assert started["policy"] == "categories" and started["params"].max_tokens == 40000
    assert started["params"].dialog_fraction == 0.4  # from the preset (the later 10/30/40/20 split)


def test_gui_rejects_a_bad_parameter_before_opening_a_window(capsys, tmp_path):
    code, _, err = run(capsys, "gui", NATIVE, "--set", "fresh_tail_count=-1", "--screenshot", str(tmp_path / "s.png"))
    assert code == 2 and "fresh_tail_count" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s.png").exists()


def test_count_stays_a_bare_number_and_names_its_tokenizer_when_asked(capsys, monkeypatch, tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("tiktoken is great!")
    assert main(["count", str(text), "--tokenizer", "cl100k_base"]) == 0
    out, err = capsys.readouterr()
    assert out == "6\n" and err == ""
    assert main(["count", str(text), "--tokenizer", "cl100k_base", "--verbose"]) == 0
    out, err = capsys.readouterr()
    assert out == "6\n" and "counted with cl100k_base" in err


def test_simulate_says_when_it_shows_only_some_turns(capsys):
    sample = str(Path(__file__).parent.parent / "sample_sessions" / "support_chat.yaml")
    assert main(["simulate", sample, "--retention", "off"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line[:6].strip().isdigit()]
    assert len(rows) < 230 and "(of 96 steps, every 2nd is shown" in out and "--json lists them all" in out


@pytest.mark.parametrize("name", ["langchain/messages_to_trim.dumpd.json", "otel/otel_genai_client_span_tool_calls.json",
                                  "swe_agent/pydicom__pydicom-1458.traj"])
def test_info_counts_a_system_prompt_carried_as_system_messages(capsys, name):
    """`info` said "system prompt: 0 characters" for files whose system prompt is a system message."""
    from ctxviz.io.loaders import load_session

    path = Path(__file__).parent / "data" / "real" / name
    session = load_session(path)
    chars = len(session.system_prompt) + sum(len(m.text or "") for m in session.messages if m.role == "system")
    assert main(["info", str(path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "system prompt:" in x)
    if chars:
        assert f"system prompt: {chars:,} characters" in line and "system message" in line
    assert main(["info", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["system_prompt_chars"] + doc["system_message_chars"] == chars


def test_info_says_what_the_first_call_reported_beyond_the_log(capsys):
    """A Codex rollout records the user's instructions but not Codex's own prompt or tools: `info`
    said "system prompt: 1,595 characters" and nothing of the 8,800 tokens the first call shows
    were sent beside them. A log whose first call matches what it shows says nothing."""
    samples = Path(__file__).parent.parent / "sample_sessions"
    assert main(["info", str(samples / "codex_rollout.jsonl")]) == 0
    assert "unseen: about 8,800 tokens of system prompt and tools the log does not record" in capsys.readouterr().out
    assert main(["info", str(samples / "codex_rollout.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unseen_estimate"] == 8800
    assert main(["info", str(samples / "coding_agent.yaml")]) == 0
    assert "unseen:" not in capsys.readouterr().out


def test_the_readme_glossary_is_the_one_the_app_shows():
    from ctxviz.glossary import define, readme_section

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert readme_section() in readme
    # the words the issue asked to define, as the app and the README spell them
    for term in ("anchor", "fresh tail", "evictable prefix", "zone", "caps", "Unseen", "summarised", "replaced"):
        assert define(term), term
    assert define("Summarized") == define("summarised") != ""


def test_every_session_argument_names_every_format_and_the_synopsis_every_command():
    """The session help listed 5 of the 11 formats; the README's synopsis left out where, calibrate, report and gui."""
    import ctxviz.cli as cli

    cli._load()
    names = cli.loader_names()
    sub = next(a for a in cli.build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    synopsis = readme.split("## The command line", 1)[1].split("```", 2)[1]
    for command, parser in sub.choices.items():
        assert f"ctxviz {command} " in synopsis, command
        for action in parser._actions:
            if action.dest in ("session", "sessions"):
                assert all(name in action.help for name in names), (command, action.help)
    assert all(name in readme.split("## The command line", 1)[1] for name in names)


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_export_says_why_its_count_is_not_the_plans(capsys, tmp_path, fmt):
    """An export said "82 messages" where plan said "91 sent" and the Anthropic export "69", with no word of why."""
    import re

    sample = str(Path(__file__).parent.parent / "sample_sessions" / "support_chat.yaml")
    assert main(["export", sample, "--to", fmt, "-o", str(tmp_path / "out.json")]) == 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    numbers = {key: int(value.replace(",", "")) for value, key in re.findall(
        r"([\d,]+) (messages \(|messages;|system messages folded|summaries added|turns merged)", line)}
    exported, sent = numbers["messages ("], numbers["messages;"]
    expected = sent - numbers["system messages folded"] + 1 + numbers["summaries added"]
    if fmt == "anthropic":
        assert "the system prompt sent as `system`" in line
        expected -= 1 + numbers["turns merged"]
    assert exported == expected == len(json.loads((tmp_path / "out.json").read_text())["messages"])


def test_compare_groups_its_differences_by_reason(capsys):
    """compare printed 119-224 lines, the same three for every differing message."""
    sample = str(Path(__file__).parent.parent / "sample_sessions" / "support_chat.yaml")
    argv = ["compare", sample, "--policy", "missy", "--set-a", "total=30000", "--set-b", "total=12000"]
    assert main(argv) == 0
    grouped = capsys.readouterr().out
    assert main([*argv, "--verbose"]) == 0
    verbose = capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    groups, diffs = doc["difference_groups"], doc["differences"]
    assert sum(g["messages"] for g in groups) == len(diffs) > len(groups)
    assert len(grouped.splitlines()) < len(verbose.splitlines()) - len(diffs)
    for g in groups:
        assert f"{g['messages']:>5,} message" in grouped
    assert all(f"  #{d['index']} " in verbose for d in diffs)
