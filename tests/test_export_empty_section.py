"""An empty section of the markdown export (issue 24): gemini-cli-compression sends a system
instruction the log does not record, an empty system message, and the Context tab printed it as
an empty code fence, which reads as a rendering fault. It says "(empty)" instead, or, where the
provider's figures say a prompt was sent that the log does not record, says that."""

from __future__ import annotations

import re
from pathlib import Path

from ctxviz.engine.planner import plan_session
from ctxviz.io.exporters import marked_markdown, to_markdown
from ctxviz.io.loaders import load_session

GEMINI = Path(__file__).parent.parent / "sample_sessions" / "gemini_cli_session.json"


def sections(text: str, count: int) -> list[tuple[str, str]]:
    """(heading, body) of the export's sections "## 0. ...", "## 1. ..." in turn (session text
    may hold "## " lines of its own, inside its fences)."""
    starts = []
    at = 0
    for i in range(count):
        match = re.compile(rf"^## {i}\. .*$", re.MULTILINE).search(text, at)
        assert match is not None, f"no section {i}"
        starts.append(match)
        at = match.end()
    ends = [m.start() for m in starts[1:]] + [len(text)]
    return [(m.group(0), text[m.end():end].split("\n\u22ef")[0].strip()) for m, end in zip(starts, ends, strict=True)]


def test_an_empty_system_message_is_said_in_words_not_an_empty_code_fence() -> None:
    session = load_session(str(GEMINI))
    plan = plan_session(session, "gemini-cli-compression", None, None, None, None)
    empty = [i for i, m in enumerate(plan.context) if not str(m.get("content") or "").strip() and not m.get("tool_calls")]
    assert empty and plan.context[empty[0]]["role"] == "system", "the policy's empty system instruction is the case"
    for text in (to_markdown(plan, session, [])[0], marked_markdown(plan, session)):
        found = sections(text, len(plan.context))
        for i, (heading, body) in enumerate(found):
            assert not re.fullmatch(r"(`{3,})\s*\1", body), f"an empty fence under {heading!r}"
            if i in empty:  # (the log does not record the system instruction the provider's figures say was sent)
                assert body == "*(not in the log: see above)*", heading
            else:  # every other section keeps its text verbatim in a fence
                assert body.startswith("```") and body.endswith("```"), heading


def test_the_export_says_what_the_log_does_not_record() -> None:
    """The Gemini CLI sample's first call reported 9,200 tokens more than the log shows: the export
    says so in its head rather than let an empty system section read as an empty prompt. A log
    whose calls match what it shows has neither line."""
    session = load_session(str(GEMINI))
    plan = plan_session(session, "gemini-cli-compression")
    for text in (to_markdown(plan, session, [])[0], marked_markdown(plan, session)):
        head = text.split("## 0.", 1)[0]
        assert "about 9,200 tokens of system prompt and tool definitions the log does not record" in head
    plain = load_session(str(GEMINI.with_name("coding_agent.yaml")))
    text = to_markdown(plan_session(plain, "missy"), plain, [])[0]
    assert "does not record" not in text and "not in the log" not in text
