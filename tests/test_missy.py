"""missy's ContextManager: the golden cases of policies.md section 1.7 and seed page 000."""

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.missy.context_manager import TokenBudget, format_summary
from ctxviz.engine.session import Summary
from ctxviz.engine.tokenizers import get_tokenizer
from ctxviz.errors import ParameterError

from .builders import session

ZERO = dict(system_reserve=0, tool_definitions_reserve=0, memory_fraction=0.0, learnings_fraction=0.0, fresh_tail_count=0)


def contents(plan):
    return [m["content"] for m in plan.context[1:]]


@pytest.mark.parametrize(("text", "tokens"), [("", 1), ("hi", 1), ("abcd", 1), ("abcde", 1), ("a" * 8, 2), ("a" * 12, 3),
                                              ("hello world test", 4), ("a" * 400, 100), ("a" * 4000, 1000)])
def test_approx_tokens(text, tokens):
    assert get_tokenizer("missy").count(text) == tokens


def test_default_allocation_matches_seed_page():
    plan = plan_session(session(("user", "hello")), "missy")
    assert plan.allocation == {"system_reserve": 2000, "tool_definitions_reserve": 2000, "memory": 3900,
                               "learnings": 1300, "history": 20800}
    assert sum(plan.allocation.values()) == plan.totals.budget == 30000


def test_evictable_prefix_newest_first_stops_at_first_misfit():
    s = session(("user", "A" * 200), ("assistant", "B" * 200), ("user", "C" * 40), ("user", "new"))
    plan = plan_session(s, "missy", dict(total=200, system_reserve=50, tool_definitions_reserve=50,
                                         memory_fraction=0, learnings_fraction=0, fresh_tail_count=0))
    assert contents(plan) == ["B" * 200, "C" * 40, "new"]
    a, b, c, new = plan.messages
    assert (a.decision, b.decision, c.decision, new.decision) == (Decision.DROPPED, Decision.KEPT, Decision.KEPT, Decision.KEPT)
    assert a.reason == "dropped: 50 tokens did not fit in the 39 left of the 100-token history budget"
    assert new.zone == "new_message"
    assert plan.extra["cut_index"] == 0


def test_break_not_continue_older_small_messages_are_not_considered():
    s = session(("user", "tiny"), ("assistant", "B" * 400), ("user", "C" * 40), ("user", "x"))
    plan = plan_session(s, "missy", dict(total=100, **ZERO))
    assert [m.decision for m in plan.messages] == [Decision.DROPPED, Decision.DROPPED, Decision.KEPT, Decision.KEPT]
    assert "stops at the first message that does not fit (#1)" in plan.messages[0].reason


@pytest.mark.parametrize(("chars", "kept"), [(396, True), (400, False)])
def test_fit_test_is_inclusive(chars, kept):
    s = session(("assistant", "h" * chars), ("user", "x"))
    plan = plan_session(s, "missy", dict(total=100, **ZERO))
    assert (plan.messages[0].decision is Decision.KEPT) is kept
    assert plan.messages[0].tokens == chars // 4


def test_fresh_tail_always_included_even_over_budget():
    s = session(("user", "a" * 200), ("assistant", "b" * 200), ("user", "c" * 200), ("user", "new"))
    plan = plan_session(s, "missy", dict(total=100, system_reserve=50, tool_definitions_reserve=50,
                                         memory_fraction=0, learnings_fraction=0, fresh_tail_count=3))
    assert len(plan.context) - 1 == 4
    assert all(m.decision is Decision.KEPT for m in plan.messages)
    assert plan.messages[0].zone == "fresh_tail"
    assert any("over the 0-token history budget" in n for n in plan.notes)
    assert not plan.totals.fits


def test_memory_hard_cut_to_budget_times_four_chars():
    s = session(("user", "q"), memory=("m" * 2000,))
    plan = plan_session(s, "missy", dict(total=1000, system_reserve=0, tool_definitions_reserve=0, memory_fraction=0.10))
    assert plan.system_prompt == "\n\n## Relevant Memory\n" + "m" * 400
    s = session(("user", "q"), memory=("m" * 404,))
    plan = plan_session(s, "missy", dict(total=400, system_reserve=0, tool_definitions_reserve=0, memory_fraction=0.25))
    assert plan.system_prompt.endswith("\n" + "m" * 400)


