"""`simulate --cost` prices a policy with its own estimator at the provider's count, and says so.

support_chat.yaml under missy: `cache.input_tokens` was 1,848,396, the sum of missy's characters / 4
of the content, while `plan --real-count` on the same file read missy's estimate 21.4 % under the
real count. The README says what no reported usage covers is priced at the provider's count.
"""

from __future__ import annotations

import json
from pathlib import Path

from ctxviz.cli import main
from ctxviz.engine.caching import cache_costs
from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.planner import plan_session
from ctxviz.engine.simulate import simulate
from ctxviz.engine.tokenizers import count_openai_chat, get_tokenizer
from ctxviz.io.loaders import load_session

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml"


def test_each_request_is_priced_at_the_cookbook_count_of_what_is_sent() -> None:
    session = load_session(SAMPLE)
    timeline = simulate(session, "missy")
    report = cache_costs(timeline)
    o200k = get_tokenizer("o200k_base")  # gpt-4o's encoding
    assert session.tools  # sent with every request: their JSON counted once, as the real count does
    tools = o200k.count(json.dumps([t.to_openai() for t in session.tools]))
    for k in (0, len(timeline.turns) // 2, len(timeline.turns) - 1):
        plan = timeline.plan_at(k)
        expected = count_openai_chat([dict(entry) for entry in plan.context], tokenizer=o200k) + tools  # the OpenAI cookbook's count
        assert report.turns[k].request == expected != plan.totals.used
    assert report.input_tokens != sum(timeline.plan_at(k).totals.used for k in range(len(timeline.turns)))
    # The last request is the one `plan --real-count` counts.
    assert report.turns[-1].request == plan_session(session, "missy", options=PlanOptions(real_count=True)).real.tokens


def test_the_output_says_whose_count_is_priced(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["simulate", str(SAMPLE), "--cost"]) == 0
    assert "input tokens (counted as the provider counts them: o200k_base, not missy's estimate)" in capsys.readouterr().out
    assert main(["simulate", str(SAMPLE), "--cost", "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["cache"]["notes"]
    assert any(n.startswith("each request is priced at the provider's count (o200k_base;") and "not at missy's own estimate" in n for n in notes)
