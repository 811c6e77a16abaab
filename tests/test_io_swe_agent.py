"""SWE-agent and mini-swe-agent trajectories: the real files in tests/data/real/swe_agent, detection,
fields, litellm usage, tool pairs, rebuilt trajectories, and one clear line per bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.policies import policy_names
from ctxviz.engine.session import Category, OpaquePart, TextPart, ThinkingPart, Usage
from ctxviz.io.loaders import load_session

from .loader_checks import assert_plans_simulates_and_exports, assert_refused_in_one_line

REAL = Path(__file__).parent / "data" / "real" / "swe_agent"


def roles(session) -> dict[str, int]:
    return dict(Counter(m.role for m in session.messages))


def write(tmp_path: Path, name: str, doc: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return str(path)


def test_real_swe_agent_0x_run():
    s = load_session(str(REAL / "swe-agent__test-repo-i1.traj"))
    assert s.format == "swe-agent"
    assert roles(s) == {"system": 1, "user": 6, "assistant": 5}
    assert s.messages[0].text.startswith("SETTING: You are an autonomous programmer")
    demo = s.messages[1]
    assert demo.category is Category.CONTEXT and demo.role == "user"  # the demonstration
    assert "ISSUE:" in s.messages[2].text and "SyntaxError" in s.messages[2].text
    assert not any(m.tool_calls for m in s.messages) and not any(m.usage for m in s.messages)
    assert any("5 API calls, 52,861 tokens sent, 326 received, cost $0.54" in n for n in s.notes)


def test_real_pydicom_run():
    s = load_session(str(REAL / "pydicom__pydicom-1458.traj"))
    assert roles(s) == {"system": 1, "user": 13, "assistant": 12}
    assert any("12 API calls, 122,612 tokens sent, 1,369 received" in n for n in s.notes)
    assert sum(m.category is Category.CONTEXT for m in s.messages) == 1


def test_real_function_calling_history():
    s = load_session(str(REAL / "marshmallow-code__marshmallow-1867.function_calling_replace.traj"))
    assert s.model == "gpt-4o"
    assert roles(s) == {"system": 1, "user": 1, "assistant": 11, "tool": 11}
    assert len(s.tool_pairs) == 11 and not s.tool_call_problems
    first = s.messages[2]
    assert first.tool_calls[0].name == "create" and first.tool_calls[0].id.startswith("call_")
    assert s.messages[3].role == "tool" and s.messages[3].tool_call_id == first.tool_calls[0].id
    assert s.messages[-2].tool_calls[0].name == "submit" and s.messages[-1].role == "tool"


def test_real_mini_swe_agent_bare_list():
    s = load_session(str(REAL / "github_issue.traj.json"))
    assert s.format == "swe-agent"
    assert roles(s) == {"system": 1, "user": 11, "assistant": 10}
    assert s.messages[1].text.startswith("Please solve this issue: GitHub Issue: SyntaxError")
    assert "mswea_bash_command" in s.messages[2].text


REAL_FILES = sorted(p.name for p in REAL.iterdir() if p.name.endswith((".traj", ".json")))



@pytest.mark.parametrize("policy", policy_names())
@pytest.mark.parametrize("name", REAL_FILES)
def test_plan_simulate_export_under_every_policy(name, policy, tmp_path):
    path = str(REAL / name)
    assert_plans_simulates_and_exports(path, policy, tmp_path)


MINI_V2 = {
    "info": {"model_stats": {"instance_cost": 0.0123, "api_calls": 2}, "mini_version": "2.0.0", "exit_status": "Submitted",
             "config": {"model": {"model_name": "anthropic/claude-sonnet-4-5-20250929"}}},
    "messages": [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": [{"type": "text", "text": "Please solve this issue: fix the typo", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": None, "reasoning_content": "look first",
         "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"cat README.md\"}"}}],
         "extra": {"actions": [{"command": "cat README.md", "tool_call_id": "toolu_1"}], "cost": 0.006, "timestamp": 1706000000.0,
                   "response": {"usage": {"prompt_tokens": 1500, "completion_tokens": 40, "prompt_tokens_details": {"cached_tokens": 1000},
                                          "cache_creation_input_tokens": 300}}}},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "<returncode>0</returncode>\n<output>\nteh end\n</output>",
         "extra": {"returncode": 0, "timestamp": 1706000001.0}},
        {"role": "assistant", "content": "Fixed.", "extra": {"response": {"usage": {"prompt_tokens": 1600, "completion_tokens": 10}}}},
        {"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": "diff --git ..."}},
    ],
    "trajectory_format": "mini-swe-agent-1.1",
}


def test_mini_swe_agent_v2_fields_and_usage(tmp_path):
    s = load_session(write(tmp_path, "fix.traj.json", MINI_V2))
    assert s.format == "swe-agent" and s.model == "anthropic/claude-sonnet-4-5-20250929" and s.format_version == "2.0.0"
    assert [m.role for m in s.messages] == ["system", "user", "assistant", "tool", "assistant"]
    call = s.messages[2]
    assert call.parts[0] == ThinkingPart("look first") and call.tool_calls[0].name == "bash"
    # litellm's prompt_tokens includes the cache reads and writes
    assert call.usage == Usage(input_tokens=200, output_tokens=40, cache_read_input_tokens=1000, cache_creation_input_tokens=300)
    assert call.usage.window_fill == 1500
    assert s.messages[4].usage == Usage(input_tokens=1600, output_tokens=10)
    assert s.tool_pairs == ((2, 3),)
    assert any("skipped the final `exit` message (exit status: Submitted)" in n for n in s.notes)
    assert any("2 API calls, cost $0.01" in n for n in s.notes)


def test_bare_list_needs_a_traj_name_or_mini_fields(tmp_path):
    plain = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert load_session(write(tmp_path, "chat.json", plain)).format == "openai"
    assert load_session(write(tmp_path, "run.traj", plain)).format == "swe-agent"
    with_exit = [*plain, {"role": "exit", "content": "LimitsExceeded", "extra": {"exit_status": "LimitsExceeded"}}]
    s = load_session(write(tmp_path, "chat2.json", with_exit))
    assert s.format == "swe-agent" and len(s.messages) == 2


def test_swe_agent_1x_fields(tmp_path):
    doc = {"history": [
        {"role": "system", "content": "sys", "agent": "main", "message_type": "system_prompt"},
        {"role": "user", "content": "demo text", "agent": "main", "is_demo": True, "message_type": "demonstration"},
        {"role": "user", "content": [{"type": "text", "text": "the issue", "cache_control": {"type": "ephemeral"}},
                                     {"type": "document", "title": "x"}], "agent": "main", "message_type": "observation"},
        {"role": "assistant", "content": "thinking and acting", "thought": "t", "action": "ls", "agent": "main", "message_type": "action",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}],
         "thinking_blocks": [{"type": "thinking", "thinking": "deep"}]},
        {"role": "tool", "content": "a.py", "agent": "main", "message_type": "observation", "tool_call_ids": ["c1"]},
        {"role": "user", "content": "review please", "agent": "reviewer", "message_type": "user"},
    ], "info": {"swe_agent_version": "1.1.0"}, "replay_config": json.dumps({"agent": {"model": {"name": "claude-3-7-sonnet"}}}),
        "attempts": [{"history": []}, {"history": []}]}
    s = load_session(write(tmp_path, "x.traj", doc))
    assert s.model == "claude-3-7-sonnet" and s.format_version == "1.1.0"
    assert s.messages[1].category is Category.CONTEXT
    assert s.messages[2].parts == (TextPart("the issue"), OpaquePart("document", json.dumps({"type": "document", "title": "x"})))
    assert s.messages[3].parts[0] == ThinkingPart("deep") and s.messages[4].tool_call_id == "c1"
    assert s.tool_pairs == ((3, 4),)
    assert any("several agents" in n and "reviewer: 1" in n for n in s.notes)
    assert any("2 attempts in the file" in n for n in s.notes)


def test_trajectory_without_history_is_rebuilt(tmp_path):
    doc = {"trajectory": [
        {"response": "I'll look.\n```\nls\n```", "thought": "I'll look.", "action": "ls\n", "observation": "a.py\nb.py",
         "query": [{"role": "system", "content": "sys"}, {"role": "user", "content": "the issue"}]},
        {"response": "", "thought": "Now submit.", "action": "submit", "observation": "diff"},
    ], "info": {}}
    s = load_session(write(tmp_path, "t.traj", doc))
    assert [m.role for m in s.messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert s.messages[4].text == "Now submit.\nsubmit"
    assert any("rebuilt from 2 `trajectory` steps" in n for n in s.notes)


BAD = [
    ("role.traj", {"history": [{"role": "system", "content": "s"}, {"role": "wizard", "content": "x"}]},
     "role.traj:8: history[1].role: unknown role 'wizard'"),
    ("content.traj", {"history": [{"role": "user", "content": 7}]}, "content.traj:5: history[0].content: expected a string or a list of parts"),
    ("ids.traj", {"history": [{"role": "tool", "content": "x", "tool_call_ids": [3]}]}, "ids.traj:7: history[0].tool_call_ids[0]: expected a string"),
    ("call.traj", {"history": [{"role": "assistant", "content": "x", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}]},
     "call.traj:9: history[0].tool_calls[0].function.name: is required"),
]


@pytest.mark.parametrize(("name", "doc", "prefix"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_naming_file_line_field(tmp_path, name, doc, prefix):
    assert_refused_in_one_line(write(tmp_path, name, doc), prefix)


@pytest.mark.parametrize("name", ["pydicom__pydicom-1458.traj", "swe-agent__test-repo-i1.traj"])  # (a function-calling one sends them as tool messages)
def test_command_output_sent_as_user_turns_is_tool_output_and_the_task_is_dialog(name: str) -> None:
    s = load_session(str(REAL / name))
    users = [m for m in s.messages if m.role == "user" and m.category is not Category.CONTEXT]
    task, observations = users[0], users[1:]
    # The category charts showed no tool output for a trajectory made mostly of command output.
    assert task.category is Category.DIALOG and observations
    assert all(m.category is Category.SYSTEM_OUTPUT for m in observations)
