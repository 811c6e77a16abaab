"""`ctxviz export`: the trimmed context written as the provider's API receives it."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ..engine.wording import counted, noun
from ..io.export_added import Added, added
from ..io.exporters import EXPORTERS, export
from ..io.output import check_output_path, write_output
from .exits import EXIT_OK, EXIT_OVER_BUDGET
from .options import _add_plan_options, _output
from .session import preset_applied, resolve_plan

if TYPE_CHECKING:
    from ..engine.plan import Plan


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("export", help="write the trimmed context as the model receives it")
    _add_plan_options(p, real_count=True)
    p.add_argument("--to", required=True, choices=list(EXPORTERS), help="output format")
    _output(p, "-o", "--output", default="-", help="output file (a regular file or a new path, written atomically), or - for stdout")
    p.add_argument("--strict", action="store_true", help="refuse (exit 1) instead of fixing a request the API would reject")


def run(args: argparse.Namespace) -> int:
    check_output_path(args.output, inputs=[args.session])  # refuse before the work, not after
    session, plan = resolve_plan(args)
    preset = preset_applied(args)
    result = export(plan, session, args.to, preset)
    for fix in result.fixes:  # under --strict nothing is changed: say the problem, not the fix
        print(f"refused: {fix.problem}" if args.strict else f"fixed: {fix}", file=sys.stderr)
    empty = result.messages == 0 and args.to != "markdown"
    if empty:
        print(f"{'refused: the request' if args.strict else 'warning: the exported context'} has no messages (`\"messages\": []`), "
              "which the provider refuses", file=sys.stderr)
    refused = args.strict and bool(result.fixes or empty)
    if plan.orphans:
        print(orphans_line(len(plan.orphans), args.to, repaired=any(f.pairs for f in result.fixes), refused=refused), file=sys.stderr)
    if refused:
        print(f"export --strict: the provider would refuse this {args.to} request (above); nothing written", file=sys.stderr)
        return EXIT_OVER_BUDGET
    where = write_output(args.output, result.text, inputs=[args.session])
    if where != "standard output":
        where = args.output
    extra = added(plan, session)  # (what the policy added: read once, for the story and the notes)
    how = f"{args.to}, parameters from preset {preset['path']}" if preset is not None else args.to  # (the request itself cannot say it)
    print(f"wrote {where}: {counted(result.messages, 'message')} ({how}): {export_story(plan, result.messages, args.to, extra)}", file=sys.stderr)
    for line in added_notes(plan, extra, args.to):
        print(line, file=sys.stderr)
    if plan.real is not None:  # --real-count / --model: the exported context against the model's window
        from ..io.text_summary import real_count_lines

        lines = real_count_lines(plan.real)
        if result.fixes:
            lines.append("  (counted as the plan sends it, before the fixes above)")
        print("\n".join(lines), file=sys.stderr)
    return EXIT_OK


def orphans_line(count: int, fmt: str, *, repaired: bool, refused: bool) -> str:
    """The plan's broken tool-call pairs, said of what was written: a provider's request is valid
    for its API, so its unpaired calls and results were removed (`repaired`: the fixes said above)
    or it had none (a log that reuses a call id: the plan pairs by id, the API by position); only
    the Markdown export still holds them."""
    pairs = f"{counted(count, 'broken tool-call pair')} (`ctxviz plan` lists them)"
    advice = "--pair-safe keeps calls and results together"
    if fmt == "markdown":
        return f"warning: the exported context has {pairs}; {advice}"
    if refused:
        return f"note: the plan sends {pairs}; {advice}"
    done = f"the export removed {'its unpaired half' if count == 1 else 'their unpaired halves'} (above)" if repaired else f"the {fmt} request has no unpaired call or result"
    return f"note: the plan sends {pairs}; {done}; {advice}"


def export_story(plan: Plan, exported: int, fmt: str, extra: Added) -> str:
    """Why the export's message count is not the plan's sent count: system messages folded into
    the one system prompt, summaries added, and, for Anthropic, the prompt moved to `system` and
    same-role turns merged."""
    sent = plan.totals.kept_messages
    in_context = {i for i in plan.context_index if i is not None}
    folded = sum(1 for m in plan.messages if m.sent and m.index not in in_context)
    bits = [f"the plan sends {counted(sent, 'message')}"]
    if folded:
        bits.append(f"{counted(folded, 'system message')} folded into the one system prompt")
    if extra.words():
        bits.append(extra.words())
    count = len(plan.context)
    if extra.empty_prompts and fmt != "markdown":
        bits.append("no system message (the session records no system prompt)")
        count -= extra.empty_prompts
    if fmt == "anthropic":
        if extra.prompts:
            bits.append("the system prompt sent as `system`, not as a message")
            count -= extra.prompts
        if count > exported:
            bits.append(f"{counted(count - exported, 'turn')} merged into the one before "
                        "(the Messages API wants user and assistant turns to alternate)")
    if fmt != "markdown" and exported != count and fmt != "anthropic":
        bits.append(f"{counted(abs(exported - count), 'message')} {'removed' if exported < count else 'added'} by the fixes above")
    return "; ".join(bits)


def added_notes(plan: Plan, extra: Added, fmt: str) -> list[str]:
    """What a reader of the exported file must know and the file cannot say: its summary is
    ctxviz's offline stand-in, not the text the agent's model would write; the agent's real system
    prompt is not in the log (so the request has none)."""
    from ..engine.checks import unseen_of

    lines = []
    if extra.stand_ins:
        lines.append(f"note: the exported context's {noun(extra.stand_ins, 'summary', 'summaries')} {'is' if extra.stand_ins == 1 else 'are'} "
                     f"ctxviz's offline stand-in ({extra.stand_in}), not the agent's own: the agent's model would write its own text there")
    if extra.empty_prompts:
        unseen = unseen_of(plan)
        left = "its section says so" if fmt == "markdown" else "the request has no system message"
        if unseen:  # the provider's figures say the agent sent one
            lines.append(f"note: the agent's real system prompt (about {unseen:,} tokens, by the provider's figures) is not in the log; {left}")
        else:
            lines.append(f"note: the session records no system prompt; {left}")
    return lines
