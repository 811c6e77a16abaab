"""Reading third-party logs right: unknown blocks kept, server tools in their turn, system turns
mid-conversation, lossless Anthropic export, fine-tuning JSONL, `ctxviz info`, and what the
provider reported beside the replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.session import OpaquePart, ToolCallPart
from ctxviz.errors import LoadError
from ctxviz.io.exporters import export
from ctxviz.io.info import session_facts
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).parent.parent


def write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


SERVER_TOOLS = {"model": "claude-sonnet-4-5", "system": "Be brief.", "messages": [
    {"role": "user", "content": "What is new in ctxviz?"},
    {"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "ctxviz release"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
         "content": [{"type": "web_search_result", "title": "ctxviz 0.2", "url": "https://example.org/ctxviz", "encrypted_content": "EqgfCio"}]},
        {"type": "bash_code_execution_tool_result", "tool_use_id": "srvtoolu_2", "content": {"type": "bash_code_execution_result", "stdout": "42", "stderr": ""}},
        {"type": "text", "text": "Version 0.2 shipped.", "cache_control": {"type": "ephemeral"}}]},
    {"role": "user", "content": [{"type": "fallback", "reason": "unsupported"}, {"type": "text", "text": "Thanks"}]},
]}


def test_unknown_blocks_are_kept_as_opaque_parts_with_a_counted_note(tmp_path, capsys):
    session = load_session(write(tmp_path, "s.json", SERVER_TOOLS))
    assert [m.role for m in session.messages] == ["user", "assistant", "user"]
    fallback = session.messages[2].parts[0]
    assert isinstance(fallback, OpaquePart) and fallback.type == "fallback" and "unsupported" in fallback.text
    assert "kept 1 `fallback` block ctxviz does not model as opaque text (counted and shown as-is)" in session.notes
    code, out, _ = run(capsys, "plan", str(tmp_path / "s.json"))
    assert code == 0 and "note: kept 1 `fallback` block" in out
    plan = plan_session(session)
    assert plan.messages[2].tokens > plan_session(load_session(write(tmp_path, "t.json", {
        **SERVER_TOOLS, "messages": [*SERVER_TOOLS["messages"][:2], {"role": "user", "content": "Thanks"}]}))).messages[2].tokens


def test_server_tools_stay_inside_their_assistant_turn(tmp_path):
    session = load_session(write(tmp_path, "s.json", SERVER_TOOLS))
    assistant = session.messages[1]
    assert [type(p).__name__ for p in assistant.parts] == ["OpaquePart", "OpaquePart", "OpaquePart", "TextPart"]
    assert assistant.parts[0].text == 'web_search({"query": "ctxviz release"})'
    assert "ctxviz 0.2\nhttps://example.org/ctxviz" == assistant.parts[1].text and assistant.parts[2].text == "42\n"
    assert not any(isinstance(p, ToolCallPart) for m in session.messages for p in m.parts)
    assert session.tool_pairs == () and plan_session(session, options=None).orphans == ()
    request = json.loads(export(plan_session(session), session, "anthropic").text)
    blocks = request["messages"][1]["content"]
    assert [b["type"] for b in blocks] == ["server_tool_use", "web_search_tool_result", "bash_code_execution_tool_result", "text"]
    assert all(b["type"] != "tool_use" for m in request["messages"] for b in m["content"])


def test_anthropic_export_keeps_what_the_file_had(tmp_path):
    doc = {"model": "claude-sonnet-4-5", "system": "s", "messages": [
        {"role": "user", "content": [{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "spec"}, "title": "Spec",
                                      "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "Read it"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "plan", "signature": "sig=="},
                                          {"type": "tool_use", "id": "t1", "name": "run", "input": {"cmd": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True}]},
        {"role": "assistant", "content": "It failed."}]}
    session = load_session(write(tmp_path, "a.json", doc))
    request = json.loads(export(plan_session(session), session, "anthropic").text)
    assert request["messages"][:3] == doc["messages"][:3]  # cache_control, the document, the signature, is_error
    assert request["messages"][3] == {"role": "assistant", "content": [{"type": "text", "text": "It failed."}]}


def test_a_system_turn_mid_conversation_is_read(tmp_path):
    anthropic = {"model": "claude-sonnet-4-5", "system": "s", "messages": [
        {"role": "user", "content": "a"}, {"role": "system", "content": "Reminder: be brief."}, {"role": "assistant", "content": [{"type": "text", "text": "b"}]}]}
    openai = [{"role": "user", "content": "a"}, {"role": "system", "content": "Reminder"}, {"role": "assistant", "content": "b"}]
    assert [m.role for m in load_session(write(tmp_path, "a.json", anthropic)).messages] == ["user", "system", "assistant"]
    assert [m.role for m in load_session(write(tmp_path, "o.json", openai)).messages] == ["user", "system", "assistant"]


def test_independent_conversations_are_named_and_one_can_be_picked(tmp_path, capsys):
    lines = "".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]}) + "\n" for i in range(4))
    path = write(tmp_path, "train.jsonl", lines)
    with pytest.raises(LoadError, match=r"holds 4 independent conversations.*--conversation N \(1 to 4\)"):
        load_session(path)
    session = load_session(path, conversation=3)
    assert [m.text for m in session.messages] == ["q2", "a2"] and "conversation 3 of 4 (line 3)" in session.notes
    code, out, _ = run(capsys, "plan", str(path), "--conversation", "2", "--json")
    assert code == 0 and json.loads(out)["context"][-1]["content"] == "a1"
    code, _, err = run(capsys, "plan", str(path), "--conversation", "7")
    assert code == 2 and "the file holds 4 conversations" in err
    growing = "".join(json.dumps({"messages": [{"role": "user", "content": f"q{j}"} for j in range(i + 1)]}) + "\n" for i in range(3))
    assert len(load_session(write(tmp_path, "requests.jsonl", growing)).messages) == 3  # a log of requests: the last line
    code, _, err = run(capsys, "plan", str(ROOT / "sample_sessions" / "support_chat.yaml"), "--conversation", "2")
    assert code == 2 and "holds one conversation" in err


def test_info_says_what_was_read(capsys):
    sample = ROOT / "sample_sessions" / "claude_code_compaction.jsonl"
    facts = session_facts(load_session(sample))
    session = load_session(sample)
    assert facts["format"] == "claude-code" and facts["messages"] == len(session.messages)
    assert sum(facts["roles"].values()) == facts["messages"]
    assert facts["tool_calls"] == facts["tool_calls_answered"] + facts["tool_calls_unanswered"]
    assert facts["compactions"] and facts["compactions"][0]["trigger"] == "manual"
    assert facts["last_call"]["window_fill"] == session.messages[facts["last_call"]["message"]].usage.window_fill
    code, out, _ = run(capsys, "info", str(sample))
    assert code == 0
    assert "format: Claude Code session (JSONL) (claude-code" in out and f"messages: {facts['messages']:,}" in out
    assert "compactions: before #" in out and "reported usage: on" in out
    code, out, _ = run(capsys, "info", str(sample), "--json")
    assert json.loads(out) == json.loads(json.dumps(facts))


def test_info_counts_pairs_that_are_broken_in_the_file(tmp_path, capsys):
    chat = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                                                                   {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "tool", "tool_call_id": "zz", "content": "stray"}]
    facts = session_facts(load_session(write(tmp_path, "c.json", chat)))
    assert (facts["tool_calls"], facts["tool_calls_answered"], facts["tool_calls_unanswered"]) == (2, 1, 1)
    assert (facts["tool_results"], facts["tool_results_without_call"]) == (2, 1)
    code, out, _ = run(capsys, "info", str(tmp_path / "c.json"))
    assert "tool calls: 2 (1 answered, 1 unanswered in the file); tool results: 2 (1 without their call in the file)" in out


def test_long_orphan_lists_say_how_many_more(tmp_path, capsys):
    chat = [{"role": "user", "content": "go"}] + [{"role": "tool", "tool_call_id": f"gone{i}", "content": "x"} for i in range(14)]
    code, out, _ = run(capsys, "plan", str(write(tmp_path, "o.json", chat)))
    assert "14 broken tool-call pairs" in out and "... and 4 more" in out


def test_the_reported_fill_and_the_unseen_prompt(capsys):
    sample = ROOT / "sample_sessions" / "claude_code_compaction.jsonl"
    session = load_session(sample)
    plan = plan_session(session)
    rep = plan.reported
    first = next(m for m in session.messages if m.usage is not None)
    last = [m for m in session.messages if m.usage is not None][-1]
    assert (rep.first_index, rep.first_window_fill, rep.last_index, rep.last_window_fill) == (first.index, first.usage.window_fill, last.index, last.usage.window_fill)
    # Claude Code logs hold no system prompt or tools: the first call's input is mostly them
    assert not session.system_prompt and not session.tools
    assert rep.unseen == round(first.usage.window_fill - rep.visible_before_first, -2) and rep.unseen > 10_000
    assert any("suggests about" in n for n in plan.notes)
    code, out, _ = run(capsys, "plan", str(sample), "--model", "claude-sonnet-4-5", "--json")
    doc = json.loads(out)
    assert doc["reported"]["last_call"]["window_fill"] == last.usage.window_fill
    without = plan_session(session, options=None)
    assert without.reported.unseen == rep.unseen
    code, text, _ = run(capsys, "plan", str(sample))
    assert f"reported by the provider: {last.usage.window_fill:,} tokens in the window for the last call" in text


def test_the_real_count_includes_the_unseen_prompt():
    import dataclasses

    from ctxviz.engine.checks import real_count
    from ctxviz.engine.counting import CountStore

    sample = ROOT / "sample_sessions" / "claude_code_compaction.jsonl"
    session = load_session(sample)
    plan = plan_session(session)
    store = CountStore()
    with_unseen = real_count(plan, session, "claude-sonnet-4-5", store)
    without = real_count(dataclasses.replace(plan, reported=dataclasses.replace(plan.reported, unseen=0)), session, "claude-sonnet-4-5", store)
    assert with_unseen.tokens - without.tokens == plan.reported.unseen > 0


def test_simulate_reports_the_providers_figure_after_each_turn(capsys):
    sample = ROOT / "sample_sessions" / "claude_code_compaction.jsonl"
    session = load_session(sample)
    code, out, _ = run(capsys, "simulate", str(sample), "--json")
    turns = json.loads(out)["turns"]
    with_usage = [m for m in session.messages if m.usage is not None and m.index > 0]
    # One step per call the log records, beside what the provider reported for that call; a step
    # whose answer carries no usage shows none.
    answered = [t for t in turns if t["reply"] is not None and session.messages[t["reply"]].usage is not None]
    assert [(t["turn"], t["reported_input"]) for t in answered] == [(m.index - 1, m.usage.window_fill) for m in with_usage]
    assert all(t["reported_input"] is None for t in turns if t not in answered)
    code, out, _ = run(capsys, "simulate", str(sample))
    # (line 1 says the log opened under its agent's own policy, claude-code)
    assert "opened under claude-code" in out.splitlines()[1]
    assert "reported" in out.splitlines()[3]


def test_decisions_on_opaque_parts_are_ordinary(tmp_path):
    session = load_session(write(tmp_path, "s.json", SERVER_TOOLS))
    for policy in ("missy", "supyagent", "categories", "mnesis", "missy-consolidator"):
        plan = plan_session(session, policy)
        assert plan.messages[1].decision in (Decision.KEPT, Decision.SUMMARIZED, Decision.TRUNCATED, Decision.DROPPED, Decision.REPLACED)
        for fmt in ("openai", "anthropic", "jsonl", "markdown"):
            export(plan, session, fmt)


def test_anthropic_blocks_in_a_role_content_list_are_read(tmp_path):
    """Cline's api_conversation_history.json and proxy logs: {role, content} with Anthropic blocks."""
    history = [{"role": "user", "content": [{"type": "text", "text": "<task>fix it</task>"}]},
               {"role": "assistant", "content": [{"type": "text", "text": "reading"},
                                                 {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "print(1)"}]},
                                            {"type": "text", "text": "<environment_details>x</environment_details>"}]},
               {"role": "assistant", "content": [{"type": "text", "text": "done"}]}]
    session = load_session(write(tmp_path, "api_conversation_history.json", history))
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert session.tool_pairs == ((1, 2),) and session.messages[2].text == "print(1)"
    assert json.loads(session.messages[1].tool_calls[0].arguments) == {"path": "a.py"}


