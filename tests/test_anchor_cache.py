"""Anchors are extracted once per message: a re-plan, a replay's turns, a grown session and a log
re-read whole reuse what the old messages said, and a changed text is read again."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxviz.engine import anchor_extract
from ctxviz.engine import anchors as anchors_module
from ctxviz.engine.anchor_cache import MessageAnchors
from ctxviz.engine.anchors import AnchorIndex, AnchorStore, anchors_of, build_index
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.redaction import without_markers
from ctxviz.engine.retention import plan_retention
from ctxviz.engine.retention_timeline import timeline_retention
from ctxviz.engine.session import Message, Session, TextPart, default_category
from ctxviz.engine.simulate import simulate
from ctxviz.engine.voices import SWE_AGENT_FORMATS, voices_from, voices_of
from ctxviz.io.loaders import load_session
from tests.builders import session

SAMPLES = Path(__file__).parent.parent / "sample_sessions"


@pytest.fixture
def extracted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every text the extractor reads, in order (the real extractor, wrapped)."""
    seen: list[str] = []
    real = anchor_extract.extract

    def counting(text: str, role: str = "user") -> list[tuple[str, str, str]]:
        seen.append(text)
        return real(text, role)

    monkeypatch.setattr(anchor_extract, "extract", counting)
    yield seen


def same(a: AnchorIndex, b: AnchorIndex) -> None:
    """Two indexes of one session say the same: anchors, per-message lists, forms and phrases."""
    assert a.anchors == b.anchors
    assert a.by_message == b.by_message
    assert a.forms == b.forms and a.by_key == b.by_key and a.phrases == b.phrases


def grown(s: Session, *turns: tuple[str, str]) -> Session:
    """A new Session object holding the same Message objects and new ones (a followed log after an append)."""
    start = len(s.messages)
    new = tuple(Message(id=f"m{start + i}", index=start + i, role=role, parts=(TextPart(text),), category=default_category(role))
                for i, (role, text) in enumerate(turns))
    return dataclasses.replace(s, messages=s.messages + new)


def test_a_grown_session_reads_only_its_new_messages(extracted: list[str]) -> None:
    s = load_session(str(SAMPLES / "coding_agent.yaml"))
    store = MessageAnchors()
    build_index(s, store)
    old = {m.text for m in s.messages if m.text}
    assert old <= set(extracted)  # the first index read every message
    extracted.clear()
    bigger = grown(s, ("user", "Now also fix app/api/orders.py and never touch `cursor_secret`."), ("assistant", "Looking at ORD-4411."))
    index = build_index(bigger, store)
    assert extracted == ["Now also fix app/api/orders.py and never touch `cursor_secret`.", "Looking at ORD-4411."]
    same(index, build_index(bigger, MessageAnchors()))  # what a fresh read of the grown session says


def test_a_log_read_again_into_new_message_objects_is_not_extracted_again(extracted: list[str]) -> None:
    path = str(SAMPLES / "claude_code_compaction.jsonl")
    store = MessageAnchors()
    first = build_index(load_session(path), store)
    extracted.clear()
    again = load_session(path)  # new Session and Message objects, the same texts
    index = build_index(again, store)
    assert extracted == []
    assert index.anchors == first.anchors and index.by_message == first.by_message


def test_re_plans_and_a_replay_extract_no_message_again(extracted: list[str]) -> None:
    s = load_session(str(SAMPLES / "coding_agent.yaml"))
    index = anchors_of(s, AnchorStore())
    texts = {m.text for m in s.messages if m.text}
    extracted.clear()
    for total in (20_000, 30_000, 45_000):  # the budget dragged: one re-plan each
        plan_retention(plan_session(s, "missy", {"total": total}), s, index)
    timeline = simulate(s, "supyagent", get_policy("supyagent").make_params({"max_messages_before_summary": 12}))
    timeline_retention(timeline, index)
    # what is read again is text sent beside the messages (summaries, the system prompt, cut parts), never a message
    assert not texts & set(extracted)


def test_the_same_id_with_other_words_is_read_again() -> None:
    store = MessageAnchors()
    before = session(("user", "Please fix src/old_name.py before Friday."), ("assistant", "Done, see ORD-1111."))
    after = session(("user", "Please fix src/new_name.py before Friday."), ("assistant", "Done, see ORD-1111."))
    assert [m.id for m in before.messages] == [m.id for m in after.messages]
    old = build_index(before, store)
    new = build_index(after, store)
    assert "src/old_name.py" in {a.value for a in old.anchors}
    values = {a.value for a in new.anchors}
    assert "src/new_name.py" in values and "src/old_name.py" not in values
    same(new, build_index(after, MessageAnchors()))


