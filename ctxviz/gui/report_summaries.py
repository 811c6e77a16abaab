"""The HTML report's summaries: what the plan sends in place of the messages it summarised.

The report listed every message and never the summary: Claude Code's plan of a compacted log sends
the log's 837-token compact summary in place of 20 messages, and the page had not a word of it
("This session is being continued ..." appeared 0 times). Each summary the plan decides on is
listed with its decision, tokens and reason, its text escaped and collapsed as a message's is, and
one that ctxviz's offline stand-in wrote says so: the agent's model would write its own text there.
"""

from __future__ import annotations

import html

from ..engine.plan import SENT_DECISIONS, Plan, SummaryPlan
from ..engine.session import Session
from ..engine.wording import counted
from ..io.export_added import policy_stand_in


def summary_name(s: SummaryPlan, session: Session, stand_in: str) -> str:
    """"summary #1 (recorded in the log)", or a new one's, saying who wrote its text."""
    if s.index < len(session.summaries):
        return f"summary #{s.index + 1} (recorded in the log)"
    if stand_in:
        return "new summary (ctxviz's offline stand-in, not the agent's own)"
    return "new summary (written by the policy)"


def summaries_html(session: Session, plan: Plan) -> str:
    """The section, or "" for a plan with no summary."""
    if not plan.summaries:
        return ""
    esc = html.escape
    stand_in = policy_stand_in(plan)
    rows = []
    for s in plan.summaries:
        text = s.text or ""
        new = s.index >= len(session.summaries)
        cls = ("kept stand-in" if new and stand_in else "kept") if s.decision in SENT_DECISIONS else "dropped"
        rows.append(f"<tr class='{cls}'><td>{esc(summary_name(s, session, stand_in))}</td><td>{esc(s.decision.value)}"
                    f"{'' if s.decision in SENT_DECISIONS else ' (not sent)'}</td><td class='n'>{s.tokens:,}</td><td>{esc(s.reason)}</td>"
                    f"<td><details><summary>{esc(text[:80])}</summary><pre>{esc(text)}</pre></details></td></tr>")
    sent = sum(1 for s in plan.summaries if s.decision in SENT_DECISIONS)
    stand_ins = sum(1 for s in plan.summaries if s.index >= len(session.summaries) and s.decision in SENT_DECISIONS) if stand_in else 0
    lead = f"The plan sends {counted(sent, 'summary', 'summaries')} of {len(plan.summaries):,}, in place of the messages it summarised."
    if stand_ins:
        lead += (f" {'Its text is' if stand_ins == 1 else 'Their texts are'} ctxviz's offline stand-in ({stand_in}), "
                 "not the agent's own: the agent's model would write its own there.")
    head = "<tr><th>summary</th><th>decision</th><th>tokens</th><th>reason</th><th>text</th></tr>"
    return f"<h2>Summaries</h2>\n<p class='summaries'>{esc(lead)}</p>\n<table>{head}\n" + "\n".join(rows) + "\n</table>"
