"""The incremental replays of the summarising policies (each in
ctxviz/engine/policies/<framework>/replay.py) give exactly
the reference replay's turns, events and summaries (hypothesis), and compute the common case
themselves.

The reference, `simulate(..., incremental=False)`, plans the whole prefix at every turn.
"""

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.counting import CountStore
from ctxviz.engine.policies.langchain.replay import LangchainSummarizationReplay
from ctxviz.engine.policies.llamaindex.replay import LlamaindexSummaryReplay
from ctxviz.engine.policies.openhands.replay import OpenhandsCondenserReplay
from ctxviz.engine.policies.strands.replay import StrandsSummarizingReplay
from ctxviz.engine.replay import REPLAYERS, replays_incrementally
from ctxviz.engine.session import Message, Session, TextPart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
from ctxviz.engine.simulate import _Replay, simulate

from .test_properties import PARAMS as WIDE
from .test_replay_incremental import SETTINGS, same, sessions

SUMMARY_REPLAYERS = {"langchain-summarization": LangchainSummarizationReplay, "strands-summarizing": StrandsSummarizingReplay,
                     "llamaindex-chat-summary-memory-buffer": LlamaindexSummaryReplay, "openhands-llm-summarizing": OpenhandsCondenserReplay}
# Budgets on the scale of the test sessions (a few hundred to a few thousand tokens), so that the
# triggers fire, summaries absorb summaries and contexts overflow often.
SMALL = {
    "langchain-summarization": st.builds(
        dict, trigger=st.sampled_from(["", "tokens=300", "messages=6", "tokens=800,messages=4", "fraction=0.5|messages=12", "tokens=2000"]),
        keep=st.sampled_from(["messages=3", "messages=20", "tokens=200", "tokens=1500", "fraction=0.2"]),
        trim_tokens_to_summarize=st.sampled_from([None, 100, 4000]), max_input_tokens=st.sampled_from([0, 500, 3000]),
        model_provider=st.sampled_from(["", "openai", "anthropic"])),
    "llamaindex-chat-summary-memory-buffer": st.builds(
        dict, token_limit=st.sampled_from([None, 1, 50, 200, 600, 2000]), context_window=st.sampled_from([None, None, 800]), llm=st.booleans(),
        count_initial_tokens=st.booleans(), initial_token_count=st.sampled_from([None, None, 0, 30, 5000])),
    "strands-summarizing": st.builds(
        dict, summary_ratio=st.floats(0, 1), preserve_recent_messages=st.integers(0, 12), pin_first=st.sampled_from([None, None, 0, 2]),
        proactive_compression=st.sampled_from([None, None, 0.5, 0.9]), context_window_limit=st.integers(50, 5000)),
    "openhands-llm-summarizing": st.builds(
        dict, max_size=st.integers(8, 40), keep_first=st.integers(0, 2), max_tokens=st.sampled_from([None, None, 300, 1500, 4000]),
        max_input_tokens=st.sampled_from([None, 0, 2000]), minimum_progress=st.sampled_from([0.1, 0.3, 0.6])),
}


@st.composite
def agent_sessions(draw):
    """The shared random sessions, sometimes with what these frameworks read beyond the text:
    reported usage on assistant messages (LangChain's count scaling), a second result for a call
    (OpenHands' ObservationUniquenessProperty), thinking blocks on a tool call (OpenHands' tool
    loops), a system prompt."""
    s = draw(sessions())
    if draw(st.integers(0, 3)):  # mostly none recorded: the replayers' own state is what is tested
        s = dataclasses.replace(s, summaries=())
    messages = list(s.messages)
    reported = draw(st.sampled_from(["none", "all", "some"]))  # LangChain scales only when every AI message names one provider
    for k, m in enumerate(messages):
        if m.role == "assistant" and (reported == "all" or (reported == "some" and draw(st.booleans()))):
            messages[k] = dataclasses.replace(m, usage=Usage(input_tokens=draw(st.integers(0, 3000)), output_tokens=draw(st.integers(0, 200))))
    results = [m for m in messages if m.role == "tool"]
    if results and draw(st.booleans()):  # the same call answered twice
        again = draw(st.sampled_from(results))
        at = draw(st.integers(again.index + 1, len(messages)))
        messages.insert(at, dataclasses.replace(again, id=f"again-{again.id}"))
    calls = [k for k, m in enumerate(messages) if m.tool_calls]
    if calls and draw(st.integers(0, 5)) == 0:
        k = draw(st.sampled_from(calls))
        messages[k] = dataclasses.replace(messages[k], parts=(ThinkingPart("let me think"), *messages[k].parts))
    messages = [dataclasses.replace(m, index=k) for k, m in enumerate(messages)]
    return dataclasses.replace(s, messages=tuple(messages))


def params_for(data, name):
    return data.draw(SMALL[name] if data.draw(st.integers(0, 3)) else WIDE[name])