def test_a_new_anchor_finds_its_unquoted_mentions_in_old_messages(extracted: list[str]) -> None:
    """A grown session's new anchor (`session_cwd`, quoted) is named unquoted in an old message: the
    old message is searched for the new word only, and is added to the anchor as a fresh read adds it."""
    s = session(("user", "The render function takes session_cwd as a keyword."), ("assistant", "Noted, it lives in src/render.py."))
    store = MessageAnchors()
    build_index(s, store)
    assert store.split == 2
    extracted.clear()
    bigger = grown(s, ("user", "Rename `session_cwd` to cwd everywhere."))
    index = build_index(bigger, store)
    assert extracted == ["Rename `session_cwd` to cwd everywhere."]
    assert store.split == 3  # only the new text was read whole; the old ones were searched for the new words
    cwd = index.find("session_cwd")
    assert cwd is not None and cwd.messages == (0, 2) and cwd.first_index == 0
    same(index, build_index(bigger, MessageAnchors()))


def test_a_store_past_its_limit_forgets_and_reads_again(extracted: list[str]) -> None:
    s = session(("user", "Fix src/a.py now."), ("assistant", "See ORD-2231 " + "x" * 200), ("user", "Never push to main."))
    store = MessageAnchors(limit_chars=100)
    first = build_index(s, store)
    assert store._said_chars <= 100
    extracted.clear()
    again = build_index(s, store)
    assert extracted  # some were forgotten and read again, with the same answers
    same(again, first)


WORDS = ["Fix src/app/main.py", "see ORD-2231", "use `cache_key`", "Never push to main.", "lines 10-20", "app/main.py is done",
         "cache_key = build()", "/srv/repo/src/app/main.py", "ValueError: bad", "spotter-dov.1 closed", "ok", "Reply with exactly OK.",
         "import re", "`import re`", "main.py", "see #4512", "https://example.com/a/b", "3f2a9c1d"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
                min_size=2, max_size=12),
       st.lists(st.integers(1, 12), min_size=1, max_size=4))
def test_an_index_built_as_the_session_grows_equals_one_read_from_scratch(turns, cuts) -> None:  # type: ignore[no-untyped-def]
    full = session(*[(role, " ".join(words)) for role, words in turns])
    store = MessageAnchors()
    for cut in sorted({min(c, len(full.messages)) for c in cuts} | {len(full.messages)}):
        prefix = dataclasses.replace(full, messages=full.messages[:cut])
        same(build_index(prefix, store), build_index(prefix, MessageAnchors()))


# --- an index carried over a grown session (build_index's `previous`: a followed log) -------------

REAL = Path(__file__).parent / "data" / "real"
GROWING = [REAL / "claude_code" / "spotter-4d5611e5.jsonl", REAL / "claude_code" / "claude-code-viewer-fe5e1c67.jsonl",
           REAL / "claude_code" / "tugtool-compact-native.jsonl", sorted((REAL / "codex").glob("codemie-rollout-*.jsonl"))[0],
           sorted((REAL / "gemini_cli").glob("*.jsonl"))[0]]


def _followed(log: Path, folder: Path, cuts: list[int]) -> Iterator[Session]:
    """The sessions a follower reads from `log` written up to each cut (a fraction of its lines)."""
    from ctxviz.io.follow import Follower

    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    path = folder / log.name
    path.write_text("", encoding="utf-8")
    follower = Follower(path)
    written = 0
    for cut in [*cuts, 100]:
        upto = len(lines) * cut // 100
        with path.open("a", encoding="utf-8") as handle:
            handle.write("".join(lines[written:upto]))
        written = upto
        try:
            follower.poll()
        except Exception:  # nothing loadable yet
            continue
        yield follower.session


