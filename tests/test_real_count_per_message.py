"""The real count converts each message to its sent form once: a followed log's grown session (the
same message objects and new ones) converts only the new ones on its next plan, and the count is the
one converting every message again gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxviz.engine import checks
from ctxviz.engine.checks import image_rate_model, real_count
from ctxviz.engine.counting import CountStore, extend_counts
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.session import Message, Session
from ctxviz.engine.tokenizers import TiktokenTokenizer, count_openai_chat, real_encoding_for_model
from ctxviz.io.follow import Follower
from ctxviz.io.loaders import load_session

REAL = Path(__file__).resolve().parent / "data" / "real"
LOGS = [REAL / "claude_code" / "spotter-4d5611e5.jsonl", REAL / "claude_code" / "tugtool-compact-native.jsonl",
        sorted((REAL / "codex").glob("codemie-rollout-*.jsonl"))[0]]
#: claude-code hands the kept messages over as themselves; the others build some or all of their
#: sent messages as dicts (codex-compaction every one, context editing the cleared results).
POLICIES = ("claude-code", "codex-compaction", "anthropic-clear-tool-uses", "missy")
MODEL = "gpt-4o"


def converting_every_message(plan, session: Session, model: str, store: CountStore) -> int:
    """The real count as it was computed before it was cached per message: every sent message
    converted again and compared (the reference)."""
    tokenizer = TiktokenTokenizer(real_encoding_for_model(model))
    per_message = store.get(session, checks.chat_scheme(model, tokenizer))
    total = 3
    for item, index in zip(plan.context, plan.context_index, strict=False):
        if index is not None and plan.messages[index].decision is Decision.KEPT and item == session.messages[index].to_openai():
            total += per_message[index]
        else:
            total += count_openai_chat([item], model=image_rate_model(model), tokenizer=tokenizer) - 3
    if session.tools:
        total += per_message.text(json.dumps([t.to_openai() for t in session.tools]))
    if plan.reported is not None:
        total += plan.reported.unseen
    return total


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem[:30])
@pytest.mark.parametrize("policy", POLICIES)
def test_the_count_equals_converting_every_message(log: Path, policy: str) -> None:
    session = load_session(log)
    store = CountStore()
    plan = plan_session(session, policy, store=store)
    assert real_count(plan, session, MODEL, store).tokens == converting_every_message(plan, session, MODEL, store)


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[Message]:
    """Every message `to_openai` converts, in order."""
    seen: list[Message] = []
    original = Message.to_openai

    def counted(self: Message) -> dict:
        seen.append(self)
        return original(self)

    monkeypatch.setattr(Message, "to_openai", counted)
    return seen


@pytest.mark.parametrize("policy", ("claude-code", "codex-compaction"))
def test_a_grown_session_converts_only_its_new_messages(policy: str, conversions: list[Message], tmp_path: Path) -> None:
    log = LOGS[0] if policy == "claude-code" else LOGS[2]
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / log.name
    path.write_text("".join(lines[: len(lines) * 2 // 3]), encoding="utf-8")
    follower = Follower(path)
    follower.poll()
    before = follower.session
    store = CountStore()
    first = plan_session(before, policy, store=store)
    real_count(first, before, MODEL, store)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(lines[len(lines) * 2 // 3:]))
    follower.poll()
    grown = follower.session
    assert follower.why_full == "" and len(grown.messages) > len(before.messages)
    old = {id(m) for m in before.messages}
    plan = plan_session(grown, policy, store=store)
    # The per-message counts carried over as the follower carries them (the new messages counted).
    scheme = checks.chat_scheme(MODEL, TiktokenTokenizer(real_encoding_for_model(MODEL)))
    store.put(extend_counts(store.get(before, scheme), grown))
    conversions.clear()
    counted = real_count(plan, grown, MODEL, store)
    kept = [i for i in plan.context_index if i is not None and plan.messages[i].decision is Decision.KEPT]
    assert not any(id(m) in old for m in conversions), "a message converted on the last plan was converted again"
    assert len(conversions) <= len(grown.messages) - len(before.messages) + len(plan.context) - len(kept)
    assert counted.tokens == converting_every_message(plan, grown, MODEL, store)