@SETTINGS
@given(s=agent_sessions(), data=st.data())
def test_summary_replays_equal_the_reference(s, data):
    for name in SMALL:
        same(s, name, params_for(data, name), PlanOptions(pair_safe=data.draw(st.integers(0, 3)) == 0))


@settings(SETTINGS, max_examples=10)
@given(s=agent_sessions(), pair_safe=st.booleans())
def test_summary_replays_equal_the_reference_with_default_params(s, pair_safe):
    for name in SMALL:
        same(s, name, {}, PlanOptions(pair_safe=pair_safe))


def test_the_summary_replayers_are_registered():
    assert set(SUMMARY_REPLAYERS) == set(SMALL)
    for name, kind in SUMMARY_REPLAYERS.items():
        assert REPLAYERS[name] is kind
        assert replays_incrementally(name) == "incremental"
        assert replays_incrementally(name, pair_safe=True) == "incremental"  # pair safety is carried too (issue 22)


def agent_log(n: int) -> Session:
    """A user turn, assistant tool calls each answered, a closing answer: the common case."""
    messages: list[Message] = []
    k = 0
    while len(messages) < n:
        messages.append(Message(id=f"m{len(messages)}", index=len(messages), role="user", parts=(TextPart(f"please fix src/mod_{k}.py " * 8),)))
        for c in range(1 + k % 3):
            call = f"call_{k}_{c}"
            messages.append(Message(id=f"m{len(messages)}", index=len(messages), role="assistant",
                                    parts=(ToolCallPart(call, "edit_file", f'{{"path": "src/mod_{k}.py"}}'),)))
            messages.append(Message(id=f"m{len(messages)}", index=len(messages), role="tool", tool_call_id=call,
                                    parts=(ToolResultPart(call, f"line {c}: value = {k}\n" * (5 + 7 * c)),)))
        messages.append(Message(id=f"m{len(messages)}", index=len(messages), role="assistant", parts=(TextPart(f"decided to keep mod_{k} " * 10),)))
        k += 1
    return Session(messages=tuple(messages[:n]), source="<test>", format="test", system_prompt="You are a coding agent.")


COMMON = {
    "langchain-summarization": {},  # trigger None: it never fires
    "llamaindex-chat-summary-memory-buffer": {"token_limit": 1500},
    "strands-summarizing": {"context_window_limit": 6000},
    "openhands-llm-summarizing": {"max_size": 40},
}


def test_the_common_case_is_replayed_incrementally(monkeypatch):
    """An agent log with tool calls, no recorded summary, pair safety off: the replayer computes
    nearly every turn itself (the reference step plans at most one turn in twenty), and the
    summaries it writes are the reference's."""
    session = agent_log(300)
    planned: dict[str, int] = {}
    reference_step = _Replay.step

    def counting(self, i):
        if type(self) is not _Replay:
            planned[self.policy] = planned.get(self.policy, 0) + 1
        return reference_step(self, i)

    for name, params in COMMON.items():
        monkeypatch.setattr(_Replay, "step", counting)
        store = CountStore()
        fast = simulate(session, name, params, store=store)
        monkeypatch.setattr(_Replay, "step", reference_step)
        assert planned.get(name, 0) * 20 <= len(session.messages), (name, planned)
        reference = simulate(session, name, params, store=store, incremental=False)
        assert fast.turns == reference.turns and fast.summaries == reference.summaries, name
        if name != "langchain-summarization":
            assert len(fast.summaries) >= 3, (name, len(fast.summaries))  # the triggers fire, summaries absorb summaries


def test_openhands_view_with_a_call_answered_twice_and_a_batch_answered_late():
    """OpenHands' View leaves out a second observation of a call and a batch of calls until every
    call has its observation; the replay carries both as the reference's View decides them."""
    messages: list[Message] = []

    def add(role, *parts, call_id=""):
        messages.append(Message(id=f"m{len(messages)}", index=len(messages), role=role, parts=parts, tool_call_id=call_id))

    for k in range(12):
        add("user", TextPart(f"step {k} of the plan " * 6))
        add("assistant", ToolCallPart(f"x{k}", "read", "{}"), ToolCallPart(f"y{k}", "read", "{}"))
        add("tool", ToolResultPart(f"x{k}", "first answer " * 5), call_id=f"x{k}")
        add("tool", ToolResultPart(f"x{k}", "the same call again " * 5), call_id=f"x{k}")
        add("assistant", TextPart("waiting for y " * 4))
        add("tool", ToolResultPart(f"y{k}", "late answer " * 5), call_id=f"y{k}")
    session = Session(messages=tuple(messages), source="<test>", format="test", system_prompt="You are terse.")
    for params in ({"max_size": 10, "keep_first": 1}, {"max_size": 16, "keep_first": 2, "max_tokens": 400}):
        same(session, "openhands-llm-summarizing", params, PlanOptions())
