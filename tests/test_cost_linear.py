"""`simulate --cost` does per step work that does not grow with the session's length.

A plain chat of 6,000 messages took 8.7 s with `--cost` against 0.4 s without: pricing each step
built a plan row (its reason sentence included) for every message of the request, and planning
each step's prefix derived the prefix session's columns again, message by message. These tests
count that work (no timing): no plan row is built while pricing, and a replay's prefix takes its
columns from the whole session's, which are what the prefix would derive itself.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ctxviz.engine.caching import cache_costs, message_key, request_items, shared_prefix
from ctxviz.engine.plan_rows import Rows, decided_at
from ctxviz.engine.policies.missy.parts import invisible_call_notes
from ctxviz.engine.prefix_columns import history_index_array, prefix_source
from ctxviz.engine.replay_contract import state
from ctxviz.engine.session import Session
from ctxviz.engine.simulate import simulate
from ctxviz.io.loaders import load_session

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


def _chat(path: Path, n: int) -> Session:
    """A plain chat of `n` messages in ctxviz's YAML format."""
    words = "context window cache prefix request model reply tool summary budget".split()
    lines = ["ctxviz: 1", "model: gpt-4o", "messages:"]
    for i in range(n):
        text = " ".join(words[(i + k) % len(words)] for k in range(20 + (i * 37) % 200))
        lines += [f"- role: {('user', 'assistant')[i % 2]}", f"  content: {text}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_session(path)


def test_pricing_a_replay_builds_no_plan_row(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    built = 0
    row = Rows._row

    def counting(self: Rows, i: int):  # type: ignore[no-untyped-def]
        nonlocal built
        built += 1
        return row(self, i)

    timeline = simulate(_chat(tmp_path / "chat.yaml", 400), "missy")
    monkeypatch.setattr(Rows, "_row", counting)
    report = cache_costs(timeline)
    assert len(report.turns) == len(timeline.turns) == 200
    assert built == 0


@pytest.mark.parametrize("name", ["support_chat.yaml", "coding_agent.yaml", "claude_code_compaction.jsonl", "codex_rollout.jsonl"])
def test_a_prefix_takes_the_columns_it_would_derive(name: str) -> None:
    session = load_session(SAMPLES / name)
    for index in range(0, len(session.messages), max(1, len(session.messages) // 25)):
        seeded = state(session, "missy", index, ())
        fresh = Session(messages=seeded.messages)  # the same messages, nothing seeded
        assert seeded.system_and_history == fresh.system_and_history
        assert seeded.history_columns == fresh.history_columns
        assert seeded.message_columns == fresh.message_columns
        assert history_index_array(seeded).tolist() == list(fresh.history_columns[0]) == history_index_array(fresh).tolist()
        source, n = prefix_source(seeded)
        assert source is session.messages and n == index + 1 and prefix_source(fresh) == (fresh.messages, index + 1)
        assert invisible_call_notes(seeded) == invisible_call_notes(fresh)


def test_decisions_read_from_columns_are_the_rows() -> None:
    timeline = simulate(load_session(SAMPLES / "support_chat.yaml"), "missy")
    plan = timeline.plan_at(len(timeline.turns) // 2)
    assert isinstance(plan.messages, Rows)
    at = [i for i in plan.context_index if i is not None]
    decisions, sent = decided_at(plan.messages, at)
    assert decisions == [plan.messages[i].decision for i in at] and sent == [plan.messages[i].sent_tokens for i in at]
    assert decided_at(tuple(plan.messages), at) == (decisions, sent)
    keys = [key for key, _ in request_items(plan, timeline.counts.text)]
    assert [k for k in keys if k[0] == "m"] == [message_key(plan, i) for i in at]
    assert isinstance(history_index_array(timeline.session), np.ndarray)


def test_the_shared_prefix_is_the_item_by_item_walk() -> None:
    """`shared_prefix` finds the first difference at C speed; it must say what walking the items
    one by one said (the tokens before the first differing key, and whether `after` extends `before`)."""
    import random

    def walked(before: list, after: list) -> tuple[int, bool]:  # type: ignore[type-arg]
        tokens = 0
        for (key_a, n), (key_b, _) in zip(before, after, strict=False):
            if key_a != key_b:
                return tokens, False
            tokens += n
        return tokens, len(after) >= len(before)

    rng = random.Random(28)
    for _ in range(5000):
        before = [(("m", rng.randint(0, 3)), rng.randint(0, 9)) for _ in range(rng.randint(0, 8))]
        after = [(("m", rng.randint(0, 3)), rng.randint(0, 9)) for _ in range(rng.randint(0, 8))]
        if rng.random() < 0.5:
            after = before[: rng.randint(0, len(before))] + after
        assert shared_prefix(before, after) == walked(before, after)
