"""What LlamaIndex's ChatSummaryMemoryBuffer shows its summarising LLM, and so what ctxviz's stand-in
summary of it may hold: each message's text (no images, no tool calls beside text), a message whose
content is "" as its tool calls, a message without a text block not at all.

The prompts are LlamaIndex's own: tests/golden/llamaindex/prompts.json was recorded by
tests/golden/llamaindex/generate_prompts.py with `_get_prompt_to_summarize` of llama-index-core.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.policies.llamaindex.joined import llama_role
from ctxviz.engine.policies.llamaindex.summary_input import shown
from ctxviz.engine.session import TEXT_PARTS, ToolCallPart, part_text
from ctxviz.engine.simulate import simulate
from tests.test_policy_llamaindex import GOLDEN, full_session, spec_message

PROMPTS = json.loads((Path(__file__).parent / "golden" / "llamaindex" / "prompts.json").read_text())


def messages_of(name: str) -> list[Any]:
    if name in GOLDEN["sessions"]:
        return list(full_session(name).messages)
    return [spec_message(i, m) for i, m in enumerate(PROMPTS["extra_sessions"][name])]


def prompt_of(messages: list[Any]) -> str:
    """LlamaIndex's prompt, rebuilt from what ctxviz reads of each message."""
    out = '"Transcript so far: '
    for m in messages:
        view = shown(m)
        if view is None:
            continue
        content = "\n".join(part_text(p) for p in view.parts if isinstance(p, TEXT_PARTS))
        calls = [p for p in view.parts if isinstance(p, ToolCallPart)]
        if calls:
            assert not content
            content = "\n".join(f"Calling a function: {dict(id=c.id, type='function', function=dict(name=c.name, arguments=c.arguments))!s}"
                                for c in calls)
        out += f"{llama_role(m)}: {content}\n\n"
    return out + '"\n\n'


@pytest.mark.parametrize("name", sorted(PROMPTS["prompts"]))
def test_the_summariser_is_shown_what_llamaindex_shows_it(name: str) -> None:
    assert prompt_of(messages_of(name)) == PROMPTS["prompts"][name]


def test_the_branches_are_in_the_golden_prompts() -> None:
    prompt = PROMPTS["prompts"]["branches"]
    assert "Calling a function:" in prompt and "call_3" in prompt  # content "": its calls
    assert "call_1" not in prompt and "call_2" not in prompt  # calls beside text, and a call alone (content None): not shown
    assert "a.png" not in prompt and "first\nsecond" in prompt


def test_the_stand_in_reads_a_call_only_where_llamaindex_shows_it() -> None:
    session = messages_of("branches")
    views = [shown(m) for m in session]
    assert [m.id for m, v in zip(session, views, strict=True) if v is None] == ["m3", "m6"]
    assert [p.id for v in views if v is not None for p in v.parts if isinstance(p, ToolCallPart)] == ["call_3"]


def test_the_replay_equals_the_reference() -> None:
    for name in sorted(GOLDEN["sessions"])[:8]:
        session = full_session(name)
        params = {"token_limit": 60}
        fast = simulate(session, "llamaindex-chat-summary-memory-buffer", params)
        slow = simulate(session, "llamaindex-chat-summary-memory-buffer", params, incremental=False)
        assert fast.turns == slow.turns
        assert [s.text for s in fast.summaries] == [s.text for s in slow.summaries]
