"""Codex CLI rollouts: detection, every item type, both vocabularies, no doubled messages, compactions
every policy honours, reported usage, one clear line per bad input, and the real rollouts others wrote."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ctxviz.cli import main
from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import policy_names
from ctxviz.engine.session import ImagePart, OpaquePart, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
from ctxviz.engine.simulate import simulate
from ctxviz.errors import LoadError
from ctxviz.io.codex import CodexLoader
from ctxviz.io.loaders import detect, load_session
from ctxviz.io.source import read_source

from .loader_checks import assert_one_step_per_call

DATA = Path(__file__).parent / "data"
REAL = DATA / "real" / "codex"
REAL_FILES = sorted(p.name for p in REAL.glob("*.jsonl"))
SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "codex_rollout.jsonl"

TS = "2025-10-14T09:00:00.000Z"


def write(tmp_path: Path, lines: list[Any], name: str = "rollout.jsonl", end: str = "\n") -> str:
    """A JSONL file from records (dicts are dumped, strings written verbatim)."""
    path = tmp_path / name
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + end
    path.write_text(text, encoding="utf-8")
    return str(path)


def env(kind: str, payload: dict[str, Any], ts: str = TS) -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def meta(**extra: Any) -> dict[str, Any]:
    payload = {"id": "0199e2c1-7f3a", "timestamp": TS, "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.46.0",
               "base_instructions": {"text": "You are Codex."}, **extra}
    return env("session_meta", payload)


def item(payload: dict[str, Any]) -> dict[str, Any]:
    return env("response_item", payload)


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return env("event_msg", {"type": kind, **fields})


def msg(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return item({"type": "message", "role": role, "content": [{"type": kind, "text": text}]})


def call(call_id: str, name: str = "shell", arguments: str = '{"command": ["ls"]}') -> dict[str, Any]:
    return item({"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id})


def output(call_id: str, text: str) -> dict[str, Any]:
    return item({"type": "function_call_output", "call_id": call_id, "output": text})


def usage(input_tokens: int, cached: int, out: int, total_in: int | None = None, window: int = 272000) -> dict[str, Any]:
    last = {"input_tokens": input_tokens, "cached_input_tokens": cached, "output_tokens": out, "reasoning_output_tokens": 0,
            "total_tokens": input_tokens + out}
    total = dict(last, input_tokens=total_in or input_tokens)
    return event("token_count", info={"total_token_usage": total, "last_token_usage": last, "model_context_window": window},
                 rate_limits={"primary": {"used_percent": 1.0}})


def turn_context(model: str = "gpt-5-codex") -> dict[str, Any]:
    return env("turn_context", {"cwd": "/w", "approval_policy": "on-request", "model": model, "effort": "medium"})


# -- detection --------------------------------------------------------------------------------------


def test_detects_envelope_flat_and_state_first_files(tmp_path):
    assert detect(read_source(write(tmp_path, [meta(), msg("user", "hi")]))).name == "codex"
    flat = [{"id": "5973b6c0", "timestamp": TS, "instructions": None, "git": {"branch": "main"}}, {"record_type": "state"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
    assert detect(read_source(write(tmp_path, flat, "flat.jsonl"))).name == "codex"
    assert detect(read_source(write(tmp_path, [{"record_type": "state"}, *flat[2:]], "state.jsonl"))).name == "codex"
    # A first line of any envelope type is enough (files resumed or cut at the start).
    assert detect(read_source(write(tmp_path, [turn_context(), msg("user", "hi")], "tc.jsonl"))).name == "codex"


def test_other_formats_are_not_taken_for_codex(tmp_path):
    for path, name in ((DATA / "claude_code" / "parser_fix.jsonl", "claude-code"), (DATA / "supyagent" / "3fa9c1d2.jsonl", "supyagent")):
        assert detect(read_source(str(path))).name == name
    chat = write(tmp_path, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], "chat.jsonl")
    assert detect(read_source(chat)).name == "openai"
    # An envelope-looking JSON document (not JSONL) and a typed line without a payload are not rollouts.
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"type": "session_meta", "payload": {}}))
    assert CodexLoader().sniff(read_source(str(one))) is False
    cc = write(tmp_path, [{"type": "user", "uuid": "u", "message": {"role": "user", "content": "x"}}], "cc.jsonl")
    assert CodexLoader().sniff(read_source(cc)) is False


# -- what is read -------------------------------------------------------------------------------------


def test_session_meta_turn_context_and_messages(tmp_path):
    s = load_session(write(tmp_path, [
        meta(), turn_context("gpt-5-codex"),
        item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions/>"}]}),
        msg("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"), msg("user", "Fix the bug"),
        event("user_message", message="Fix the bug", images=[]),
        item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "On it."}], "phase": "commentary"}),
        event("agent_message", message="On it."),
    ]))
    assert s.format == "codex" and s.format_version == "0.46.0" and s.model == "gpt-5-codex"
    assert s.system_prompt == "You are Codex."
    assert [(m.role, m.text) for m in s.messages] == [("system", "<permissions/>"), ("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
                                                      ("user", "Fix the bug"), ("assistant", "On it.")]
    assert [m.id for m in s.messages] == ["L3", "L4", "L5", "L7"]  # the line each message starts on
    assert s.messages[2].timestamp == TS
    # What Codex writes in the user's name (the environment, AGENTS.md) is context; the request is dialog.
    assert [m.category.value for m in s.messages] == ["system", "context", "dialog", "dialog"]
    assert any("with `response_item` messages" in n for n in s.notes)
    assert "skipped 1 `event_msg` `user_message` line that repeats a `response_item`" in s.notes
    assert "skipped 1 `event_msg` `agent_message` line that repeats a `response_item`" in s.notes


def test_tool_calls_pair_by_call_id_and_one_response_is_one_assistant_turn(tmp_path):
    s = load_session(write(tmp_path, [
        meta(), msg("user", "list and patch"),
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Listing first**"}], "content": None,
              "encrypted_content": "gAAAA" + "x" * 400}),
        msg("assistant", "Listing."), call("c1"), call("c2", arguments='{"command": ["pwd"]}'),
        usage(1000, 800, 50),
        output("c1", "a.py\nb.py"), output("c2", json.dumps({"output": "/w", "metadata": {"exit_code": 0}})),
        item({"type": "custom_tool_call", "status": "completed", "call_id": "c3", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"}),
        usage(1300, 1000, 80, total_in=2300),
        item({"type": "custom_tool_call_output", "call_id": "c3", "output": "Success."}),
        item({"type": "local_shell_call", "call_id": "c4", "status": "completed", "action": {"type": "exec", "command": ["ls"]}}),
        output("c4", "a.py"),
    ]))
    roles = [m.role for m in s.messages]
    assert roles == ["user", "assistant", "tool", "tool", "assistant", "tool", "assistant", "tool"]
    first = s.messages[1]
    assert first.parts == (ThinkingPart("**Listing first**"), TextPart("Listing."), ToolCallPart("c1", "shell", '{"command": ["ls"]}'),
                           ToolCallPart("c2", "shell", '{"command": ["pwd"]}'))
    assert s.messages[2].parts == (ToolResultPart("c1", "a.py\nb.py"),) and s.messages[2].tool_call_id == "c1"
    assert s.messages[3].text.startswith('{"output": "/w"')  # what the model saw, verbatim
    assert s.messages[4].tool_calls == (ToolCallPart("c3", "apply_patch", "*** Begin Patch\n*** End Patch"),)
    assert s.messages[6].tool_calls[0].name == "local_shell" and json.loads(s.messages[6].tool_calls[0].arguments)["command"] == ["ls"]
    assert s.tool_pairs == ((1, 2), (1, 3), (4, 5), (6, 7)) and s.tool_call_problems == ()
    assert s.messages[5].name == "apply_patch"  # results carry their call's name


def test_reasoning_encrypted_only_hosted_and_unknown_items(tmp_path):
    s = load_session(write(tmp_path, [
        meta(), msg("user", "search"),
        item({"type": "reasoning", "summary": [], "content": None, "encrypted_content": "g" * 1484}),
        item({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "csv lineterminator"}}),
        item({"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "raw thoughts"}]}),
        item({"type": "reasoning", "summary": [], "content": None, "encrypted_content": None}),
        item({"type": "brand_new_item", "text": "something newer than ctxviz"}),
        item({"type": "ghost_snapshot", "ghost_commit": {"id": "4a64dbe"}}),
        msg("assistant", "Found it."),
    ]))
    assert [m.role for m in s.messages] == ["user", "assistant"]
    parts = s.messages[1].parts
    assert parts[0] == OpaquePart("reasoning", "[encrypted reasoning: 1,484 characters]")
    assert parts[1].kind == "opaque" and parts[1].type == "web_search_call" and "csv lineterminator" in parts[1].text
    assert parts[2] == ThinkingPart("raw thoughts")
    assert parts[3] == OpaquePart("brand_new_item", "something newer than ctxviz")
    assert parts[4] == TextPart("Found it.")
    notes = "\n".join(s.notes)
    assert "skipped 1 `reasoning` item with neither summary text nor encrypted content" in notes
    assert "kept 1 `web_search_call` item" in notes and "kept 1 `brand_new_item` item" in notes
    assert "skipped 1 `ghost_snapshot` item" in notes


def test_user_images_and_output_parts(tmp_path):
    png = "data:image/png;base64,iVBORw0KGgo="
    s = load_session(write(tmp_path, [
        meta(), item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look"},
                                                                      {"type": "input_image", "image_url": png}]}),
        call("v1", "view_image", '{"path": "a.png"}'),
        item({"type": "function_call_output", "call_id": "v1", "output": [{"type": "input_text", "text": "shown"},
                                                                        {"type": "input_image", "image_url": png}]}),
        item({"type": "function_call_output", "call_id": "v0", "output": {"content": "boom", "success": False}}),
    ]))
    assert s.messages[0].parts == (TextPart("look"), ImagePart(url=png))
    assert s.messages[2].parts == (ToolResultPart("v1", "shown\n[image]"),)
    assert s.messages[3].parts == (ToolResultPart("v0", "boom", is_error=True),)
    assert "kept 1 image inside tool outputs as an `[image]` placeholder" in s.notes


# -- the two vocabularies, never both -------------------------------------------------------------------


def test_event_vocabulary_when_there_are_no_response_item_messages(tmp_path):
    s = load_session(write(tmp_path, [
        meta(), event("user_message", message="Hi Codex", images=["https://x/y.png"]),
        event("agent_reasoning", text="**Greeting**"), event("agent_message", message="Hello!"), usage(500, 0, 9),
        event("user_message", message="Run ls", images=[]), call("c1"), usage(600, 500, 5, total_in=1100), output("c1", "a.py"),
        event("agent_message", message="One file."),
    ]))
    assert [(m.role, m.text) for m in s.messages] == [("user", "Hi Codex"), ("assistant", "**Greeting**\nHello!"), ("user", "Run ls"),
                                                      ("assistant", 'shell({"command": ["ls"]})'), ("tool", "a.py"), ("assistant", "One file.")]
    assert s.messages[0].parts[1] == ImagePart(url="https://x/y.png")
    assert s.messages[1].usage == Usage(500, 9, 0) and s.messages[3].usage == Usage(100, 5, 500)
    assert s.notes[0].startswith("read as a Codex rollout without `response_item` user messages or assistant messages or reasoning: those are "
                                 "read from `event_msg` user_message / agent_message / agent_reasoning (the older vocabulary)")


def test_each_kind_comes_from_events_only_when_no_response_item_has_it(tmp_path):
    # Some files keep the model's messages as response items but the user's words only as events.
    s = load_session(write(tmp_path, [meta(), event("user_message", message="Summarise the notes", images=[]),
                                      item({"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}),
                                      event("agent_message", message="Done."), msg("assistant", "Done.")]))
    assert [(m.role, m.text) for m in s.messages] == [("user", "Summarise the notes"), ("assistant", "[encrypted reasoning: 4 characters]\nDone.")]
    assert "skipped 1 `event_msg` `agent_message` line that repeats a `response_item`" in s.notes


def test_doubled_messages_count_once_whatever_their_order(tmp_path):
    # codex exec writes the agent_message event before the response item it repeats.
    lines = [meta(), msg("user", "2+2?"), event("user_message", message="2+2?"), event("agent_reasoning", text="easy"),
             item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "easy"}]}),
             event("agent_message", message="4"), msg("assistant", "4")]
    s = load_session(write(tmp_path, lines))
    assert [m.text for m in s.messages] == ["2+2?", "easy\n4"]


def test_flat_pre_envelope_rollout(tmp_path):
    s = load_session(write(tmp_path, [
        {"id": "5973b6c0-94b8", "timestamp": "2025-08-18T01:16:13.522Z", "instructions": "Be terse.", "git": {"branch": "main"}},
        {"record_type": "state"},
        {"type": "message", "id": None, "role": "user", "content": [{"type": "input_text", "text": "hello codex"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "greet"}], "encrypted_content": None},
        {"type": "function_call", "id": "fc_1", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "call_1"},
        {"record_type": "state"},
        {"type": "function_call_output", "call_id": "call_1", "output": {"content": "a.py", "success": True}},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]},
    ]))
    assert s.system_prompt == "Be terse." and s.format_version == ""
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant"]
    assert s.messages[2].parts == (ToolResultPart("call_1", "a.py"),)
    assert s.notes[0] == "read as a flat (pre-envelope) Codex rollout: a header line, then bare Responses items"
    assert "skipped 2 `record_type: state` lines (bookkeeping)" in s.notes


# -- reported usage ---------------------------------------------------------------------------------------


def test_token_count_becomes_the_calls_usage_without_cached_tokens_in_input(tmp_path):
    s = load_session(write(tmp_path, [
        meta(), env("event_msg", {"type": "task_started", "model_context_window": 200000}),
        msg("user", "go"), msg("assistant", "first"), usage(12000, 10240, 300),
        usage(12000, 10240, 300),  # the same report again: skipped, not a second call
        event("token_count", info=None, rate_limits={}),  # rate limits only
        call("c1"), usage(13000, 12032, 40, total_in=25000, window=258400), output("c1", "x"),
        usage(14000, 13000, 20, total_in=39000, window=258400),  # no new assistant turn since the previous report (a compaction call)
    ]))
    a1, a2 = s.messages[1], s.messages[2]
    assert a1.usage == Usage(input_tokens=1760, output_tokens=300, cache_read_input_tokens=10240)
    assert a1.usage.window_fill == 12000
    assert a2.usage == Usage(input_tokens=968, output_tokens=40, cache_read_input_tokens=12032)
    assert s.messages[0].usage is None and s.messages[3].usage is None
    assert s.context_window == 258400  # the last report wins over task_started
    notes = "\n".join(s.notes)
    assert "skipped 1 `token_count` line that repeats the previous report" in notes
    assert "token_count (rate limits only) 1" in notes
    assert "1 reported usage (`token_count`) had no assistant turn of their own" in notes


def test_older_token_count_payload_and_task_started_window(tmp_path):
    s = load_session(write(tmp_path, [
        meta(), event("task_started", model_context_window=128000), msg("user", "go"), msg("assistant", "ok"),
        event("token_count", input_tokens=900, cached_input_tokens=512, output_tokens=12, reasoning_output_tokens=0, total_tokens=912),
    ]))
    assert s.messages[1].usage == Usage(388, 12, 512) and s.context_window == 128000


def test_model_changes_are_noted(tmp_path):
    s = load_session(write(tmp_path, [meta(), turn_context("gpt-5-codex"), msg("user", "a"), turn_context("gpt-5.1-codex-max"), msg("user", "b")]))
    assert s.model == "gpt-5.1-codex-max"
    assert "the model changed during the session (gpt-5-codex, gpt-5.1-codex-max); the last is used" in s.notes


# -- compaction ---------------------------------------------------------------------------------------------

SUMMARY = "Fixed rounding in shares(); tests pass; nothing committed."


def compacted_rollout(tmp_path: Path, payload: dict[str, Any]) -> str:
    return write(tmp_path, [
        meta(), item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions/>"}]}),
        msg("user", "Fix the split"), msg("assistant", "Reading ledger.py."), call("c1"), usage(30000, 20000, 100),
        output("c1", "x" * 40000), msg("assistant", "Fixed."), usage(41000, 30000, 50, total_in=71000),
        env("compacted", payload, "2025-10-14T10:00:00.000Z"), event("context_compacted"),
        msg("user", "Now add CSV export"), msg("assistant", "Done."), usage(9000, 0, 20, total_in=80000),
    ])


def test_compaction_with_replacement_history_is_a_recorded_summary(tmp_path):
    history = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions/>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the split"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Summary so far: " + SUMMARY}]},
        {"type": "compaction", "encrypted_content": "e" * 13412},
    ]
    s = load_session(compacted_rollout(tmp_path, {"message": "", "replacement_history": history}))
    assert [m.role for m in s.messages] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    (c,) = s.compactions
    assert c.before_index == 5 and c.pre_tokens == 41000  # the window the last call before it reported
    (summary,) = s.summaries
    assert summary.covers == ("L3", "L4", "L7", "L8") and summary.messages_covered == 4  # the system message stays
    assert summary.text == ("[user]\nFix the split\n\n[user]\nSummary so far: " + SUMMARY +
                            "\n\n[assistant]\n[compaction: encrypted, 13,412 characters]")
    assert summary.created_at == "2025-10-14T10:00:00.000Z"
    assert s.summary_start_turns == (5,)
    assert any(n.startswith("left 1 developer message of replacement histories out of their summaries") for n in s.notes)
    assert "skipped 1 `event_msg` line that is not context (context_compacted 1)" in s.notes


def test_legacy_compaction_summarised_by_its_message(tmp_path):
    s = load_session(compacted_rollout(tmp_path, {"message": SUMMARY}))
    assert s.summaries[0].text == SUMMARY and s.compactions[0].before_index == 5
    assert any("without a replacement history" in n for n in s.notes)


@pytest.mark.parametrize("policy", ["supyagent", "mnesis", "missy-consolidator", "missy", "categories"])
def test_every_policy_sends_the_summary_instead_of_what_it_covers(tmp_path, policy):
    s = load_session(compacted_rollout(tmp_path, {"message": SUMMARY, "replacement_history": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": SUMMARY}]}]}))
    plan = plan_session(s, policy, store=CountStore())
    decisions = [m.decision for m in plan.messages]
    assert decisions[1:5] == [Decision.SUMMARIZED] * 4, decisions
    assert decisions[0] is Decision.KEPT and all(d is not Decision.SUMMARIZED for d in decisions[5:])
    assert any(SUMMARY in (p.text or "") for p in plan.summaries)


def test_the_replay_drops_at_the_compaction(tmp_path):
    s = load_session(compacted_rollout(tmp_path, {"message": SUMMARY}))
    timeline = simulate(s, "mnesis")
    after = timeline.step_of(s.compactions[0].before_index)  # the first call after the compaction
    assert after == 2 and timeline.turns[after].tokens_sent < timeline.turns[after - 1].tokens_sent / 4


# -- bad input: one line naming file, line and field ------------------------------------------------------


@pytest.mark.parametrize(("lines", "expected"), [
    ([meta(), "{not json", msg("user", "a")], r"bad.jsonl:2: invalid JSON: "),
    ([meta(), '{"type": "response_item", "payload": {"type": "message", "role": "user", "content": "cut', msg("user", "a")],
     r"bad.jsonl:2: truncated JSON line: "),
    ([meta(), env("response_item", "text")], "bad.jsonl:2: payload: expected an object, got a string"),
    ([meta(), [1, 2]], "bad.jsonl:2: expected an object, got a list"),
    ([meta(), item({"type": "function_call", "arguments": "{}", "call_id": "c"})], "bad.jsonl:2: payload.name: is required"),
    ([meta(), item({"type": "message", "role": "robot", "content": "x"})], "bad.jsonl:2: payload.role: unknown role 'robot'"),
    ([meta(), item({"type": "message", "role": "user", "content": 5})], "bad.jsonl:2: payload.content: expected a string or a list"),
    ([meta(), item({"role": "user", "content": [{"text": "no type"}]})], "bad.jsonl:2: payload.content[0].type: is required"),
    ([meta(), env("compacted", {"replacement_history": {"a": 1}})], "bad.jsonl:2: payload.replacement_history: expected a list"),
    ([meta(), env("event_msg", {"type": "token_count", "info": {"last_token_usage": {"input_tokens": "many"}}})],
     "bad.jsonl:2: payload.info.last_token_usage.input_tokens: expected an integer"),
    ([meta(), env("response_item", {"no": "type"})], "bad.jsonl:2: payload.type: is required"),
])
def test_bad_input_is_one_line(tmp_path, lines, expected):
    path = write(tmp_path, lines, "bad.jsonl")
    with pytest.raises(LoadError) as info:
        load_session(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(path + ":")
    assert expected in message, message


def test_a_last_line_cut_mid_record_is_skipped_with_a_note(tmp_path):
    path = write(tmp_path, [meta(), msg("user", "hi"), msg("assistant", "hello"), '{"timestamp": "x", "type": "response_item", "payload": {"ty'],
                 end="")
    s = load_session(path)
    assert [m.text for m in s.messages] == ["hi", "hello"]
    assert "skipped the last line (4): it ends mid-record, as a session still being written (or one that crashed) leaves it" in s.notes


def test_a_cut_line_that_is_not_the_last_is_an_error(tmp_path):
    path = write(tmp_path, [meta(), '{"type": "response_item", "payload": {"ty', msg("user", "hi")])
    with pytest.raises(LoadError, match=r":2: truncated JSON line"):
        load_session(path)


def test_a_cut_last_line_of_another_format_is_skipped_too(tmp_path):
    # Issue 21: every JSONL loader reads a live or crashed session up to its cut-off last line.
    path = write(tmp_path, [{"role": "user", "content": "a"}, '{"role": "assistant", "content": "b'], end="")
    s = load_session(path)
    assert [m.text for m in s.messages] == ["a"]
    assert any(n.startswith("skipped the last line (2)") for n in s.notes)


def test_cli_errors_are_one_line_with_exit_2(tmp_path, capsys):
    path = write(tmp_path, [meta(), item({"type": "function_call", "arguments": "{}", "call_id": "c"})], "bad.jsonl")
    assert main(["plan", path]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bad.jsonl:2: payload.name: is required" in err


# -- the sample and the real rollouts -------------------------------------------------------------------------


def test_sample_rollout():
    s = load_session(str(SAMPLE))
    roles = Counter(m.role for m in s.messages)
    assert roles == {"tool": 28, "assistant": 23, "user": 5, "system": 1}
    assert s.model == "gpt-5-codex" and s.format_version == "0.46.0" and s.context_window == 272000
    assert s.system_prompt.startswith("You are Codex, a coding agent")
    assert len(s.tool_pairs) == 28 and s.tool_call_problems == ()
    assert {c.name for m in s.messages for c in m.tool_calls} == {"shell", "apply_patch", "update_plan"}
    (c,) = s.compactions
    assert c.before_index == 39 and s.summaries[0].messages_covered == 38
    assert "Summary of the work so far" in s.summaries[0].text
    assert sum(m.usage is not None for m in s.messages) == 23


def raw_lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (REAL / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def raw_counts(name: str) -> Counter[str]:
    """What a reader counts in the file itself, without ctxviz."""
    counts: Counter[str] = Counter()
    reports = set()
    for r in raw_lines(name):
        p = r.get("payload", {})
        if r["type"] == "response_item":
            kind = p["type"]
            counts[f"{kind}:{p['role']}" if kind == "message" else kind] += 1
        elif r["type"] == "event_msg":
            counts[f"event:{p['type']}"] += 1
            if p["type"] == "token_count" and p.get("info"):
                reports.add(json.dumps(p["info"]["total_token_usage"], sort_keys=True))
        else:
            counts[r["type"]] += 1
    counts["distinct usage reports"] = len(reports)
    return counts


#: For each real file: messages by role, tool calls, unanswered calls, reported-usage messages, version, model, window.
EXPECTED = {
    "agent-history-codex-exec-session-01.jsonl": ({"user": 2, "system": 1, "assistant": 1}, 0, 0, 1, "0.135.0", "gpt-5.5", 258400),
    "codemie-rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl":
        ({"tool": 102, "assistant": 66, "user": 3, "system": 1}, 102, 0, 66, "0.125.0", "gpt-5.5", 258400),
    "codemie-rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl":
        ({"tool": 38, "assistant": 20, "user": 3}, 38, 0, 0, "0.128.0-alpha.1", "", 0),
    "localpush-rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl":
        ({"tool": 104, "assistant": 81, "system": 10, "user": 10}, 104, 0, 81, "0.104.0-alpha.1", "gpt-5.3-codex", 258400),
    "localpush-rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl":
        ({"tool": 118, "assistant": 28, "system": 4, "user": 3}, 118, 0, 28, "0.104.0-alpha.1", "gpt-5.3-codex", 258400),
    "localpush-rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl":
        ({"tool": 143, "assistant": 83, "system": 15, "user": 13}, 144, 1, 83, "0.104.0-alpha.1", "gpt-5.3-codex", 258400),
    "localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl":
        ({"tool": 347, "assistant": 269, "system": 45, "user": 42}, 347, 0, 269, "0.104.0-alpha.1", "gpt-5.3-codex", 258400),
    "localpush-rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl":
        ({"system": 4, "user": 4, "assistant": 1}, 1, 1, 1, "0.104.0-alpha.1", "gpt-5.3-codex", 258400),
    "localpush-rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl":
        ({"assistant": 6, "tool": 5, "system": 4, "user": 3}, 5, 0, 6, "0.104.0-alpha.1", "gpt-5.3-codex", 258400),
}


def test_every_real_file_is_listed_with_its_source():
    sources = (REAL / "SOURCES.md").read_text(encoding="utf-8")
    assert set(REAL_FILES) == set(EXPECTED)
    assert all(f"`{name}`" in sources for name in REAL_FILES)
    assert all((REAL / name).stat().st_size < 1_000_000 for name in REAL_FILES)


@pytest.mark.parametrize("name", REAL_FILES)
def test_real_rollout_reads_as_a_reader_counts_it(name):
    s = load_session(str(REAL / name))
    roles, calls, unanswered, with_usage, version, model, window = EXPECTED[name]
    raw = raw_counts(name)
    assert s.format == "codex" and s.format_version == version and s.model == model and s.context_window == window
    assert Counter(m.role for m in s.messages) == roles
    # Independent of ctxviz: every tool output is a tool message, every developer message a system one,
    # and user messages come from response items, or from the events when the file has none.
    assert roles.get("tool", 0) == raw["function_call_output"] + raw["custom_tool_call_output"]
    assert roles.get("system", 0) == raw["message:developer"]
    assert roles.get("user", 0) == (raw["message:user"] or raw["event:user_message"])
    assert sum(len(m.tool_calls) for m in s.messages) == calls == raw["function_call"] + raw["custom_tool_call"]
    problems = [p for p in s.tool_call_problems if "no tool result in the file answers it" in p[2]]
    assert len(problems) == unanswered and len(s.tool_pairs) == calls - unanswered
    assert sum(m.usage is not None for m in s.messages) == with_usage
    # Every distinct token_count report belongs to exactly one assistant turn (a repeated report is not a new call).
    assert with_usage == raw["distinct usage reports"]
    assert all(m.role == "assistant" for m in s.messages if m.usage is not None)
    if raw["message:assistant"]:
        assert raw["event:agent_message"] == 0 or any(f"{raw['event:agent_message']:,} `event_msg` `agent_message` {'line that repeats' if raw['event:agent_message'] == 1 else 'lines that repeat'}" in n for n in s.notes)
    texts = [m.text for m in s.messages]
    assert len(texts) == len(s.messages) and all(isinstance(t, str) for t in texts)


def test_real_compaction_is_honoured():
    name = "localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
    s = load_session(str(REAL / name))
    (c,) = s.compactions
    line = next(i for i, r in enumerate(raw_lines(name), 1) if r["type"] == "compacted")
    assert line == 1788
    before = [m for m in s.messages if int(m.id[1:]) < line]
    assert c.before_index == len(before) == 507
    (summary,) = s.summaries
    assert set(summary.covers) == {m.id for m in before if m.role != "system"} and summary.messages_covered == 467
    assert summary.text.startswith("[user]\n[REDACTED_TEXT len=32 sha=821fd802]")
    assert summary.text.endswith("[assistant]\n[compaction: encrypted, 51 characters]")  # the redacted placeholder's size
    assert c.pre_tokens == 209950
    plan = plan_session(s, "mnesis", store=CountStore())
    summarized = {m.index for m in plan.messages if m.decision is Decision.SUMMARIZED}
    assert summarized == {m.index for m in before if m.role != "system"}


def test_real_system_prompts():
    full = load_session(str(REAL / "codemie-rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"))
    assert full.system_prompt.startswith("You are Codex, a coding agent based on GPT-5.") and len(full.system_prompt) == 21335
    redacted = load_session(str(REAL / "agent-history-codex-exec-session-01.jsonl"))
    assert redacted.system_prompt == "[REDACTED_BASE_INSTRUCTIONS]"
    assert [m.text for m in redacted.messages] == ["[REDACTED_DEVELOPER_CONTEXT]", redacted.messages[1].text, "[REDACTED_PROMPT]",
                                                   "[REDACTED_ASSISTANT_TEXT]"]
    assert redacted.messages[3].usage == Usage(input_tokens=1675, output_tokens=10, cache_read_input_tokens=20864)


def test_user_words_only_in_events_are_read_from_there():
    s = load_session(str(REAL / "codemie-rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"))
    users = [m for m in s.messages if m.role == "user"]
    assert len(users) == 3 and "# Files mentioned by the user" in users[0].text
    assert s.notes[0].startswith("read as a Codex rollout without `response_item` user messages")


@pytest.mark.parametrize("name", REAL_FILES)
def test_real_rollouts_plan_simulate_and_export(name, tmp_path, capsys):
    s = load_session(str(REAL / name))
    for policy in policy_names():
        plan = plan_session(s, policy, store=CountStore())
        assert len(plan.messages) == len(s.messages) and plan.totals.used > 0
    assert_one_step_per_call(s, simulate(s, "missy"))
    for to in ("openai", "anthropic"):
        out = tmp_path / f"out.{to}.json"
        assert main(["export", str(REAL / name), "--to", to, "-o", str(out)]) == 0
        assert isinstance(json.loads(out.read_text(encoding="utf-8"))["messages"], list)
    capsys.readouterr()


@pytest.mark.parametrize("policy", policy_names())
def test_cli_plan_and_simulate_the_sample_under_every_policy(policy, capsys, tmp_path):
    # ChatSummaryMemoryBuffer summarises on its own what no longer fits its 2,000 tokens: let everything fit.
    extra = ["--set", "token_limit=1000000"] if policy == "llamaindex-chat-summary-memory-buffer" else []
    assert main(["plan", str(SAMPLE), "--policy", policy, "--json", *extra]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert Counter(m["decision"] for m in doc["messages"])["summarized"] == 38
    assert main(["simulate", str(SAMPLE), "--policy", policy]) == 0
    assert "events:" in capsys.readouterr().out
    for to in ("openai", "anthropic"):
        assert main(["export", str(SAMPLE), "--to", to, "-o", str(tmp_path / f"{to}.json")]) == 0


@pytest.mark.parametrize("first", [{"type": ["session_meta"], "payload": {}}, {"type": {"k": 1}, "payload": {}},
                                   {"id": "x", "timestamp": TS, "instructions": ["not text"]}])
def test_unhashable_or_odd_first_lines_never_crash(tmp_path, first):
    path = write(tmp_path, [first, msg("user", "hi")])
    try:
        load_session(path)
    except LoadError as exc:
        assert "\n" not in str(exc)


MODEL_SIDE_ITEMS = {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
#: Events that stand between two responses rather than inside one.
BETWEEN_RESPONSES = {"token_count", "user_message", "task_started", "task_complete", "turn_aborted", "context_compacted"}


def _model_side(record: dict[str, Any]) -> bool:
    payload = record.get("payload") or {}
    if record.get("type") == "response_item":
        return payload.get("type") in MODEL_SIDE_ITEMS or (payload.get("type") == "message" and payload.get("role") == "assistant")
    return record.get("type") == "event_msg" and payload.get("type") not in BETWEEN_RESPONSES  # the response's UI copies and progress


def as_codex_039(lines: list[str]) -> list[str]:
    """A newer rollout in Codex 0.39's order: each call's `token_count` moved from after the
    response's items (and their UI copies) to just before them; the version said to be 0.39.0."""
    records = [json.loads(line) for line in lines if line.strip()]
    out: list[dict[str, Any]] = []
    for record in records:
        if record.get("type") == "session_meta":
            record = {**record, "payload": {**record["payload"], "cli_version": "0.39.0"}}
        payload = record.get("payload") or {}
        if record.get("type") == "event_msg" and payload.get("type") == "token_count" and payload.get("info"):
            at = len(out)
            while at > 0 and _model_side(out[at - 1]):
                at -= 1
            out.insert(at, record)
        else:
            out.append(record)
    return [json.dumps(r) + "\n" for r in out]


