"""A re-plan gives exactly a first plan (hypothesis).

The policies below keep what they derive from the session alone (`Session.derived`: Strands
messages, LangChain's entries and counts, the category sizes...) and decide in columns whose reasons
are built when read. Planning one session with one set of parameters after others must give the
plan of a session seen for the first time, reasons, context and notes included.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session

from .test_properties import PARAMS as WIDE
from .test_replay_incremental import SETTINGS, SMALL, sessions

#: The ranges of test_properties, and the defaults (a window no test session fills), and the
#: parameters those leave out.
PARAMS = {
    "strands-sliding-window": st.builds(dict, window_size=st.integers(0, 30), pin_first=st.none() | st.integers(0, 5),
                                        context_window_limit=st.none() | st.integers(1, 5000), should_truncate_results=st.booleans(),
                                        proactive_compression=st.none() | st.floats(0.05, 1), per_turn=st.integers(0, 3),
                                        replay_history=st.booleans()),
    "strands-summarizing": st.builds(dict, summary_ratio=st.floats(0, 1), preserve_recent_messages=st.integers(0, 12),
                                     pin_first=st.none() | st.integers(0, 5), context_window_limit=st.none() | st.integers(1, 5000),
                                     proactive_compression=st.none() | st.floats(0.05, 1)),
    "langchain-context-editing": WIDE["langchain-context-editing"],
    "langchain-summarization": WIDE["langchain-summarization"],
    "missy-consolidator": SMALL["missy-consolidator"] | st.builds(dict, pipeline=st.booleans(), max_tokens=st.integers(0, 3000)),
    "categories": SMALL["categories"] | st.builds(dict, max_tokens=st.integers(1, 4000), max_context_images=st.none() | st.integers(0, 2)),
}


@SETTINGS
@given(s=sessions(), data=st.data())
def test_a_replan_after_other_parameters_is_a_first_plan(s, data) -> None:
    for name, strategy in PARAMS.items():
        store = CountStore()
        for _ in range(3):
            params = data.draw(st.just({}) | strategy)
            tokenizer = data.draw(st.sampled_from([None, None, "o200k_base"]))
            again = plan_session(s, name, params, tokenizer, store)
            first = plan_session(dataclasses.replace(s), name, params, tokenizer, CountStore())
            assert again.to_json() == first.to_json(), (name, params, tokenizer)
