"""`attachment` lines: the text Claude Code renders each kind into (its `normalizeAttachmentForAPI`)."""

from __future__ import annotations

import json
from typing import Any


def wrap_reminder(text: str) -> str:
    return f"<system-reminder>\n{text}\n</system-reminder>"


#: Attachment types Claude Code sends nothing for (its `normalizeAttachmentForAPI` returns no
#: message), including the legacy ones it ignores.
SILENT_ATTACHMENTS = frozenset(
    ("already_read_file", "command_permissions", "edited_image_file", "hook_cancelled", "hook_error_during_execution",
     "hook_non_blocking_error", "hook_system_message", "structured_output", "hook_permission_decision", "dynamic_skill",
     "autocheckpointing", "background_task_status", "todo", "task_progress", "ultramemory", "context_efficiency")
)


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else json.dumps(value, ensure_ascii=False, default=str))


def _lines(value: Any) -> list[str]:
    return [_s(v) for v in value] if isinstance(value, list) else ([_s(value)] if value else [])


def _numbered(content: str) -> str:
    """A file as the Read tool returns it: `cat -n` style line numbers."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(content.split("\n"), start=1))


def _file(a: dict[str, Any]) -> str:
    content = a.get("content") if isinstance(a.get("content"), dict) else {}
    name = _s(a.get("filename") or a.get("path") or content.get("filePath"))
    call = f"Called the Read tool with the following input: {json.dumps({'file_path': name})}"
    inner = content.get("file") if isinstance(content.get("file"), dict) else content
    if content.get("type") in (None, "text"):
        result = _numbered(_s(inner.get("content")))
    else:
        result = f"[{content.get('type')}: {name}]"
    text = f"{call}\n\nResult of calling the Read tool:\n{result}"
    if a.get("truncated"):
        text += f"\n\nNote: The file {name} was too large and has been truncated. Use Read to read more of the file if you need."
    return text


def _directory(a: dict[str, Any]) -> str:
    path = _s(a.get("path"))
    call = json.dumps({"command": f"ls {path}", "description": f"Lists files in {path}"})
    return f"Called the Bash tool with the following input: {call}\n\nResult of calling the Bash tool:\n{_s(a.get('content'))}"


def _nested_memory(a: dict[str, Any]) -> str:
    content = a.get("content")
    if isinstance(content, dict):
        return f"Contents of {_s(content.get('path') or a.get('path'))}:\n\n{_s(content.get('content'))}"
    return f"Contents of {_s(a.get('path'))}:\n\n{_s(content)}"


def _todo_reminder(a: dict[str, Any]) -> str:
    items = a.get("content") if isinstance(a.get("content"), list) else []
    text = ("The TodoWrite tool hasn't been used recently. If you're working on tasks that would benefit from tracking progress, "
            "consider using the TodoWrite tool to track progress. Also consider cleaning up the todo list if has become stale and no "
            "longer matches what you are working on. Only use it if it's relevant to the current work. This is just a gentle reminder "
            "- ignore if not applicable. Make sure that you NEVER mention this reminder to the user\n")
    todos = "\n".join(f"{k}. [{_s(t.get('status'))}] {_s(t.get('content'))}" for k, t in enumerate(items, start=1) if isinstance(t, dict))
    return text + (f"\n\nHere are the existing contents of your todo list:\n\n[{todos}]" if todos else "")


def _task_reminder(a: dict[str, Any]) -> str:
    items = a.get("content") if isinstance(a.get("content"), list) else []
    text = ("The task tools haven't been used recently. If you're working on tasks that would benefit from tracking progress, consider "
            "using the task tools to add new tasks and update task status. Only use these if relevant to the current work. This is just a "
            "gentle reminder - ignore if not applicable. Make sure that you NEVER mention this reminder to the user\n")
    tasks = "\n".join(f"#{_s(t.get('id'))}. [{_s(t.get('status'))}] {_s(t.get('subject'))}" for t in items if isinstance(t, dict))
    return text + (f"\n\nHere are the existing tasks:\n\n{tasks}" if tasks else "")


def _hook(a: dict[str, Any], what: str, body: str) -> str:
    return f"{_s(a.get('hookName'))} hook {what}: {body}"


def _hook_success(a: dict[str, Any]) -> str | None:
    if a.get("hookEvent") not in ("SessionStart", "UserPromptSubmit") or not _s(a.get("content")):
        return None
    return _hook(a, "success", _s(a.get("content")))


def _blocking(a: dict[str, Any]) -> str:
    error = a.get("blockingError") if isinstance(a.get("blockingError"), dict) else {}
    return _hook(a, "blocking error from command", f"\"{_s(error.get('command'))}\": {_s(error.get('blockingError'))}")


def _delta(a: dict[str, Any], added: str, removed: str, added_key: str = "addedLines", removed_key: str = "removedNames") -> str | None:
    parts = []
    if _lines(a.get(added_key)):
        parts.append(added + "\n" + "\n".join(_lines(a.get(added_key))))
    if _lines(a.get(removed_key)):
        parts.append(removed + "\n" + "\n".join(_lines(a.get(removed_key))))
    return "\n\n".join(parts) or None


def _mcp_resource(a: dict[str, Any]) -> str:
    content = a.get("content") if isinstance(a.get("content"), dict) else {}
    texts = [_s(c.get("text")) for c in content.get("contents") or [] if isinstance(c, dict) and "text" in c]
    if not texts:
        return f"<mcp-resource server=\"{_s(a.get('server'))}\" uri=\"{_s(a.get('uri'))}\">(No content)</mcp-resource>"
    return "\n".join(f"Full contents of resource:\n{t}\nDo NOT read this resource again unless you think it may have changed, since you "
                     "already have the full contents." for t in texts)


def _async_hook(a: dict[str, Any]) -> str | None:
    response = a.get("response") if isinstance(a.get("response"), dict) else {}
    specific = response.get("hookSpecificOutput") if isinstance(response.get("hookSpecificOutput"), dict) else {}
    texts = [t for t in (_s(response.get("systemMessage")), _s(specific.get("additionalContext"))) if t]
    return "\n".join(texts) or None


_RENDERERS: dict[str, Any] = {
    "file": _file,
    "directory": _directory,
    "nested_memory": _nested_memory,
    "edited_text_file": lambda a: (f"Note: {_s(a.get('filename'))} was modified, either by the user or by a linter. This change was "
                                   "intentional, so make sure to take it into account as you proceed (ie. don't revert it unless the user "
                                   "asks you to). Don't tell the user this, since they are already aware. Here are the relevant changes "
                                   f"(shown with line numbers):\n{_s(a.get('snippet'))}"),
    "compact_file_reference": lambda a: (f"Note: {_s(a.get('filename'))} was read before the last conversation was summarized, but the "
                                         "contents are too large to include. Use Read tool if you need to access it."),
    "selected_lines_in_ide": lambda a: (f"The user selected the lines {_s(a.get('lineStart'))} to {_s(a.get('lineEnd'))} from "
                                        f"{_s(a.get('filename'))}:\n{_s(a.get('content'))[:2000]}\n\nThis may or may not be related to "
                                        "the current task."),
    "opened_file_in_ide": lambda a: (f"The user opened the file {_s(a.get('filename'))} in the IDE. This may or may not be related to "
                                     "the current task."),
    "plan_file_reference": lambda a: (f"A plan file exists from plan mode at: {_s(a.get('planFilePath'))}\n\nPlan contents:\n\n"
                                      f"{_s(a.get('planContent'))}\n\nIf this plan is relevant to the current work and not already "
                                      "complete, continue working on it."),
    "invoked_skills": lambda a: ("The following skills were invoked in this session. Continue to follow these guidelines:\n\n"
                                 + "\n\n---\n\n".join(f"### Skill: {_s(s.get('name'))}\nPath: {_s(s.get('path'))}\n\n{_s(s.get('content'))}"
                                                      for s in a.get("skills") or [] if isinstance(s, dict))) if a.get("skills") else None,
    "todo_reminder": _todo_reminder,
    "task_reminder": _task_reminder,
    "queued_command": lambda a: (f"The user sent the following message:\n{_s(a.get('prompt'))}\n\nPlease address this message and "
                                 "continue with your tasks.") if isinstance(a.get("prompt"), str) else "\n".join(
                                     _s(b.get("text")) for b in a.get("prompt") or [] if isinstance(b, dict) and b.get("type") == "text"),
    "hook_success": _hook_success,
    "hook_additional_context": lambda a: _hook(a, "additional context", "\n".join(_lines(a.get("content")))) if a.get("content") else None,
    "hook_blocking_error": _blocking,
    "hook_stopped_continuation": lambda a: _hook(a, "stopped continuation", _s(a.get("message"))),
    "critical_system_reminder": lambda a: _s(a.get("content")),
    "diagnostics": lambda a: ("<new-diagnostics>The following new diagnostic issues were detected:\n\n"
                              + _s(a.get("files")) + "</new-diagnostics>") if a.get("files") else None,
    "date_change": lambda a: (f"The date has changed. Today's date is now {_s(a.get('newDate'))}. DO NOT mention this to the user "
                              "explicitly because they are already aware."),
    "skill_listing": lambda a: f"The following skills are available for use with the Skill tool:\n\n{_s(a.get('content'))}" if a.get("content") else None,
    "deferred_tools_delta": lambda a: _delta(a, "The following deferred tools are now available via ToolSearch:",
                                             "The following deferred tools are no longer available (their MCP server disconnected). Do not "
                                             "search for them \u2014 ToolSearch will return no match:"),
    "agent_listing_delta": lambda a: _delta(a, "Available agent types for the Agent tool:" if a.get("isInitial")
                                            else "New agent types are now available for the Agent tool:",
                                            "The following agent types are no longer available:", removed_key="removedTypes"),
    "mcp_instructions_delta": lambda a: _delta(a, "# MCP Server Instructions\n\nThe following MCP servers have provided instructions for "
                                                  "how to use their tools and resources:\n",
                                               "The following MCP servers have disconnected. Their instructions above no longer apply:",
                                               added_key="addedBlocks"),
    "token_usage": lambda a: f"Token usage: {_s(a.get('used'))}/{_s(a.get('total'))}; {_s(a.get('remaining'))} remaining",
    "budget_usd": lambda a: f"USD budget: ${_s(a.get('used'))}/${_s(a.get('total'))}; ${_s(a.get('remaining'))} remaining",
    "mcp_resource": _mcp_resource,
    "agent_mention": lambda a: (f"The user has expressed a desire to invoke the agent \"{_s(a.get('agentType'))}\". Please invoke the agent "
                                "appropriately, passing in the required context to it. "),
    "async_hook_response": _async_hook,
    "plan_mode_exit": lambda a: ("## Exited Plan Mode\n\nYou have exited plan mode. You can now make edits, run tools, and take actions."
                                 + (f" The plan file is located at {_s(a.get('planFilePath'))} if you need to reference it."
                                    if a.get("planExists") else "")),
}


def render_attachment(attachment: dict[str, Any]) -> tuple[str | None, bool]:
    """(the text Claude Code renders an attachment into, or None when it sends nothing; whether
    ctxviz knows the type's wording). An unknown type is read from its own fields: its text, or
    its JSON."""
    kind = str(attachment.get("type") or "")
    if kind in SILENT_ATTACHMENTS:
        return None, True
    render = _RENDERERS.get(kind)
    if render is not None:
        text = render(attachment)
        return (text or None), True
    for key in ("content", "text", "prompt", "message"):
        if isinstance(attachment.get(key), str) and attachment[key]:
            return attachment[key], False
    rest = {k: v for k, v in attachment.items() if k != "type"}
    return (json.dumps(rest, ensure_ascii=False, default=str) if rest else None), False
