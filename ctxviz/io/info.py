"""What ctxviz read from a file: the first thing to check on a new log (`ctxviz info`).

Everything here is a fact about the loaded session, before any policy: the format it was read as,
what it holds, what pairs up, what the provider reported, and every note the loader made.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..engine.agent_policies import opened_under
from ..engine.policies.common import recorded_covers
from ..engine.session import ImagePart, OpaquePart, Session, ThinkingPart, ToolResultPart
from ..engine.wording import counted
from .loaders import get_loader, loader_names


def format_title(name: str) -> str:
    return get_loader(name).title if name in loader_names() else name


def session_facts(session: Session) -> dict[str, Any]:
    """The facts `ctxviz info` prints, as a JSON-ready dict."""
    roles = Counter(m.role for m in session.messages)
    parts = Counter(type(p).__name__ for m in session.messages for p in m.parts)
    opaque = Counter(p.type for m in session.messages for p in m.parts if isinstance(p, OpaquePart))
    calls = {c.id: m.index for m in session.messages for c in m.tool_calls}
    result_ids = [m.tool_call_id or next((p.tool_call_id for p in m.parts if isinstance(p, ToolResultPart)), "")
                  for m in session.messages if m.role == "tool"]
    answered = set(result_ids) & set(calls)
    with_usage = [m for m in session.messages if m.usage is not None]
    last = with_usage[-1] if with_usage else None
    summarised, before_file = _summarised(session)
    shared = _shared_ids(session)
    return {
        "file": session.source,
        "format": session.format,
        "format_title": format_title(session.format),
        "format_version": session.format_version,
        "model": session.model,
        # The policy `plan`, `simulate` and the app open it under without --policy (the agent's own, else missy).
        "policy": opened_under(session.format, session.model).policy,
        "agents_own_policy": opened_under(session.format, session.model).agents_own,
        "context_window": session.context_window or None,
        "title": session.title,
        "messages": len(session.messages),
        "roles": dict(roles),
        "images": parts.get(ImagePart.__name__, 0),
        "thinking": parts.get(ThinkingPart.__name__, 0),
        "opaque": dict(opaque),
        "tool_calls": len(calls),
        "tool_calls_answered": len(answered),
        "tool_calls_unanswered": len(set(calls) - answered),
        "tool_results": len(result_ids),
        "tool_results_without_call": sum(1 for r in result_ids if r not in calls),
        "summaries": len(session.summaries),
        # Messages of the file a recorded summary takes the place of, as every policy reads `covers`.
        "summarised_messages": summarised,
        # Summaries whose covers name no message of the file: they summarise what came before it.
        "summaries_before_file": before_file,
        # Ids that several messages share (the note names them): covers naming one cover all of them.
        "shared_ids": len(shared),
        "messages_sharing_an_id": sum(shared.values()),
        "compactions": [{"before": c.before_index, "trigger": c.trigger, "pre_tokens": c.pre_tokens, "post_tokens": c.post_tokens,
                         "preserved": len(c.preserved)} for c in session.compactions],
        "reported_usage_messages": len(with_usage),
        "last_call": None if last is None else {
            "message": last.index, "window_fill": last.usage.window_fill, "input_tokens": last.usage.input_tokens,
            "cache_read_input_tokens": last.usage.cache_read_input_tokens,
            "cache_creation_input_tokens": last.usage.cache_creation_input_tokens, "output_tokens": last.usage.output_tokens},
        "system_prompt_chars": len(session.system_prompt),
        # Most formats carry the system prompt as system-role messages, which every built-in policy
        # folds into the prompt: counted here too, so a file with one never reads "0 characters".
        "system_messages": sum(1 for m in session.messages if m.role == "system"),
        "system_message_chars": sum(len(m.text or "") for m in session.messages if m.role == "system"),
        "tool_definitions": len(session.tools),
        # What the first call reported beyond what the log shows (engine.reported): the prompt and tools it lacks.
        "unseen_estimate": _unseen(session),
        "unseen_first_call": _unseen_first(session),
        "memory": len(session.memory),
        "learnings": len(session.learnings),
        "notes": list(session.notes) + ([_shared_ids_note(shared)] if shared else []),
    }


def _summarised(session: Session) -> tuple[int, int]:
    """(messages of the file the recorded summaries take the place of, summaries that cover only
    what came before the file), read with `recorded_covers`, the mapping the policies plan with:
    a `covers` id not in the file replaces nothing in it, and one that several messages share
    covers each of them."""
    if not session.summaries:
        return 0, 0
    owner, superseded = recorded_covers(session)
    summarised = sum(1 for message_id in session.message_columns[0] if message_id in owner) if owner else 0
    placed = set(owner.values()) | superseded
    return summarised, sum(1 for k in range(len(session.summaries)) if k not in placed)


def _shared_ids(session: Session) -> dict[str, int]:
    """Ids that more than one message has (the loaders accept them), with how many have each."""
    ids = session.message_columns[0]
    if len(set(ids)) == len(ids):
        return {}
    return {message_id: n for message_id, n in Counter(ids).items() if n > 1}


def _shared_ids_note(shared: dict[str, int]) -> str:
    shown = ", ".join(f"{message_id!r} ({n:,} messages)" for message_id, n in list(shared.items())[:5])
    more = f" and {len(shared) - 5:,} more" if len(shared) > 5 else ""
    return (f"{counted(len(shared), 'id')} shared by several messages: {shown}{more}; a summary whose `covers` names "
            "such an id covers every message that has it, and `why --message ID` explains the first")


def _unseen(session: Session) -> int:
    from ..engine.reported import reported_usage  # (imported here: `info` of a log without usage needs no tokenizer)

    reported = reported_usage(session)
    return reported.unseen_after if reported is not None else 0  # (`Reported.unseen_at`'s figure after an excerpt's compaction)


def _unseen_first(session: Session) -> int | None:
    """The first call's unseen estimate where it held more than the prompt and tools (an excerpt
    that starts mid-conversation and compacts: the conversation before the file too), else None."""
    from ..engine.reported import reported_usage

    reported = reported_usage(session)
    return reported.unseen if reported is not None and reported.unseen_after_compaction is not None else None


def info_text(session: Session) -> str:
    f = session_facts(session)
    version = f", version {f['format_version']}" if f["format_version"] else ""
    lines = [f["file"], f"  format: {f['format_title']} ({f['format']}{version})"]
    if f["model"] or f["context_window"]:
        window = f" (context window {f['context_window']:,}, as the log reports it)" if f["context_window"] else ""
        lines.append(f"  model: {f['model'] or 'not recorded'}{window}")
    if f["title"]:
        lines.append(f"  title: {f['title']}")
    opened = opened_under(session.format, session.model)
    lines.append(f"  policy: {opened.policy}" + (" (the policy of the agent that wrote this log: plan, simulate and the app open it under it)"
                                                 if opened.agents_own else " (ctxviz's reference policy: no agent's own policy belongs to this format)"))
    roles = ", ".join(f"{role} {count:,}" for role, count in sorted(f["roles"].items(), key=lambda kv: -kv[1]))
    lines.append(f"  messages: {f['messages']:,} ({roles})")
    extras = [counted(f["images"], "image") if f["images"] else "", counted(f["thinking"], "thinking block") if f["thinking"] else "",
              ", ".join(f"{n:,} opaque `{t}`" for t, n in f["opaque"].items())]
    if any(extras):
        lines.append("  content: " + ", ".join(e for e in extras if e))
    lines.append(f"  tool calls: {f['tool_calls']:,} ({f['tool_calls_answered']:,} answered, {f['tool_calls_unanswered']:,} unanswered in the file); "
                 f"tool results: {f['tool_results']:,} ({f['tool_results_without_call']:,} without their call in the file)")
    if f["summaries"] or f["compactions"]:
        compactions = "; ".join(f"before #{c['before']}" + (f" ({c['trigger']})" if c["trigger"] else "")
                                + (f", {c['pre_tokens']:,} tokens before" if c["pre_tokens"] else "")
                                + (f", {c['post_tokens']:,} after" if c["post_tokens"] else "")
                                + (f", {counted(c['preserved'], 'message')} preserved" if c["preserved"] else "")
                                for c in f["compactions"])
        outside = f["summaries_before_file"]
        who = f"all {outside:,}" if outside == f["summaries"] and outside > 1 else f"{outside:,}"
        before = f" ({who} {'summarises' if outside == 1 else 'summarise'} only what came before the file)" if outside else ""
        lines.append(f"  summaries: {f['summaries']:,} recorded, covering {counted(f['summarised_messages'], 'message')} of the file{before}"
                     + (f"; compactions: {compactions}" if compactions else ""))
    else:
        lines.append("  summaries and compactions: none recorded")
    if f["last_call"]:
        c = f["last_call"]
        lines.append(f"  reported usage: on {counted(f['reported_usage_messages'], 'message')}; the last call (#{c['message']}) had {c['window_fill']:,} tokens "
                     f"in the window (input {c['input_tokens']:,} + cache read {c['cache_read_input_tokens']:,} + cache write {c['cache_creation_input_tokens']:,})")
    else:
        lines.append("  reported usage: none in the file")
    prompt = f"{f['system_prompt_chars'] + f['system_message_chars']:,} characters"
    if f["system_messages"]:
        where = f"in {counted(f['system_messages'], 'system message')}"
        prompt += f" ({where}" + (f", {f['system_prompt_chars']:,} in the prompt field" if f["system_prompt_chars"] else "") + ")"
    lines.append(f"  system prompt: {prompt}; tool definitions: {f['tool_definitions']:,}; "
                 f"memory: {f['memory']:,}; learnings: {f['learnings']:,}")
    if f["unseen_estimate"] and f.get("unseen_first_call") is not None:
        lines.append(f"  unseen: about {f['unseen_estimate']:,} tokens of system prompt and tools the log does not record "
                     "(the reported input of the first call after the compaction beyond what the log shows before it; the file starts "
                     f"mid-conversation, so the first call's {f['unseen_first_call']:,} held the conversation before it too)")
    elif f["unseen_estimate"]:
        lines.append(f"  unseen: about {f['unseen_estimate']:,} tokens of system prompt and tools the log does not record "
                     "(the first call's reported input beyond what the log shows before it)")
    if f["notes"]:
        lines.append("  notes:")
        lines += [f"    - {note}" for note in f["notes"]]
    return "\n".join(lines) + "\n"
