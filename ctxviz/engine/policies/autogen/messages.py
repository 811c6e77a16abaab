"""How AutoGen sees a session, and how autogen-ext's OpenAIChatCompletionClient.count_tokens counts it
(autogen_ext/models/openai/_openai_client.py count_tokens_openai, autogen-ext 0.7.5).

AutoGen's model contexts hold LLMMessages, not chat-API messages: an AssistantAgent stores the results
of one batch of tool calls as one FunctionExecutionResultMessage, so consecutive tool messages of a
session are one unit here; an assistant message with tool calls is an AssistantMessage whose content
is the list of FunctionCalls (its text becomes `thought`). The agent's system message is not in the
model context: it is prepended to what the context returns, so system-role messages and the session's
system prompt are sent always and never trimmed.

count_tokens_openai: per LLMMessage 3, then for every non-None field of each chat-API message it
becomes, the tokens of the string (other values as their `json.dumps`), plus 1 per `name`; a user
message's part list counts an image by its tiles and a text part as the JSON of the part dict (the
`isinstance(part, str)` test never holds: a quirk reproduced on purpose); 3 more for the reply's
priming; and, where tools are passed, its per-schema formula plus 12.
"""

from __future__ import annotations

import json
import math
import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...counting import TokenCounts
from ...images import data_uri_size
from ...plan import Decision, MessagePlan, Plan, SummaryPlan, Totals
from ...session import TEXT_PARTS, ImagePart, Message, Session, ToolDefinition, part_text
from ...tokenizers import Tokenizer, encoding_name_for_model
from ...wording import noun
from ..base import params_dict
from ..common import base_system_prompt, history_with_summaries, with_system_messages

FRAMEWORK_VERSION = "autogen-core 0.7.5 / autogen-ext 0.7.5"
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3
DEFAULT_MODEL = "gpt-4o"
COUNTER = ("autogen-ext's OpenAIChatCompletionClient.count_tokens: tiktoken for the model (o200k_base for gpt-4o, cl100k_base when "
           "tiktoken does not know it), 3 per LLMMessage plus every field of the chat messages it becomes, 1 per name, image tiles, "
           "3 for the reply")

# autogen_ext/models/openai/_model_info.py get_token_limit, for the models it resolves (0.7.5).
MODEL_TOKEN_LIMITS: Mapping[str, int] = {
    **dict.fromkeys(("gpt-4o", "gpt-4o-2024-05-13", "gpt-4o-2024-08-06", "gpt-4o-2024-11-20", "gpt-4o-mini", "gpt-4o-mini-2024-07-18",
                     "gpt-4-turbo", "gpt-4-turbo-2024-04-09", "gpt-4-turbo-preview", "gpt-4-0125-preview", "gpt-4-1106-preview",
                     "gpt-4-1106-vision-preview", "gpt-4.5-preview", "gpt-4.5-preview-2025-02-27", "o1-mini", "o1-mini-2024-09-12",
                     "o1-preview", "o1-preview-2024-09-12", "llama-3.3-70b", "llama-3.3-8b", "llama-4-maverick", "llama-4-scout"), 128_000),
    **dict.fromkeys(("gpt-4", "gpt-4-0613"), 8_192),
    **dict.fromkeys(("gpt-4-32k", "gpt-4-32k-0613"), 32_768),
    **dict.fromkeys(("gpt-3.5-turbo", "gpt-3.5-turbo-0125", "gpt-3.5-turbo-1106", "gpt-3.5-turbo-16k", "gpt-3.5-turbo-16k-0613"), 16_385),
    **dict.fromkeys(("gpt-3.5-turbo-0613", "gpt-3.5-turbo-instruct"), 4_096),
    **dict.fromkeys(("gpt-4.1", "gpt-4.1-2025-04-14", "gpt-4.1-mini", "gpt-4.1-mini-2025-04-14", "gpt-4.1-nano", "gpt-4.1-nano-2025-04-14"), 1_047_576),
    **dict.fromkeys(("gpt-5", "gpt-5-2025-08-07", "gpt-5-mini", "gpt-5-mini-2025-08-07", "gpt-5-nano", "gpt-5-nano-2025-08-07"), 400_000),
    **dict.fromkeys(("o1", "o1-2024-12-17", "o3", "o3-2025-04-16", "o3-mini", "o3-mini-2025-01-31", "o4-mini", "o4-mini-2025-04-16"), 200_000),
    **dict.fromkeys(("claude-3-5-haiku", "claude-3-5-haiku-20241022", "claude-3-5-sonnet", "claude-3-5-sonnet-20241022", "claude-3-7-sonnet",
                     "claude-3-7-sonnet-20250219", "claude-3-opus", "claude-3-opus-20240229", "claude-3-sonnet", "claude-3-sonnet-20240229",
                     "claude-4-opus", "claude-4-sonnet", "claude-opus-4-20250514", "claude-sonnet-4-20250514"), 200_000),
    **dict.fromkeys(("claude-3-haiku", "claude-3-haiku-20240307"), 50_000),
    **dict.fromkeys(("gemini-1.5-flash", "gemini-1.5-flash-8b", "gemini-2.0-flash", "gemini-2.0-flash-lite-preview-02-05", "gemini-2.5-flash"), 1_048_576),
    **dict.fromkeys(("gemini-1.5-pro", "gemini-2.5-pro-preview-03-25"), 2_097_152),
    **dict.fromkeys(("Llama-3.3-70B-Instruct", "Llama-3.3-8B-Instruct", "Llama-4-Maverick-17B-128E-Instruct-FP8",
                     "Llama-4-Scout-17B-16E-Instruct-FP8"), 128_000),
}