def test_learnings_first_five_only():
    s = session(("user", "q"), learnings=tuple(f"Learning {i}" for i in range(6)))
    plan = plan_session(s, "missy")
    assert "Learning 4" in plan.system_prompt
    assert "Learning 5" not in plan.system_prompt


def test_learnings_all_or_nothing():
    s = session(("user", "q"), learnings=("x" * 4000,))
    plan = plan_session(s, "missy", dict(total=10000, learnings_fraction=0.05))
    assert "Past Learnings" not in plan.system_prompt
    assert plan.usage["learnings"] == 0
    assert any("learnings left out" in n for n in plan.notes)


def test_enriched_system_prompt_exact():
    s = session(("user", "q"), memory=("m1", "m2"), learnings=("l1", "l2"), system_prompt="Base")
    plan = plan_session(s, "missy")
    assert plan.system_prompt == "Base\n\n## Relevant Memory\nm1\nm2\n\n## Past Learnings\n- l1\n- l2"
    assert plan.context[0] == {"role": "system", "content": plan.system_prompt}


def test_format_summary_em_dash_and_time_range():
    summary = Summary(text="C", depth=1, messages_covered=10, time_range_start="2026-01-01", time_range_end="2026-01-02")
    assert format_summary(summary) == "[Conversation Summary \u2014 depth 1, 10 messages, covers 2026-01-01 to 2026-01-02]\nC"
    assert format_summary(Summary(text="C", time_range_start="2026-01-01")) == "[Conversation Summary \u2014 depth 1, 0 messages]\nC"


def test_oversized_summary_is_skipped_without_starving_later_ones():
    summaries = (Summary(text="HUGE" * 2000), Summary(text="NEWER-SMALL-A"), Summary(text="NEWER-SMALL-B"))
    s = session(("user", "q"), summaries=summaries)
    plan = plan_session(s, "missy", dict(total=500, system_reserve=50, tool_definitions_reserve=50, fresh_tail_count=0))
    sent = "\n".join(str(m["content"]) for m in plan.context)
    assert "NEWER-SMALL-A" in sent and "NEWER-SMALL-B" in sent and "HUGE" not in sent
    assert [p.decision for p in plan.summaries] == [Decision.DROPPED, Decision.KEPT, Decision.KEPT]


def test_summaries_come_before_evictable_messages():
    s = session(("user", "old"), ("assistant", "older reply"), ("user", "now"), summaries=(Summary(text="S", depth=2, messages_covered=45),))
    plan = plan_session(s, "missy", dict(fresh_tail_count=1))
    assert [m["role"] for m in plan.context] == ["system", "user", "user", "assistant", "user"]
    assert plan.context[1]["content"].startswith("[Conversation Summary \u2014 depth 2, 45 messages]")


def test_seed_example_forty_messages():
    """Seed 000: 40 messages, fresh tail = messages 25-40, the evictable prefix fills back from 24."""
    turns = [("user" if i % 2 == 0 else "assistant", f"{i:02d}" + "x" * 3998) for i in range(40)]
    plan = plan_session(session(*turns), "missy")
    zones = [m.zone for m in plan.messages]
    assert zones[:24] == ["evictable"] * 24 and zones[24:] == ["fresh_tail"] * 16
    # 16 tail messages x 1,000 tokens leave 4,800 of 20,800: four evictable messages fit (21-24).
    kept = [m.index + 1 for m in plan.messages if m.decision is Decision.KEPT]
    assert kept == list(range(21, 41))
    assert plan.extra["cut_index"] == 19


@pytest.mark.parametrize(("key", "value", "message"), [
    ("fresh_tail_count", "-1", "fresh_tail_count must be >= 0, got -1"),
    ("total", "-5", "total must be >= 0, got -5"),
    ("memory_fraction", "1.5", "memory_fraction must be 0.0-1.0, got 1.5"),
    ("system_reserve", "40000", "system_reserve + tool_definitions_reserve (42000) exceeds total (30000)"),
])
def test_validation_messages_are_missys(key, value, message):
    with pytest.raises(ParameterError) as err:
        get_policy("missy").make_params({key: value})
    assert str(err.value) == message


