"""`session_meta.dynamic_tools`: the tools a Codex client (the Codex app) declared for the thread.

Codex turns each into a function tool of every request (`codex-rs/tools`: `parse_dynamic_tool` makes
`{name, description, strict: false, parameters: inputSchema}`, `build_tool_registry_plan` pushes it
with the built-in tools), so they are read as the session's tool definitions and counted, as other
loaders fill `Session.tools`. One declared with `deferLoading` is sent deferred (the model loads it
through tool search), so it is not counted, and a note says so. Codex's built-in tools (shell,
apply_patch, update_plan ...) are not in the rollout, and a note says that too.
"""

from __future__ import annotations

from ...engine.session import ToolDefinition
from ...engine.wording import counted
from ..base import Fields

KEY = "dynamic_tools"


def _deferred(t: Fields) -> bool:
    return t.bool("deferLoading") or t.bool("defer_loading")


def dynamic_tools(meta: Fields) -> tuple[tuple[ToolDefinition, ...], list[str]]:
    """The tool definitions `session_meta` declares, each checked (a bad one is an error naming its
    line and field), and the notes of what was read and what was not counted (kept by the rollout,
    which adds them to every session it gives, a load carried on included)."""
    raw = meta.list(KEY)
    if not raw:
        return (), []
    tools: list[ToolDefinition] = []
    deferred: list[str] = []
    for i, item in enumerate(raw):
        t = meta.child(KEY, raw).child(i, item)
        name = t.str("name", required=True)
        schema = t.dict("input_schema" if t.has("input_schema") and not t.has("inputSchema") else "inputSchema")
        if _deferred(t):
            deferred.append(name)
            continue
        tools.append(ToolDefinition(name, t.str("description"), schema))
    notes = []
    if tools:
        notes.append(f"read {counted(len(tools), 'tool definition')} from `session_meta.dynamic_tools` "
                         f"({', '.join(d.name for d in tools)}): tools the Codex client declared, which Codex sends with every request; "
                         "Codex's built-in tools (shell, apply_patch ...) are not in the rollout and not counted")
    if deferred:
        notes.append(f"{counted(len(deferred), 'dynamic tool')} declared with `deferLoading` ({', '.join(deferred)}) not counted: "
                         "Codex sends them deferred, for the model to load through tool search")
    return tuple(tools), notes