#: autogen_core ModelFamily.ANY: the families MESSAGE_TRANSFORMERS registers for the "openai" api
#: (autogen-ext 0.7.5, _message_transform.py), which `_find_model_family` matches as prefixes.
FAMILY_NAMES = ("gpt-5", "gpt-41", "gpt-45", "gpt-4o", "o1", "o3", "o4", "gpt-4", "gpt-35", "r1", "gemini-1.5-flash", "gemini-1.5-pro",
                "gemini-2.0-flash", "gemini-2.5-pro", "gemini-2.5-flash", "claude-3-haiku", "claude-3-sonnet", "claude-3-opus",
                "claude-3-5-haiku", "claude-3-5-sonnet", "claude-3-7-sonnet", "claude-4-opus", "claude-4-sonnet", "llama-3.3-8b",
                "llama-3.3-70b", "llama-4-scout", "llama-4-maverick", "codestral", "open-codestral-mamba", "mistral", "ministral", "pixtral",
                "unknown")
#: _model_info.py's family for the models of its table whose family is not a prefix of their name.
MODEL_FAMILIES: Mapping[str, str] = {
    "gemini-1.5-flash-8b": "gemini-1.5-flash", "gemini-2.0-flash-lite-preview-02-05": "gemini-2.0-flash",
    "gemini-2.5-pro-preview-03-25": "gemini-2.5-pro", "claude-3-haiku-20240307": "claude-3-haiku", "claude-3-sonnet-20240229": "claude-3-sonnet",
    "claude-3-opus-20240229": "claude-3-opus", "claude-3-5-haiku-20241022": "claude-3-5-haiku", "claude-3-5-sonnet-20241022": "claude-3-5-sonnet",
    "claude-3-7-sonnet-20250219": "claude-3-7-sonnet", "claude-sonnet-4-20250514": "claude-4-sonnet", "claude-opus-4-20250514": "claude-4-opus",
}
CLAUDE, GEMINI, MISTRAL, OPENAI = "claude", "gemini", "mistral", "openai"


def model_family(model: str) -> str:
    """The family whose message transformers the client uses: _model_info's for a model of AutoGen's
    table, else (`get_transformer` with an unknown family) the longest family name the model starts with."""
    model = model or DEFAULT_MODEL
    if model in MODEL_FAMILIES:
        return MODEL_FAMILIES[model]
    return max((f for f in FAMILY_NAMES if model.startswith(f)), key=len, default="unknown")


