"""The incremental replay gives exactly the reference replay's turns, events and summaries (hypothesis).

The reference, `simulate(..., incremental=False)`, plans the whole prefix at every turn; each
policy's replayer (ctxviz.engine.replay) carries its state from turn to turn instead.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies import policy_names
from ctxviz.engine.replay import REPLAYERS, replays_incrementally
from ctxviz.engine.session import (
    Category,
    Message,
    Session,
    Summary,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    default_category,
)
from ctxviz.engine.simulate import simulate

from .hypothesis_budget import examples
from .test_properties import PARAMS as WIDE

# Budgets on the scale of the sessions below (a few thousand tokens), so that cuts, trims,
# overflows and triggers happen often; the wide ranges of test_properties too.
SMALL = {
    "missy": st.builds(dict, total=st.integers(0, 4000), system_reserve=st.integers(0, 300), tool_definitions_reserve=st.integers(0, 300),
                       memory_fraction=st.floats(0, 0.5), learnings_fraction=st.floats(0, 0.5), fresh_tail_count=st.integers(0, 12),
                       trim_protected_tail=st.booleans()).filter(lambda p: p["system_reserve"] + p["tool_definitions_reserve"] <= p["total"]),
    "supyagent": st.builds(dict, context_limit=st.integers(50, 4000), response_reserve=st.integers(0, 500), min_recent_messages=st.integers(0, 8),
                           max_messages_before_summary=st.integers(1, 20), max_tokens_before_summary=st.integers(1, 5000),
                           trim_protected_tail=st.booleans()),
    "categories": st.builds(dict, max_tokens=st.integers(1, 4000), dialog_fraction=st.floats(0, 1), system_output_fraction=st.floats(0, 1),
                            context_fraction=st.floats(0, 1), other_fraction=st.floats(0, 0.5), trim_other_categories=st.booleans()),
    "mnesis": st.builds(dict, context_limit=st.integers(0, 9000), reserved_output_tokens=st.integers(0, 1000), compaction_buffer=st.integers(1000, 4000),
                        always_include_latest=st.booleans()),
    "missy-consolidator": st.builds(dict, max_tokens=st.integers(0, 3000), threshold_pct=st.floats(0, 1)),
}

WORDS = st.sampled_from(["edit", "src/a.py", "file_0123abcd", "file_99", "value", "error", "def", "return", "{}", ":", "\n", "decided", "TODO", "x" * 40])
TEXT = st.integers(0, 250).flatmap(lambda n: st.lists(WORDS, min_size=n, max_size=n)).map(" ".join)
KINDS = st.sampled_from(["user", "user", "assistant", "assistant", "call", "result", "orphan_result", "system"])


@st.composite
def sessions(draw):
    size = draw(st.integers(1, 50))
    kinds = draw(st.lists(st.tuples(KINDS, TEXT), min_size=size, max_size=size))
    messages: list[Message] = []
    open_calls: list[str] = []
    # A quarter of the sessions are logs that record their calls (usage on some assistant
    # messages): the replay then steps at those calls, two of them sometimes in a row.
    usages = st.sampled_from([None, Usage(input_tokens=900, output_tokens=40), Usage(input_tokens=3, cache_read_input_tokens=2500)])
    with_usage = draw(st.integers(0, 3)) == 0
    for i, (kind, text) in enumerate(kinds):
        parts: tuple = (TextPart(text),) if text else ()
        role, call_id = kind, ""
        if kind == "call":
            role = "assistant"
            ids = [f"c{i}_{k}" for k in range(draw(st.integers(1, 2)))]
            open_calls += ids
            parts = parts + tuple(ToolCallPart(c, "read", "{}") for c in ids)
        elif kind in ("result", "orphan_result"):
            role = "tool"
            call_id = open_calls.pop(0) if kind == "result" and open_calls else f"missing{i}"
            parts = (ToolResultPart(call_id, text or "ok"),)
        # A file may set a message's category (ERROR, INTERNAL... that Penguin's manager trims its own way).
        category = draw(st.sampled_from([default_category(role)] * 6 + [Category.ERROR, Category.INTERNAL, Category.UNKNOWN, Category.CONTEXT]))
        usage = draw(usages) if with_usage and role == "assistant" else None
        messages.append(Message(id=f"m{i}", index=i, role=role, parts=parts, tool_call_id=call_id, category=category, usage=usage))
    summaries = []
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        if draw(st.booleans()) and len(messages) > 1:
            end = draw(st.integers(0, len(messages) - 1))
            covers = tuple(m.id for m in messages[: end + 1])
        else:
            covers = draw(st.sampled_from([(), ("before-the-file",)]))
        summaries.append(Summary(text=draw(TEXT) or "earlier work", messages_covered=len(covers), covers=covers))
    return Session(messages=tuple(messages), source="<test>", format="test", system_prompt=draw(st.sampled_from(["", "You are terse."])),
                   memory=draw(st.sampled_from([(), ("remember x",)])), summaries=tuple(summaries))


SETTINGS = settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def same(s, name, params, options, tokenizer=None):
    """The replayer equals the reference on both schedules: one step per model call (the steps
    take several messages in between) and one per message (`--per-message`)."""
    store = CountStore()
    for per_message in (False, True):
        fast = simulate(s, name, params, tokenizer, store=store, options=options, per_message=per_message)
        reference = simulate(s, name, params, tokenizer, store=store, options=options, incremental=False, per_message=per_message)
        assert fast.turns == reference.turns, (name, params, per_message)
        assert fast.summaries == reference.summaries, (name, params, per_message)
        assert fast.to_json() == reference.to_json()


@SETTINGS
@given(s=sessions(), data=st.data())
def test_incremental_replay_equals_the_reference(s, data):
    for name in SMALL:
        params = data.draw(SMALL[name] if data.draw(st.integers(0, 3)) else WIDE[name])
        same(s, name, params, PlanOptions(pair_safe=data.draw(st.booleans())))


@settings(SETTINGS, max_examples=15)
@given(s=sessions(), pair_safe=st.booleans())
def test_incremental_replay_equals_the_reference_with_default_params(s, pair_safe):
    for name in REPLAYERS:
        same(s, name, {}, PlanOptions(pair_safe=pair_safe))


def test_every_policy_says_how_it_replays():
    for name in policy_names():
        assert replays_incrementally(name) in ("incremental", "from scratch")
    # every built-in policy carries its replay turn to turn (plugins may replay from scratch)
    assert [name for name in policy_names(plugins=False) if replays_incrementally(name) != "incremental"] == []


def test_the_carried_snapshot_is_supyagents_snapshot():
    """The replay's supyagent snapshot, built from what it gathered at the trigger before, is the
    summarizer's text for every prefix (paths, decisions, errors, URLs, requests, the word cap)."""
    import random

    from ctxviz.engine.policies.carried import _Snapshot
    from ctxviz.engine.summarizers import supyagent_snapshot

    rng = random.Random(5)
    lines = ["decided to use sqlite", "Error: failed to open src/db_{k}.py", "see https://example.com/{k}", "edit lib/m{k}.ts now",
             "we'll use the cache", "ok", "plain words " * 30, "Traceback: exception in app/x{k}.go"]
    messages = []
    for i in range(400):
        role = rng.choice(["user", "assistant", "tool"])
        text = " ".join(rng.choice(lines).format(k=rng.randint(0, 60)) for _ in range(rng.randint(0, 4)))
        parts: tuple = (TextPart(text),) if text else ()
        if role == "assistant" and rng.random() < 0.4:
            parts += (ToolCallPart(f"c{i}", rng.choice(["edit_file", "read_file"]), f'{{"path": "src/f{rng.randint(0, 80)}.py"}}'),)
        messages.append(Message(id=f"m{i}", index=i, role=role, parts=parts, category=default_category(role)))
    snapshot = _Snapshot()
    end = 0
    while end < len(messages):
        end += rng.randint(1, 30)
        assert snapshot.text(messages[:end]) == supyagent_snapshot(messages[:end])
    assert _Snapshot().text(messages[:3]) == supyagent_snapshot(messages[:3])


