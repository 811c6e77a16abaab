"""A recorded summary whose covers are the file's first messages is read as that many messages.

A long Claude Code log's compactions each cover every message before them, so their covers total
the square of the log's length (590,000 ids at 4,000 messages). The loader writes such covers as a
view of one list of ids (`IdPrefix`), and `Session.summaries_cover_first` compares that list with
the session's ids once: each answer must be the one a tuple of the same covers gives.
"""

from __future__ import annotations

import dataclasses
import glob
import os

import pytest

from ctxviz.engine.id_prefix import IdPrefix
from ctxviz.engine.session import Message, Session, Summary
from ctxviz.io.loaders import load_session

HERE = os.path.dirname(__file__)
LOGS = sorted(glob.glob(os.path.join(HERE, "data", "real", "claude_code", "*.jsonl")) + glob.glob(os.path.join(HERE, "data", "heldout", "**", "*.jsonl"), recursive=True))
#: Logs whose compactions cover their first messages (one keeps a segment at its end: tugtool-rewind-branch).
COMPACTED = [p for p in LOGS if os.path.basename(p) in ("agentlogs-compact.jsonl", "fasthooks-sample-main-transcript.jsonl",
                                                        "tugtool-compact-native.jsonl", "tugtool-rewind-branch.jsonl")]


def as_tuples(session: Session) -> Session:
    """The same session with every summary's covers copied into a tuple (no view)."""
    return dataclasses.replace(session, summaries=tuple(dataclasses.replace(s, covers=tuple(s.covers)) for s in session.summaries))


def messages(*ids: str) -> tuple[Message, ...]:
    return tuple(Message(id=i, index=k, role="user") for k, i in enumerate(ids))


@pytest.mark.parametrize("path", LOGS, ids=os.path.basename)
def test_a_real_log_answers_as_its_covers_copied_into_tuples(path):
    s = load_session(path)
    plain = as_tuples(s)
    assert s.summaries == plain.summaries
    assert s.summaries_cover_first == plain.summaries_cover_first
    assert s.summary_start_turns == plain.summary_start_turns
    assert s.covered_ids == {c for x in plain.summaries for c in x.covers}


@pytest.mark.parametrize("path", COMPACTED, ids=os.path.basename)
def test_a_compaction_covering_the_first_messages_is_a_view_of_one_list(path):
    """What keeps a long log's covers linear: no compaction's covers are copied, whatever segment it keeps at its end."""
    s = load_session(path)
    firsts = [x for x, first in zip(s.summaries, s.summaries_cover_first, strict=True) if first and x.covers]
    assert len(firsts) == len(s.summaries)
    assert all(isinstance(x.covers, IdPrefix) for x in firsts)


def test_views_of_a_list_that_parts_from_the_session_answer_as_tuples():
    """A list that agrees with the session's ids only at first (a message the loader did not send),
    views longer than the session, an empty one, and tuples beside them."""
    base = ["a", "b", "x", "c", "d"]
    s = Session(messages=messages("a", "b", "c", "d"),
                summaries=(Summary("1", covers=IdPrefix(base, 2)), Summary("2", covers=IdPrefix(base, 3)),  # type: ignore[arg-type]
                           Summary("3", covers=IdPrefix(base, 5)), Summary("4", covers=IdPrefix(base, 0)),  # type: ignore[arg-type]
                           Summary("5", covers=("a", "b", "c")), Summary("6", covers=IdPrefix(["a", "b", "c", "d"], 4))))  # type: ignore[arg-type]
    assert s.summaries_cover_first == (True, False, False, True, True, True)
    assert s.summaries_cover_first == as_tuples(s).summaries_cover_first
    assert s.summary_start_turns == as_tuples(s).summary_start_turns == (2, 2, 4, 0, 3, 4)
    assert s.covered_ids == as_tuples(s).covered_ids == {"a", "b", "c", "d", "x"}
    assert Session(messages=messages("a")).covered_ids == frozenset()
