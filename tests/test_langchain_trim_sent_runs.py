"""langchain-trim hands its context over as runs of the session's messages (`trim_columns._sent`):
what it sends, their positions and their ids must be those of the entries one by one, in LangChain's
order, whatever mix of system prompt, summaries and gaps the kept entries hold (hypothesis), and a
plan whose budget keeps a whole session sends it in one run.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies.langchain.counting import SUMMARY_POS, summary_view
from ctxviz.engine.policies.langchain.trim_columns import _sent
from ctxviz.engine.session import Message, Session, Summary, TextPart

from .hypothesis_budget import examples

N = 12
SESSION = Session(messages=tuple(Message(id=f"m{i}", index=i, role="user" if i % 2 == 0 else "assistant", parts=(TextPart(f"text {i}"),))
                                 for i in range(N)),
                  source="<test>", format="test", system_prompt="Be brief.", summaries=(Summary("first summary"), Summary("second summary")))


def one_by_one(session: Session, placed: list[int]) -> tuple[list, list, list]:
    """The context, positions and ids as a loop over the entries makes them (the reference)."""
    context, index, ids = [], [], []
    for p in placed:
        if p == -1:
            context.append({"role": "system", "content": session.system_prompt})
            index.append(None)
        elif p <= SUMMARY_POS:
            context.append({"role": "user", "content": summary_view(session.summaries[SUMMARY_POS - p].text).content})
            index.append(None)
        else:
            context.append(session.messages[p])
            index.append(p)
            ids.append(session.messages[p].id)
    return context, index, ids


ENTRIES = st.lists(st.sampled_from([-1, SUMMARY_POS, SUMMARY_POS - 1, *range(N)]), max_size=30)


@settings(max_examples=examples(300), deadline=None)
@given(ENTRIES)
def test_the_runs_send_what_the_entries_say_one_by_one(placed: list[int]) -> None:
    context, index, ids = _sent(SESSION, np.array(placed, dtype=np.int64))
    want_context, want_index, want_ids = one_by_one(SESSION, placed)
    assert list(context) == want_context
    assert list(index) == want_index and tuple(index) == tuple(want_index) and len(index) == len(placed)
    assert ids == want_ids


def test_a_budget_over_the_session_sends_it_as_one_run() -> None:
    plan = plan_session(SESSION, "langchain-trim", {"max_tokens": 1_000_000}, None, CountStore())
    runs = plan.context.entries._runs  # type: ignore[attr-defined]
    # the system prompt and the two summaries, each an entry of its own, then every message in one run
    assert [(items is SESSION.messages, lo, hi) for items, lo, hi in runs] == [(False, 0, 1)] * 3 + [(True, 0, N)]
    assert list(plan.context_index) == [None, None, None, *range(N)]
    assert plan.extra["kept_ids"] == [m.id for m in SESSION.messages]
