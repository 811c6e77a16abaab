"""gemini-cli-compression reads a Claude Code log's user messages from their text.

Gemini CLI's user records and Claude Code's user lines both say `"type": "user"`. A prompt engineer
who opens a Claude Code log under gemini-cli-compression to ask "when would Gemini CLI compress
this?" needs every user message and tool result counted: they were once estimated at 0 tokens,
half the log, because the Claude Code line was taken for a Gemini CLI record with no content.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ctxviz.engine.policies.gemini.compression import measure_message
from ctxviz.engine.tokenizers import get_tokenizer
from ctxviz.io.loaders import load_session

DATA = Path(__file__).parent / "data" / "real"


@pytest.mark.parametrize("name", ["tugtool-compact-native.jsonl", "agentcmd-full-session-two.jsonl"])
def test_claude_code_user_messages_are_counted_from_their_text(name: str) -> None:
    session = load_session(DATA / "claude_code" / name)
    tokenizer = get_tokenizer("gemini-cli")
    users = [m for m in session.messages if m.role in ("user", "tool")]
    assert users
    for m in users:
        bare = dataclasses.replace(m, raw=None)  # the same message as a chat-format file gives it
        assert measure_message(m, tokenizer) == measure_message(bare, tokenizer), m.index
    assert sum(measure_message(m, tokenizer) for m in users) > 0


def test_gemini_cli_records_are_still_read_as_gemini_cli_writes_them() -> None:
    logs = sorted((DATA / "gemini_cli").glob("*.json"))
    assert logs
    session = load_session(logs[0])
    tokenizer = get_tokenizer("gemini-cli")
    users = [m for m in session.messages if m.role == "user" and isinstance(m.raw, dict) and m.raw.get("type") == "user"]
    assert users
    # A Gemini CLI user record is counted from the record's own parts, as Gemini CLI estimates it.
    assert all(measure_message(m, tokenizer) > 0 for m in users if m.text.strip())
