"""Issue 21, "Reading files": the loaders read what the frameworks and agents wrote, as they read it.

Each test loads a real file other tools wrote (tests/data/real, sources in each SOURCES.md) or
compares with golden cases recorded by running the framework's own code (tests/golden).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies.langchain import counting as lc
from ctxviz.engine.session import TextPart
from ctxviz.engine.tokenizers import get_tokenizer
from ctxviz.io.loaders import load_session

STORE = CountStore()

REAL = Path(__file__).parent / "data" / "real"

# -- a cut-off last line (a live or crashed session) ------------------------------------------------------

JSONL_LOGS = [
    REAL / "claude_code" / "agentcmd-full-session-two.jsonl",
    REAL / "claude_code" / "tugtool-rewind-branch.jsonl",
    REAL / "codex" / "localpush-rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
    REAL / "gemini_cli" / "aim_matrix_pro.migrated.jsonl",
]


def _cut_last_line(text: str) -> tuple[str, int]:
    """The text with its last record cut in the middle (as an agent that is still writing leaves
    it), and the number of that line."""
    lines = text.rstrip("\n").split("\n")
    last = lines[-1]
    return "\n".join([*lines[:-1], last[: len(last) // 2]]), len(lines)


@pytest.mark.parametrize("path", JSONL_LOGS, ids=[p.name for p in JSONL_LOGS])
def test_a_cut_off_last_line_is_skipped_with_a_note_in_every_jsonl_log(path):
    text = path.read_text(encoding="utf-8")
    cut, last = _cut_last_line(text)
    whole = load_session(str(path), text="\n".join(text.rstrip("\n").split("\n")[:-1]) + "\n")
    got = load_session(str(path), text=cut)
    assert [m.id for m in got.messages] == [m.id for m in whole.messages]
    assert any(n.startswith(f"skipped the last line ({last:,})") or n.startswith(f"skipped the last line ({last})") for n in got.notes), got.notes


@pytest.mark.parametrize("lines", [
    ['{"role": "user", "content": "a"}', '{"role": "assistant", "content": "b'],  # OpenAI chat JSONL
    ['{"type": "human", "data": {"content": "a"}}', '{"type": "ai", "data": {"content": "b'],  # LangChain messages_to_dict lines
])
def test_a_cut_off_last_line_is_skipped_in_the_other_jsonl_formats(tmp_path, lines):
    path = tmp_path / "live.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    s = load_session(str(path))
    assert [m.text for m in s.messages] == ["a"]
    assert any(n.startswith("skipped the last line (2)") for n in s.notes)


# -- LlamaIndex, through the loaders: empty text, the function role, several system messages ---------------

LLAMA_DIR = Path(__file__).parent / "golden" / "llamaindex"
LLAMA_LOADER_GOLDEN = json.loads((LLAMA_DIR / "loader_cases.json").read_text(encoding="utf-8"))


def test_the_loader_golden_file_is_llamaindexs():
    assert LLAMA_LOADER_GOLDEN["framework"] == "llama-index-core" and LLAMA_LOADER_GOLDEN["version"] == "0.14.25"
    files = {c["file"] for c in LLAMA_LOADER_GOLDEN["cases"]}
    assert files == {"openai_empty_content.json", "openai_function_role.json", "openai_several_system.json", "ctxviz_empty_content.yaml"}


@pytest.mark.parametrize("case", LLAMA_LOADER_GOLDEN["cases"], ids=lambda c: f"{c['file']}@{c['token_limit']}")
def test_chat_memory_buffer_through_the_loaders_keeps_what_llamaindex_keeps(case):
    session = load_session(str(LLAMA_DIR / "loaders" / case["file"]))
    plan = plan_session(session, "llamaindex-chat-memory-buffer", {"token_limit": case["token_limit"]}, None, store=STORE)
    assert plan.params["initial_token_count"] == case["initial_token_count"]
    assert [i for i in plan.context_index if i is not None] == case["kept"]
    assert plan.extra["token_count"] == case["token_count"]


def test_an_empty_content_is_an_empty_text_not_no_content():
    session = load_session(str(LLAMA_DIR / "loaders" / "openai_empty_content.json"))
    assert session.messages[2].parts == (TextPart(""),)
    assert session.messages[10].parts[0].kind == "tool_call"  # "content": null stays no content


# -- an empty history is planned as empty ---------------------------------------------------------------

def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from ctxviz.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("text", ['{"messages": []}', "[]", "ctxviz: 1\nmessages: []\n"])
def test_an_empty_history_loads_with_a_note(tmp_path, text):
    path = tmp_path / ("empty.yaml" if text.startswith("ctxviz") else "empty.json")
    path.write_text(text, encoding="utf-8")
    s = load_session(str(path))
    assert s.messages == () and "the session has no messages" in s.notes


@pytest.mark.parametrize("policy", ["langchain-trim", "llamaindex-chat-memory-buffer", "llamaindex-chat-summary-memory-buffer", "missy",
                                    "claude-code", "strands-sliding-window", "autogen-buffered"])
def test_an_empty_history_plans_and_simulates_as_empty(tmp_path, capsys, policy):
    # LangChain's trim_messages([]) and LlamaIndex's ChatMemoryBuffer over an empty store both return [].
    path = tmp_path / "empty.json"
    path.write_text('{"messages": []}', encoding="utf-8")
    plan = plan_session(load_session(str(path)), policy, {}, None, store=STORE)
    assert [i for i in plan.context_index if i is not None] == [] and plan.messages == ()
    code, out, err = _cli(capsys, "simulate", str(path), "--policy", policy)
    assert code == 0 and "internal error" not in err


def test_exporting_an_empty_context_warns_and_strict_refuses(tmp_path, capsys):
    path = tmp_path / "empty.json"
    path.write_text('{"messages": []}', encoding="utf-8")
    code, out, err = _cli(capsys, "export", str(path), "--policy", "langchain-trim", "--to", "openai", "-o", "-")
    assert code == 0 and json.loads(out)["messages"] == []
    assert 'warning: the exported context has no messages (`"messages": []`)' in err
    code, out, err = _cli(capsys, "export", str(path), "--policy", "langchain-trim", "--to", "openai", "-o", "-", "--strict")
    assert code == 1 and out == "" and "nothing written" in err


def test_check_reads_past_an_empty_and_an_unreadable_file(tmp_path, capsys):
    empty, bad, good = tmp_path / "a_empty.json", tmp_path / "b_bad.json", tmp_path / "c_good.json"
    empty.write_text('{"messages": []}', encoding="utf-8")
    bad.write_text('{"messages": [\n{"role": "wizard", "content": "x"}]}', encoding="utf-8")
    good.write_text('{"messages": [{"role": "user", "content": "hello"}]}', encoding="utf-8")
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  max_tokens: 1000\n", encoding="utf-8")
    junit = tmp_path / "out.xml"
    code, out, err = _cli(capsys, "check", str(empty), str(bad), str(good), "--rules", str(rules), "--junit", str(junit))
    assert code == 2
    assert out.strip() == (f"{bad}: readable: could not be checked: line 2: messages[0].role: unknown role 'wizard' "
                           "(expected one of system, user, assistant, tool)")
    assert f"{empty}: the session has no messages" in err
    assert "2 of 3 rules hold over 3 sessions" in err and "1 could not be checked" in err
    xml = junit.read_text(encoding="utf-8")
    assert all(str(p) in xml for p in (empty, bad, good))


# -- exports a provider would refuse: repaired as documented, or refused under --strict ----------------------

CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}


def _session(tmp_path, messages: list[dict]) -> str:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"model": "gpt-4o", "messages": messages}), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("to", ["openai", "jsonl", "anthropic"])
def test_an_export_never_ends_with_an_unanswered_tool_call(tmp_path, capsys, to):
    path = _session(tmp_path, [{"role": "user", "content": "look it up"}, {"role": "assistant", "content": "on it", "tool_calls": [CALL]}])
    code, out, err = _cli(capsys, "export", path, "--policy", "langchain-trim", "--to", to, "-o", "-")
    assert code == 0 and "call_1" not in out and "on it" in out
    assert "fixed: dropped 1 tool" in err
    code, out, err = _cli(capsys, "export", path, "--policy", "langchain-trim", "--to", to, "-o", "-", "--strict")
    assert code == 1 and out == "" and "refused: the request has 1 tool" in err and "dropped" not in err


def test_an_openai_export_drops_a_tool_result_whose_call_was_trimmed(tmp_path, capsys):
    big_call = {**CALL, "function": {"name": "lookup", "arguments": json.dumps({"q": "z" * 4000})}}
    path = _session(tmp_path, [{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": [big_call]},
                               {"role": "tool", "tool_call_id": "call_1", "content": "y" * 4000}, {"role": "user", "content": "thanks"}])
    code, out, err = _cli(capsys, "export", path, "--policy", "langchain-trim", "--set", "max_tokens=1100", "--to", "openai", "-o", "-")
    sent = json.loads(out)["messages"]
    assert code == 0 and [m["role"] for m in sent] == ["user"] and sent[0]["content"] == "thanks"
    assert "fixed: dropped 1 tool message that answers no tool call" in err


# -- Anthropic's hosted tools are exported as they are ------------------------------------------------------

def test_anthropic_server_tools_are_exported_as_they_are(capsys):
    path = REAL / "anthropic" / "pydantic-ai-web-search-tool.request.json"
    original = json.loads(path.read_text(encoding="utf-8"))
    code, out, err = _cli(capsys, "export", str(path), "--policy", "langchain-trim", "--set", "max_tokens=100000", "--to", "anthropic", "-o", "-")
    assert code == 0
    assert json.loads(out)["tools"] == original["tools"]  # {"type": "web_search_20250305", "name": "web_search", ...}


# -- LangChain, through the loader: chunk types and custom roles --------------------------------------------

LC_DIR = Path(__file__).parent / "golden" / "langchain"
LC_LOADER_GOLDEN = json.loads((LC_DIR / "loader_cases.json").read_text(encoding="utf-8"))


def _trim_params(case: dict) -> dict:
    settings = case["settings"]
    params: dict = {"max_tokens": case["max_tokens"]}
    for key in ("start_on", "end_on"):
        if key in settings:
            value = settings[key]
            params[key] = value if isinstance(value, str) else ",".join(value)
    if settings.get("include_system"):
        params["include_system"] = True
    return params


def test_the_langchain_loader_golden_file_is_langchains():
    assert LC_LOADER_GOLDEN["framework"] == "langchain-core" and LC_LOADER_GOLDEN["version"] == "1.8.2"
    types = {t for c in LC_LOADER_GOLDEN["cases"] for t in c["types"]}
    assert {"AIMessageChunk", "HumanMessageChunk", "SystemMessageChunk", "chat"} <= types
    # The case the issue names: end_on="ai" returns [] when the last AI message is a chunk.
    assert any(c["settings"] == {"end_on": "ai"} and c["kept"] == [] for c in LC_LOADER_GOLDEN["cases"])


@pytest.mark.parametrize("case", LC_LOADER_GOLDEN["cases"], ids=lambda c: f"{c['file']}@{c['max_tokens']}{c['settings']}")
def test_trim_messages_through_the_loader_keeps_what_langchain_keeps(case):
    session = load_session(str(LC_DIR / "loaders" / case["file"]))
    assert len(session.messages) == len(case["types"])
    plan = plan_session(session, "langchain-trim", _trim_params(case), None, store=STORE)
    assert [i for i in plan.context_index if i is not None] == case["kept"]


@pytest.mark.parametrize("name", sorted(LC_LOADER_GOLDEN["counts"]))
def test_count_tokens_approximately_through_the_loader_is_langchains(name):
    """Each message, custom roles included (a ChatMessage counts the characters of its own role,
    `critic` or `Critic`), counts as LangChain's count_tokens_approximately([message]) does."""
    session = load_session(str(LC_DIR / "loaders" / name))
    four = get_tokenizer("langchain-approx")
    per_message = [lc.measure(m, four) for m in session.messages]
    assert per_message == LC_LOADER_GOLDEN["counts"][name]["per_message"]
    assert sum(per_message) == LC_LOADER_GOLDEN["counts"][name]["total"]


