"""Exports of a plan's context, as the model receives it, and the atomic file write they share."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

from ..engine.plan import Plan
from ..engine.session import Session
from ..errors import CtxvizError, UnknownNameError

_DATA_URI = re.compile(r"^data:(?P<media>[^;,]+);base64,(?P<data>.*)$", re.S)


def to_openai(plan: Plan, session: Session) -> str:
    request: dict[str, Any] = {"model": session.model or "gpt-4o", "messages": [dict(m) for m in plan.context]}
    if session.tools:
        request["tools"] = [t.to_openai() for t in session.tools]
    return json.dumps(request, indent=2, ensure_ascii=False) + "\n"


def to_jsonl(plan: Plan, session: Session) -> str:
    return "".join(json.dumps(dict(m), ensure_ascii=False) + "\n" for m in plan.context)


def _anthropic_content(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content:
        if part.get("type") == "image_url":
            url = part["image_url"]["url"]
            match = _DATA_URI.match(url)
            source = {"type": "base64", "media_type": match["media"], "data": match["data"]} if match else {"type": "url", "url": url}
            blocks.append({"type": "image", "source": source})
        elif part.get("type") == "text":
            blocks.append({"type": "text", "text": part.get("text", "")})
    return blocks


def anthropic_messages(context: list[Mapping[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Convert OpenAI chat messages to Anthropic's (system, messages): tool results become user
    tool_result blocks, tool calls tool_use blocks, and consecutive same-role turns are merged
    because the Messages API requires alternating roles."""
    system_parts: list[str] = []
    out: list[dict[str, Any]] = []
    for message in context:
        role = message.get("role")
        if role == "system":
            system_parts.append(str(message.get("content") or ""))
            continue
        if role == "tool":
            text = message.get("content")
            block = {"type": "tool_result", "tool_use_id": message.get("tool_call_id", ""), "content": text if isinstance(text, str) else _anthropic_content(text)}
            blocks, role = [block], "user"
        else:
            blocks = _anthropic_content(message.get("content"))
            for call in message.get("tool_calls") or []:
                try:
                    arguments = json.loads(call["function"]["arguments"] or "{}")
                except json.JSONDecodeError:
                    arguments = {"_raw_arguments": call["function"]["arguments"]}
                blocks.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": arguments})
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return "\n\n".join(p for p in system_parts if p), out


def to_anthropic(plan: Plan, session: Session) -> str:
    system, messages = anthropic_messages(list(plan.context))
    request: dict[str, Any] = {"model": session.model or "claude-sonnet-4-5", "max_tokens": 4096, "system": system, "messages": messages}
    if session.tools:
        request["tools"] = [{"name": t.name, "description": t.description, "input_schema": dict(t.parameters) or {"type": "object"}} for t in session.tools]
    return json.dumps(request, indent=2, ensure_ascii=False) + "\n"


def to_markdown(plan: Plan, session: Session) -> str:
    lines = [f"# Context sent by {plan.policy}", "", f"{len(plan.context)} messages, {plan.totals.used:,} of {plan.totals.budget:,} tokens ({plan.tokenizer}).", ""]
    for i, message in enumerate(plan.context):
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") if p.get("type") == "text" else "[image]" for p in content)
        lines.append(f"## {i}. {message.get('role')}")
        lines.append("")
        for call in message.get("tool_calls") or []:
            lines.append(f"- tool call `{call['function']['name']}` ({call['id']}): `{call['function']['arguments']}`")
        if message.get("tool_call_id"):
            lines.append(f"(result of {message['tool_call_id']})")
        fence = "````" if "```" in str(content or "") else "```"
        lines += [fence, str(content or ""), fence, ""]
    return "\n".join(lines)


EXPORTERS: dict[str, Callable[[Plan, Session], str]] = {
    "openai": to_openai,
    "anthropic": to_anthropic,
    "jsonl": to_jsonl,
    "markdown": to_markdown,
}


def export_text(plan: Plan, session: Session, fmt: str) -> str:
    try:
        exporter = EXPORTERS[fmt]
    except KeyError:
        raise UnknownNameError(f"unknown export format {fmt!r}; available: {', '.join(EXPORTERS)}") from None
    return exporter(plan, session)


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write to a temporary file beside the target, then rename: readers never see half a file."""
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ctxviz-", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise CtxvizError(f"{target}: cannot write here ({exc.strerror or exc})") from None
    try:
        # mkstemp makes the file private (0600); an export should get the usual permissions, or
        # keep those of the file it replaces.
        try:
            mode = os.stat(target).st_mode & 0o777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise CtxvizError(f"{target}: cannot write ({exc.strerror or exc})") from None
        raise
