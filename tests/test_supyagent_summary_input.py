"""What supyagent's summariser is shown, and so what ctxviz's stand-in summary of a supyagent
session may hold: supyagent's transcript (tool results cut to 500 characters, 1,000 for a
successful JSON result; a call's arguments only when short; no system messages) and, when the
prompt is over 80 % of the context limit, only the transcript's first 2 x limit characters.

The prompts are supyagent's own: tests/golden/supyagent/cases.json was recorded by running its
ContextManager.generate_summary (tests/golden/supyagent/generate.py) on these sessions.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.policies.supyagent.summary_input import (
    CHARS_PER_TOKEN,
    PROMPT_HEAD,
    PROMPT_SHARE,
    PROMPT_TAIL,
    SEPARATOR,
    SummaryInput,
    shown,
)
from ctxviz.engine.simulate import simulate
from ctxviz.engine.summarizers import supyagent_snapshot
from ctxviz.engine.tokenizers import TiktokenTokenizer
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = json.loads((ROOT / "tests/golden/supyagent/cases.json").read_text())["cases"]
CL100K = TiktokenTokenizer("cl100k_base")
CRAFTED = "tests/data/supyagent/5e1ec7ed.jsonl"
MARK = "\n... [truncated for summarization]"


def history(path: str) -> list:
    return [m for m in load_session(str(ROOT / path)).messages if m.role != "system"]


def covered(path: str, up_to: int) -> list:
    return history(path)[: up_to + 1]


def shown_to_summariser(messages: list, limit: int, tokenizer: TiktokenTokenizer) -> list:
    """What the stand-in reads of these history messages, summarised from the first at once."""
    shown_input = SummaryInput(limit, tokenizer)
    shown_input.add(messages)
    return shown_input.messages()


def transcript(messages: list) -> str:
    return SEPARATOR.join(shown(m).block for m in messages if m.role != "system")


@pytest.mark.parametrize("case", GOLDEN, ids=lambda c: f"{Path(c['session']).stem}-{c['limit']}")
def test_the_prompt_is_supyagents_byte_for_byte(case: dict) -> None:
    """Each block, the separators, the prompt around them and the cut reproduce the prompt
    supyagent's generate_summary sent (its length and SHA-256; the text itself where short)."""
    text = transcript(covered(case["session"], case["up_to"]))
    prompt = PROMPT_HEAD + text + PROMPT_TAIL
    over = CL100K.count(prompt) > case["limit"] * PROMPT_SHARE
    assert over == case["cut"]
    if over:
        prompt = PROMPT_HEAD + text[: int(case["limit"] * CHARS_PER_TOKEN)] + MARK + PROMPT_TAIL
    if "prompt" in case:
        assert prompt == case["prompt"]
    assert (len(prompt), hashlib.sha256(prompt.encode()).hexdigest()) == (case["length"], case["sha256"])


@pytest.mark.parametrize("case", GOLDEN, ids=lambda c: f"{Path(c['session']).stem}-{c['limit']}")
def test_the_carried_input_decides_the_cut_as_supyagent_does(case: dict) -> None:
    """`SummaryInput` counts the prompt block by block (the sum equals the whole prompt's count
    under cl100k_base) and freezes the head exactly when supyagent's cut removes something."""
    messages = covered(case["session"], case["up_to"])
    text = transcript(messages)
    shown_input = SummaryInput(case["limit"], CL100K)
    shown_input.add(messages)
    removes = case["cut"] and len(text) > int(case["limit"] * CHARS_PER_TOKEN)
    assert shown_input.settle() == removes
    if not case["cut"] and len(text) > int(case["limit"] * CHARS_PER_TOKEN):  # counted whole, and not over
        assert shown_input.tokens == CL100K.count(PROMPT_HEAD + text + PROMPT_TAIL)


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("path", sorted({c["session"] for c in GOLDEN}))
def test_the_prompt_counts_as_the_sum_of_its_blocks(path: str, encoding: str) -> None:
    tok = TiktokenTokenizer(encoding)
    messages = history(path)
    shown_input = SummaryInput(1, tok)  # a limit of 1: every block is counted before the prompt is over
    shown_input.threshold = float("inf")
    shown_input.max_chars = -1
    shown_input.add(messages)
    assert not shown_input.settle()
    assert shown_input.tokens == tok.count(PROMPT_HEAD + transcript(messages) + PROMPT_TAIL)


def test_the_stand_in_reads_only_what_supyagent_shows() -> None:
    summary = supyagent_snapshot(shown_to_summariser(history(CRAFTED), 128_000, CL100K))
    assert "error: early failure in fixture setup" in summary  # within a tool result's first 500 characters
    assert "late failure" not in summary  # past them
    assert "config/ledger.toml" in summary  # a call's short arguments are shown
    assert "src/ledger/parse.py" not in summary  # arguments of 200 characters or more are not
    assert "https://ledger.example.org/status" in summary
    # the whole of it, read as it stands, has what supyagent never shows
    whole = supyagent_snapshot(history(CRAFTED))
    assert "src/ledger/parse.py" in whole and "late failure" in whole