def test_the_custom_role_cases_cover_what_langchain_treats_apart():
    files = {c["file"] for c in LC_LOADER_GOLDEN["cases"]}
    assert {"custom_roles.messages_to_dict.json", "custom_roles.dumpd.json", "critic_loop.dumpd.json"} <= files
    # A ChatMessage(role="system") first is no system message to include_system: LangChain drops it.
    first_chat = [c for c in LC_LOADER_GOLDEN["cases"] if c["file"].startswith("custom_roles") and c["settings"] == {"include_system": True}]
    assert first_chat and any(0 not in c["kept"] and c["kept"] for c in first_chat)


def test_a_custom_chat_role_is_kept_with_a_note():
    session = load_session(str(LC_DIR / "loaders" / "critic_loop.messages_to_dict.json"))
    critics = [m for m in session.messages if m.raw["data"].get("role") == "critic"]
    assert [m.role for m in critics] == ["user", "user"] and critics[0].text.startswith("too long")
    assert any("custom role 'critic'" in n for n in session.notes)


# -- Claude Code: usage of dropped messages, empty usage, lines written twice, unknown post_tokens ------------
# Each case starts from a real log (tests/data/real/claude_code/SOURCES.md) and changes one line in
# memory to the shape the held-out logs of issue 21 had.

