"""The sessions the command line names, read and planned with its options, and the one count cache they share."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..engine.checks import PlanOptions
from ..engine.counting import CountStore
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
    return PlanOptions(pair_safe=args.pair_safe, real_count=args.real_count or bool(args.model), model=check_model(args.model),
                       pins=tuple(getattr(args, "pin", ()) or ()))


def _one_policy(args: argparse.Namespace) -> str | None:
    if args.policy and len(args.policy) > 1:
        raise ParameterError(f"{args.command} takes one --policy (got {len(args.policy)})")
    return args.policy[0] if args.policy else None


def load_args(args: argparse.Namespace) -> Session:
    """The session the command line names, read with its --input-format and --conversation."""
    return load_session(args.session, args.input_format, conversation=getattr(args, "conversation", None))


def resolve_plan(args: argparse.Namespace) -> tuple[Session, Plan]:
    """Load the session and plan it from the command-line options (config first, then --set)."""
    policy_name, params, tokenizer = resolve_params(args, _one_policy(args))
    session = load_args(args)
    return session, plan_session(session, policy_name, params, tokenizer, store=STORE, options=_options(args))


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