def test_missy_says_what_its_estimator_cannot_see(tmp_path):
    chat = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.py"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
            {"role": "assistant", "content": "and one more", "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c2", "content": "a.py"}]
    session = load_session(write(tmp_path, "c.json", chat))
    plan = plan_session(session)
    note = next(n for n in plan.notes if n.startswith("missy's estimator"))
    chars = len("read") + len('{"path": "a.py"}') + len("ls") + len("{}")
    assert f"the tool calls of 2 messages ({chars:,} characters of names and arguments)" in note and "1 tool-call-only message counts as the text 'None'" in note
    from ctxviz.engine.tokenizers import get_tokenizer

    assert plan.messages[1].tokens == get_tokenizer("missy").count("None")  # what the note says was measured
    assert not any(n.startswith("missy's estimator") for n in plan_session(load_session(write(tmp_path, "d.json", chat[:1]))).notes)


@pytest.mark.parametrize("name", ["claude_code_compaction.jsonl"])
def test_claude_code_exports_send_back_every_block_of_a_streamed_message(name):
    """A Claude Code assistant message is several streamed lines: its export has all their blocks."""
    session = load_session(ROOT / "sample_sessions" / name)
    plan = plan_session(session, "supyagent", {"context_limit": 1_000_000})
    request = json.loads(export(plan, session, "anthropic").text)
    sent = [session.messages[i] for i in plan.context_index if i is not None and plan.messages[i].decision is Decision.KEPT]
    signatures = sum(1 for m in request["messages"] for b in m["content"] if b["type"] == "thinking" and b.get("signature"))
    assert signatures == sum(1 for m in sent for p in m.parts if type(p).__name__ == "ThinkingPart") > 0
    tool_uses = [b for m in request["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert len(tool_uses) == sum(len(m.tool_calls) for m in sent)
    assert not any(b["type"] == "text" and not b["text"].strip() for m in request["messages"] for b in m["content"])