def test_a_successful_json_result_shows_its_first_thousand_characters() -> None:
    results = [m for m in history(CRAFTED) if m.role == "tool"]
    blocks = [shown(m).block for m in results]
    assert 'currency = \\"EUR\\"' in blocks[1] and not blocks[1].endswith("...")  # ok and data, under 1,000: whole
    assert blocks[2].endswith("...") and len(blocks[2]) == len("[Tool Result]: ") + 1000 + 3  # ok and data: 1,000
    assert "past-1000" not in blocks[2]
    assert blocks[3].endswith("...") and len(blocks[3]) == len("[Tool Result]: ") + 500 + 3  # ok false: 500
    assert not blocks[4].endswith("...") and len(blocks[4]) > len("[Tool Result]: ") + 600  # leading spaces: still JSON, whole


def test_past_the_cut_the_summary_is_of_the_head_only() -> None:
    """A prompt over 80 % of the limit: the summary is of the transcript's first 2 x limit
    characters, the last message in it as far as it is shown, and later summaries see the same."""
    messages = history(CRAFTED)
    text = transcript(messages)
    limit = 1_200  # 2,400 characters of a longer transcript, and a prompt well over 960 tokens
    head = text[: limit * CHARS_PER_TOKEN]
    views = shown_to_summariser(messages, limit, CL100K)
    summary = supyagent_snapshot(views)
    assert "Follow-up" not in summary and "CHANGELOG.md" not in summary  # the requests past the head
    last = views[-1]
    assert last.text and last.text in head and not head.endswith(last.text + SEPARATOR)  # the message the cut falls in, cut
    assert shown_to_summariser([*messages, *messages[:4]], limit, CL100K) == views  # a longer history: the same head


def test_the_replay_equals_the_reference_past_the_cut() -> None:
    """The incremental replay carries the frozen head (one snapshot made) and gives the reference's
    turns, events and summaries, before and after the prompt is over."""
    session = load_session(str(ROOT / "sample_sessions/coding_agent.yaml"))
    params = {"max_messages_before_summary": 2, "min_recent_messages": 2, "context_limit": 6_000}
    for pair_safe in (False, True):
        options = PlanOptions(pair_safe=pair_safe)
        fast = simulate(session, "supyagent", params, options=options)
        slow = simulate(session, "supyagent", params, options=options, incremental=False)
        assert fast.turns == slow.turns
        assert [s.text for s in fast.summaries] == [s.text for s in slow.summaries]
        texts = [s.text for s in fast.summaries]
        assert len(texts) > 4 and texts[-1] == texts[-2]  # frozen: the same head shown
        assert len(set(texts)) > 1  # and before the cut the summaries grew
        said = [e.message for t in fast.turns for e in t.events if e.kind == "summary"]
        assert "so the summariser is shown only the conversation's first 12,000 characters, to message #" in said[-1]
        assert "shown only" not in said[0]


def test_a_simulated_supyagent_summary_holds_only_what_its_summariser_was_shown() -> None:
    session = load_session(str(ROOT / CRAFTED))
    params = {"max_messages_before_summary": 3, "min_recent_messages": 2}
    for incremental in (True, False):
        texts = [s.text for s in simulate(session, "supyagent", params, incremental=incremental).summaries]
        assert texts and any("error: early failure" in t for t in texts)
        assert not any("late failure" in t or "src/ledger/parse.py" in t for t in texts)


READ_PATHS = sorted({c["session"] for c in GOLDEN} | {f"sample_sessions/{p.name}" for p in (ROOT / "sample_sessions").iterdir()
                                                      if p.suffix in (".yaml", ".jsonl", ".json", ".traj")})


@pytest.mark.parametrize("path", READ_PATHS)
def test_what_is_read_without_the_views_is_what_the_views_read(path: str) -> None:
    """The replay reads what the summariser is shown without making each view (`Shown.reading`,
    `SummaryInput.readings`, `head_readings`): the same readings, in the same order, as reading
    the views themselves, for the whole history and for each head a cut leaves."""
    from ctxviz.engine.summarizers import features_of

    messages = history(path)
    whole = SummaryInput(10**9, CL100K)
    whole.add(messages)
    assert whole.readings() == features_of(whole.views())
    assert whole.readings(len(messages) // 2) == features_of(whole.views(len(messages) // 2))
    total = len(transcript(messages))
    for limit in sorted({1, 7, 50, total // 5, total // 3}):
        cut = SummaryInput(limit, CL100K)
        cut.add(messages)
        if cut.settle():
            assert cut.head_readings() == features_of(cut.head)
