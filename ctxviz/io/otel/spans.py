"""The spans of an OpenTelemetry file, whatever holds them (an OTLP export, JSONL of exports or of
spans, a list of spans, one span, one attribute map), each with its attributes decoded from OTLP's
`AnyValue`s into a flat dict that remembers where each came from (an error names that place)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..base import FieldPath, Fields, locate_line, type_name
from ..source import SourceFile

#: The Vercel AI SDK's provider-call input (ai-sdk.dev, "Telemetry": call LLM span information).
VERCEL_INPUT = "ai.prompt.messages"
INPUT_KEYS = ("gen_ai.input.messages", "gen_ai.prompt", "gen_ai.system_instructions", VERCEL_INPUT)


@dataclass
class Span:
    """One span, its attributes decoded into a flat dict, with where each came from."""

    trace_id: str
    span_id: str
    name: str
    end: int
    attrs: dict[str, Any]
    #: attribute key -> (field path in the file, line), for error messages
    where: dict[str, tuple[FieldPath, int | None]]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    path: FieldPath = ()
    line: int | None = None


def _any_value(value: Any) -> Any:
    """An OTLP `AnyValue` (camelCase or snake_case) as a plain value; plain values pass through."""
    if not isinstance(value, dict) or len(value) != 1:
        return value
    (key, inner), = value.items()
    if key in ("stringValue", "string_value", "boolValue", "bool_value", "doubleValue", "double_value", "bytesValue", "bytes_value"):
        return inner
    if key in ("intValue", "int_value"):
        try:
            return int(inner)
        except (TypeError, ValueError, OverflowError):
            return inner
    if key in ("arrayValue", "array_value"):
        values = inner.get("values", []) if isinstance(inner, dict) else []
        return [_any_value(v) for v in values] if isinstance(values, list) else []
    if key in ("kvlistValue", "kvlist_value"):
        values = inner.get("values", []) if isinstance(inner, dict) else []
        return {kv["key"]: _any_value(kv.get("value")) for kv in values if isinstance(kv, dict) and isinstance(kv.get("key"), str)} if isinstance(values, list) else {}
    return value


def looks_like_attributes(d: dict[str, Any]) -> bool:
    return any(isinstance(k, str) and (k.startswith(INPUT_KEYS) or k.startswith(("llm.input_messages.", "gen_ai.prompt."))) for k in d)


def is_span(d: Any) -> bool:
    return isinstance(d, dict) and "attributes" in d and ("spanId" in d or "span_id" in d or "context" in d or "traceId" in d or "name" in d)


def has_genai(attrs: Any) -> bool:
    if isinstance(attrs, dict):
        return looks_like_attributes(attrs)
    if isinstance(attrs, list):
        return any(isinstance(kv, dict) and isinstance(kv.get("key"), str) and looks_like_attributes({kv["key"]: 1}) for kv in attrs)
    return False


def list_of(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def otlp_spans(doc: Any) -> Iterator[Any]:
    for rs in list_of(doc.get("resourceSpans") or doc.get("resource_spans")):
        if not isinstance(rs, dict):
            continue
        for ss in list_of(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or rs.get("scope_spans")):
            if isinstance(ss, dict):
                yield from (s for s in list_of(ss.get("spans")) if isinstance(s, dict))



def spans_of(src: SourceFile) -> Iterator[Span]:
    if src.kind == "jsonl":
        for lineno, record in src.records():
            yield from _from_document(src, record, (), lineno)
    else:
        yield from _from_document(src, src.document, (), None)


def _from_document(src: SourceFile, doc: Any, path: FieldPath, line: int | None) -> Iterator[Span]:
    if isinstance(doc, dict) and ("resourceSpans" in doc or "resource_spans" in doc):
        top = Fields(src, doc, path, line)
        key = "resourceSpans" if "resourceSpans" in doc else "resource_spans"
        for i, rs in enumerate(top.list(key)):
            r = top.child(key, top.list(key)).child(i, rs)
            skey = next((k for k in ("scopeSpans", "instrumentationLibrarySpans", "scope_spans") if k in r.record), "scopeSpans")
            for j, ss in enumerate(r.list(skey)):
                sc = r.child(skey, r.list(skey)).child(j, ss)
                for k, span in enumerate(sc.list("spans")):
                    yield _span(src, span, tuple(path) + (key, i, skey, j, "spans", k), line)
    elif isinstance(doc, list):
        for i, item in enumerate(doc):
            yield _span(src, item, tuple(path) + (i,), line)
    elif isinstance(doc, dict) and is_span(doc):
        yield _span(src, doc, path, line)
    elif isinstance(doc, dict) and looks_like_attributes(doc):
        yield Span("", "", "", 0, dict(doc), {k: (tuple(path) + (k,), line) for k in doc}, path=path, line=line)
    else:
        src.tally("skipped {n} record(s) that {is|are} neither spans nor OTLP exports")


def _span(src: SourceFile, record: Any, path: FieldPath, line: int | None) -> Span:
    s = Fields(src, record, path, line)
    context = s.dict("context") or s.dict("spanContext")  # the Python SDK's to_json(); the JS SDK's ReadableSpan
    trace_id = s.str("traceId") or s.str("trace_id") or str(context.get("trace_id", "") or context.get("traceId", "") or "")
    span_id = s.str("spanId") or s.str("span_id") or str(context.get("span_id", "") or context.get("spanId", "") or "")
    end = s.get("endTimeUnixNano") or s.get("end_time") or s.get("endTime") or 0
    if isinstance(end, list) and len(end) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in end):
        end = end[0] * 1_000_000_000 + end[1]  # the JS SDK's HrTime: [seconds, nanoseconds]
    try:
        end_key = int(end)
    except (TypeError, ValueError, OverflowError):
        end_key = 0 if not isinstance(end, str) else sum(ord(c) for c in end)  # ISO times still sort within one file
    attrs: dict[str, Any] = {}
    where: dict[str, tuple[FieldPath, int | None]] = {}
    raw = s.get("attributes")
    if isinstance(raw, dict):
        for key, value in raw.items():
            attrs[key] = value
            where[key] = (tuple(path) + ("attributes", key), line)
    elif isinstance(raw, list):
        for i, kv in enumerate(raw):
            if isinstance(kv, dict) and isinstance(kv.get("key"), str):
                attrs[kv["key"]] = _any_value(kv.get("value"))
                where[kv["key"]] = (tuple(path) + ("attributes", i, "value"), line)
    elif raw is not None:
        raise s.error(f"expected a list or an object, got {type_name(raw)}", "attributes")
    events = []
    for event in s.list("events"):
        if isinstance(event, dict):
            ev_attrs = event.get("attributes")
            decoded = ({kv["key"]: _any_value(kv.get("value")) for kv in ev_attrs if isinstance(kv, dict) and isinstance(kv.get("key"), str)}
                       if isinstance(ev_attrs, list) else dict(ev_attrs) if isinstance(ev_attrs, dict) else {})
            events.append((str(event.get("name", "")), decoded))
    return Span(trace_id, span_id, s.str("name"), end_key, attrs, where, events, path, line)


def json_attr(src: SourceFile, span: Span, key: str, value: Any = None) -> tuple[Any, Fields | None]:
    """An attribute holding JSON (a string, or already decoded), and a Fields to report errors at it."""
    value = span.attrs.get(key) if value is None else value
    path, line = span.where.get(key, (tuple(span.path) + (key,), span.line))
    if line is None and src.kind != "jsonl":
        line = locate_line(src.text, path)
    holder = Fields(src, {key: value}, tuple(path)[:-1] if path and path[-1] == key else tuple(path), line)
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped.startswith(("[", "{")):
            return value, holder
        try:
            return json.loads(stripped), holder
        except ValueError as exc:
            raise holder.error(f"invalid JSON in the attribute ({exc})") from None
    return value, holder