AGENTCMD = REAL / "claude_code" / "agentcmd-full-session-two.jsonl"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _load_records(path: Path, records: list[dict]):
    return load_session(str(path), text="\n".join(json.dumps(r) for r in records) + "\n")


def _window(usage: dict) -> int:
    return usage["input_tokens"] + usage.get("cache_read_input_tokens", 0) + usage.get("cache_creation_input_tokens", 0)


def test_a_whitespace_only_last_reply_keeps_its_reported_usage():
    records = _records(AGENTCMD)
    last = records[-1]
    assert last["type"] == "assistant" and last["message"]["content"][0]["type"] == "text"
    last["message"]["content"] = [{"type": "text", "text": "\n\n"}]  # Claude Code leaves such replies out of later requests
    session = _load_records(AGENTCMD, records)
    assert session.messages[-1].role != "assistant" or session.messages[-1].text.strip()
    from ctxviz.engine.reported import reported_usage

    reported = reported_usage(session)
    assert reported is not None and reported.last_window_fill == _window(last["message"]["usage"])
    assert any("kept the reported usage of 1 whitespace-only" in n for n in session.notes)


def test_an_empty_usage_is_no_report(capsys):
    records = _records(AGENTCMD)
    records[-1]["message"]["usage"] = {}
    session = _load_records(AGENTCMD, records)
    last_assistant = [m for m in session.messages if m.role == "assistant"][-1]
    assert last_assistant.usage is None
    from ctxviz.engine.reported import reported_usage

    reported = reported_usage(session)
    assert reported is not None and reported.last_window_fill == _window(records[38]["message"]["usage"])  # the call before it
    plan = plan_session(session, "claude-code", {}, None, store=STORE)
    assert plan.totals.used > 30000  # not the 0-token "report" plus the messages after it


