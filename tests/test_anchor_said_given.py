"""An index built from what its messages say, read by the caller (`build_index(..., said=)`: the
forked child of engine/anchors_ahead.py), is the index built through the message store: same
anchors, lists, forms, keys and phrases in the same order, on real logs and on random sessions,
whatever the store read before."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxviz.engine import anchors as anchors_module
from ctxviz.engine.anchor_cache import MessageAnchors
from ctxviz.engine.anchor_extract import said_in
from ctxviz.engine.anchors import AnchorIndex, build_index, said_keys
from ctxviz.engine.session import Session
from ctxviz.io.loaders import load_session
from tests.builders import session
from tests.test_anchor_cache import WORDS

REAL = Path(__file__).parent / "data" / "real"
LOGS = sorted(p for p in REAL.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file())


def said_of(s: Session) -> list:  # type: ignore[type-arg]
    return [said_in(text, voice, role, swe) for voice, role, swe, text in said_keys(s, 0, len(s.messages))]


def identical(a: AnchorIndex, b: AnchorIndex) -> None:
    """Every attribute the index is read by, equal and (for dicts) in the same order."""
    assert a.anchors == b.anchors
    assert a.by_message == b.by_message
    for name in ("forms", "by_key", "phrases"):
        assert list(getattr(a, name).items()) == list(getattr(b, name).items()), name
    assert a.voices == b.voices and a.first_indices == b.first_indices
    assert a.user_anchors == b.user_anchors and a._needles == b._needles
    assert a._growth is None and b._growth is None


def loadable(path: Path) -> Session | None:
    try:
        return load_session(path)
    except Exception:  # a fixture that is no session (a schema, a config)
        return None


def test_the_real_logs_give_the_same_index() -> None:
    warm = MessageAnchors()  # has read every log before: its vocabulary holds other sessions' words
    read = 0
    for path in LOGS:
        s = loadable(path)
        if s is None or not s.messages:
            continue
        build_index(s, warm)
    for path in LOGS:
        s = loadable(path)
        if s is None or not s.messages:
            continue
        given_said = build_index(s, MessageAnchors(), grows=False, said=said_of(s))
        identical(given_said, build_index(s, MessageAnchors(), grows=False))
        identical(given_said, build_index(s, warm, grows=False))
        read += 1
    assert read >= 20


def test_the_store_is_neither_read_nor_filled() -> None:
    s = session(("user", "Fix src/app/main.py and keep ORD-2231 open."), ("assistant", "Editing `cache_key` in src/app/main.py."),
                ("tool", "ValueError: bad value at src/app/main.py:12"))
    store = MessageAnchors()
    build_index(s, store, grows=False, said=said_of(s))
    assert len(store) == 0 and store.extracted == 0 and store.split == 0 and not store.vocabulary.words


@pytest.mark.parametrize("how", [{"grows": True}, {"previous": "index"}, {"short": True}])
def test_said_is_refused_where_it_would_be_wrong(how: dict) -> None:  # type: ignore[type-arg]
    s = session(("user", "Fix src/app/main.py"), ("assistant", "Done: src/app/main.py"))
    said = said_of(s)
    with pytest.raises(ValueError):
        if "grows" in how:
            build_index(s, MessageAnchors(), said=said)
        elif "previous" in how:
            build_index(s, MessageAnchors(), previous=build_index(s, MessageAnchors()), grows=False, said=said)
        else:
            build_index(s, MessageAnchors(), grows=False, said=said[:-1])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool", "system"]), st.lists(st.sampled_from(WORDS), min_size=0, max_size=4)),
                min_size=1, max_size=14),
       st.integers(0, 3), st.booleans())
def test_random_sessions_give_the_same_index(turns, tail, shared) -> None:  # type: ignore[no-untyped-def]
    full = session(*[(role, " ".join(words)) for role, words in turns])
    saved, anchors_module.TAIL = anchors_module.TAIL, tail
    try:
        store = MessageAnchors()
        if shared:  # a store that read a longer session with more words first
            build_index(session(*[(role, " ".join(reversed(words)) + " extra/other.py") for role, words in turns]), store)
        identical(build_index(full, store, grows=False, said=said_of(full)), build_index(full, store, grows=False))
    finally:
        anchors_module.TAIL = saved


def test_the_child_reads_a_repeated_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the forked child reads itself (`anchors_ahead._said_in`): one answer per message, a text
    repeated with the same voice and role read once (as the store would), another role read apart."""
    from ctxviz.engine import anchors_ahead

    s = session(("user", "Fix src/app/main.py"), ("tool", "ok: src/app/main.py"), ("tool", "ok: src/app/main.py"),
                ("assistant", "ok: src/app/main.py"), ("tool", "ok: src/app/main.py"), ("user", "Fix src/app/main.py"))
    read: list[tuple[str, str]] = []

    def counting(text: str, voice: str, role: str, swe: bool):  # type: ignore[no-untyped-def]
        read.append((text, role))
        return said_in(text, voice, role, swe)

    monkeypatch.setattr(anchors_ahead, "said_in", counting)
    got = anchors_ahead._said_in(s, 0, len(s.messages))
    assert got == said_of(s)
    assert sorted(read) == sorted({(m.text, m.role) for m in s.messages})
    assert got[1] is got[2] is got[4]
