"""`simulate --pin ...` at real scale: how a replay with pins grows, for the policies that carry
them (`_Replay.pins_incremental`), against the same replay without pins and one plan.

    python bench/bench_pins.py [--rounds 3] [--sizes 1000,2000,4000] [--pin first-user --pin text:error]

On the agent sessions of bench_simulate (tool calls with long outputs), in interleaved rounds (the
order of the cases flips each round), each replay timed in CPU seconds (`time.process_time`) on a
`fresh` identity of its session. Per policy it prints the exponent of the pinned replay's cost
(fitted log-log over the sizes, one fit per round: median [min-max]), the pinned replay against
one plan of the largest session and against the replay without pins, how the policy replays
with these pins (`replays_incrementally`) and the steps planned from scratch. `--scratch N` also
times the reference (every step planned from scratch) at N messages, for comparison.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench_engine import agent_session  # noqa: E402
from bench_simulate import first_plan, fit_exponent, fresh  # noqa: E402

from ctxviz.engine.checks import PlanOptions  # noqa: E402
from ctxviz.engine.counting import CountStore  # noqa: E402
from ctxviz.engine.policies import get_policy  # noqa: E402
from ctxviz.engine.replay import REPLAYERS, replays_incrementally  # noqa: E402
from ctxviz.engine.simulate import simulate  # noqa: E402

#: Budgets at which the agent sessions trim, so that the pins push messages out.
PARAMS = {"missy": {}, "mnesis": {}, "missy-consolidator": {}, "claude-code": {}, "langchain-trim": {"max_tokens": 20_000}, "autogen-buffered": {"buffer_size": 20},
          "autogen-head-and-tail": {"head_size": 3, "tail_size": 20}, "autogen-token-limited": {"token_limit": 20_000}}


def cpu(fn, least: float = 0.1) -> float:  # noqa: ANN001
    """CPU seconds per call of fn(), repeated until `least` seconds were spent."""
    calls, spent = 0, 0.0
    while not calls or spent < least:
        t = time.process_time()
        fn()
        spent += time.process_time() - t
        calls += 1
    return spent / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="1000,2000,4000")
    parser.add_argument("--pin", action="append", help="a pin rule (default: first-user and text:error)")
    parser.add_argument("--policy", action="append", help="only these policies (default: every one that carries pins)")
    parser.add_argument("--scratch", type=int, default=0, help="also time the reference replay at this many messages")
    args = parser.parse_args()
    rules = tuple(args.pin or ("first-user", "text:error"))
    sizes = tuple(int(n) for n in args.sizes.split(","))
    policies = args.policy or [p for p, kind in REPLAYERS.items() if kind.pins_incremental]
    sessions = {n: agent_session(n, seed=11) for n in {*sizes, *([args.scratch] if args.scratch else [])}}
    store = CountStore()
    pinned, plain, plans, scratch = ({p: {n: [] for n in sizes} for p in policies} for _ in range(4))
    how: dict[str, str] = {}
    for r in range(args.rounds):
        for policy in (policies if r % 2 == 0 else policies[::-1]):
            pol = get_policy(policy)
            params = pol.make_params(PARAMS.get(policy, {}))
            for n in sizes:
                s = sessions[n]
                scheme = pol.scheme(None, s.model)
                store.get(s, scheme)
                out = []

                def replay(options, s=s, scheme=scheme, params=params, policy=policy, out=out):  # noqa: ANN001, ANN202
                    x = fresh(s, store, scheme)
                    out[:] = [simulate(x, policy, params, store=store, options=options)]
                    store.forget(x)

                pinned[policy][n].append(cpu(lambda replay=replay: replay(PlanOptions(pins=rules))))
                how[policy] = f"{replays_incrementally(policy, s, PlanOptions(pins=rules), params)}, {out[0].scratch_steps:,} of {len(out[0].turns):,} steps from scratch"
                plain[policy][n].append(cpu(lambda replay=replay: replay(None)))
                if n == sizes[-1]:
                    plans[policy][n].append(cpu(lambda s=s, scheme=scheme, pol=pol, params=params: first_plan(pol, fresh(s, store, scheme), params, store)))
            if args.scratch and r == 0:
                s = sessions[args.scratch]
                scratch[policy][sizes[0]].append(cpu(lambda s=s, policy=policy, params=params: simulate(
                    s, policy, params, store=store, options=PlanOptions(pins=rules), incremental=False), 0.0))
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    top = sizes[-1]
    load = os.getloadavg()[0]
    print(f"pins {', '.join(rules)}; agent sessions of {', '.join(f'{n:,}' for n in sizes)} messages; CPU seconds; load average {load:.2f}")
    for policy in policies:
        exps = [fit_exponent([len(sessions[n].messages) for n in sizes], [pinned[policy][n][r] for n in sizes]) for r in range(args.rounds)]
        vs_plan = [a / b for a, b in zip(pinned[policy][top], plans[policy][top], strict=True)]
        vs_plain = [a / b for a, b in zip(pinned[policy][top], plain[policy][top], strict=True)]

        def spread(xs: list[float], fmt: str) -> str:
            return f"{statistics.median(xs):{fmt}} [{min(xs):{fmt}}-{max(xs):{fmt}}]"

        line = (f"{policy:<24} n^{spread(exps, '.2f')}  {spread(vs_plan, '.1f')}x one plan  {spread(vs_plain, '.2f')}x without pins  "
                f"({pinned[policy][top][0] * 1000:.0f} ms at {top:,}; {how[policy]})")
        if args.scratch:
            line += f"; reference at {args.scratch:,}: {scratch[policy][sizes[0]][0] * 1000:.0f} ms"
        print(line)


if __name__ == "__main__":
    main()
