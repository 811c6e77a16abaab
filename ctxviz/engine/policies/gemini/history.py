"""A session's history as Gemini CLI holds it: `Content` objects, their JSON.stringify lengths and
Gemini CLI's token estimate (google-gemini/gemini-cli at 5411f11).

Gemini CLI decides where to split a history by `JSON.stringify(content).length` (UTF-16 code units,
no spaces), so the Contents must be rebuilt the way Gemini CLI rebuilds them from its session file
(`utils/sessionUtils.ts` `convertSessionToClientHistory`): one `user` Content per user record (all
its parts), one `model` Content per `gemini` record (text and function calls; the live history
keeps no thoughts), and one `user` Content holding the function responses of that record's tool
calls. The log has no `thoughtSignature`s, which the live history carries on some parts. A message loaded from
another format has no such record, and its Content is built from its parts.

The token estimate is `utils/tokenCalculation.ts` `estimateTokenCountSync`: per text part 0.25 per
ASCII UTF-16 unit and 1.5 per other unit (length / 4 above 100,000 units), per function response
(name + JSON of the response) / 4, 3,000 per image, 25,800 per PDF, JSON of any other part / 4,
floored once over all the parts.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass
from typing import Any, NamedTuple

from ...session import (
    FileRefPart,
    ImagePart,
    Message,
    OpaquePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    render_file_ref,
)
from ...tokenizers import Tokenizer, gemini_text_estimate

IMAGE_TOKEN_ESTIMATE = 3000
PDF_TOKEN_ESTIMATE = 25800
CHARS_PER_TOKEN = 4


def js_length(text: str) -> int:
    """JavaScript's `string.length`: UTF-16 code units (a character beyond U+FFFF counts 2)."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


