"""`lost` counts what a plan does not send from arrays (issue 22: it runs for every parameter change
of a 10,000-message session). Held to the record-by-record reading it replaced, kept here as the
oracle, on the sample sessions under every policy and at budgets that cut in different places."""

from __future__ import annotations

import heapq
from collections import Counter
from itertools import compress
from pathlib import Path

import pytest

from ctxviz.engine.lost import NOT_THE_USERS, lost
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy, policy_names
from ctxviz.engine.voices import voices_of
from ctxviz.errors import ParameterError
from ctxviz.io.loaders import load_session

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
FILES = ("support_chat.yaml", "coding_agent.yaml", "claude_code_compaction.jsonl", "codex_rollout.jsonl")


def _by_records(plan, session, shown: int = 5):  # type: ignore[no-untyped-def]
    """What the card counted before, message by message: (count, tokens, whose, cut, the user's
    messages not sent, how many, the largest not sent)."""
    cols = plan.columns
    sent = plan.sent_flags
    unsent = [not f for f in sent]
    indices = list(compress(cols.index, unsent))
    if not indices:
        return None
    voices = voices_of(session)
    user = [r == "user" for r in cols.role]
    not_theirs = [u and v in NOT_THE_USERS for u, v in zip(user, voices, strict=True)]
    by_role = Counter(compress(cols.role, [u and not t for u, t in zip(unsent, not_theirs, strict=True)]))
    by_role.update(compress(voices, [u and t for u, t in zip(unsent, not_theirs, strict=True)]))
    users = list(compress(cols.index, [u and us and not t for u, us, t in zip(unsent, user, not_theirs, strict=True)]))
    largest = heapq.nlargest(shown, indices, key=cols.tokens.__getitem__)
    return (len(indices), sum(compress(cols.tokens, unsent)), dict(by_role), indices[-1], users[:shown], len(users), largest)


@pytest.mark.parametrize("name", FILES)
def test_lost_from_arrays_counts_what_the_records_count(name: str) -> None:
    session = load_session(str(SAMPLES / name))
    checked = 0
    for policy in policy_names():
        defaults = get_policy(policy).default_params()
        budget = next((f for f in ("total", "max_tokens", "context_limit", "token_limit", "window") if hasattr(defaults, f)), None)
        variants = [defaults]
        if budget is not None and isinstance(getattr(defaults, budget), int):
            for d in (3, 10):
                try:
                    variants.append(get_policy(policy).make_params({budget: max(1, getattr(defaults, budget) // d)}, base=defaults))
                except ParameterError:  # a budget this small that the framework refuses: not this test's concern
                    pass
        for params in variants:
            plan = plan_session(session, policy, params)
            found, expected = lost(plan, session), _by_records(plan, session)
            if expected is None:
                assert found.messages == 0 and found.cut is None
                continue
            count, tokens, by_role, cut, users, users_lost, largest = expected
            assert (found.messages, found.tokens, found.by_role, found.cut) == (count, tokens, by_role, cut)
            assert list(found.by_role) == sorted(by_role, key=list(found.by_role).index)  # (ordered user first, as before)
            assert [m.index for m in found.user_requests] == users and found.users_lost == users_lost
            assert [m.index for m in found.largest] == largest
            checked += 1
    assert checked  # some plan of the file leaves something out