def family_kind(family: str) -> str:
    """Which transformer map the family has: Claude's, Gemini's, Mistral's, or the base (OpenAI's)."""
    if family.startswith("claude"):
        return CLAUDE
    if family.startswith("gemini"):
        return GEMINI
    if family in ("codestral", "open-codestral-mamba", "mistral", "ministral", "pixtral"):
        return MISTRAL
    return OPENAI


def client_model(session: Session) -> str:
    """The model the OpenAIChatCompletionClient is built for: the session's, else gpt-4o."""
    return session.model or DEFAULT_MODEL


def tokenizer_for_model(model: str) -> str:
    """count_tokens_openai: tiktoken.encoding_for_model(model), cl100k_base when tiktoken raises KeyError."""
    name = encoding_name_for_model(model or DEFAULT_MODEL)
    return name if name in ("o200k_base", "cl100k_base") else "o200k_base" if name == "o200k_harmony" else "cl100k_base"


def vision_raises(width: int, height: int) -> bool:
    """Whether calculate_vision_tokens raises ZeroDivisionError on this size: an image wider than
    2,048 px and more than 2,048 times as wide as tall (5000 x 1) is scaled to a height of 0, which
    it then divides by. (A tall thin image scales to a width of 0 and counts 85.)"""
    return (width > 2048 or height > 2048) and width / height > 1 and int(2048 / (width / height)) == 0


def vision_tokens(width: int, height: int) -> int:
    """calculate_vision_tokens(image) with detail 'auto' (AutoGen never passes another detail).
    Where AutoGen raises ZeroDivisionError (`vision_raises`), the formula's own value for a height
    of 0 (no tile: 85) is returned, and the plan says AutoGen cannot count the image."""
    if vision_raises(width, height):
        return 85
    if width > 2048 or height > 2048:
        aspect_ratio = width / height
        if aspect_ratio > 1:
            width, height = 2048, int(2048 / aspect_ratio)
        else:
            height, width = 2048, int(2048 * aspect_ratio)
    aspect_ratio = width / height
    if width > 768 and height > 768:
        if aspect_ratio > 1:
            height, width = 768, int(768 * aspect_ratio)
        else:
            width, height = 768, int(768 / aspect_ratio)
    return 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)


def image_size(part: ImagePart) -> tuple[int, int]:
    """An image's size; a remote image (AutoGen would have downloaded it) as 1024 x 1024."""
    size = data_uri_size(part.url)
    return size if size is not None and size[0] > 0 and size[1] > 0 else (1024, 1024)


def image_part_tokens(part: ImagePart) -> int:
    """An image's tokens from its size."""
    return vision_tokens(*image_size(part))


def _text(message: Message) -> str:
    return "\n".join(part_text(p) for p in message.parts if isinstance(p, TEXT_PARTS))


def user_content(message: Message) -> str | list[str | ImagePart]:
    """UserMessage.content: the text, or (with images) the text parts and images in their order."""
    if not any(isinstance(p, ImagePart) for p in message.parts):
        return _text(message)
    return [part_text(p) if isinstance(p, TEXT_PARTS) else p for p in message.parts if isinstance(p, (*TEXT_PARTS, ImagePart))]


def source_name(message: Message) -> str:
    return message.name or ("user" if message.role == "user" else "assistant")


def tool_calls_json(message: Message) -> str:
    """The `tool_calls` value of the chat message, as count_tokens_openai json.dumps it."""
    return json.dumps([{"id": c.id, "function": {"arguments": c.arguments, "name": c.name}, "type": "function"} for c in message.tool_calls])


def measure_fields(message: Message, tokenizer: Tokenizer) -> int:
    """The tokens of the fields of the chat message this session message becomes (without the 3 per
    LLMMessage: consecutive tool results share one)."""
    count = tokenizer.count
    role = message.role
    if role == "user":
        total = count("user") + count(source_name(message)) + TOKENS_PER_NAME
        content = user_content(message)
        if isinstance(content, str):
            return total + count(content)
        for item in content:
            if isinstance(item, ImagePart):
                total += image_part_tokens(item)
            else:
                total += count(json.dumps({"type": "text", "text": item}))
        return total
    if role == "assistant":
        text = _text(message)
        if message.tool_calls:
            return count("assistant") + count(tool_calls_json(message)) + (count(text) if text else 0)
        return count("assistant") + count(text)
    if role == "tool":
        return count(_text(message)) + count("tool") + count(tool_call_id(message))
    return count(_text(message)) + count("system")


