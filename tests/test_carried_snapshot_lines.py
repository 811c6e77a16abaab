"""The carried offline snapshot (`carried._Snapshot`) against the summarizer's own text and
tiktoken's count of it, on messages drawn from a small pool, so that the last action and the
latest request come back to earlier values (the snapshot keeps their lines by the string they
show), a section changes while the Current State does not and the other way round (it keeps the
first three sections joined), a section gains more items than it shows, one or several at a time
(it moves the lines it shows along), and summaries are taken after any number of new messages."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxviz.engine.policies.carried import _Snapshot
from ctxviz.engine.session import Message, TextPart, ToolCallPart, default_category
from ctxviz.engine.summarizers import supyagent_snapshot
from ctxviz.engine.tokenizers import TiktokenTokenizer

from .hypothesis_budget import examples

TEXTS = ["decided to use sqlite {k}", "Error: failed to open src/db{k}.py", "see https://example.com/{k}", "ok", "fix the tests",
         "we'll use the cache ", "edit lib/m{k}.ts now", "plain words " * 70, ""]
CALLS = [("edit_file", '{"path": "src/a.py"}'), ("read_file", '{"path": "src/b.py"}'), ("run", '{"cmd": "pytest"}')]


@st.composite
def pooled_messages(draw: st.DrawFn) -> list[Message]:
    out: list[Message] = []
    for i in range(draw(st.integers(1, 60))):
        role = draw(st.sampled_from(["user", "assistant", "tool"]))
        text = draw(st.sampled_from(TEXTS)).format(k=draw(st.integers(0, 15)))
        parts: tuple = (TextPart(text),) if text else ()
        if role == "assistant" and draw(st.booleans()):
            name, arguments = draw(st.sampled_from(CALLS))
            parts += (ToolCallPart(f"c{i}", name, arguments),)
        out.append(Message(id=f"m{i}", index=i, role=role, parts=parts, category=default_category(role)))
    return out


#: How a snapshot counts: not at all, each line whole, or by pieces (supyagent under these encodings).
COUNTING = [(None, False), ("cl100k_base", False), ("cl100k_base", True), ("o200k_base", True)]


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=pooled_messages(), steps=st.lists(st.integers(0, 14), min_size=1, max_size=25), how=st.sampled_from(COUNTING))
def test_the_carried_snapshot_is_the_summarizers_text_and_count(messages, steps, how):
    encoding, by_pieces = how
    counted = encoding is not None
    tok = TiktokenTokenizer(encoding or "cl100k_base")
    snapshot = _Snapshot(tok.count if counted else None, by_pieces=by_pieces)
    end = 0
    for step in steps:
        end = min(len(messages), end + step)
        snapshot.advance(messages[len(snapshot.seen) : end])
        text, count = snapshot.counted()
        assert text == supyagent_snapshot(messages[:end])
        assert count == (tok.count(text) if counted else -1)
        assert snapshot.render() == text  # asked again with nothing new: the same text
