"""Where each entry of the Context tab's request comes from, in words.

The markdown view headed every entry the session does not hold as one message "added by the
policy": Claude Code's own recorded compact summary, SWE-agent's system message folded into the
system prompt and Gemini CLI's unrecorded system instruction alike. Whoever reads the context needs
to know which text the agent wrote, which the file holds and which ctxviz made up offline, so each
heading names its source as engine/sources.py `plan_sources` classifies it, and the scope line
above the text counts the entries by the same classes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import groupby
from typing import Any

from ...engine.plan import Plan
from ...engine.session import Session
from ...engine.sources import plan_sources
from ...io.exporters import marked_markdown

#: How `marked_markdown` heads an entry that is not one of the session's messages.
ADDED = " · added by the policy"
HEADING = re.compile(r"## (\d+)\. ")
FENCE = re.compile(r"`{3,}")

#: The classes an entry not sent as one of the file's messages falls in: (one, several).
KINDS = {
    "system_prompt": ("system prompt", "system prompts"),
    "recorded": ("recorded summary from the log (written by the agent)", "recorded summaries from the log (written by the agent)"),
    "stand_in": ("stand-in summary ctxviz wrote offline (not the agent's)", "stand-in summaries ctxviz wrote offline (not the agent's)"),
    "inserted": ("message inserted by the policy", "messages inserted by the policy"),
}


def span_text(indices: Iterable[int | None]) -> str:
    """Message indices as runs ("#0-#19", "#0, #4-#6")."""
    known = sorted({i for i in indices if i is not None})
    runs = [[i for _, i in run] for _, run in groupby(enumerate(known), key=lambda p: p[1] - p[0])]
    return ", ".join(f"#{run[0]}" if len(run) == 1 else f"#{run[0]}-#{run[-1]}" for run in runs)


def kind_of(source: Mapping[str, Any]) -> str:
    """"message", or one of KINDS."""
    if source["kind"] == "summary":
        return "recorded" if source.get("summary") is not None else "stand_in"
    return str(source["kind"])


def _covers(source: Mapping[str, Any]) -> str:
    span = span_text(ref["index"] for ref in source.get("covers", ()))
    return f" (covers {span})" if span else ""


def _empty(entry: Mapping[str, Any]) -> bool:
    content = entry.get("content")
    if isinstance(content, list):
        return not any(str(part.get("text", "")).strip() for part in content if isinstance(part, dict))
    return not str(content or "").strip()


def source_label(source: Mapping[str, Any], entry: Mapping[str, Any], session: Session) -> str:
    """An entry's source, as its heading names it ("#12" for one of the file's messages)."""
    kind = kind_of(source)
    if kind == "message":
        return f"#{source['index']}"
    if kind == "recorded":
        return f"the log's recorded summary #{int(source['summary']) + 1}, written by the agent{_covers(source)}"
    if kind == "stand_in":
        return f"ctxviz's offline stand-in summary, not the agent's{_covers(source)}"
    if kind == "system_prompt":
        includes = [ref["index"] for ref in source.get("includes", ())]
        parts = (["system prompt"] if session.system_prompt.strip() else []) + (
            [f"message{'s' if len(includes) > 1 else ''} {span_text(includes)}"] if includes else [])
        if parts:
            return "system prompt: the file's " + " and ".join(parts)
        return "system prompt: not in the log" if _empty(entry) else "system prompt written by the policy, not in the log"
    return "inserted by the policy: not in the log"


def labelled_markdown(plan: Plan, session: Session) -> str:
    """The Context tab's markdown view, each entry headed with its real source."""
    text = marked_markdown(plan)
    sources = plan_sources(plan, session)["context_sources"]
    lines = text.split("\n")
    fence: str | None = None  # inside an entry's code fence nothing is a heading, whatever it says
    for k, line in enumerate(lines):
        if fence is not None:
            fence = None if line == fence else fence
            continue
        if FENCE.fullmatch(line):
            fence = line
            continue
        heading = HEADING.match(line)
        if heading is not None and line.endswith(ADDED) and int(heading[1]) < len(sources):
            i = int(heading[1])
            lines[k] = line[: -len(ADDED)] + " · " + source_label(sources[i], plan.context[i], session)
    return "\n".join(lines)


def added_counts(sources: Sequence[Mapping[str, Any]]) -> list[str]:
    """The entries that are not the file's messages, counted by the classes their headings name:
    "1 recorded summary from the log (written by the agent)"."""
    counts = Counter(kind_of(s) for s in sources)
    return [f"{counts[k]:,} {one if counts[k] == 1 else many}" for k, (one, many) in KINDS.items() if counts[k]]