def measure_for_family(message: Message, tokenizer: Tokenizer, kind: str) -> int:
    """`measure_fields` after the family's transformers (_message_transform.py): for Claude a text
    user or assistant message that is empty or whitespace-only is passed over (`pass_message`: it
    adds no field, only its 3 per LLMMessage); for Gemini empty text becomes " "; for Mistral a user
    message has no name; for all three an empty SystemMessage becomes " "."""
    base = measure_fields(message, tokenizer)
    if kind == OPENAI:
        return base
    role = message.role
    text = _text(message)
    if role == "system":
        return base + (tokenizer.count(" ") if not text else 0)
    if role == "user":
        if kind == MISTRAL:
            return base - tokenizer.count(source_name(message)) - TOKENS_PER_NAME
        if not isinstance(user_content(message), str):
            return base
        if kind == CLAUDE and (not text or text.isspace()):
            return 0
        return base + (tokenizer.count(" ") if kind == GEMINI and not text else 0)
    if role == "assistant" and not message.tool_calls:
        if kind == CLAUDE and (not text or text.isspace()):
            return 0
        return base + (tokenizer.count(" ") if kind == GEMINI and not text else 0)
    return base


def measure_session(session: Session, tokenizer: Tokenizer) -> list[int]:
    """Every message's fields as the client for the session's model counts them (its family's transformers)."""
    kind = family_kind(model_family(client_model(session)))
    return [measure_for_family(m, tokenizer, kind) for m in session.messages]


def passed_over(message: Message, kind: str) -> bool:
    """Whether Claude's transformers leave this message out of the request (`pass_message`)."""
    if kind != CLAUDE or message.role not in ("user", "assistant") or (message.role == "assistant" and message.tool_calls):
        return False
    text = _text(message)
    return isinstance(user_content(message), str) and (not text or text.isspace())


def tool_call_id(message: Message) -> str:
    return message.tool_call_id or next((getattr(p, "tool_call_id", "") for p in message.parts if getattr(p, "tool_call_id", "")), "")


def _schema_text(value: Any, tool: str, field: str, problems: list[str] | None) -> str:
    """A schema value count_tokens_openai passes to `encoding.encode` as it is: a string, else
    AutoGen raises TypeError there; ctxviz then counts its JSON text and records the problem."""
    if isinstance(value, str):
        return value
    if problems is not None:
        problems.append(f"tool {tool!r}: {field} holds {json.dumps(value)[:40]}, not a string; autogen-ext's count_tokens raises "
                        "TypeError on it (it tokenizes the value as text), so AutoGen cannot count this schema (ctxviz counts its JSON)")
    return json.dumps(value)


def tool_schema_tokens(tools: Sequence[ToolDefinition], tokenizer: Tokenizer, problems: list[str] | None = None) -> int:
    """count_tokens_openai's tool formula over convert_tools(tools), plus 12 when there are any.
    Values AutoGen cannot tokenize (an integer `enum`, a list `type`) are described in `problems`."""
    count = tokenizer.count
    total = 0
    for tool in tools:
        tokens = count(tool.name) + count(tool.description or "") - 2
        parameters = tool.parameters or {}
        if "properties" in parameters:
            properties = parameters["properties"]
            for key, v in properties.items():
                tokens += count(key)
                for name in v:
                    if name == "type":
                        tokens += 2 + count(_schema_text(v["type"], tool.name, f"parameter {key!r} type", problems))
                    elif name == "description":
                        tokens += 2 + count(_schema_text(v["description"], tool.name, f"parameter {key!r} description", problems))
                    elif name == "anyOf":
                        tokens -= 3
                        for option in v["anyOf"]:
                            tokens += 3 + count(str(option["type"]))
                    elif name == "default":
                        tokens += 2 + count(json.dumps(v["default"]))
                    elif name == "title":
                        tokens += 2 + count(str(v["title"]))
                    elif name == "enum":
                        tokens -= 3
                        for option in v["enum"]:
                            tokens += 3 + count(_schema_text(option, tool.name, f"parameter {key!r} enum", problems))
                    # Any other field (items, properties...) is skipped with a warning by AutoGen.
            tokens += 11
            if len(properties) == 0:
                tokens -= 2
        total += tokens
    return total + (12 if tools else 0)


