"""A sliding window in 50 lines: keep the system prompt and the newest messages that fit.

    ctxviz plan sample_sessions/support_chat.yaml --policy examples/sliding_window.py:POLICY
    ctxviz plan sample_sessions/support_chat.yaml --policy examples/sliding_window.py:POLICY --set max_tokens=2000
"""

from dataclasses import dataclass, field

from ctxviz.api import Decision, Policy, measure_text, plan_from_decisions


@dataclass(frozen=True)
class WindowSettings:
    max_tokens: int = field(default=4000, metadata={"help": "Tokens the context may hold", "min": 1, "step": 100})
    min_messages: int = field(default=2, metadata={"help": "Newest messages kept even over the budget", "min": 0})

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")


def plan(session, params: WindowSettings, counts):
    # As every built-in policy does: system-role messages join the system prompt, always sent and
    # counted first; the window slides over the rest.
    system = [m.index for m in session.messages if m.role == "system"]
    room = params.max_tokens - (counts.text(session.system_prompt) if session.system_prompt else 0)
    room -= sum(counts.message_tokens[i] for i in system)
    n = len(session.messages)
    decisions, reasons = [Decision.DROPPED] * n, [""] * n
    for i in system:
        decisions[i], reasons[i] = Decision.KEPT, "kept: part of the system prompt (always sent)"
    rest = [m.index for m in session.messages if m.role != "system"]
    for k in range(len(rest) - 1, -1, -1):  # newest first, stop at the first message that does not fit
        i, tokens = rest[k], counts.message_tokens[rest[k]]
        if tokens <= room or len(rest) - k <= params.min_messages:
            decisions[i], room = Decision.KEPT, room - tokens
            reasons[i] = f"kept: fits in the window ({room:,} tokens left after it)"
        else:
            reasons[i] = f"dropped: the window of {params.max_tokens:,} tokens is full"
            for j in rest[:k]:
                reasons[j] = f"dropped: older than message #{i}, where the window filled"
            break
    return plan_from_decisions("sliding-window", session, params, counts, decisions, reasons, params.max_tokens)


POLICY = Policy(name="sliding-window", title="Sliding window (example plugin)", params_type=WindowSettings,
                measure_name="text", measure=measure_text, default_tokenizer="o200k_base", plan=plan,
                framework="examples", counter="o200k_base over each message's text", trigger=("max_tokens",),
                keep=("min_messages",), description="Newest messages while they fit; the oldest go first.")
