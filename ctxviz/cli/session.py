"""The sessions the command line names, read and planned with its options, and the one count cache they share."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..engine.agent_policies import OpenedUnder, opened_under
from ..engine.checks import PlanOptions
from ..engine.counting import CountStore
from ..engine.gc_pause import frozen_after
from ..engine.planner import plan_session
from ..errors import CtxvizError, ParameterError
from ..io.loaders import load_session
from .params import check_model, resolve_params

if TYPE_CHECKING:
    from ..engine.plan import Plan
    from ..engine.session import Session

#: Token counts cached for the whole process (tools that call `main` in-process reuse them).
STORE = CountStore()


def _options(args: argparse.Namespace) -> PlanOptions:
    model = getattr(args, "model", "")  # (--real-count and --model: only the commands that show the real count offer them)
    return PlanOptions(pair_safe=args.pair_safe, real_count=getattr(args, "real_count", False) or bool(model), model=check_model(model),
                       pins=tuple(getattr(args, "pin", ()) or ()))


def _one_policy(args: argparse.Namespace) -> str | None:
    if args.policy and len(args.policy) > 1:
        raise ParameterError(f"{args.command} takes one --policy (got {len(args.policy)})")
    return args.policy[0] if args.policy else None


def load_args(args: argparse.Namespace) -> Session:
    """The session the command line names, read with its --input-format and --conversation."""
    return load_session(args.session, args.input_format, conversation=getattr(args, "conversation", None))


def _preset_policy(args: argparse.Namespace) -> str:
    """The policy the --config preset names ("" without a preset or a policy in it)."""
    if not getattr(args, "config", None):
        return ""
    from ..io.config import load_preset

    return load_preset(args.config).policy or ""


def load_with_policy(args: argparse.Namespace) -> tuple[Session, str, Any, str | None, OpenedUnder | None]:
    """The session and its policy, parameters and tokenizer. A policy named by --policy or the
    preset is resolved first (a bad value is one line before a big file is read); without one, the
    session is read first and opens under its agent's own policy (`engine.agent_policies`: a Claude
    Code log under claude-code ...), else missy. The last item says why, when the policy was chosen so."""
    named = _one_policy(args) or _preset_policy(args)
    if named:
        policy_name, params, tokenizer = resolve_params(args, _one_policy(args))
        return load_args(args), policy_name, params, tokenizer, None
    session = load_args(args)
    opened = opened_under(session.format, session.model)
    try:
        policy_name, params, tokenizer = resolve_params(args, opened.policy)
    except ParameterError as exc:
        if not opened.agents_own:
            raise
        raise ParameterError(f"{opened.policy} (the policy this log's agent runs; name another with --policy): {exc}") from None
    return session, policy_name, params, tokenizer, opened


def resolve_plan(args: argparse.Namespace) -> tuple[Session, Plan]:
    """Load the session and plan it from the command-line options (config first, then --set),
    under its agent's own policy when none is named (`load_with_policy`)."""
    session, plan, _opened = resolve_plan_opened(args)
    return session, plan


def resolve_plan_opened(args: argparse.Namespace) -> tuple[Session, Plan, OpenedUnder | None]:
    """`resolve_plan`, with why the policy was chosen when the command line named none."""
    session, policy_name, params, tokenizer, opened = load_with_policy(args)
    return session, plan_frozen(session, policy_name, params, tokenizer, _options(args)), opened


def plan_frozen(session: Session, policy_name: str, params: Any, tokenizer: str | None, options: PlanOptions) -> Plan:
    """`plan_session` under `frozen_after` (engine/gc_pause.py), a decision the command line makes
    because it knows the process ends: a first plan builds per-message views and counts that live
    until then and hold no cycles; with the collector running, its full passes over them took up to
    half of a 100,000-message plan (langchain-trim 1.5 s -> 0.9 s, strands-sliding-window 2.2 s ->
    1.0 s)."""
    with frozen_after():
        return plan_session(session, policy_name, params, tokenizer, store=STORE, options=options)


def preset_applied(args: argparse.Namespace) -> dict[str, str | None] | None:
    """The --config preset the parameters came from, `{"path", "description"}` (None without one):
    the policy line alone does not say the values are a preset's, nor which."""
    if not getattr(args, "config", None):
        return None
    from ..io.config import load_preset

    return {"path": args.config, "description": load_preset(args.config).description or None}


def preset_words(args: argparse.Namespace) -> str:
    """The --config preset as the outputs name it, "PATH: description" ("" without one)."""
    preset = preset_applied(args)
    if preset is None:
        return ""
    return f"{preset['path']}" + (f": {preset['description']}" if preset["description"] else "")


def preset_line_text(args: argparse.Namespace) -> str:
    """The line the text outputs print under the policy's for a --config preset ("" without one)."""
    words = preset_words(args)
    return f"  preset {words}\n" if words else ""


def opened_line(opened: OpenedUnder | None) -> str:
    """The line the text outputs print under the policy's when it is the log's agent's own ("" otherwise)."""
    return f"  opened under {opened.reason}; --policy NAME for another\n" if opened is not None and opened.agents_own else ""


def sweep_files(paths: Sequence[str]) -> list[str]:
    """Files as given; a folder contributes every file in it (recursively) a loader recognises by name."""
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                out += [os.path.join(root, f) for f in sorted(files) if f.endswith((".json", ".jsonl", ".yaml", ".yml", ".traj"))]
        else:
            out.append(path)
    if not out:
        raise CtxvizError(f"sweep: no session files in {', '.join(paths)}")
    return out

