"""How full the context is, as one figure to quote, with the others explained beside it.

A log can hold four fills: what the provider reported at the last call, the policy's `used`, what
it sends, and the real count with the model's encoding; and up to three windows: the one the log
reports, the policy's budget, and the catalogue's. A Codex log showed 258,400, 272,000 and 400,000
side by side. The figure to quote is the provider's last reported fill, against the window the log
reports (else the agent's own policy's, else the catalogue's), because that is what the model
really held; without usage it is the policy's estimate against its budget. Everything else is said
after it, each as what it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from .agent_policies import own_policy
from .catalog import find_model
from .checks import counts_unseen, unseen_of
from .plan import Plan
from .session import Session


@dataclass(frozen=True)
class Fill:
    tokens: int
    window: int
    #: What `tokens` is and where `window` comes from, in the user's words.
    source: str
    window_source: str
    #: The other figures, each with what it is ("" entries left out).
    others: tuple[str, ...]

    @property
    def share(self) -> float:
        return self.tokens / self.window if self.window else 0.0

    def sentence(self) -> str:
        share = f" ({self.share:.0%})" if self.window else ""
        of = f" of {self.window:,}" if self.window else ""
        head = f"Fill to quote: {self.tokens:,}{of} tokens{share}, {self.source}, against {self.window_source}."
        return head + (f" Beside it: {'; '.join(self.others)}." if self.others else "")


def fill(plan: Plan, session: Session) -> Fill:
    """The one fill figure to quote for `plan` of `session`, and the others explained."""
    rep = plan.reported
    catalogue = find_model(session.model)
    listed = catalogue.context_window if catalogue is not None and catalogue.context_window else 0
    agents = own_policy(session.format) == plan.policy
    budget = plan.totals.budget
    model = session.model or "this model"
    if rep is None:  # no provider figure: the policy's, against its own budget
        window, window_source = budget, f"{plan.policy}'s budget"
    elif session.context_window:
        window, window_source = session.context_window, "the window the log reports"
    elif agents and budget:
        window, window_source = budget, f"the window {plan.policy} uses for {model}"
    elif listed:
        window, window_source = listed, f"the model catalogue's window for {model}"
    else:
        window, window_source = budget, f"{plan.policy}'s budget (the model's window is not known)"
    others: list[str] = []
    if rep is not None:
        tokens = rep.last_window_fill
        calls = f"{rep.calls:,} call{'' if rep.calls == 1 else 's'} with usage"
        source = f"reported by the provider at the last call in the log (#{rep.last_index}, {calls})"
        why = ""
        if budget != window and window * 100 == budget * 95:
            why = f"; the log's {window:,} is 95 % of it, the share of the window Codex treats as usable for input"
        unseen = unseen_of(plan) if counts_unseen(plan) else 0
        if 0 < unseen <= plan.totals.used:
            # Claude Code's count starts from the provider's usage: "its own estimate of what the log
            # records" was untrue there, 22,100 of its 23,567 being the prompt and tools the log does not record.
            what = (f"its own estimate of the whole request: about {plan.totals.used - unseen:,} of what the log records "
                    f"and about {unseen:,} of system prompt and tools it does not")
        else:
            what = "its own estimate of what the log records"
        others.append(f"{plan.policy}'s plan sends {plan.totals.used:,} of its {budget:,} ({what}{why})")
    else:
        tokens = plan.totals.used
        source = f"{plan.policy}'s estimate (the log records no usage)"
    if plan.real is not None:
        kind = "real count" if plan.real.exact else "estimated real count"
        # The real count holds the estimate of what the log does not show (checks.real_count): said, not hidden.
        unseen = plan.real.unseen
        others.append(f"the {kind} is {plan.real.tokens:,} with {plan.real.encoding} (the log's text"
                      + (f", plus about {unseen:,} tokens of prompt and tools it does not record)" if unseen else ")"))
    if listed and listed not in (window, budget):
        others.append(f"the model catalogue lists a {listed:,}-token window for {model}")
    return Fill(tokens, window, source, window_source, tuple(others))