def tool_schema_problems(tools: Sequence[ToolDefinition], tokenizer: Tokenizer) -> list[str]:
    """What in the tool schemas makes AutoGen's count_tokens raise (one line each, first per tool)."""
    problems: list[str] = []
    tool_schema_tokens(tools, tokenizer, problems)
    seen: set[str] = set()
    out = []
    for line in problems:
        tool = line.split(":", 1)[0]
        if tool not in seen:
            seen.add(tool)
            out.append(line)
    return out


@dataclass(frozen=True)
class Unit:
    """One LLMMessage of the model context: the session messages it is made of, and its kind."""

    kind: str  # "user", "assistant", "function_calls" (an AssistantMessage of FunctionCalls), "results", "summary"
    messages: tuple[Message, ...]
    #: For a "summary" unit: the recorded summary's index in session.summaries, sent as a SystemMessage.
    summary: int = -1

    @property
    def first(self) -> int:
        return self.messages[0].index if self.messages else -1


_units: dict[tuple[int, bool], tuple[weakref.ref[Session], tuple[tuple[Message, ...], tuple[Unit, ...]]]] = {}
_units_lock = threading.Lock()


def model_context(session: Session, system_in_context: bool = False) -> tuple[tuple[Message, ...], tuple[Unit, ...]]:
    """(system messages the agent prepends, the model context's LLMMessages), computed once per session.

    With `system_in_context` (AutoGen's Memory adds SystemMessages to the model context with
    `update_context`), every system-role message is an LLMMessage of the context where it stands,
    trimmed and counted like any other; only the session's own system prompt stays the agent's."""
    key = (id(session), system_in_context)
    found = _units.get(key)
    if found is not None and found[0]() is session:
        return found[1]
    system = session.system_and_history[0]
    # A recorded summary stands where the messages it covers were, as a SystemMessage.
    entries, _covered, _superseded = history_with_summaries(session)
    if system_in_context and system:
        entries = with_system_messages(entries, system)
        system = ()
    units: list[Unit] = []
    for m in entries:
        if isinstance(m, int):
            units.append(Unit("summary", (), m))
        elif m.role == "tool":
            if units and units[-1].kind == "results":
                units[-1] = Unit("results", units[-1].messages + (m,))
                continue
            units.append(Unit("results", (m,)))
        elif m.role == "assistant":
            units.append(Unit("function_calls" if m.tool_calls else "assistant", (m,)))
        elif m.role == "system":
            units.append(Unit("system", (m,)))
        else:
            units.append(Unit("user", (m,)))
    result = (system, tuple(units))
    with _units_lock:
        _units[key] = (weakref.ref(session, lambda _ref, key=key, table=_units: table.pop(key, None)), result)
    return result


_special: dict[int, tuple[weakref.ref[Session], bool]] = {}
SPECIAL_SPELLINGS = ("<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>")


def spells_special_token(session: Session) -> bool:
    """Whether some message spells a special token: count_tokens_openai's `encoding.encode(value)`
    then raises ValueError (disallowed special token), so AutoGen cannot count the context at all."""
    key = id(session)
    found = _special.get(key)
    if found is not None and found[0]() is session:
        return found[1]
    flag = any("<|" in p.text and any(t in p.text for t in SPECIAL_SPELLINGS)
               for m in session.messages for p in m.parts if hasattr(p, "text") and isinstance(getattr(p, "text", None), str))
    _special[key] = (weakref.ref(session, lambda _ref, key=key, table=_special: table.pop(key, None)), flag)
    return flag


