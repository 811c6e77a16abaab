"""`ctxviz count`: the tokens of a text or a list of chat messages (a quick tokenizer check)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from ..engine.tokenizers import count_openai_chat, get_tokenizer, tokenizer_names
from ..engine.wording import counted
from ..errors import LoadError
from ..io.base import locate_line, type_name
from ..io.source import STDIN, SourceFile, read_source
from .exits import EXIT_OK


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("count", help="count the tokens of a text (a quick tokenizer check)")
    p.add_argument("file", nargs="?", default="-", help="text file, or - for stdin")
    p.add_argument("--tokenizer", default="o200k_base", help=f"{', '.join(tokenizer_names())}, or a model name")
    p.add_argument("--messages", action="store_true", help="the input is chat messages (a JSON list, or JSON Lines: one message a line): add OpenAI's chat-format overhead")
    p.add_argument("--model", default="gpt-4o", help="model whose chat overhead --messages uses")
    p.add_argument("-v", "--verbose", action="store_true", help="also say on standard error what was counted and with which tokenizer")


#: The roles Chat Completions takes (`function`: its old name for `tool`).
CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def _chat_message_problem(message: dict[str, Any]) -> tuple[str, str] | None:
    """(field, problem) of a message Chat Completions would refuse, else None: a count of it would
    be a number for a request that cannot be sent (`content: 5` counted as 3 tokens of overhead)."""
    role = message.get("role")
    if not isinstance(role, str) or role not in CHAT_ROLES:
        return "role", f"{'unknown role ' + repr(role) if isinstance(role, str) else 'expected a string, got ' + type_name(role)} (expected one of {', '.join(CHAT_ROLES)})"
    content = message.get("content")
    if content is not None and not isinstance(content, str) and not (isinstance(content, list) and all(isinstance(p, dict) for p in content)):
        return "content", f"expected a string, a list of content parts or null, got {type_name(content)}"
    return None


def _check_messages(name: str, text: str, messages: list[dict[str, Any]], where: Sequence[str | int] | Sequence[int]) -> None:
    """Refuse the first message Chat Completions would refuse, `FILE:LINE: messages[K].field: ...`.
    `where`: each message's path in the JSON document (a list) or its line (JSON Lines: ints)."""
    for k, message in enumerate(messages):
        found = _chat_message_problem(message)
        if found is None:
            continue
        key, problem = found
        at = where[k]
        line = at if isinstance(at, int) else locate_line(text, (*at, key))  # type: ignore[misc]
        raise LoadError(name, problem, line, f"messages[{k}].{key}")


def _json_lines(source: SourceFile) -> list[dict[str, Any]]:
    """A JSON Lines file of chat messages, one message object (with a `role`) a line, read as every
    JSONL session is (`SourceFile.jsonl_records`). An agent's log is JSON Lines too, but its lines
    are records, not messages: counting them would give a number that means nothing, so such a line
    is refused, with where to go instead. A last line cut mid-record, which a log reader skips, is
    refused here: the count would silently leave that message out."""
    messages: list[dict[str, Any]] = []
    lines: list[int] = []
    for lineno, value in source.jsonl_records:
        if not isinstance(value, dict) or "role" not in value:
            raise source.error("not a chat message (no `role`): --messages counts chat messages, a JSON list or one a line; "
                               "for an agent's log, `ctxviz info` or `ctxviz plan` count what it sends", lineno)
        messages.append(value)
        lines.append(lineno)
    if source.cut_line is not None:
        raise source.error("invalid JSON: the line ends mid-record, so its message cannot be counted", source.cut_line)
    _check_messages(source.path, source.text, messages, lines)
    return messages


def run(args: argparse.Namespace) -> int:
    # A text file or standard input, with the same checks as a session file (regular file, size).
    source = read_source(args.file, what="text file")
    text = source.text
    tokenizer = get_tokenizer(args.tokenizer)
    if args.messages:
        name = "<stdin>" if args.file == STDIN else args.file
        try:
            messages = json.loads(text)
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":
                raise LoadError(name, f"invalid JSON: {exc.msg}", exc.lineno) from None
            messages = _json_lines(source)  # one value, then more: JSON Lines (an OpenAI chat JSONL file)
        except (ValueError, RecursionError) as exc:
            raise LoadError(name, "the document is nested too deeply" if isinstance(exc, RecursionError) else f"invalid JSON: {exc}") from None
        else:
            if isinstance(messages, dict) and "messages" in messages and not isinstance(messages["messages"], list):
                raise LoadError(name, f"expected a list of messages, got {type_name(messages['messages'])}", locate_line(text, ("messages",)), "messages")
            wrapped = isinstance(messages, dict) and isinstance(messages.get("messages"), list)
            if wrapped:
                messages = messages["messages"]
            if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
                raise LoadError(name, "expected a JSON list of messages (or an object with `messages`)")
            _check_messages(name, text, messages, [("messages", k) if wrapped else (k,) for k in range(len(messages))])
        try:
            print(count_openai_chat(messages, args.model, tokenizer))
        except RecursionError:
            raise LoadError(name, "a message is nested too deeply to count") from None
    else:
        print(tokenizer.count(text))
    if args.verbose:  # standard output stays a bare number for pipes
        what = f"{counted(len(messages), 'chat message')} with {args.model}'s chat-format overhead" if args.messages else "the text"
        print(f"ctxviz count: {what}, counted with {tokenizer.name}", file=sys.stderr)
    return EXIT_OK

