"""Where each part of a context comes from, for `plan --json` and `simulate --json`, and in words
for the headings of the markdown export and the app's Context tab.

A plan's `context_index` names the session message of each context entry, or None for what the
policy wrote itself: the system prompt, a summary (one the file records, or the one the policy
writes now), or an inserted message (AutoGen's "Skipped N messages.", Gemini CLI's
acknowledgement). Checking a plan meant rebuilding that mapping by hand; these functions give it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import groupby
from typing import Any

from .plan import Decision, Plan
from .session import Session, Summary


def message_refs(session: Session, ids: Iterable[str]) -> list[dict[str, Any]]:
    """`{"index", "id"}` of every message each id names, as the policies read `covers` (an id
    several messages share covers them all; index None for an id the file does not hold)."""
    positions: dict[str, list[int]] = {}
    for m in session.messages:
        positions.setdefault(m.id, []).append(m.index)
    refs: list[dict[str, Any]] = []
    for i in dict.fromkeys(ids):  # an id named twice still names its messages once
        refs += [{"index": k, "id": i} for k in positions.get(i, [None])]
    return refs


def index_refs(session: Session, indices: Iterable[int]) -> list[dict[str, Any]]:
    """`{"index", "id"}` of these messages themselves (not of every message sharing their ids)."""
    return [{"index": k, "id": session.messages[k].id} for k in indices]


def entry_text(entry: Mapping[str, Any]) -> str:
    """An entry's text: its string content, or its parts' texts joined by newlines."""
    content = entry.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def new_summary_covers(plan: Plan, session: Session) -> list[int]:
    """The messages the policy's own new summary covers: those it marks summarised that no recorded
    summary covers, and those of a recorded summary it folds into the new one."""
    recorded = session.covered_ids
    folded = {c for sp in plan.summaries if sp.decision is Decision.SUMMARIZED and sp.index < len(session.summaries)
              for c in session.summaries[sp.index].covers}
    return [m.index for m in plan.messages if m.decision is Decision.SUMMARIZED and (m.id not in recorded or m.id in folded)]


def plan_sources(plan: Plan, session: Session) -> dict[str, Any]:
    """`context_sources` (one per context entry: its kind, the message index and id; for a summary
    the messages it covers; for the system prompt the system-role messages it includes) and
    `summary_covers` (per entry of the plan's `summaries`)."""
    sent_recorded = [(sp.index, session.summaries[sp.index]) for sp in plan.summaries
                     if sp.index < len(session.summaries) and sp.decision in (Decision.KEPT, Decision.TRUNCATED)
                     and session.summaries[sp.index].text.strip()]
    new_covers = new_summary_covers(plan, session)
    new_claimed = False
    sources: list[dict[str, Any]] = []
    index = plan.context_index if len(plan.context_index) == len(plan.context) else (None,) * len(plan.context)
    for position, (entry, i) in enumerate(zip(plan.context, index, strict=True)):
        if i is not None:
            sources.append({"kind": "message", "index": i, "id": session.messages[i].id})
            continue
        text = entry_text(entry)
        found = next((k for k, s in sent_recorded if s.text.strip()[:200] in text), None)
        if found is not None:
            sources.append({"kind": "summary", "index": None, "id": None, "summary": found,
                            "covers": message_refs(session, session.summaries[found].covers)})
        elif position == 0 and entry.get("role") in ("system", "developer"):
            # The session's system-role messages the policy sends inside it (not as entries of their own).
            inside = [m.index for m in plan.messages if m.sent and m.role == "system" and m.index not in set(index)]
            sources.append({"kind": "system_prompt", "index": None, "id": None, "includes": index_refs(session, inside)})
        elif new_covers and not new_claimed:
            new_claimed = True
            sources.append({"kind": "summary", "index": None, "id": None, "summary": None, "covers": index_refs(session, new_covers)})
        else:
            sources.append({"kind": "inserted", "index": None, "id": None})
    covers = []
    for sp in plan.summaries:
        if sp.index < len(session.summaries):
            covers.append(message_refs(session, session.summaries[sp.index].covers))
        else:  # a summary the policy writes now
            covers.append(index_refs(session, new_covers))
    return {"context_sources": sources, "summary_covers": covers}


def add_plan_sources(doc: dict[str, Any], plan: Plan, session: Session) -> dict[str, Any]:
    """The plan's JSON document with `context_sources` and each summary's `covers` added."""
    found = plan_sources(plan, session)
    for summary, covers in zip(doc.get("summaries", []), found["summary_covers"], strict=False):
        summary["covers"] = covers
    out: dict[str, Any] = {}
    for key, value in doc.items():  # beside `context`, which it describes entry by entry
        out[key] = value
        if key == "context":
            out["context_sources"] = found["context_sources"]
    return out


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
    """"message", or one of KINDS: a summary is the agent's (recorded) or ctxviz's stand-in."""
    if source["kind"] == "summary":
        return "recorded" if source.get("summary") is not None else "stand_in"
    return str(source["kind"])


def _covers(source: Mapping[str, Any]) -> str:
    span = span_text(ref["index"] for ref in source.get("covers", ()))
    return f" (covers {span})" if span else ""


def source_label(source: Mapping[str, Any], entry: Mapping[str, Any], session: Session) -> str:
    """An entry's source in words ("#12" for one of the file's messages). Whoever reads a context
    must know which text the agent wrote, which the file holds and which ctxviz made up offline:
    "added by the policy" for all of them hid that Claude Code's compact summary is the agent's own."""
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
        return "system prompt: not in the log" if not entry_text(entry).strip() else "system prompt written by the policy, not in the log"
    return "inserted by the policy: not in the log"


def context_labels(plan: Plan, session: Session) -> list[str]:
    """`source_label` of each entry of `plan.context`, in order."""
    sources = plan_sources(plan, session)["context_sources"]
    return [source_label(source, entry, session) for source, entry in zip(sources, plan.context, strict=True)]


def added_counts(sources: Sequence[Mapping[str, Any]]) -> list[str]:
    """The entries that are not the file's messages, counted by the classes their headings name:
    "1 recorded summary from the log (written by the agent)"."""
    counts = Counter(kind_of(s) for s in sources)
    return [f"{counts[k]:,} {one if counts[k] == 1 else many}" for k, (one, many) in KINDS.items() if counts[k]]


def timeline_summaries(session: Session, turns: Sequence[Any], generated: Sequence[Summary],
                       events_kinds: Mapping[str, Any]) -> tuple[list[dict[str, Any]], dict[int, list[dict[str, Any]]]]:
    """Every summary a replay put in force (`source` "replay", in order) and every summary the file
    records (`source` "recorded"), each with the turn it took effect and the messages it covers;
    and, per turn position, the messages covered by the summaries that turn put in force."""
    out: list[dict[str, Any]] = []
    at_turn: dict[int, list[dict[str, Any]]] = {}
    counts = [t.summaries for t in turns]
    for k, summary in enumerate(generated):
        # Made after the build of the last turn whose count of summaries is k or less.
        turn = next((p for p in range(len(turns)) if counts[p] <= k and (p + 1 == len(turns) or counts[p + 1] > k)), None)
        refs = message_refs(session, summary.covers)
        out.append({"source": "replay", "index": k, "turn": turns[turn].index if turn is not None else None, "covers": refs})
        if turn is not None:
            at_turn.setdefault(turn, []).extend(refs)
    for k, (summary, start) in enumerate(zip(session.summaries, session.summary_start_turns, strict=True)):
        refs = message_refs(session, summary.covers)
        turn = next((p for p, t in enumerate(turns) if t.horizon >= start), None)
        out.append({"source": "recorded", "index": k, "turn": turns[turn].index if turn is not None else None, "covers": refs})
        if turn is not None and start > 0:
            at_turn.setdefault(turn, []).extend(refs)
    return out, at_turn
