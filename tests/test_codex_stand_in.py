"""The stand-in summary Codex's compaction writes of the newest live messages, read once per session
(policies/codex/stand_in.py), is `supyagent_snapshot` of those messages byte for byte, whichever
suffixes are asked for and in whatever order: the first ask, the ones within what was read (answered
from the kept columns) and the ones that start earlier (which read only the messages before).

The messages repeat their files, decisions, values and requests (an item's first appearance in a
suffix decides what a section shows), and some have none, or an empty request.
"""

from __future__ import annotations

import dataclasses
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.codex.compaction import plan, plan_records
from ctxviz.engine.policies.codex.stand_in import SuffixSnapshots, suffix_snapshots
from ctxviz.engine.session import Message, Session, TextPart, ToolCallPart, ToolResultPart
from ctxviz.engine.summarizers import supyagent_snapshot

from .columns_equivalence import assert_same_plan

LINES = ["build failed at step 3", "we decided to use sqlite", "see https://example.com/a", "ok", "", "   ",
         "Traceback (most recent call last)", "going with plan b", "error: no such file", "plain words"]
PATHS = ["src/a.py", "b.md", "lib/c.ts", ""]


@st.composite
def messages(draw, least=0):
    out: list[Message] = []
    for i in range(draw(st.integers(least, 40))):
        role = draw(st.sampled_from(["user", "assistant", "assistant", "tool"]))
        text = "\n".join(draw(st.lists(st.sampled_from(LINES), max_size=3)))
        parts: tuple = (TextPart(text),) if text else ()
        if role == "assistant" and draw(st.booleans()):
            paths = draw(st.lists(st.sampled_from(PATHS), max_size=3))
            parts += (ToolCallPart(f"c{i}", draw(st.sampled_from(["write_file", "read"])), json.dumps({"path": " ".join(paths)})),)
        if role == "tool":
            parts = (ToolResultPart(f"c{i}", text or "ok"),)
        out.append(Message(id=f"m{i}", index=i, role=role, parts=parts, name=draw(st.sampled_from(["", "shell"]))))
    return out


@settings(max_examples=200, deadline=None)
@given(live=messages(), data=st.data())
def test_each_suffix_reads_as_supyagents_snapshot_of_it(live, data):
    snapshots = SuffixSnapshots(live)
    for start in data.draw(st.lists(st.integers(0, len(live)), min_size=1, max_size=6)):
        assert snapshots.text(start) == supyagent_snapshot(live[start:]), start


def test_a_later_ask_reads_only_the_messages_before_what_was_read():
    live = [Message(id=f"m{i}", index=i, role="user", parts=(TextPart(f"request {i % 3}"),)) for i in range(10)]
    snapshots = SuffixSnapshots(live)
    snapshots.text(6)
    assert snapshots.read_from == 6
    snapshots.text(8)  # within what was read: nothing read
    assert snapshots.read_from == 6
    assert snapshots.text(2) == supyagent_snapshot(live[2:])
    assert snapshots.read_from == 2


def _codex_session(live: list[Message]) -> Session:
    head = Message(id="env", index=0, role="user", parts=(TextPart("<environment_context>cwd /w</environment_context>"),))
    shifted = [dataclasses.replace(m, index=m.index + 1) for m in live]
    return Session(messages=(head, *shifted), model="gpt-5-codex")


@settings(max_examples=60, deadline=None)
@given(live=messages(least=1), windows=st.lists(st.integers(20, 1500), min_size=2, max_size=5))
def test_replans_that_move_the_window_keep_plan_records_summary(live, windows):
    """One session re-planned as a window slider moves: each compaction's summary reads the live
    messages its request holds, and the later plans take it from what the first read."""
    s = _codex_session(live)
    pol = get_policy("codex-compaction")
    counts = CountStore().get(s, pol.scheme(None, s.model))
    for window in windows:
        params = pol.make_params({"model_context_window": window, "model_auto_compact_token_limit": 10})
        fast, reference = plan(s, params, counts), plan_records(s, params, counts)
        assert_same_plan(fast, reference)
        assert fast.extra["summary_text"] == reference.extra["summary_text"]


def test_the_reading_is_kept_once_per_session_across_estimators():
    live = [Message(id=f"m{i}", index=i, role="tool", parts=(ToolResultPart(f"c{i}", f"error {i % 4}"),)) for i in range(30)]
    s = _codex_session(live)
    pol = get_policy("codex-compaction")
    store = CountStore()
    for tokenizer in (None, "chars4"):
        plan(s, pol.make_params({"model_context_window": 60}), store.get(s, pol.scheme(tokenizer, s.model)))
    kept = s.derived[("codex.stand_in", "live")]
    assert kept is suffix_snapshots(s, [])
    assert kept.read_from < len(kept.messages)
