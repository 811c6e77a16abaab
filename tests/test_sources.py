"""`plan --json` says where each context entry comes from and what each summary covers;
`simulate --json` says what each summary or compaction covers (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.io.loaders import load_session

SAMPLES = Path(__file__).parent.parent / "sample_sessions"


def run_json(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("sample", "policy"), [("claude_code_compaction.jsonl", "autogen-head-and-tail"),
                                                ("claude_code_compaction.jsonl", "missy"),
                                                ("codex_rollout.jsonl", "langchain-trim"),
                                                ("coding_agent.langchain.json", "llamaindex-chat-summary-memory-buffer"),
                                                ("coding_agent.langchain.json", "missy-consolidator"),
                                                ("support_chat.yaml", "gemini-cli-compression")])
def test_every_context_entry_names_its_message_or_what_it_is(capsys, sample, policy):
    path = SAMPLES / sample
    doc = run_json(capsys, "plan", str(path), "--policy", policy, "--json")
    session = load_session(str(path))
    sources = doc["context_sources"]
    assert len(sources) == len(doc["context"])  # existing keys are untouched; the new one runs beside `context`
    for entry, source in zip(doc["context"], sources, strict=True):
        if source["kind"] == "message":
            m = session.messages[source["index"]]
            assert m.id == source["id"] and entry["role"] == ("user" if m.role == "user" else entry["role"])
        else:
            assert source["index"] is None and source["kind"] in ("system_prompt", "summary", "inserted")
    sent = {s["index"] for s in sources if s["kind"] == "message"}
    sent |= {c["index"] for s in sources if s["kind"] == "system_prompt" for c in s["includes"]}
    assert sent == {m["index"] for m in doc["messages"] if m["decision"] in ("kept", "truncated", "replaced")}
    summarized = {m["id"] for m in doc["messages"] if m["decision"] == "summarized"}
    covered = {c["id"] for s in sources if s["kind"] == "summary" for c in s["covers"]}
    covered |= {c["id"] for s in doc["summaries"] for c in s["covers"]}
    assert summarized <= covered  # every summarised message is covered by a summary the document names


def test_a_recorded_compaction_names_the_messages_it_covers(capsys):
    path = SAMPLES / "claude_code_compaction.jsonl"
    session = load_session(str(path))
    doc = run_json(capsys, "plan", str(path), "--policy", "claude-code", "--json")
    assert [c["id"] for c in doc["summaries"][0]["covers"]] == list(session.summaries[0].covers)
    summary = next(s for s in doc["context_sources"] if s["kind"] == "summary")
    assert summary["summary"] == 0 and summary["covers"] == doc["summaries"][0]["covers"]
    assert all(session.messages[c["index"]].id == c["id"] for c in summary["covers"])


def test_simulate_json_lists_what_each_summary_covers(capsys):
    path = SAMPLES / "coding_agent.langchain.json"
    doc = run_json(capsys, "simulate", str(path), "--policy", "langchain-summarization", "--set", "trigger=tokens=4000",
                   "--set", "keep=messages=6", "--json")
    made = [s for s in doc["summaries"] if s["source"] == "replay"]
    assert made and all(s["covers"] and s["turn"] is not None for s in made)
    events = [e for e in doc["events"] if e["kind"] == "summary"]
    assert len(events) == len(made)
    for event, summary in zip(events, made, strict=True):
        assert event["turn"] == summary["turn"] and event["covers"] == summary["covers"]
    session = load_session(str(path))
    assert all(session.messages[c["index"]].id == c["id"] for s in made for c in s["covers"])
    for key in ("policy", "params", "pair_safe", "turns", "events", "versus_plan"):  # the keys that were there stay
        assert key in doc
