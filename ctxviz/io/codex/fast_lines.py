"""The fast path of a Codex rollout: the lines that are most of it (tool calls and outputs, messages,
reasoning, usage reports, events that are not context, turn contexts) read straight from the dicts.

A long rollout is mostly such lines; reading each through `Fields` (every field checked, with the
line named in any error) was most of its load. A line with anything unexpected is left to the
checked path (`_Rollout._full_line`), which reads it from the start and reports what is wrong.
"""

from __future__ import annotations

from typing import Any

from ...engine.session import OpaquePart, ThinkingPart, ToolCallPart, ToolResultPart, Usage
from .records import EVENT_ALIASES, MESSAGE_EVENTS, content_common, texts_common


class FastLines:
    """`_Rollout`'s fast path (a mixin: the state it reads and changes is `_Rollout`'s)."""

    def _common(self, record: dict[str, Any]) -> bool:
        """`line` for the lines that are most of a rollout (tool calls and outputs, messages,
        reasoning, usage reports, events that are not context, turn contexts), read from the dicts;
        False for any other line, or any field of an unexpected type, which `line` then reads (and,
        if it must, reports). Every field is checked before anything is changed, so a line left to
        `line` is read from the start."""
        payload, timestamp = record.get("payload"), record.get("timestamp")
        if type(payload) is not dict or (type(timestamp) is not str and timestamp is not None) or record.get("record_type") == "state":
            return False
        kind = record.get("type")
        if kind == "response_item":
            if not self._item_common(payload, timestamp or ""):
                return False
            self._task_item()
            return True
        if kind == "event_msg":
            event = payload.get("type")
            if type(event) is not str:
                return False
            if event == "token_count":
                return self._token_count_common(payload)
            if event in MESSAGE_EVENTS:
                if EVENT_ALIASES.get(event, event) in self.from_events:
                    return False  # read as a message (`event_message`)
                self.src.tally(f"skipped {{n}} `event_msg` `{event}` line(s) that {{repeats|repeat}} a `response_item`")
                return True
            if event == "task_started":
                window = payload.get("model_context_window")
                if type(window) is not int and window is not None:
                    return False
                if window:
                    self.context_window = window
            self._task_event(event)
            self.skipped_events[event] += 1
            return True
        if kind == "turn_context":
            model = payload.get("model")
            if model is None:
                return True
            if type(model) is not str:
                return False
            if model:
                self.models.append(model)
            return True
        return False

    def _item_common(self, payload: dict[str, Any], timestamp: str) -> bool:
        """A `response_item` as `item` reads it (`ItemReader.add`), for function and custom tool
        calls and their outputs, messages of text parts and reasoning whose fields are strings;
        False for any other item."""
        item = payload.get("type")
        reader = self.reader
        if item == "function_call" or item == "custom_tool_call":
            call_id, name = payload.get("call_id"), payload.get("name")
            arguments = payload.get("arguments" if item == "function_call" else "input")
            if type(call_id) is not str or not call_id or type(name) is not str:
                return False
            if type(arguments) is not str:
                if item == "function_call" or arguments is not None:
                    return False
                arguments = ""
            reader.model_side([ToolCallPart(call_id, name, arguments)], f"L{self._lineno}", timestamp, payload)
            return True
        if item == "function_call_output" or item == "custom_tool_call_output":
            call_id, output = payload.get("call_id"), payload.get("output")
            if type(call_id) is not str:
                return False
            if type(output) is not str:
                if output is not None:
                    return False
                output = ""
            reader.close()
            reader.new("tool", [ToolResultPart(call_id, output, False)], f"L{self._lineno}", timestamp, payload, tool_call_id=call_id)
            return True
        if item == "message":
            role = payload.get("role")
            if role == "developer":
                role = "system"
            elif role != "user" and role != "assistant" and role != "system":
                return False
            parts = content_common(payload.get("content"))
            if parts is None:
                return False
            if role == "assistant":
                reader.model_side(parts, f"L{self._lineno}", timestamp, payload)
            else:
                reader.close()
                reader.new(role, parts, f"L{self._lineno}", timestamp, payload)
            return True
        if item == "reasoning":
            texts = texts_common(payload.get("summary"))
            if texts is None:
                return False
            if not texts:
                texts = texts_common(payload.get("content"))
                if texts is None:
                    return False
            if texts:
                part: Any = ThinkingPart("\n\n".join(texts))
            else:
                encrypted = payload.get("encrypted_content")
                if type(encrypted) is not str and encrypted is not None:
                    return False
                if not encrypted:
                    return False  # `ItemReader.add` counts it as skipped
                part = OpaquePart("reasoning", f"[encrypted reasoning: {len(encrypted):,} characters]")
            reader.model_side([part], f"L{self._lineno}", timestamp, payload)
            return True
        return False

    def _token_count_common(self, p: dict[str, Any]) -> bool:
        """`token_count` for a report with `info` whose counts are integers; False for any other."""
        if "info" not in p:
            return False
        info = p["info"]
        if info is None:
            self.skipped_events["token_count (rate limits only)"] += 1
            return True
        if type(info) is not dict:
            return False
        window = info.get("model_context_window")
        if type(window) is not int and window is not None:
            return False
        total = info.get("total_token_usage")
        if total is not None and total == self.last_total:
            if window:
                self.context_window = window
            self.src.tally("skipped {n} `token_count` line(s) that {repeats|repeat} the previous report")
            return True
        last = info.get("last_token_usage")
        if type(last) is not dict:
            return False
        read, written, cached = last.get("input_tokens"), last.get("output_tokens"), last.get("cached_input_tokens")
        if ((type(read) is not int and read is not None) or (type(written) is not int and written is not None)
                or (type(cached) is not int and cached is not None)):
            return False
        if window:
            self.context_window = window
        self.last_total = total
        read = read or 0
        cached = max(0, min(cached or 0, read))
        usage = Usage(read - cached, written or 0, cached)
        self.last_fill = usage.window_fill
        self.attach(usage)
        return True