def _js_numbers(value: Any) -> Any:
    """JSON.stringify writes an integral number without `.0`."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _js_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_numbers(v) for v in value]
    return value


def stringify(value: Any, indent: int | None = None) -> str:
    """`JSON.stringify(value)` (or with `null, indent`): keys in insertion order, no spaces."""
    if indent is None:
        compact = _compact(value)
        if compact is not None:
            return compact
        return json.dumps(_js_numbers(value), ensure_ascii=False, separators=(",", ":"))
    return json.dumps(_js_numbers(value), ensure_ascii=False, indent=indent)


_quoted = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) writes for a string (its C encoder)


def _compact(value: Any) -> str | None:
    """`stringify(value)` for the values a session's parts hold (strings, dicts with string keys,
    lists, booleans, null, integers and integral floats), written directly: json.dumps builds an
    encoder per call and `_js_numbers` copies the whole value first, several times the cost on
    the thousands of parts a compression measures. None for anything else (a float with a
    fraction, a tuple, a key that is no string...), which takes the json.dumps way."""
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            written = _compact(v) if isinstance(k, str) else None
            if written is None:
                return None
            items.append(f"{_quoted(k)}:{written}")
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        items = []
        for v in value:
            written = _compact(v)
            if written is None:
                return None
            items.append(written)
        return "[" + ",".join(items) + "]"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int.__repr__(int(value))
    return None


#: Bytes a JSON string holds as they are (ensure_ascii=False), and the escapes written in two characters.
_PLAIN = bytes(b for b in range(0x20, 0x80) if b not in b'"\\')
_SHORT_ESCAPES = b'"\\\n\r\t\b\f'


def _string_length(text: str) -> int:
    """`js_length(_quoted(text))`: an ASCII string is measured from the few characters JSON
    escapes (at C speed, without writing out the copy: a compression measures megabytes of tool
    output), any other one written out."""
    if text.isascii():
        special = text.encode("ascii").translate(None, _PLAIN)
        # each escape is one character more, \u00XX five more
        return len(text) + 2 + len(special) + 4 * len(special.translate(None, _SHORT_ESCAPES)) if special else len(text) + 2
    return js_length(_quoted(text))


def json_length(value: Any) -> int:
    """`js_length(stringify(value))`, summed from its pieces where `_compact` would write it (the
    values a session's parts hold), without writing it out; else written out."""
    n = _compact_length(value)
    return n if n is not None else js_length(stringify(value))


_KEY_LENGTHS: dict[str, int] = {}  # the lengths of the keys parts hold (a few names, kept)


def _compact_length(value: Any) -> int | None:
    """`js_length(_compact(value))`: None where `_compact` is None."""
    kind = type(value)
    if kind is str:
        return _string_length(value)
    if kind is dict:
        n = 2 * len(value) + 1 if value else 2  # the braces, a colon per item, commas between them
        keys = _KEY_LENGTHS
        for k, v in value.items():
            if type(k) is not str:
                written = _compact(value)  # (a key no plain string: _compact decides)
                return None if written is None else js_length(written)
            length = keys.get(k)
            if length is None:
                length = _string_length(k)
                if len(keys) < 4096:
                    keys[k] = length
            inner = _string_length(v) if type(v) is str else _compact_length(v)
            if inner is None:
                return None
            n += length + inner
        return n
    if kind is list:
        n = len(value) + 1 if value else 2  # the brackets and commas between the items
        for v in value:
            inner = _compact_length(v)
            if inner is None:
                return None
            n += inner
        return n
    written = _compact(value)
    return None if written is None else js_length(written)


estimate_text = gemini_text_estimate


def estimate_part(part: dict[str, Any], text_counter: Tokenizer | None = None) -> float:
    """One part's share of estimateTokenCountSync (before the final floor)."""
    text = part.get("text")
    if isinstance(text, str):
        return float(text_counter.count(text)) if text_counter is not None else estimate_text(text)
    response = part.get("functionResponse")
    if isinstance(response, dict) and response:
        name = response.get("name")
        total = (js_length(name) if isinstance(name, str) else 0) / CHARS_PER_TOKEN  # a name that is no string has no length
        body = response.get("response")
        if isinstance(body, str):
            total += js_length(body) / CHARS_PER_TOKEN
        elif body is not None:
            total += json_length(body) / CHARS_PER_TOKEN
        nested = response.get("parts")
        if isinstance(nested, list) and nested:
            total += math.floor(sum(estimate_part(p, text_counter) for p in nested if isinstance(p, dict)))
        return total
    media = part.get("inlineData") or part.get("fileData")
    mime = media.get("mimeType", "") if isinstance(media, dict) else ""
    if mime.startswith("image/"):
        return IMAGE_TOKEN_ESTIMATE
    if mime.startswith("application/pdf"):
        return PDF_TOKEN_ESTIMATE
    return json_length(part) / CHARS_PER_TOKEN


_RESPONSE_PART = len('{"functionResponse":}')  # the part's braces, its key and colon around the response


def measure_part(part: dict[str, Any]) -> tuple[float, int]:
    """(estimate_part(part), json_length(part)), with the one long string a part holds (a text, a
    tool's output) read once for both: a replay measures every message's parts as it reads it,
    and their JSON lengths then cost a compression nothing (it reads thousands of them)."""
    if len(part) == 1:
        text = part.get("text")
        if type(text) is str:  # {"text": ...}: the braces, the key and colon (9), the string
            if text.isascii():  # (estimate_text and _string_length, inline: most parts are ASCII text)
                special = text.encode("ascii").translate(None, _PLAIN)
                n = len(text)
                return n / 4, (n + 11 + len(special) + 4 * len(special.translate(None, _SHORT_ESCAPES)) if special else n + 11)
            return estimate_text(text), 9 + _string_length(text)
        response = part.get("functionResponse")
        if type(response) is dict and response and "parts" not in response:
            body = response.get("response")
            if type(body) is dict:
                body_length = _compact_length(body)
                length = _RESPONSE_PART + 2 * len(response) + 1
                keys = _KEY_LENGTHS
                for k, v in response.items():
                    if type(k) is not str or body_length is None:
                        length = None
                        break
                    key = keys.get(k)
                    if key is None:
                        key = _string_length(k)
                        if len(keys) < 4096:
                            keys[k] = key
                    if k == "response":
                        inner = body_length
                    elif type(v) is str:  # (an id, a name: _string_length inline)
                        if v.isascii():
                            special = v.encode("ascii").translate(None, _PLAIN)
                            inner = len(v) + 2 + len(special) + 4 * len(special.translate(None, _SHORT_ESCAPES)) if special else len(v) + 2
                        else:
                            inner = _string_length(v)
                    else:
                        inner = _compact_length(v)
                        if inner is None:
                            length = None
                            break
                    length += key + inner
                if length is not None and body_length is not None:
                    name = response.get("name")
                    total = (js_length(name) if isinstance(name, str) else 0) / CHARS_PER_TOKEN
                    total += body_length / CHARS_PER_TOKEN  # (estimate_part's json_length(body))
                    return total, length
        elif "functionCall" in part:  # estimate_part's last case: the part's JSON / 4
            length = json_length(part)
            return length / CHARS_PER_TOKEN, length
    return estimate_part(part), json_length(part)


def estimate_parts(parts: list[dict[str, Any]], text_counter: Tokenizer | None = None) -> int:
    return math.floor(sum(estimate_part(p, text_counter) for p in parts))


def response_string(response: Any) -> str:
    """truncateHistoryToBudget's string for a response: its `output`, else `content`, else its JSON."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        if isinstance(response.get("output"), str):
            return response["output"]
        if isinstance(response.get("content"), str):
            return response["content"]
    return stringify(response, indent=2)


# -- Contents from messages ---------------------------------------------------------------------

def ensure_part_array(content: Any) -> list[dict[str, Any]]:
    """sessionUtils.ensurePartArray: a string is one text part, strings in a list become text parts."""
    if isinstance(content, list):
        return [{"text": p} if isinstance(p, str) else p for p in content if isinstance(p, (str, dict))]
    if isinstance(content, str):
        return [{"text": content}]
    return [content] if isinstance(content, dict) else []


def _model_parts(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A `gemini` record's model Content as the live history holds it: convertSessionToClientHistory's
    parts without the thoughts (geminiChat keeps `!part.thought` parts only; a resumed session would
    carry them as `thought` parts)."""
    content = record.get("content")
    parts = [p for p in (ensure_part_array(content) if content else []) if not p.get("thought")]
    if any(p.get("functionCall") for p in parts) or any(p.get("thought") for p in ensure_part_array(content or [])):
        return parts  # a modern record: its content is the whole turn
    for call in record.get("toolCalls") or []:
        if isinstance(call, dict):
            parts.append({"functionCall": {"id": call.get("id"), "name": call.get("name"), "args": call.get("args")}})
    return parts


def _response_parts(call: dict[str, Any]) -> list[dict[str, Any]]:
    """The function response parts a recorded tool call contributes."""
    result = call.get("result")
    if not result:
        return []
    if isinstance(result, str):
        return [{"functionResponse": {"id": call.get("id"), "name": call.get("name"), "response": {"output": result}}}]
    if isinstance(result, list):
        return ensure_part_array(result)
    return [result] if isinstance(result, dict) else []


def _synthesized(message: Message, tool_name: str) -> list[dict[str, Any]]:
    """A message from another format as Gemini parts."""
    out: list[dict[str, Any]] = []
    for p in message.parts:
        if isinstance(p, TextPart):
            out.append({"text": p.text})
        elif isinstance(p, ThinkingPart):
            continue  # the live history keeps no thoughts
        elif isinstance(p, ToolCallPart):
            try:
                args = json.loads(p.arguments or "{}")
            except json.JSONDecodeError:
                args = p.arguments
            out.append({"functionCall": {**({"id": p.id} if p.id else {}), "name": p.name, "args": args}})
        elif isinstance(p, ToolResultPart):
            body = {"error": p.text} if p.is_error else {"output": p.text}
            out.append({"functionResponse": {**({"id": p.tool_call_id} if p.tool_call_id else {}), "name": tool_name or message.name, "response": body}})
        elif isinstance(p, ImagePart):
            if p.url.startswith("data:") and "," in p.url:
                out.append({"inlineData": {"mimeType": p.media_type or "image/png", "data": p.url.split(",", 1)[1]}})
            else:
                out.append({"fileData": {"mimeType": p.media_type or "image/png", "fileUri": p.url}})
        elif isinstance(p, FileRefPart):
            out.append({"text": render_file_ref(p)})
        elif isinstance(p, OpaquePart):
            out.append({"text": p.text})
    return out


class MessageContent(NamedTuple):
    """One message's place in Gemini CLI's history: the Content it belongs to (`key`), that
    Content's role, the parts the message contributes and what they measure (measured with the
    estimate, `measure_part`: a compression reads the lengths of every message held). A named
    tuple: one is made for every message a replay reads, at a third of a dataclass' cost."""

    key: tuple[Any, ...]
    role: str
    parts: tuple[dict[str, Any], ...]
    estimate: float  # estimateTokenCountSync's sum over the parts, before the floor
    whole_record: bool  # the parts are the whole Content's (a user record): counted once per Content
    length_sum: int  # the parts' JSON.stringify lengths, summed
    #: Each part's JSON.stringify length and estimate, for a message of more than one part (one
    #: part's are `length_sum` and `estimate`: no more objects kept per message for the collector to walk).
    many: tuple[tuple[int, ...], tuple[float, ...]] | None
    responses: tuple[int, ...]  # the indices of the parts truncateHistoryToBudget reads
    has_response: bool  # a part is a function response (a Content holding one is no split point)

    @property
    def part_lengths(self) -> tuple[int, ...]:
        """Each part's JSON.stringify length."""
        return self.many[0] if self.many is not None else (self.length_sum,) if self.parts else ()

    def part_estimate(self, k: int) -> float:
        """Part k's estimate."""
        return self.many[1][k] if self.many is not None else self.estimate


_FIRST = (0,)  # the `responses` of a message whose first part is one (most tool messages)
_new_tuple = tuple.__new__  # MessageContent(...) without its keyword parsing


_CACHE: dict[int, tuple[Message, int, MessageContent]] = {}
_LOCK = threading.Lock()


def _raw_record(message: Message) -> dict[str, Any] | None:
    """The Gemini CLI record a message was read from. Other logs' lines carry a "type" of "user"
    too (every Claude Code user line does, its text under "message"): only a record that holds its
    own "content" is Gemini CLI's, or a Claude Code user message would be estimated from nothing."""
    raw = message.raw
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    if kind == "gemini" or (kind == "user" and "content" in raw and "message" not in raw):
        return raw
    return None


_UNREAD: Any = object()  # `_record_parts`'s record not read yet


def _record_parts(message: Message, tool_name: str, record: dict[str, Any] | None = _UNREAD) -> tuple[str, str, list[dict[str, Any]]]:
    """(kind, role, parts): kind is "model", "response" or "user" for a message read from a Gemini
    CLI record (a user record's parts are the whole record's), "" for one built from its parts.
    `record`: `_raw_record(message)`, where the caller has it (None: it has none)."""
    if record is _UNREAD:
        record = _raw_record(message)
    if record is not None and record["type"] == "gemini" and message.role == "assistant":
        return "model", "model", _model_parts(record)
    if record is not None and record["type"] == "gemini" and message.role == "tool":
        call = next((c for c in record.get("toolCalls") or [] if isinstance(c, dict) and c.get("id") == message.tool_call_id), None)
        return "response", "user", _response_parts(call) if call is not None else _synthesized(message, tool_name)
    if record is not None and record["type"] == "user":
        return "user", "user", ensure_part_array(record.get("content"))
    return "", "model" if message.role == "assistant" else "user", _synthesized(message, tool_name)


def message_content(message: Message, previous: Message | None, tool_name: str) -> MessageContent:
    """Cached per message object (sessions are immutable; a replay's prefixes share the messages)."""
    anchor = id(previous) if message.role == "tool" else -1  # (no object's id is negative)
    hit = _CACHE.get(id(message))  # (a dict's get is atomic: the lock keeps a clear and a store apart)
    if hit is not None and hit[0] is message and hit[1] == anchor:
        return hit[2]
    record = _raw_record(message)
    kind, role, parts = _record_parts(message, tool_name, record)
    if kind:
        key: tuple[Any, ...] = (kind, id(record))
    elif message.role == "tool":
        key = ("tools", anchor)  # consecutive tool messages share one Content
    else:
        key = ("message", id(message))
    estimates: list[float] = []
    lengths: list[int] = []
    responses: list[int] = []
    has_response = False
    for k, p in enumerate(parts):
        e, n = measure_part(p)
        estimates.append(e)
        lengths.append(n)
        if "functionResponse" in p:
            has_response = True
            if p["functionResponse"]:
                responses.append(k)
    content = _new_tuple(MessageContent, (key, role, tuple(parts), sum(estimates), kind == "user", sum(lengths),
                                          (tuple(lengths), tuple(estimates)) if len(parts) > 1 else None,
                                          _FIRST if responses == [0] else tuple(responses), has_response))
    with _LOCK:
        if len(_CACHE) > 500_000:
            _CACHE.clear()
        _CACHE[id(message)] = (message, anchor, content)
    return content


@dataclass
class Content:
    """One Gemini `Content` of the history and the session messages it holds (none: ctxviz's
    summary turn and its acknowledgement)."""

    role: str
    parts: list[dict[str, Any]]
    part_lengths: list[int]
    estimate: float
    messages: list[Message]

    @property
    def json_length(self) -> int:
        """len(JSON.stringify({role, parts})): the wrapper, the parts and the commas between them."""
        wrapper = len('{"role":"') + len(self.role) + len('","parts":[') + len("]}")
        return wrapper + sum(self.part_lengths) + max(0, len(self.part_lengths) - 1)

    @property
    def has_function_response(self) -> bool:
        return any("functionResponse" in p for p in self.parts)

    @property
    def has_function_call(self) -> bool:
        return any(p.get("functionCall") for p in self.parts)


def text_content(role: str, text: str) -> Content:
    part = {"text": text}
    return Content(role, [part], [json_length(part)], estimate_text(text), [])


def build_contents(history: list[Message], call_names: dict[str, str]) -> list[Content]:
    """The history's Contents in order, each message in the Content it belongs to."""
    out: list[Content] = []
    keys: list[tuple[Any, ...]] = []
    previous: Message | None = None
    for m in history:
        mc = message_content(m, previous, call_names.get(m.tool_call_id, m.name))
        if out and keys[-1] == mc.key:
            content = out[-1]
            content.messages.append(m)
            if not mc.whole_record:
                content.parts += mc.parts
                content.part_lengths += mc.part_lengths
                content.estimate += mc.estimate
        else:
            out.append(Content(mc.role, list(mc.parts), list(mc.part_lengths), mc.estimate, [m]))
            keys.append(mc.key)
        if m.role != "tool":
            previous = m
    return out


def own_parts(message: Message, tool_name: str) -> list[dict[str, Any]]:
    """The parts that are this message's own (a user record's function responses go to its tool
    messages, the rest to its user message): what the message's token count measures."""
    kind, _, parts = _record_parts(message, tool_name)
    if kind != "user":
        return parts
    if message.role != "tool":
        return [p for p in parts if "functionResponse" not in p]
    responses = [p for p in parts if "functionResponse" in p]
    same = [p for p in responses if isinstance(p["functionResponse"], dict) and p["functionResponse"].get("id") == message.tool_call_id]
    if same:
        return same[:1]
    tail = message.id.rsplit("#", 1)[-1]
    k = int(tail) if "#" in message.id and tail.isdigit() else 0
    return responses[k:k + 1]
