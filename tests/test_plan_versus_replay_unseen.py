"""simulate's plan-versus-replay sentence names the real cause of a gap: on a log with one model
call, the system prompt and tools the log does not record, which the plan reads from the provider's
report and the replay's step (estimated before that report) cannot hold."""

from pathlib import Path

from ctxviz.cli import main


def test_a_one_call_log_says_the_gap_is_the_unseen_prompt_not_the_messages_after(capsys):
    """agent-acompact-e1f845.jsonl (a real Claude Code sub-agent log, one model call): the plan counts
    the provider's report (173,522), the replay's one step Claude Code's estimate before it (3,146).
    The sentence blamed the gap on "the 1 message(s) after it", which is 8 tokens."""
    log = Path(__file__).resolve().parent / "data" / "real" / "claude_code" / "agent-acompact-e1f845.jsonl"
    assert main(["simulate", str(log)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "counting the provider's report, which holds about 170,600 tokens of system prompt and tools the log does not record" in last
    assert "sends 3,146, the policy's estimate from the messages alone" in last
    assert "The 1 message after it was in no request" in last and "message(s)" not in last