def unit_tokens(unit: Unit, counts: TokenCounts) -> int:
    if unit.kind == "summary":
        return summary_tokens(counts.session, unit.summary, counts)
    tokens = counts.message_tokens
    return TOKENS_PER_MESSAGE + sum(tokens[m.index] for m in unit.messages)


def summary_tokens(session: Session, k: int, counts: TokenCounts) -> int:
    """A recorded summary as `SystemMessage(content=text)`: 3 + its text + 'system'."""
    return TOKENS_PER_MESSAGE + counts.text(session.summaries[k].text) + counts.text("system")


def unit_to_openai(unit: Unit) -> list[dict[str, Any]]:
    out = []
    for m in unit.messages:
        msg = m.to_openai()
        if m.role == "user":
            msg["name"] = source_name(m)
        out.append(msg)
    return out


def system_part(session: Session, system: Sequence[Message], counts: TokenCounts) -> tuple[str, int, int]:
    """(the system prompt, its tokens as SystemMessages, how many SystemMessages). The session's own
    prompt and each system-role message are one SystemMessage each."""
    prompt = base_system_prompt(session, list(system))
    tokens = 0
    n = 0
    if session.system_prompt:
        tokens += TOKENS_PER_MESSAGE + counts.text(session.system_prompt) + counts.text("system")
        n += 1
    for m in system:
        tokens += TOKENS_PER_MESSAGE + counts.message_tokens[m.index]
        n += 1
    return prompt, tokens, n


def placeholder_tokens(text: str, counts: TokenCounts) -> int:
    """HeadAndTail's `UserMessage(content=text, source="System")` (without its name for Mistral models)."""
    if family_kind(model_family(client_model(counts.session))) == MISTRAL:
        return TOKENS_PER_MESSAGE + counts.text("user") + counts.text(text)
    return TOKENS_PER_MESSAGE + counts.text("user") + counts.text("System") + TOKENS_PER_NAME + counts.text(text)


