"""`ctxviz policies`: the policies, grouped by framework, and their parameters."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..engine.policies import get_policy, plugin_problems, policy_names
from ..engine.policies.base import param_fields
from .exits import EXIT_OK


def add_parser(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("policies", help="list the policies (grouped by framework) and their parameters")
    p.add_argument("--policy", action="append", default=None, metavar="FILE.py:NAME", help="also list this policy of your own (repeatable)")


def run(args: argparse.Namespace) -> int:
    """Policies grouped by the framework users know them from, each with what it reproduces."""
    for spec in args.policy or ():
        get_policy(spec)  # registers a file plugin under its own name
    for problem in plugin_problems():
        print(f"ctxviz: {problem}", file=sys.stderr)
    groups: dict[str, list[str]] = {}
    for name in policy_names():
        groups.setdefault(get_policy(name).framework or "other", []).append(name)
    for framework, names in groups.items():
        print(f"== {framework}")
        for name in names:
            policy = get_policy(name)
            print(f"{name}: {policy.title}")
            if policy.framework_version or policy.source:
                print(f"  reproduces: {policy.source or policy.title}" + (f" ({policy.framework_version})" if policy.framework_version else ""))
            print(f"  counts with: {policy.counter or policy.default_tokenizer} [default estimator {policy.default_tokenizer}]")
            if policy.trigger or policy.keep:
                print(f"  trigger: {', '.join(policy.trigger) or '-'}; keep: {', '.join(policy.keep) or '-'}")
            if policy.stand_in:
                print(f"  stand-in: {policy.stand_in}")
            if policy.description:
                print(f"  {policy.description}")
            print(f"  runs: {policy.schedule}")
            defaults = policy.default_params()
            for f in param_fields(policy.params_type):
                help_text = f.metadata.get("help", "")
                print(f"  {f.name} = {getattr(defaults, f.name)!r}  {help_text}")
        print()
    return EXIT_OK