def test_a_line_written_twice_is_not_a_rewind():
    records = _records(AGENTCMD)
    whole = _load_records(AGENTCMD, records)
    doubled = _load_records(AGENTCMD, [*records[:20], records[19], *records[20:]])
    assert [m.id for m in doubled.messages] == [m.id for m in whole.messages]
    assert not any("rewind" in n for n in doubled.notes)
    assert any("written twice" in n for n in doubled.notes)


def test_post_tokens_is_unknown_when_the_compaction_record_has_none():
    path = REAL / "claude_code" / "tugtool-compact-native.jsonl"
    records = _records(path)
    boundary = next(r for r in records if r.get("subtype") == "compact_boundary")
    assert "postTokens" in boundary["compactMetadata"]
    del boundary["compactMetadata"]["postTokens"]
    session = _load_records(path, records)
    assert session.compactions[0].post_tokens is None
    from ctxviz.io.info import session_facts

    assert session_facts(session)["compactions"][0]["post_tokens"] is None


# -- Amazon Bedrock Converse ------------------------------------------------------------------------------

BEDROCK = REAL / "bedrock"


def test_a_bedrock_converse_request_is_read():
    session = load_session(str(BEDROCK / "pydantic-ai-tool-with-thinking.request.json"))
    assert session.format == "bedrock"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool"]
    assistant = session.messages[1]
    assert [p.kind for p in assistant.parts] == ["thinking", "text", "tool_call"]
    assert assistant.tool_calls[0].name == "get_user_country" and session.messages[2].text == "Mexico"
    assert session.tool_pairs == ((1, 2),)
    assert [t.name for t in session.tools] == ["get_user_country"]
    system = load_session(str(BEDROCK / "pydantic-ai-model.request.json"))
    assert system.format == "bedrock" and system.system_prompt == "You are a chatbot." and system.messages[0].text == "Hello!"


