"""Replays of logs with recorded compactions equal the reference (hypothesis), and the rewritten
`_boundary` is the set comparison it stands for.

Claude Code's log records each compaction (`compact_boundary`, with a preserved segment) and the
summary it wrote; the replay holds the summary from the turn it was written and trusts the log's
usage after it only when the summary is the one that compaction wrote (`auto_compact._boundary`).
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.policies.claude_code.auto_compact import _boundary
from ctxviz.engine.policies.replay_recorded import _RecordedShapes
from ctxviz.engine.replay import REPLAYERS, replays_incrementally
from ctxviz.engine.session import Compaction, Message, Session, Summary, TextPart

from .hypothesis_budget import examples
from .test_replay_incremental import SETTINGS, same, sessions


def set_boundary(session: Session, summary: Summary) -> int | None:
    """`_boundary` as it was written first: one set of ids per compaction."""
    covers = set(summary.covers)
    for c in session.compactions:
        before = {m.id for m in session.messages[: c.before_index]} - set(c.preserved)
        if before and before == covers:
            return c.before_index
    return None


def test_boundary_is_the_set_comparison():
    """On random prefixes, ids (repeated ones too), covers and preserved segments, before_index
    past either end included."""
    rng = random.Random(1)
    found = 0
    for _ in range(20_000):
        n = rng.randint(0, 12)
        pool = [f"i{k}" for k in range(rng.randint(1, 14))]
        ids = [rng.choice(pool) if rng.random() < 0.3 else f"u{k}" for k in range(n)]
        messages = tuple(Message(id=x, index=k, role="user", parts=(TextPart("x"),)) for k, x in enumerate(ids))
        names = sorted(set(ids)) + ["elsewhere"]
        compactions = tuple(Compaction(before_index=rng.randint(-3, n + 2), preserved=tuple(rng.sample(names, rng.randint(0, min(3, len(names))))))
                            for _ in range(rng.randint(0, 4)))
        if rng.random() < 0.5 and n:
            covers = tuple(x for x in ids[: rng.randint(0, n)] if rng.random() < 0.9)
        else:
            covers = tuple(rng.sample(names, rng.randint(0, min(4, len(names)))))
        session = Session(messages=messages, compactions=compactions)
        summary = Summary(text="s", covers=covers)
        expected = set_boundary(session, summary)
        found += expected is not None
        assert _boundary(session, summary) == expected, (ids, compactions, covers)
    assert found > 500  # the comparison matched often enough to mean something


@st.composite
def compacted(draw):
    """A session with compactions recorded as Claude Code writes them: a summary of every message
    before the boundary but a preserved tail, and sometimes a compaction that matches no summary,
    a summary that matches none, or two in one stretch."""
    s = draw(sessions())
    messages = s.messages
    n = len(messages)
    summaries: list[Summary] = []
    compactions: list[Compaction] = []
    for _ in range(draw(st.integers(0, 3))):
        if n < 2:
            break
        end = draw(st.integers(1, n))  # the boundary: messages before it were compacted
        keep = draw(st.integers(0, min(2, end - 1)))
        preserved = tuple(m.id for m in messages[end - keep : end])
        covered = tuple(m.id for m in messages[: end - keep])
        shape = draw(st.sampled_from(["written", "written", "written", "no summary", "no compaction", "missing cover", "off by one"]))
        if shape != "no summary":
            covers = covered
            if shape == "missing cover" and len(covers) > 1:
                covers = covers[:-2] + covers[-1:]
            summaries.append(Summary(text=draw(st.sampled_from(["the summary", "x " * 300])), messages_covered=len(covers), covers=covers))
        if shape != "no compaction":
            before = end + (1 if shape == "off by one" else 0)
            compactions.append(Compaction(before_index=before, preserved=preserved))
    if draw(st.booleans()):
        summaries.sort(key=lambda x: -len(x.covers))  # the file's order need not be the order they were written
    return Session(messages=messages, source=s.source, format=s.format, system_prompt=s.system_prompt, summaries=tuple(summaries),
                   compactions=tuple(compactions))


@settings(SETTINGS, max_examples=examples(60))
@given(s=compacted(), trigger=st.sampled_from([None, 50, 400, 2000, 10**6]))
def test_claude_code_replay_with_recorded_compactions_equals_the_reference(s, trigger):
    params = {} if trigger is None else {"calibrated_trigger": trigger}
    same(s, "claude-code", params, PlanOptions())
    assert not replays_incrementally("claude-code", s, PlanOptions(), params).startswith("from scratch")


#: The policies whose replayers carry the recorded summaries in force from turn to turn.
CARRIED = ("missy", "langchain-trim", "supyagent")


@settings(SETTINGS, max_examples=examples(60))
@given(s=compacted(), data=st.data())
def test_replays_with_recorded_compactions_equal_the_reference(s, data):
    """Every replayer that carries recorded summaries equals the reference on logs with compactions
    as Claude Code writes them, with and without pair safety, at small budgets and default ones;
    and it says it replays incrementally where the summaries cover a prefix of the file."""
    from .test_replay_incremental import SMALL

    for name in CARRIED:
        params = data.draw(SMALL[name]) if name in SMALL and data.draw(st.booleans()) else {}
        pair_safe = data.draw(st.booleans())
        same(s, name, params, PlanOptions(pair_safe=pair_safe))
        how = replays_incrementally(name, s, PlanOptions(pair_safe=pair_safe), params)
        if pair_safe and not REPLAYERS[name].pair_safe_incremental:
            assert how == "from scratch (pair safety)"
        elif _RecordedShapes.of(s).why_not_for(REPLAYERS[name]) is None:
            assert not how.startswith("from scratch") or "tool call id" in how, how
            assert "recorded summary" not in how, how


@st.composite
def codex_compacted(draw):
    """`compacted()` as a Codex rollout could hold it: the first messages sometimes injected
    context (the environment, AGENTS.md) a compaction covers too, a leading developer message
    sometimes, a reported usage on the assistant messages often (the plan trusts the last one
    unless the summary in force covers it), and a recorded summary sometimes written after Codex's
    SUMMARY_PREFIX."""
    import dataclasses

    from ctxviz.engine.policies.codex.history import SUMMARY_PREFIX
    from ctxviz.engine.session import Usage

    s = draw(compacted())
    messages = list(s.messages)
    if draw(st.booleans()):
        reported = st.sampled_from([None, Usage(input_tokens=200, output_tokens=10), Usage(input_tokens=900), Usage(input_tokens=5000)])
        messages = [dataclasses.replace(m, usage=draw(reported)) if m.role == "assistant" else m for m in messages]
    for k in range(min(draw(st.integers(0, 3)), len(messages))):
        m = messages[k]
        kind = draw(st.sampled_from(["environment", "agents", "developer", "as is"]))
        if kind == "environment":
            messages[k] = dataclasses.replace(m, role="user", parts=(TextPart("<environment_context>cwd /x</environment_context>"),), tool_call_id="")
        elif kind == "agents":
            messages[k] = dataclasses.replace(m, role="user", parts=(TextPart("# AGENTS.md instructions for /x\n" + "be brief " * 20),), tool_call_id="")
        elif kind == "developer":
            messages[k] = dataclasses.replace(m, role="system", parts=(TextPart("sandbox: read-only"),), tool_call_id="")
    summaries = tuple(dataclasses.replace(x, text=f"{SUMMARY_PREFIX}\n{x.text}") if draw(st.integers(0, 4)) == 0 else x for x in s.summaries)
    return dataclasses.replace(s, messages=tuple(messages), summaries=summaries)


@settings(SETTINGS, max_examples=examples(25))
@given(s=codex_compacted(), window=st.sampled_from([None, 1500, 6000]), limit=st.sampled_from([None, 300, 1200, 4000, 10**6]),
       keep=st.sampled_from([0, 40, 20_000]))
def test_codex_replay_with_recorded_compactions_equals_the_reference(s, window, limit, keep):
    """Codex's replay carries the compactions a rollout records (the latest in force standing for
    all, its covered initial context summarised, the reported usage trusted unless covered) and
    equals the reference; it says it replays incrementally unless a summary reads as Codex's own."""
    from ctxviz.engine.policies.codex.history import generated_form

    params = {"model_context_window": window, "model_auto_compact_token_limit": limit, "compact_user_message_max_tokens": keep}
    same(s, "codex-compaction", params, PlanOptions())
    how = replays_incrementally("codex-compaction", s, PlanOptions(), params)
    if any(generated_form(x) for x in s.summaries):
        assert how == "incremental, then from scratch (the turns where a recorded summary written after Codex's SUMMARY_PREFIX is in force)", how
    else:
        assert how == "incremental", how


def test_codex_replay_of_a_real_rollout_with_a_compaction_is_incremental():
    """A real Codex rollout with a recorded compaction (tests/data/real/codex, 703 messages): the
    replay equals the reference and carries every turn, the recorded compaction's included, at
    Codex's limits; at a lower limit (it fires before the recorded compaction) it plans from
    scratch only the turns that compact."""
    from pathlib import Path

    from ctxviz.engine.counting import CountStore
    from ctxviz.engine.simulate import simulate
    from ctxviz.io.loaders import load_session

    path = Path(__file__).parent / "data" / "real" / "codex" / "localpush-rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
    s = load_session(path)
    assert s.summaries
    for params in ({}, {"model_auto_compact_token_limit": 30_000}):
        store = CountStore()
        fast = simulate(s, "codex-compaction", params, store=store)
        reference = simulate(s, "codex-compaction", params, store=store, incremental=False)
        assert fast.to_json() == reference.to_json()
        assert any(e.kind == "compaction" and ("recorded summary" in e.message) == (not params) for t in fast.turns for e in t.events)
        assert fast.scratch_steps == len(fast.summaries) == (2 if params else 0)  # only the turns that compact
        assert replays_incrementally("codex-compaction", s, PlanOptions(), params) == "incremental"
