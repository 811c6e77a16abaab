"""After a compression Gemini CLI's replay sends again, truncated, the outputs the compression
truncated in the history it kept. The turn after a compression takes them over from the compression
(the budget walked newest first over the same Contents at the same character budget) instead of
walking the budget again, and a Content of one message is read from its message's columns. On tool
loops whose outputs pass a small function-response budget (some truncated in the kept history,
some kept whole, one Content of several tool messages) the replay equals the reference, and it
walks the budget once per compression, not again on the turn after it."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies.gemini import service
from ctxviz.engine.policies.gemini.replay import GeminiCliReplay
from ctxviz.engine.simulate import simulate

from .hypothesis_budget import examples
from .test_gemini_outcome_runs import LONG, TURNS, tool_loop
from .test_replay_incremental import same


@settings(max_examples=examples(40), deadline=None)
@given(turns=TURNS, pending=st.booleans(), limit=st.sampled_from([300, 600, 1200, 2500]), threshold=st.sampled_from([0.3, 0.5, 0.9]),
       chars=st.sampled_from([0, 30, 200, 40_000]), budget=st.sampled_from([0, 40, 300]), pair_safe=st.booleans())
def test_replay_after_compressions_of_tool_loops_equals_the_reference(turns, pending, limit, threshold, chars, budget, pair_safe) -> None:
    params = {"tokenLimit": limit, "compressionThreshold": threshold, "truncateToolOutputThreshold": chars}
    with mock.patch.object(service, "COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET", budget):
        same(tool_loop(turns, pending), "gemini-cli-compression", params, PlanOptions(pair_safe=pair_safe))


@pytest.mark.parametrize("chars", [30, 400])
def test_the_turn_after_a_compression_takes_its_truncations_over(chars: int) -> None:
    """Outputs truncated (cut, or kept whole past the budget: 400 characters keep some whole) after
    the split, at a character budget the next turn truncates at too: the replay equals the
    reference, sends outputs truncated after each compression, and walks the budget once per
    compression."""
    s = tool_loop(LONG * 2, pending=True)
    params = {"tokenLimit": 3000, "truncateToolOutputThreshold": chars}
    walks = []
    walk = GeminiCliReplay._truncations

    def counted(self, *args):  # noqa: ANN001, ANN202
        walks.append(args)
        return walk(self, *args)

    with mock.patch.object(service, "COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET", 40), mock.patch.object(GeminiCliReplay, "_truncations", counted):
        store = CountStore()
        fast = simulate(s, "gemini-cli-compression", params, store=store)
        reference = simulate(s, "gemini-cli-compression", params, store=store, incremental=False)
    assert fast.to_json() == reference.to_json() and fast.scratch_steps == 0
    compressions = [k for k, t in enumerate(fast.turns) if any(e.kind == "compaction" for e in t.events)]
    assert len(compressions) >= 2
    assert all(fast.turns[k + 1].truncated for k in compressions if k + 1 < len(fast.turns))
    assert len(walks) == len(compressions)