def build_plan(name: str, session: Session, params: Any, counts: TokenCounts, sent: Sequence[Unit | str],
               reasons: Mapping[int, tuple[Decision, str, str]], budget: int, notes: Sequence[str], extra: Mapping[str, Any],
               tools_tokens: int = 0) -> Plan:
    """A plan from the LLMMessages get_messages returns (a str is an inserted placeholder UserMessage)
    and a decision, reason and reason code for every history message."""
    tokens = counts.message_tokens
    in_context = bool(getattr(params, "system_messages_in_context", False))
    system, _units = model_context(session, in_context)
    prompt, system_tokens, _ = system_part(session, system, counts)
    decisions: list[MessagePlan | None] = [None] * len(session.messages)
    for m in system:
        t = tokens[m.index]
        decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, t, Decision.KEPT, "system",
                                         "kept: a SystemMessage, which the agent prepends to what the model context returns", t + TOKENS_PER_MESSAGE,
                                         "system_prompt")
    context: list[dict[str, Any]] = [{"role": "system", "content": prompt}] if prompt else []
    context_index: list[int | None] = [None] * len(context)
    message_tokens = 0
    placeholder = 0
    sent_summaries: set[int] = set()
    for unit in sent:
        if isinstance(unit, str):
            placeholder += placeholder_tokens(unit, counts)
            context.append({"role": "user", "name": "System", "content": unit})
            context_index.append(None)
            continue
        if unit.kind == "summary":
            sent_summaries.add(unit.summary)
            message_tokens += summary_tokens(session, unit.summary, counts)
            context.append({"role": "system", "content": session.summaries[unit.summary].text})
            context_index.append(None)
            continue
        for k, (m, msg) in enumerate(zip(unit.messages, unit_to_openai(unit), strict=True)):
            context.append(msg)
            context_index.append(m.index)
            share = tokens[m.index] + (TOKENS_PER_MESSAGE if k == 0 else 0)
            message_tokens += share
            decision, reason, code = reasons[m.index]
            decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, tokens[m.index], decision, "context", reason, share, code)
    for index, (decision, reason, code) in reasons.items():
        if decisions[index] is None:
            m = session.messages[index]
            decisions[index] = MessagePlan(m.index, m.id, m.role, m.category, tokens[index], decision, "context", reason, 0, code)
    _entries, covered, superseded = history_with_summaries(session)
    summary_plans = []
    for k, summary in enumerate(session.summaries):
        if k in sent_summaries:
            decision, why = Decision.KEPT, "kept: a recorded summary, in the model context as a SystemMessage where the messages it covers were"
        elif k in superseded:
            decision, why = Decision.DROPPED, "dropped: superseded by a later recorded summary, which covers every message of the file this one covers"
        else:
            decision, why = Decision.DROPPED, "dropped: a recorded summary (a SystemMessage where the messages it covers were) this context leaves out"
        summary_plans.append(SummaryPlan(k, summary_tokens(session, k, counts), decision, why, summary.text))
    for m in session.system_and_history[1]:
        if m.id in covered:
            k = covered[m.id]
            decisions[m.index] = MessagePlan(m.index, m.id, m.role, m.category, tokens[m.index], Decision.SUMMARIZED, "summarized",
                                             f"summarized: recorded summary #{k + 1} covers it"
                                             + (" and is sent in its place" if k in sent_summaries else "; the summary itself is not sent"),
                                             0, "summarised")
    messages = tuple(decisions)  # type: ignore[arg-type]
    kept = [m for m in messages if m.sent]
    usage = {"system": system_tokens, "messages": message_tokens + REPLY_PRIMING, "placeholder": placeholder, "tools": tools_tokens}
    allocation = divide(budget, {"system": system_tokens, "placeholder": placeholder, "tools": tools_tokens})
    used = sum(usage.values())
    totals = Totals(budget=budget, used=used, kept=sum(m.tokens for m in kept), dropped=sum(m.tokens for m in messages if not m.sent),
                    fits=used <= budget, kept_messages=len(kept), dropped_messages=len(messages) - len(kept))
    over = system_over_note(budget, used, system_tokens)
    if over:
        notes = [*notes, over]
    if spells_special_token(session):
        notes = [*notes, "a message spells a special token (such as <|endoftext|>): autogen-ext's count_tokens raises ValueError on it "
                         "(tiktoken's disallowed special token); ctxviz counts it as plain text"]
    notes = [*notes, *client_notes(session, [u for u in sent if not isinstance(u, str)])]
    return Plan(policy=name, params=params_dict(params), tokenizer=counts.scheme.label, allocation=allocation, usage=usage,
                system_prompt=prompt, messages=messages, context=tuple(context), context_index=tuple(context_index), totals=totals,
                summaries=tuple(summary_plans), zones=("system", "context") + (("summarized",) if covered else ()), notes=tuple(notes), extra=dict(extra))


def system_over_note(budget: int, used: int, system_tokens: int) -> str:
    """Why a plan whose model context fits is over all the same ("" when it is not): the agent
    prepends its system message, which AutoGen's count leaves out, so every kept message's sentence
    says the context fits while the total is over."""
    if used <= budget or not system_tokens or used - system_tokens > budget:
        return ""
    return (f"the model context fits within {budget:,} tokens, but the agent prepends its system message ({system_tokens:,} tokens), "
            f"which AutoGen does not count: the request is {used:,} tokens, over by {used - budget:,}")


NAME_RE = re.compile(r"^[a-zA-Z0-9_-]+$")


def invalid_names(session: Session) -> list[str]:
    """The sources (`name`s) autogen-ext's `assert_valid_name` refuses: only letters, digits, '_'
    and '-', at most 64 characters. AutoGen raises ValueError on them when counting or sending."""
    bad: dict[str, None] = {}
    for m in session.messages:
        if m.role in ("user", "assistant"):
            name = source_name(m)
            if not NAME_RE.match(name) or len(name) > 64:
                bad[name] = None
    return list(bad)


