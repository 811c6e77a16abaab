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


def test_a_compaction_after_the_last_call_is_named(capsys):
    """tugtool-compact-native.jsonl: the log's /compact comes after its last model call, so the plan
    (23,567) holds it and the replay's last step (25,942) does not; the sentence named only the
    messages after the call."""
    log = Path(__file__).resolve().parent / "data" / "real" / "claude_code" / "tugtool-compact-native.jsonl"
    assert main(["simulate", str(log)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert "the 6 messages after it were in no request, and the plan holds the compaction the log records among them (before #21)" in last


def test_the_report_names_allocation_parts_as_the_donut_does(tmp_path):
    """The report's Allocation table said "context" beside the donut's "Conversation" (Claude Code's
    window below the trigger, not the Context category)."""
    import pytest

    pytest.importorskip("PySide6")
    sample = Path(__file__).resolve().parents[1] / "sample_sessions" / "claude_code_compaction.jsonl"
    out = tmp_path / "r.html"
    assert main(["report", str(sample), "-o", str(out), "--no-timeline"]) == 0
    text = out.read_text(encoding="utf-8")
    table = text[text.index("<h2>Allocation</h2>"):]
    assert "<td>Conversation</td>" in table[:600] and "<td>context</td>" not in table[:600]