@pytest.mark.parametrize("name", ["localpush-rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
                                  "localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
                                  "codemie-rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"])
def test_codex_039_writes_each_report_before_its_response(tmp_path: Path, name: str) -> None:
    """Codex 0.39 writes turn_context, then token_count, then the response's items. A real newer
    rollout rewritten into that order reads with every report on the same call as the original:
    none credited to the call before, none lost at the start, the last on the final answer."""
    lines = (REAL / name).read_text(encoding="utf-8").splitlines(keepends=True)
    original = load_session(str(REAL / name))
    path = tmp_path / "rollout-039.jsonl"
    path.write_text("".join(as_codex_039(lines)), encoding="utf-8")
    old = load_session(str(path))
    assert old.format_version == "0.39.0"
    reported = [(m.index, m.role, m.usage) for m in original.messages if m.usage is not None]
    assert len(reported) > 3
    assert [(m.index, m.role, m.usage) for m in old.messages if m.usage is not None] == reported
    assert [m.text for m in old.messages] == [m.text for m in original.messages]


def _tasks_around_a_compaction(tmp_path: Path, shape: str) -> str:
    """A rollout whose compaction sits in a task of its own (`/compact`), mid-turn after a tool
    output (automatic), at the start of a turn before its items (automatic), or with no task events."""
    compaction = env("compacted", {"message": "Summary so far: " + SUMMARY}, "2025-10-14T10:00:00.000Z")
    turn = [msg("user", "Fix the split"), call("c1"), usage(30000, 20000, 100), output("c1", "x" * 400), msg("assistant", "Fixed."),
            usage(41000, 30000, 50)]
    started, done = event("task_started", model_context_window=272000), event("task_complete", last_agent_message=None)
    lines: list[Any] = [meta(), started, *turn, done]
    if shape == "own task":
        lines += [started, usage(41000, 30000, 50), compaction, event("context_compacted"), done, started, msg("user", "Next"), done]
    elif shape == "mid-turn":
        lines += [started, msg("user", "Next"), call("c2"), usage(42000, 40000, 60), output("c2", "y" * 400), compaction,
                  event("context_compacted"), msg("assistant", "Done."), done]
    elif shape == "turn start":
        lines += [started, compaction, event("context_compacted"), msg("user", "Next"), msg("assistant", "Done."), done]
    else:  # an older rollout: no task events
        lines = [meta(), *turn, compaction, msg("user", "Next")]
    return write(tmp_path, lines)


