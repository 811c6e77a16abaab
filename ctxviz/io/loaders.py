"""Format auto-detection and the one entry point every face uses: `load_session`."""

from __future__ import annotations

import dataclasses
import importlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from ..engine.gc_pause import frozen_after
from ..engine.session import Message, Session, ToolCallPart, stored_raw
from ..errors import LoadError, UnknownNameError
from .base import Loader, locate_line, type_name
from .source import DEFAULT_MAX_BYTES, SourceFile, read_source

#: The built-in formats in detection order (formats.md B8: the most specific signatures first, OpenAI
#: chat as the default), each as its name and the `module:Class` (in this package) that reads it. A
#: loader's module is imported the first time detection reaches it or its name is looked up, so a
#: plan of a YAML session imports the four loaders whose sniffers run before the native one claims
#: it, not all twelve (the eight others, OpenTelemetry's and LangChain's with part of its policy
#: among them, were a few per cent of a fresh `ctxviz plan`'s instructions).
_BUILT_IN: tuple[tuple[str, str], ...] = (
    ("codex", "codex:CodexLoader"),
    ("claude-code", "claude_code:ClaudeCodeLoader"),
    ("supyagent", "supyagent:SupyagentLoader"),
    ("ctxviz", "native:NativeLoader"),
    ("gemini-cli", "gemini_cli:GeminiCliLoader"),
    ("swe-agent", "swe_agent:SweAgentLoader"),
    ("otel", "otel:OtelLoader"),
    ("langchain", "langchain:LangChainLoader"),
    ("openai-responses", "responses:ResponsesLoader"),
    ("bedrock", "bedrock:BedrockConverseLoader"),
    ("anthropic", "anthropic:AnthropicLoader"),
    ("openai", "openai_chat:OpenAIChatLoader"),
)
_WHERE = dict(_BUILT_IN)
#: The detection order: a loader, or the name of a built-in one not imported yet (replaced by its
#: loader when first reached, so every lookup of a format returns the one instance).
_ORDER: list[Loader | str] = [name for name, _ in _BUILT_IN]
#: Held while a built-in loader is imported or a loader registered: the app detects on a worker
#: thread, and two threads reaching the same entry must not make two instances of its loader.
_RESOLVING = threading.Lock()


def _resolved(k: int) -> Loader:
    """The loader at position `k` of the detection order, imported when first reached."""
    entry = _ORDER[k]
    if not isinstance(entry, str):
        return entry
    with _RESOLVING:
        entry = _ORDER[k]
        if isinstance(entry, str):
            module, attribute = _WHERE[entry].split(":")
            loader: Loader = getattr(importlib.import_module(f"{__package__}.{module}"), attribute)()
            if loader.name != entry:
                raise RuntimeError(f"built-in loader {entry!r} is named {loader.name!r} in its module")
            _ORDER[k] = entry = loader
    return entry


def loaders() -> Iterator[Loader]:
    """The loaders in detection order, each imported when the iteration reaches it."""
    k = 0
    while k < len(_ORDER):
        yield _resolved(k)
        k += 1


def __getattr__(name: str) -> Any:
    """`LOADERS`, every loader in detection order (all imported): what this module held as a list
    before its loaders were imported when first needed (`loaders()` imports them as it goes)."""
    if name == "LOADERS":
        return list(loaders())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_loader(loader: Loader, first: bool = True) -> None:
    with _RESOLVING:
        _ORDER.insert(0 if first else len(_ORDER), loader)


def loader_names() -> list[str]:
    """Every format's name in detection order, without importing a loader (the CLI's help names them)."""
    return [entry if isinstance(entry, str) else entry.name for entry in _ORDER]


def get_loader(name: str) -> Loader:
    for k, entry in enumerate(_ORDER):
        if (entry if isinstance(entry, str) else entry.name) == name:
            return _resolved(k)
    raise UnknownNameError(f"unknown input format {name!r}; available: {', '.join(loader_names())}")


def sniffs(loader: Loader, src: SourceFile) -> bool:
    """Whether `loader` claims the file. A sniffer looks at untrusted data: one that trips over a
    value it did not expect (a list where a name should be) has simply not recognised its format;
    a file that does not parse at all (LoadError) is still reported as such."""
    try:
        return bool(loader.sniff(src))
    except LoadError:
        raise
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError):
        return False


def detect(src: SourceFile) -> Loader:
    try:
        for loader in loaders():
            if sniffs(loader, src):
                return loader
    except LoadError as exc:  # the file does not even parse (Markdown, say): name it if it is a known log
        from . import unsupported

        raise unsupported.refusal(src, loader_names()) or exc from None
    from . import unsupported  # imported only for a file no loader claims

    refused = unsupported.refusal(src, loader_names())
    if refused is not None:
        raise refused
    first = src.first_record()
    if isinstance(first, dict) and "messages" in first and not isinstance(first["messages"], list) and src.kind != "jsonl":
        # A chat request or a ctxviz session whose messages are not a list: the field is what is wrong, not the format.
        line = locate_line(src.text, ("messages",))
        raise LoadError(src.path, f"expected a list of messages, got {type_name(first['messages'])}", line, "messages")
    what = "a list" if isinstance(first, list) else ("an object with keys " + ", ".join(map(str, list(first)[:6])) if isinstance(first, dict) else type_name(first))
    raise LoadError(src.path, f"not a session format ctxviz knows ({what}); formats: {', '.join(loader_names())}", 1)