def test_boundaries_accepted():
    TokenBudget(total=0, system_reserve=0, tool_definitions_reserve=0)
    TokenBudget(total=4000, system_reserve=2000, tool_definitions_reserve=2000, memory_fraction=1.0, learnings_fraction=0.0)


def test_replan_does_not_retokenize():
    calls = []

    class Counting:
        name = "spy"

        def count(self, text):
            calls.append(text)
            return max(1, len(text) // 4)

    s = session(*[("user", "x" * (i * 7 + 1)) for i in range(50)])
    store = CountStore()
    first = plan_session(s, "missy", None, Counting(), store)
    n = len(calls)
    second = plan_session(s, "missy", {"fresh_tail_count": 3, "total": 4000}, Counting(), store)
    third = plan_session(s, "missy", None, Counting(), store)
    assert first.totals == third.totals
    assert second.totals != first.totals
    assert len(calls) == n  # nothing was counted again


def test_trim_protected_tail_option_trims_oldest_first():
    s = session(("user", "a" * 200), ("assistant", "b" * 200), ("user", "c" * 200), ("user", "new"))
    params = dict(total=100, system_reserve=0, tool_definitions_reserve=0, memory_fraction=0, learnings_fraction=0, fresh_tail_count=3)
    plan = plan_session(s, "missy", {**params, "trim_protected_tail": True})
    # 50 + 50 + 50 + 1 = 151 > 100: dropping a leaves 101, still over, so b goes too.
    assert [m.decision for m in plan.messages] == [Decision.DROPPED, Decision.DROPPED, Decision.KEPT, Decision.KEPT]
    assert plan.totals.fits and plan.usage["history"] == 51
    assert "trim_protected_tail" in plan.messages[0].reason


def records(s, params, tokenizer=None, store=None):
    """`plan_session` with the step-by-step plan."""
    from ctxviz.engine.policies.missy.context_manager import plan_records

    pol = get_policy("missy")
    store = store if store is not None else CountStore()
    return plan_records(s, pol.make_params(params), store.get(s, pol.scheme(tokenizer, s.model)))


def test_shared_records_for_the_messages_older_than_the_cut_stay_correct():
    """The step-by-step plan (`plan_records`, the reference the columns plan is checked against)
    memoises the records older than the cut per (session, counts, cut): a re-plan may share them,
    but a different tokenizer or a different cut must never see another plan's records. (`plan`
    decides in columns and builds no such record: tests/test_missy_columns.py.)"""
    from ctxviz.engine.policies.missy import context_manager as missy

    s = session(*[("user" if i % 2 == 0 else "assistant", f"turn {i} " + "word " * (40 + i % 13)) for i in range(400)])
    store = CountStore()
    first = records(s, {"total": 12000}, store=store)
    again = records(s, {"total": 12010}, store=store)
    cut = first.extra["cut_index"]
    assert again.extra["cut_index"] == cut and again.messages[0] is first.messages[0]
    missy._OLDER_CACHE.clear()
    assert records(s, {"total": 12010}, store=CountStore()).messages == again.messages
    other = records(s, {"total": 12000}, tokenizer="o200k_base", store=store)
    counts = store.get(s, get_policy("missy").scheme("o200k_base", s.model))
    assert [m.tokens for m in other.messages] == list(counts.message_tokens)
    moved = records(s, {"total": 9000}, store=store)
    assert moved.extra["cut_index"] != cut
    assert f"(#{moved.extra['cut_index']})" in moved.messages[0].reason


def test_records_of_a_forgotten_session_are_not_kept():
    import gc
    import weakref

    from ctxviz.engine.policies.missy import context_manager as missy

    def long_session(n):
        return session(*[("user" if i % 2 == 0 else "assistant", f"turn {i} " + "word " * 60) for i in range(n)])

    first = long_session(300)
    records(first, {"total": 4000}, store=CountStore())
    gone = weakref.ref(first)
    del first
    gc.collect()
    assert gone() is None
    alive = long_session(301)
    records(alive, {"total": 4000}, store=CountStore())
    held = [ref() for ref, _, _ in missy._OLDER_CACHE.values()]
    assert all(h is not None for h in held) and any(h is alive for h in held)