def test_a_bedrock_converse_response_carries_its_usage():
    session = load_session(str(BEDROCK / "pydantic-ai-tool-with-thinking.response.json"))
    assert [m.role for m in session.messages] == ["assistant"]
    assert session.messages[0].usage.input_tokens == 539 and session.messages[0].usage.output_tokens == 106


# -- OpenAI Responses: what comes before a compaction item is not sent ----------------------------------------

def test_input_items_before_a_compaction_item_are_not_context(tmp_path):
    # The /responses/compact answer (real, tests/data/real/responses/SOURCES.md) is the user messages it kept
    # and the compaction item; a request that passes it whole and then asks again sends only the compaction
    # onwards: OpenAI drops the items before it (the recorded usage counts only those).
    compacted = json.loads((REAL / "responses" / "pydantic-ai-compact-messages.compaction.json").read_text(encoding="utf-8"))
    request = json.loads((REAL / "responses" / "pydantic-ai-compact-messages.request.json").read_text(encoding="utf-8"))
    assert [i.get("type") for i in compacted["output"]] == ["message", "message", "compaction"]
    path = tmp_path / "request.json"
    path.write_text(json.dumps({**request, "input": [*compacted["output"], request["input"][-1]]}), encoding="utf-8")
    s = load_session(str(path))
    assert [(m.role, m.parts[0].kind) for m in s.messages] == [("assistant", "opaque"), ("user", "text")]
    assert s.messages[1].text == "And 5+5?"
    assert any(n.startswith("left out the 2 input items before the `compaction` item") for n in s.notes)
    real = load_session(str(REAL / "responses" / "pydantic-ai-compact-messages.request.json"))
    assert [m.role for m in real.messages] == ["assistant", "user"]  # the request as pydantic-ai sent it


# -- Codex: ghost_snapshot items inside a compaction's replacement history are not sent -----------------------

def test_ghost_snapshots_in_a_replacement_history_are_not_summary_text():
    path = REAL / "codex" / "localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
    records = _records(path)
    compacted = next(r for r in records if r["type"] == "compacted")
    plain = _load_records(path, records)
    # What newer Codex writes into replacement histories: its undo snapshots between the messages.
    ghost = {"type": "ghost_snapshot", "ghost_commit": {"id": "4a64dbe748cb7517d3d4ba75fc65861104c63bab",
                                                        "parent": "4272a68afdf63f79a34d5956e90413609dbcbeff",
                                                        "preexisting_untracked_files": [], "preexisting_untracked_dirs": []}}
    history = compacted["payload"]["replacement_history"]
    compacted["payload"]["replacement_history"] = [history[0], ghost, *history[1:-1], ghost, history[-1]]
    with_ghosts = _load_records(path, records)
    assert [s.text for s in with_ghosts.summaries] == [s.text for s in plain.summaries]
    assert "ghost" not in with_ghosts.summaries[0].text
    assert any(n.startswith("left 2 `ghost_snapshot` items out of replacement histories") for n in with_ghosts.notes)
