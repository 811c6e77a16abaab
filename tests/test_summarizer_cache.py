"""The offline summariser's other shortcuts read what it read before: distinct items in the order
each first appears (a dict, not a list searched per item), paths searched only in arguments that
can hold one, and each message's features kept while the message lives (not for the last 65,536
messages), the same as read afresh and gone with the message."""

from __future__ import annotations

import gc

from hypothesis import given
from hypothesis import strategies as st

from ctxviz.engine import summarizers as S
from ctxviz.engine.session import Message, TextPart, ToolCallPart

PIECES = st.sampled_from(["src/a.py", "x.yaml", "./b.json", "a.pyc", "c.PY", "d.md5", ".env", "e.toml.bak", "/", ".", "-", "_", " ", "é", "{\"p\": \""])
ARGUMENTS = st.lists(st.one_of(PIECES, st.text(max_size=5)), max_size=20).map("".join)


def plain_unique(items: list[str], limit: int) -> list[str]:
    out: list[str] = []
    for item in items:
        if item and item not in out:
            out.append(item)
    return out[-limit:]


@given(items=st.lists(st.sampled_from(["", "a", "b", "c", "d", "e"]), max_size=20), limit=st.integers(1, 4))
def test_distinct_items_keep_the_order_each_first_appears(items, limit) -> None:
    assert S._unique(items, limit) == plain_unique(items, limit)


@given(arguments=ARGUMENTS)
def test_arguments_without_a_path_ending_hold_no_path(arguments) -> None:
    if not S.PATH_END_RE.search(arguments):
        assert S.PATH_RE.findall(arguments) == []


def test_features_are_kept_while_the_message_lives() -> None:
    m = Message(id="m1", index=0, role="assistant", parts=(TextPart("We decided to use src/x.py"), ToolCallPart("c1", "edit", '{"path": "src/x.py"}')))
    assert S._features(m) == S._extract(m) and S._features(m) is S._features(m)
    before = len(S._FEATURES)
    del m
    gc.collect()
    assert len(S._FEATURES) == before - 1
