"""The Context tab names where each entry comes from, not "added by the policy" for all of them:
Claude Code's own recorded compact summary, SWE-agent's system message folded into the system
prompt, Gemini CLI's unrecorded system instruction, ctxviz's offline stand-in summary and the
acknowledgement Gemini CLI inserts each said as what it is; the scope line counts them the same way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.sources import plan_sources  # noqa: E402
from ctxviz.gui.window.context_sources import labelled_markdown, span_text  # noqa: E402
from ctxviz.gui.window.context_tab import CONTEXT_TAB  # noqa: E402
from ctxviz.io.exporters import export_text  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

REAL = Path(__file__).resolve().parent / "data" / "real"
CC = REAL / "claude_code" / "tugtool-compact-native.jsonl"
SW = REAL / "swe_agent" / "pydicom__pydicom-1458.traj"
GM = REAL / "gemini_cli" / "ai-sessions_pomodoro.json"


def headings(text: str) -> list[str]:
    """Each entry's heading after its role: "#12", or what its source is."""
    return re.findall(r"^## \d+\. \w+ · (.+)$", text, re.M)


def test_claude_codes_recorded_summary_is_the_agents_not_the_policys() -> None:
    session = load_session(str(CC))
    plan = plan_session(session, "claude-code")
    shown = headings(labelled_markdown(plan, session))
    assert len(shown) == len(plan.context)
    assert shown[0] == "the log's recorded summary #1, written by the agent (covers #0-#19)"
    assert shown[1:] == [f"#{i}" for i in plan.context_index[1:]]


def test_swe_agents_system_message_is_named_as_the_system_prompts_source() -> None:
    session = load_session(str(SW))
    plan = plan_session(session, "missy", {"total": 8000})
    text = labelled_markdown(plan, session)
    assert headings(text)[0] == "system prompt: the file's message #0"
    assert not [h for h in headings(text) if "added by the policy" in h]


def test_gemini_clis_system_prompt_stand_in_summary_and_acknowledgement_are_each_named() -> None:
    session = load_session(str(GM))
    plan = plan_session(session, "gemini-cli-compression", {"tokenLimit": 8000})
    text = labelled_markdown(plan, session)
    assert headings(text) == ["system prompt: not in the log", "ctxviz's offline stand-in summary, not the agent's (covers #0-#29)",
                              "inserted by the policy: not in the log"]
    # The body of an entry is never rewritten, even a line that looks like a heading.
    assert "*(not in the log: see above)*" in text


def test_a_heading_inside_a_message_is_left_as_written() -> None:
    session = load_session(str(GM))
    plan = plan_session(session, "gemini-cli-compression", {"tokenLimit": 8000})
    import dataclasses

    fake = "## 2. assistant · added by the policy"
    context = [dict(e) for e in plan.context]
    context[1]["content"] = f"{context[1]['content']}\n{fake}"
    changed = dataclasses.replace(plan, context=tuple(context))
    text = labelled_markdown(changed, session)
    assert fake in text.split("\n")  # inside the summary's fence: left alone
    assert headings(text)[-1] == "inserted by the policy: not in the log"


def test_span_text_names_runs() -> None:
    assert span_text([0, 1, 2, 4, 6, 7, None]) == "#0-#2, #4, #6-#7"
    assert span_text([]) == ""


def test_the_tab_and_its_scope_line_count_entries_by_their_sources(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    win = open_window(str(CC))
    win.tabs.setCurrentIndex(CONTEXT_TAB)
    plan, session = win.shown_plan, win.shown_session
    sources = plan_sources(plan, session)["context_sources"]
    assert [s["kind"] for s in sources].count("summary") == 1
    text = win.context_view.toPlainText()
    assert "## 0. user · the log's recorded summary #1, written by the agent" in text
    assert "added by the policy" not in text
    scope = win.context_scope.text()
    assert f"the request below has {len(plan.context):,} entries: 1 recorded summary from the log (written by the agent)" in scope
    assert "added by the policy" not in scope
    # Copying gives the request itself, headed as the view is (without the lines between sent runs).
    assert "## 0. user · the log's recorded summary #1, written by the agent" in export_text(plan, session, "markdown")


def test_a_system_prompt_built_from_the_files_prompt_and_its_system_messages_names_both() -> None:
    session = load_session(str(Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml"))
    plan = plan_session(session, "missy")
    sources = plan_sources(plan, session)["context_sources"]
    included = span_text(ref["index"] for ref in sources[0]["includes"])
    assert session.system_prompt and included.startswith("#0, ")
    assert headings(labelled_markdown(plan, session))[0] == f"system prompt: the file's system prompt and messages {included}"
