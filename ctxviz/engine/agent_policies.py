"""Which policy a log opens under: the policy of the agent that wrote it, else missy.

A Claude Code, Codex or Gemini CLI log was trimmed by that agent's own context manager. Opened under
missy's 30,000-token budget, such a log showed a policy its agent never ran, and nothing said so.
So `plan`, `simulate`, `gui` (without `--policy`) and the app open it under its agent's policy, with
the log's model (whose window the policy reads from the catalogue, as the agent does), and say why.
A format no agent policy belongs to (a framework's history, an API request, a trace) keeps missy,
the tool's own reference policy. Pure data: no I/O, nothing from the loaders.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The policy that reproduces each agent's own context manager, by the session format its loader names.
AGENT_POLICIES = {"claude-code": "claude-code", "codex": "codex-compaction", "gemini-cli": "gemini-cli-compression"}
#: The agents, as a user names them, by session format.
AGENT_NAMES = {"claude-code": "Claude Code", "codex": "Codex", "gemini-cli": "Gemini CLI"}
#: The policy a session opens under when its format has no agent policy.
DEFAULT_POLICY = "missy"


def own_policy(session_format: str) -> str | None:
    """The policy of the agent that writes logs in `session_format`, or None when none does."""
    return AGENT_POLICIES.get(session_format)


def default_policy(session_format: str) -> str:
    """The policy a log in `session_format` opens under when none is chosen."""
    return own_policy(session_format) or DEFAULT_POLICY


@dataclass(frozen=True)
class OpenedUnder:
    """The policy a session opens under, and one sentence saying why (for the app's notes, the
    status bar and the CLI's header)."""

    policy: str
    #: True when the policy is the agent's own (not the default for a format without one).
    agents_own: bool
    reason: str


def opened_under(session_format: str, model: str = "") -> OpenedUnder:
    """The policy for a log of this format and model, with the sentence that says so."""
    policy = own_policy(session_format)
    if policy is None:
        return OpenedUnder(DEFAULT_POLICY, False, f"{DEFAULT_POLICY}, ctxviz's reference policy: no agent's own policy "
                                                  f"belongs to {session_format or 'this'} files")
    agent = AGENT_NAMES.get(session_format, session_format)
    on = f" on {model}" if model else ""
    return OpenedUnder(policy, True, f"{policy}, the policy of {agent}, which wrote this log{on}, with the window {agent} uses for it")