def client_notes(session: Session, sent: Sequence[Unit]) -> list[str]:
    """What AutoGen's OpenAI client does differently from the plain count, or cannot do at all."""
    notes = []
    names = invalid_names(session)
    if names:
        shown = ", ".join(repr(n[:40]) for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        notes.append(f"a message's source name {shown} is not one autogen-ext accepts (letters, digits, '_' and '-', at most 64): "
                     "its count_tokens and create raise ValueError 'Invalid name'; ctxviz counts the name as given")
    thin = [(m.index, image_size(p)) for m in session.messages if m.role == "user"
            for p in m.parts if isinstance(p, ImagePart) and vision_raises(*image_size(p))]
    if thin:
        (index, (w, h)) = thin[0]
        notes.append(f"{len(thin):,} {noun(len(thin), 'image')} (the first a {w}x{h} px image in #{index}) {'is' if len(thin) == 1 else 'are'} more than 2,048 times as wide as tall: autogen-ext's "
                     "calculate_vision_tokens scales the height to 0 and raises ZeroDivisionError, so AutoGen cannot count them "
                     "(ctxviz counts each 85 tokens, the formula's value with no tile)")
    kind = family_kind(model_family(client_model(session)))
    skipped = [m.index for u in sent for m in u.messages if passed_over(m, kind)]
    if skipped:
        notes.append(f"{len(skipped):,} empty or whitespace-only {noun(len(skipped), 'message')} (#{', #'.join(map(str, skipped[:5]))}) {'is' if len(skipped) == 1 else 'are'} left out of the request "
                     "by autogen-ext's Claude transformers (pass_message); count_tokens counts only their 3 tokens per message")
    if kind != OPENAI:
        notes.append(f"counted as autogen-ext's client counts a {model_family(client_model(session))} model: its family's message "
                     "transformers apply (" + {CLAUDE: "whitespace-only text messages left out, empty system text sent as ' '",
                                               GEMINI: "empty text sent as ' '",
                                               MISTRAL: "user messages without a name, empty system text sent as ' '"}[kind] + ")")
    return notes


def divide(budget: int, fixed: Mapping[str, int]) -> dict[str, int]:
    """The budget divided: each fixed part what it uses (while the budget lasts), the messages the rest."""
    left = budget
    parts: dict[str, int] = {}
    for part, tokens in fixed.items():
        parts[part] = min(left, tokens)
        left -= parts[part]
    return {"system": parts["system"], "messages": left, **{k: v for k, v in parts.items() if k != "system"}}


def model_limit(session: Session) -> tuple[int, str]:
    """(the model's token limit as AutoGen's table gives it, a note when the table does not know the model)."""
    model = client_model(session)
    if model in MODEL_TOKEN_LIMITS:
        return MODEL_TOKEN_LIMITS[model], ""
    return MODEL_TOKEN_LIMITS[DEFAULT_MODEL], (f"AutoGen's model table does not know {model!r} (its get_token_limit raises KeyError); "
                                               f"ctxviz uses gpt-4o's {MODEL_TOKEN_LIMITS[DEFAULT_MODEL]:,} tokens")


SYSTEM_IN_CONTEXT_HELP = ("System-role messages are part of the model context where they stand (as AutoGen's Memory adds them), "
                          "trimmed and counted like any other; off: the agent's system message, prepended and never trimmed")


def system_in_context_field() -> Any:
    """The `system_messages_in_context` parameter all three model contexts take."""
    return field(default=False, metadata={"help": SYSTEM_IN_CONTEXT_HELP})


def autogen_policy(**fields: Any) -> Any:
    """A `Policy` for one of AutoGen's model contexts: they share the message mapping, the
    OpenAI client's counter and the framework's identity; each gives its name, plan and knobs."""
    from ..base import Policy

    return Policy(measure_name="autogen-openai-fields", measure=measure_fields, measure_session=measure_session, default_tokenizer="o200k_base",
                  tokenizer_for_model=tokenizer_for_model, zone_parts={"context": "messages"}, framework="AutoGen",
                  framework_version=FRAMEWORK_VERSION, **fields)