def load_session(path: str | os.PathLike[str], input_format: str | None = None, *, text: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                 conversation: int | None = None) -> Session:
    """Read, detect and load one session file. Raises LoadError (one line) for any bad input.

    `conversation` picks one (1-based) from a file that holds several independent conversations.
    """
    src = read_source(path, max_bytes=max_bytes, text=text)
    src.conversation = conversation
    # Loading allocates millions of long-lived objects and nothing cyclic; the cyclic collector
    # would rescan them again and again (it more than doubled the time of a 100 MB load, and
    # tripled it for a Codex log when the tool names below were filled with it running). The
    # session is immutable and lives as long as it is shown, so it is then moved (with everything
    # older) out of the collector's generations: later collections (a re-plan allocates tens of
    # thousands of objects) do not rescan its millions of objects each time (it halves a first plan
    # of 100,000 messages). Only where the collector was Python's to run (`frozen_after`: the GUI
    # loads on a worker and collects on its own thread, gui/threads.py). No collection first: it
    # would scan the millions once more (0.3 s for 100 MB). A session dropped later is still freed
    # by reference counting: it holds no cycles.
    with frozen_after():
        session = load_source(src, input_format)
        src.release()  # its records, in the order they were read (quicker than the list's own order)
        del src  # the file's text and records (freed now: it holds no cycles)
    return session


def load_source(src: SourceFile, input_format: str | None = None) -> Session:
    """Detect and load an opened source: what `load_session` does once the file is read (and what a
    follower of a growing file does with the records it already holds, io/follow.py)."""
    conversation = src.conversation
    try:
        loader = get_loader(input_format) if input_format else detect(src)
        session: Any = loader.load(src)
        if input_format:
            src.notes.extend(forced_format_notes(src, loader))
    except RecursionError:
        raise LoadError(src.path, "the document is nested too deeply") from None
    if conversation not in (None, 1) and src.conversations == 0:
        raise LoadError(src.path, f"--conversation {conversation}: the file holds one conversation")
    if not session.messages:  # LangChain and LlamaIndex take an empty history and return []: so does a plan
        src.notes.append("the session has no messages")
    notes = src.all_notes()
    if notes:
        session = dataclasses.replace(session, notes=(*session.notes, *notes))
    from .usage_counts import without_negative_usage  # (naming the loaders imports no more than they need)

    session = without_negative_usage(session)
    # A loader whose `load` names the tool results as it makes them says so (`names_tool_results`).
    return session if getattr(loader, "names_tool_results", False) else with_tool_names(session)


def forced_format_notes(src: SourceFile, loader: Loader) -> list[str]:
    """What a format chosen with --input-format leaves unread in this file."""
    detected = next((other for other in loaders() if sniffs(other, src)), None)
    if detected is None or detected is loader:
        return []
    notes = [f"read as {loader.title} (--input-format {loader.name}), although it looks like {detected.title}"]
    reads = getattr(loader, "top_level_fields", None)
    document = src.document if src.kind != "jsonl" else None
    if reads is not None and isinstance(document, dict):
        ignored = [str(key) for key in document if key not in reads and key != "ctxviz"]
        if ignored:
            notes.append(f"--input-format {loader.name} ignores {', '.join(ignored)} in this file")
    return notes


def with_tool_names(session: Session) -> Session:
    """Give each tool result the name of the call it answers (most formats only keep the id)."""
    names = {p.id: p.name for m in session.messages for p in m.parts if isinstance(p, ToolCallPart) and p.id}
    if not names:
        return session
    messages, changed = list(session.messages), False
    for k, m in enumerate(messages):
        if m.role == "tool" and not m.name and m.tool_call_id in names:
            messages[k], changed = named(m, names[m.tool_call_id]), True
    return dataclasses.replace(session, messages=tuple(messages)) if changed else session


def named(message: Message, name: str) -> Message:
    """`message_with(message, name=name)`, written out field by field in the constructor's order (a
    Codex log has tens of thousands of tool results to name; the loop over field names costs
    twice as much)."""
    new = _new(Message)
    _set(new, "id", message.id)
    _set(new, "index", message.index)
    _set(new, "role", message.role)
    _set(new, "parts", message.parts)
    _set(new, "name", name)
    _set(new, "tool_call_id", message.tool_call_id)
    _set(new, "timestamp", message.timestamp)
    _set(new, "category", message.category)
    _set(new, "usage", message.usage)
    _set(new, "_raw", stored_raw(message))  # where `Message.raw` keeps it, as it keeps it (packed or not; engine/session.py)
    return new


_new = object.__new__
_set = object.__setattr__