PIECES = st.sampled_from(["- ", "## ", "\n", "\n\n", "-", "#", " ", "  ", "word", "Word", "x.", "…", ")", "(none)", "123", "4567", "é", "日本",
                          "'s", "/", "\t", ":\n", "\r\n", "don't", "src/a.py", "https://x.io/a"])


@settings(SETTINGS, max_examples=examples(200))
@given(pieces=st.lists(PIECES, max_size=60), covered=st.integers(0, 10**9))
def test_the_summary_count_by_lines_is_the_whole_count(pieces, covered):
    """supyagent's summary message counted as the sum of its lines (cut before each "-" or "#" that
    starts a line) and its header's number in threes is tiktoken's count of the whole message, in
    both encodings the line sum is used for."""
    from ctxviz.engine.policies.supyagent.context_manager import count_message_dict, summary_message
    from ctxviz.engine.policies.supyagent.replay import _SummaryCounter
    from ctxviz.engine.tokenizers import TiktokenTokenizer

    summary = Summary(text="".join(pieces), messages_covered=covered)
    for name in ("cl100k_base", "o200k_base"):
        tok = TiktokenTokenizer(name)
        counter = _SummaryCounter(tok)
        assert counter.piecewise
        assert counter.size(summary) == count_message_dict(summary_message(summary), tok), (name, summary.text)


