"""Inputs the command line took without a word: each now does what it says, or is refused in one line.

`count --messages` counted `content: 5` and a role `wizard` (a request no API takes);
`sessions --root /nonexistent` said "no sessions found" and exited 0; `--cost-model` without
`--cost` priced nothing; `calibrate` on a Codex log counted its compaction as a Claude Code /compact.
"""

from pathlib import Path

import pytest

from ctxviz.cli import main

ROOT = Path(__file__).parent.parent
SUPPORT = str(ROOT / "sample_sessions" / "support_chat.yaml")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("c.json", '[{"role": "user", "content": 5}]',
     ":1: messages[0].content: expected a string, a list of content parts or null, got a number"),
    ("c.json", '[{"role": "wizard", "content": "hi"}]',
     ":1: messages[0].role: unknown role 'wizard' (expected one of system, developer, user, assistant, tool, function)"),
    ("c.json", '{"messages": [\n {"role": "user", "content": "hi"},\n {"role": "user", "content": {"a": 1}}]}',
     ":3: messages[1].content: expected a string, a list of content parts or null, got an object"),
    ("c.json", '{"messages": "hello"}', ":1: messages: expected a list of messages, got a string"),
    ("c.jsonl", '{"role": "user", "content": "hi"}\n{"role": "wizzard", "content": "x"}\n',
     ":2: messages[1].role: unknown role 'wizzard' (expected one of system, developer, user, assistant, tool, function)"),
])
def test_count_messages_refuses_a_message_no_api_takes(capsys, tmp_path, name, text, expected):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "count", path, "--messages")
    assert (code, out, err) == (2, "", f"{path}{expected}\n")


def test_count_messages_still_counts_parts_and_null_content(capsys, tmp_path):
    path = tmp_path / "ok.json"
    path.write_text('[{"role": "user", "content": [{"type": "text", "text": "hello"}]}, {"role": "assistant", "content": null}]', encoding="utf-8")
    code, out, _ = run(capsys, "count", path, "--messages")
    assert code == 0 and int(out) > 0


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_sessions_refuses_a_root_that_is_no_folder(capsys, tmp_path, kind):
    root = tmp_path / "nowhere"
    if kind == "file":
        root.write_text("x", encoding="utf-8")
    code, out, err = run(capsys, "sessions", "--root", root)
    assert (code, out) == (2, "")
    assert err == f"sessions: --root {root}: {'no such folder' if kind == 'missing' else 'not a folder'}\n"
    code, out, _ = run(capsys, "sessions", "--root", tmp_path, "--json")
    assert code == 0  # an existing folder without logs is still listed, empty


@pytest.mark.parametrize("argv", [["simulate", SUPPORT], ["compare", SUPPORT, "--policy", "missy", "--policy", "langchain-trim"]])
def test_cost_model_alone_prices_as_cost_does(capsys, argv):
    code, alone, _ = run(capsys, *argv, "--cost-model", "gpt-4o-mini")
    assert code == 0 and "prompt caching (gpt-4o-mini): input $" in alone
    code, both, _ = run(capsys, *argv, "--cost", "--cost-model", "gpt-4o-mini")
    assert code == 0 and both == alone


@pytest.mark.parametrize(("log", "title", "own"), [
    ("codex_rollout.jsonl", "Codex CLI rollout (JSONL)", "its 1 compaction is that agent's own mechanism, not Claude Code's"),
    ("gemini_cli_session.json", "Gemini CLI chat session (JSON/JSONL)", "it records no Claude Code compaction"),
])
def test_calibrate_refuses_a_log_of_another_agent(capsys, log, title, own):
    path = ROOT / "sample_sessions" / log
    for argv in (["calibrate", path], ["calibrate", ROOT / "sample_sessions" / "claude_code_autocompact.jsonl", path, "--json"]):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, "") and err.count("\n") == 1
        assert err == (f"{path}: a {title} log: calibrate fits Claude Code's auto-compact trigger from Claude Code's logs, "
                       f"and {own} (`ctxviz verify` replays this log beside the calls it records)\n")