@pytest.mark.parametrize(("shape", "trigger"), [("own task", "manual"), ("mid-turn", "auto"), ("turn start", "auto"), ("no tasks", "")])
def test_a_compaction_is_manual_when_it_is_a_task_of_its_own(tmp_path, shape, trigger):
    """Codex's `compacted` line does not say what started it. `/compact` runs as a task that records
    no item; an automatic compaction happens in a turn, between or before its items. Where the file
    has no task events the trigger stays unknown."""
    s = load_session(_tasks_around_a_compaction(tmp_path, shape))
    (c,) = s.compactions
    assert c.trigger == trigger


def test_the_bundled_and_the_real_compactions_read_as_what_they_were():
    """The sample's `/compact` (README: a manual one) and the real rollout's, mid-turn after a tool output."""
    assert [c.trigger for c in load_session(str(SAMPLE)).compactions] == ["manual"]
    real = load_session(str(REAL / "localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"))
    assert [c.trigger for c in real.compactions] == ["auto"]


@pytest.mark.parametrize("shape", ["own task", "mid-turn", "turn start"])
def test_a_followed_rollout_reads_the_trigger_as_a_full_load(tmp_path, shape):
    """Followed line by line (the loader carries its load on), the compaction's trigger is settled by
    the lines after it as a full load settles it, and is unknown ("") until they come."""
    from ctxviz.io.follow import Follower

    source = Path(_tasks_around_a_compaction(tmp_path, shape))
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    whole = load_session(str(source))
    path = tmp_path / "followed.jsonl"
    path.write_text("", encoding="utf-8")
    follower = Follower(path)
    seen = []
    for line in lines:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(line)
        try:
            follower.poll()
        except LoadError:  # (nothing loadable yet)
            continue
        seen.append(tuple(c.trigger for c in follower.session.compactions))
    assert follower.session.compactions == whole.compactions
    assert seen[-1] == (whole.compactions[0].trigger,) and set(seen) <= {(), ("",), (whole.compactions[0].trigger,)}