def test_the_carried_snapshot_counts_as_the_whole_text():
    """`_Snapshot.counted`'s line sum is the whole text's count, cut by the word limit or not."""
    import random

    from ctxviz.engine.policies.carried import _Snapshot
    from ctxviz.engine.policies.supyagent.replay import _SummaryCounter
    from ctxviz.engine.summarizers import supyagent_snapshot
    from ctxviz.engine.tokenizers import TiktokenTokenizer

    rng = random.Random(9)
    lines = ["decided to use sqlite.", "Error: failed to open src/db_{k}.py", "see https://example.com/{k}", "edit lib/m{k}.ts now",
             "ok", "plain words " * 40, "Traceback: exception in app/x{k}.go!", "naïve café — 日本語 {k}"]
    messages = []
    for i in range(300):
        role = rng.choice(["user", "assistant", "tool"])
        text = " ".join(rng.choice(lines).format(k=rng.randint(0, 60)) for _ in range(rng.randint(0, 5)))
        parts: tuple = (TextPart(text),) if text else ()
        if role == "assistant" and rng.random() < 0.4:
            parts += (ToolCallPart(f"c{i}", rng.choice(["edit_file", "read_file"]), f'{{"path": "src/f{rng.randint(0, 80)}.py"}}'),)
        messages.append(Message(id=f"m{i}", index=i, role=role, parts=parts, category=default_category(role)))
    for name in ("cl100k_base", "o200k_base"):
        tok = TiktokenTokenizer(name)
        counter = _SummaryCounter(tok)
        snapshot = _Snapshot(counter.count)
        end = 0
        while end < len(messages):
            end += rng.randint(1, 12)
            snapshot.advance(messages[len(snapshot.seen) : end])
            text, count = snapshot.counted()
            assert text == supyagent_snapshot(messages[:end])
            assert count == tok.count(text), (name, end)


def test_covers_shared_with_the_history_behave_as_the_tuple():
    import copy
    import pickle

    from ctxviz.engine.policies.carried import IdPrefix

    ids = ["a", "b", "c"]
    view = IdPrefix(ids, 2)
    ids.append("d")  # the history grows after the summary: its covers do not
    assert view == ("a", "b") and ("a", "b") == view and view != ("a", "b", "c") and view != ["a", "b"]
    assert len(view) == 2 and list(view) == ["a", "b"] and view[-1] == "b" and view[:1] == ("a",) and "c" not in view
    assert hash(view) == hash(("a", "b")) and repr(view) == repr(("a", "b"))
    assert pickle.loads(pickle.dumps(view)) == ("a", "b") and type(pickle.loads(pickle.dumps(view))) is tuple
    assert copy.deepcopy(view) == ("a", "b") and view + ("x",) == ("a", "b", "x")
    assert Summary(text="t", covers=view) == Summary(text="t", covers=("a", "b"))


@settings(SETTINGS, max_examples=15)
@given(s=sessions(), data=st.data())
def test_supyagent_replay_with_o200k_equals_the_reference(s, data):
    """The summary's line-by-line count holds with o200k_base too (supyagent's own is cl100k_base)."""
    same(s, "supyagent", data.draw(SMALL["supyagent"]), PlanOptions(), tokenizer="o200k_base")


@settings(SETTINGS, max_examples=examples(40))
@given(s=sessions(), data=st.data(), short=st.sampled_from([1, 3, 64]))
def test_pair_safe_replay_equals_the_reference(s, data, short):
    """missy's and supyagent's replays with pair safety carried from turn to turn (short and long
    pairs, problems that end when a call's result or a result's call arrives) give the reference's
    turns, events and summaries."""
    from ctxviz.engine.policies.replay_pairs import _PairSafety

    saved, _PairSafety.SHORT = _PairSafety.SHORT, short  # pairs farther apart than SHORT take the other path
    try:
        for name in ("missy", "supyagent"):
            params = data.draw(SMALL[name] if data.draw(st.integers(0, 3)) else WIDE[name])
            same(s, name, params, PlanOptions(pair_safe=True))
            assert replays_incrementally(name, pair_safe=True) == "incremental"
    finally:
        _PairSafety.SHORT = saved


def test_mnesis_overflow_at_a_hard_threshold_compaction_names_the_summary_sent() -> None:
    """The overflow event at the turn mnesis compacts reads the allotment of the request that
    overflowed (with the summary it sent), not of the next one (hypothesis found it)."""
    import json
    from pathlib import Path

    doc = json.loads((Path(__file__).parent / "data" / "regressions" / "mnesis_overflow_after_compaction.json").read_text())

    def part(p: dict):  # type: ignore[no-untyped-def]
        if "text" in p:
            return TextPart(p["text"])
        if "call" in p:
            return ToolCallPart(*p["call"])
        return ToolResultPart(*p["result"])

    messages = tuple(Message(id=m["id"], index=k, role=m["role"], parts=tuple(part(p) for p in m["parts"]), tool_call_id=m["tool_call_id"],
                             category=Category(m["category"])) for k, m in enumerate(doc["messages"]))
    s = Session(messages=messages, source="<test>", format="test", system_prompt=doc["system_prompt"], memory=tuple(doc["memory"]),
                summaries=tuple(Summary(text=x["text"], messages_covered=len(x["covers"]), covers=tuple(x["covers"])) for x in doc["summaries"]))
    timeline = simulate(s, doc["policy"], doc["params"], store=CountStore())
    overflow = [e.message for e in timeline.events if e.kind == "overflow"]
    assert any("over its -99 allotment by 119" in m for m in overflow), overflow
    same(s, doc["policy"], doc["params"], None)