@pytest.mark.parametrize("tail", [anchors_module.TAIL, 1])
@pytest.mark.parametrize("log", GROWING, ids=lambda p: p.stem[:30])
def test_an_index_carried_over_a_grown_log_equals_one_read_from_scratch(log: Path, tail: int, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A real log followed as it is written, split at several points: each index is built from the
    one before (only the new messages read; the old ones searched only for new words and phrases)
    and says what an index read from scratch says."""
    monkeypatch.setattr(anchors_module, "TAIL", tail)
    previous = None
    carried = 0
    for s in _followed(log, tmp_path, [5, 20, 21, 35, 50, 51, 52, 70, 90]):
        index = build_index(s, MessageAnchors(), previous=previous)
        carried += previous is not None and previous._growth is None  # used up: this one grew from it
        same(index, build_index(s, MessageAnchors()))
        assert index.voices == build_index(s, MessageAnchors()).voices
        # The voices the app reads (voices_of, carried over from the session before) are a fresh read's.
        assert voices_of(s) == voices_from(s.messages, s.format in SWE_AGENT_FORMATS)
        previous = index
    assert carried >= 5


def test_a_grown_index_extracts_only_the_new_messages(extracted: list[str], tmp_path: Path) -> None:
    """Counting: with a fresh message store each time (nothing remembered per text), building the
    index of a grown log from the previous index extracts the new messages and the last few
    (`TAIL`, which a loader may still change), never the others."""
    log = next((REAL / "codex").glob("localpush-rollout-2026-02-23T12-54-34-*.jsonl"))  # 700 messages
    sessions = list(_followed(log, tmp_path, [30, 45, 60, 61, 80]))
    previous = build_index(sessions[0], MessageAnchors())
    for s in sessions[1:]:
        old = len(previous.session.messages)
        extracted.clear()
        store = MessageAnchors()
        index = build_index(s, store, previous=previous)
        start = max(0, old - anchors_module.TAIL)
        # One extraction per distinct (voice, role, text) of the messages from `start` on: no other.
        assert store.extracted == len({(v, m.role, m.text) for m, v in zip(s.messages[start:], index.voices[start:], strict=True)})
        assert store.extracted < sum(1 for m in s.messages if m.text)  # fewer than a read from scratch
        # (what is read is the text around its redaction markers: this log was sanitised, engine/redaction.py)
        assert set(extracted) <= {without_markers(m.text) for m in s.messages[start:]}
        previous = index


def test_a_changed_old_message_is_read_from_scratch(tmp_path: Path) -> None:
    """A session whose old messages are other objects (a log read again whole) is not carried on."""
    log = next((REAL / "codex").glob("localpush-rollout-2026-02-23T12-54-34-*.jsonl"))
    sessions = list(_followed(log, tmp_path, [50]))
    first = build_index(sessions[0], MessageAnchors())
    again = load_session(str(log))
    index = build_index(again, MessageAnchors(), previous=first)
    assert first._growth is not None  # not used
    same(index, build_index(again, MessageAnchors()))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
                min_size=2, max_size=12),
       st.lists(st.integers(1, 12), min_size=1, max_size=4), st.integers(0, 3))
def test_an_index_carried_over_each_growth_equals_one_read_from_scratch(turns, cuts, tail) -> None:  # type: ignore[no-untyped-def]
    full = session(*[(role, " ".join(words)) for role, words in turns])
    previous = None
    saved, anchors_module.TAIL = anchors_module.TAIL, tail
    try:
        for cut in sorted({min(c, len(full.messages)) for c in cuts} | {len(full.messages)}):
            prefix = dataclasses.replace(full, messages=full.messages[:cut])
            index = build_index(prefix, MessageAnchors(), previous=previous)
            same(index, build_index(prefix, MessageAnchors()))
            previous = index
    finally:
        anchors_module.TAIL = saved


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
                min_size=1, max_size=12),
       st.integers(0, 3), st.booleans())
def test_an_index_that_keeps_nothing_to_grow_is_the_same_index(turns, tail, shared) -> None:  # type: ignore[no-untyped-def]
    """`grows=False` (the index a forked child sends) skips the copies kept for growth: the same
    anchors, lists, forms and keys in the same order as the index that keeps them, with nothing to
    grow from (a session grown from it is read whole, to the index read from scratch). Tested with
    a store that has read the texts before (`shared`) and one that has not."""
    full = session(*[(role, " ".join(words)) for role, words in turns])
    saved, anchors_module.TAIL = anchors_module.TAIL, tail
    try:
        store = MessageAnchors()
        kept = build_index(full, store)
        lean = build_index(full, store if shared else MessageAnchors(), grows=False)
        same(lean, kept)
        assert list(lean.forms) == list(kept.forms) and list(lean.by_key) == list(kept.by_key)
        assert lean.voices == kept.voices and lean.first_indices == kept.first_indices
        assert lean._growth is None and kept._growth is not None
        bigger = grown(full, ("user", "Now fix src/app/other.py and keep ORD-9001 open."), ("assistant", "Editing `other_key` in src/app/other.py."))
        same(build_index(bigger, MessageAnchors(), previous=lean), build_index(bigger, MessageAnchors()))
    finally:
        anchors_module.TAIL = saved


def test_extractions_put_from_elsewhere_are_served_without_reading_the_text() -> None:
    """`put` keeps what another process read (engine/anchors_ahead.py): `said` serves it without
    computing, a key kept before keeps its own answer, and an index built on such a store is the
    one built from nothing."""
    from ctxviz.engine.anchor_extract import said_in
    from ctxviz.engine.anchors import said_keys

    s = session(("user", "Fix src/app/main.py and keep ORD-2231 open."), ("assistant", "Editing `cache_key` in src/app/main.py."),
                ("tool", "ValueError: bad value at src/app/main.py:12"))
    keys = said_keys(s, 0, len(s.messages))
    computed = [said_in(text, voice, role, swe) for voice, role, swe, text in keys]
    store = MessageAnchors()
    store.said(keys[:1], said_in)
    store.put(keys, [((("user", ()),), False), *computed[1:]])  # the first key's own answer stands
    calls: list[str] = []

    def never(text: str, voice: str, role: str, swe: bool):  # type: ignore[no-untyped-def]
        calls.append(text)
        return said_in(text, voice, role, swe)

    assert store.said(keys, never) == computed and calls == []
    same(build_index(s, store), build_index(s, MessageAnchors()))
