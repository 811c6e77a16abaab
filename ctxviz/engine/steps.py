"""The replay's steps: the requests the agent sent to the model, one per model call.

A model call is the unit of a replay (issue 20). Frameworks check their triggers once per call
(LangChain's SummarizationMiddleware before each model call, LlamaIndex's memory `get()` once per
call, Claude Code and Codex before each request), and providers bill once per call; a replay that
stepped once per session message priced 223 requests where the Claude Code logs hold 82 calls,
and ran the triggers after every tool result. So `simulate` steps at the requests, and a step's
`Turn.index` is the session index of the request's last message (the messages 0..index are what
the agent held when it sent it). Which messages end a request follows one of three rules:

- ``calls``: the log records its calls: assistant messages carrying the provider's usage with a
  non-zero window (Claude Code usage lines, which the loader joins into one message per API call
  however many lines Claude Code wrote for it; Codex `token_count` events; Gemini CLI `tokens`; API
  responses, OpenTelemetry spans). Each recorded call is a step: the request is every message
  before the call's assistant message. A reply the log records no usage for (a Gemini record with
  zero tokens, a message Claude Code wrote itself) is a step too when it answers new input (it
  follows a user or tool message): the agent did call the model for it. Messages after the last
  reply were sent by no call the log shows: they are in no step (`plan` shows the whole file).
- ``replies``: the log records no call (a framework's history, a chat export). A step is the
  request before each assistant reply: consecutive user and tool messages, parallel tool results
  included, form one request, and a run of assistant messages is one reply. When the session
  does not end with an assistant message, a final step sends the trailing messages: the request
  the agent is about to make.
- ``agent steps``: the log records no call and the policy's framework steps its agent elsewhere
  than before each reply (`Policy.step_points`: OpenHands' agent steps once a batch of tool calls
  is fully observed, even where the log shows a user message next).
- ``messages`` (`--per-message`): the old view, one step per session message.

A call whose request the file does not show (a lone response at message 0) cannot be replayed; a
session left without any step gets one over the whole file, so every replay has a turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .session import Message, Session
from .wording import counted

#: The rules, as `Timeline.step_rule` and `simulate --json` name them.
CALLS, REPLIES, MESSAGES, AGENT = "calls", "replies", "messages", "agent steps"


@dataclass(frozen=True)
class Schedule:
    """Where a replay steps: `steps[k]` is the session index of request k's last message and
    `replies[k]` the assistant message that answered it (-1: no answer in the file, the trailing
    request or the per-message view)."""

    rule: str
    steps: tuple[int, ...]
    replies: tuple[int, ...]
    #: Calls the log records (assistant messages with usage), under the call rule.
    recorded: int = 0
    #: Messages after the last step's request that no step sends (the call rule's trailing messages).
    unsent: int = 0
    #: Whether the file opens with a recorded call's reply (#0): its request lies before the file,
    #: so that call is in no step (a subagent's log starts so).
    opens_with_reply: bool = False

    def describe(self) -> str:
        """One line for the text outputs: which rule, and what it left out."""
        n = len(self.steps)
        if self.rule == CALLS:
            stepped = self.recorded - self.opens_with_reply  # (#0's call answered a request the file does not hold)
            text = f"{counted(n, 'step')}, one per model call the log records ({stepped:,} with the provider's usage"
            text += ")" if n <= stepped else f", {counted(n - stepped, 'reply', 'replies')} without it)"
            if self.opens_with_reply:
                text += "; the file opens with a reply (#0) to a request from before it starts, which is in no step"
            if self.unsent:
                text += ("; the last message came after the last call and is in no step" if self.unsent == 1 else
                         f"; the last {self.unsent:,} messages came after the last call and are in no step")
            return text
        if self.rule == REPLIES:
            trailing = n and self.replies[-1] < 0
            return (f"{counted(n, 'step')}, one per request before an assistant reply (the log records no calls)"
                    + ("; the last step sends the messages after the last reply" if trailing else ""))
        if self.rule == AGENT:
            return f"{counted(n, 'step')}, one per step of the framework's agent loop (the log records no calls)"
        return f"{counted(n, 'step')}, one per session message (--per-message)"


def recorded_call(message: Message) -> bool:
    """An assistant message whose call the log records: usage with something in the window (a
    report of 0 tokens is no call's figure: Claude Code's own messages carry one)."""
    return message.role == "assistant" and message.usage is not None and message.usage.window_fill > 0


def schedule(session: Session, per_message: bool = False, points: Callable[[Session], tuple[int, ...]] | None = None) -> Schedule:
    """The steps of a replay of `session` (see the module docstring for the rules). `points` is the
    policy's own agent loop (`Policy.step_points`), used where the log records no calls."""
    messages = session.messages
    n = len(messages)
    if per_message:
        return Schedule(MESSAGES, tuple(range(n)), (-1,) * n)
    recorded = sum(1 for m in messages if recorded_call(m))
    if not recorded and points is not None:
        found = tuple(points(session)) or (n - 1,) if n else ()
        return Schedule(AGENT, found, tuple(i + 1 if i + 1 < n and messages[i + 1].role == "assistant" else -1 for i in found))
    rule = CALLS if recorded else REPLIES
    steps: list[int] = []
    replies: list[int] = []
    previous = ""
    for m in messages:
        if m.role == "assistant" and m.index > 0 and ((rule == CALLS and recorded_call(m)) or previous != "assistant"):
            steps.append(m.index - 1)
            replies.append(m.index)
        previous = m.role
    unsent = 0
    if n and messages[-1].role != "assistant":
        if rule == REPLIES or not steps:
            steps.append(n - 1)
            replies.append(-1)
        else:
            unsent = n - 1 - replies[-1]
    if n and not steps:  # nothing before the only reply(ies): one step over the whole file
        steps.append(n - 1)
        replies.append(-1)
    return Schedule(rule, tuple(steps), tuple(replies), recorded, unsent, bool(n) and recorded_call(messages[0]))
