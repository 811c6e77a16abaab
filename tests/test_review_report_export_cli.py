"""Defects a review of the report, the exports and the CLI found, each held by a test that failed
before its fix: a comparison blind to summaries, a truncated .traj read as JSONL, exports that
pass ctxviz's stand-in summary off as the agent's, a report that never shows the summary sent,
and wording ("1 messages", "summarized (summarised)", numbers written two ways)."""

import json
from pathlib import Path

from ctxviz.cli import main
from ctxviz.engine.explain import compare, compare_summaries, differences_headline
from ctxviz.engine.planner import plan_session
from ctxviz.io.loaders import load_session

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real"
CC = REAL / "claude_code" / "tugtool-compact-native.jsonl"
SW = REAL / "swe_agent" / "pydicom__pydicom-1458.traj"
GM = REAL / "gemini_cli" / "ai-sessions_pomodoro.json"
CXL = REAL / "codex" / "localpush-rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- 1. compare counts the summaries one side sends and the other drops -------------------------

def test_compare_lists_a_summary_one_side_sends_and_the_other_drops(capsys):
    code, out, err = run(capsys, "compare", CC, "--policy", "claude-code", "--policy", "langchain-trim", "--set-b", "max_tokens=1500")
    assert code == 0, err
    assert "0 messages and 1 summary decided differently" in out
    assert "summary #1: A kept (sent) / B dropped (not sent)" in out
    assert "A: 837 tokens; kept: the compact summary opens the context" in out


def test_compare_json_has_the_summary_differences(capsys):
    code, out, err = run(capsys, "compare", CC, "--policy", "claude-code", "--policy", "langchain-trim", "--set-b", "max_tokens=1500", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["differences"] == []
    [d] = doc["summary_differences"]
    assert (d["summary"], d["recorded"], d["a"]["decision"], d["a"]["sent"], d["b"]["decision"], d["b"]["sent"]) == (1, True, "kept", True, "dropped", False)
    assert d["a"]["tokens"] == 837


def test_the_engine_comparison_the_compare_tab_reads_has_the_summary():
    session = load_session(CC)
    a = plan_session(session, "claude-code", {})
    b = plan_session(session, "langchain-trim", {"max_tokens": 1500})
    diffs, summaries = compare(a, b), compare_summaries(a, b, len(session.summaries))
    assert diffs == []
    assert [d.line() for d in summaries] == ["summary #1: A kept (sent) / B dropped (not sent)"]
    assert differences_headline(len(diffs), len(summaries)) == "0 messages and 1 summary decided differently"
    assert compare_summaries(a, a, len(session.summaries)) == []


def test_compare_says_a_decision_once_and_counts_one_message_as_one(capsys):
    code, out, err = run(capsys, "compare", ROOT / "sample_sessions" / "coding_agent.yaml", "--policy", "missy", "--policy", "langchain-summarization",
                         "--trigger-tokens", "20000", "--keep-messages", "10")
    assert code == 0, err
    assert "A dropped (after cut) / B summarized: #0-#66" in out
    assert "(summarised)" not in out
    code, out, err = run(capsys, "compare", CC, "--policy", "claude-code", "--policy", "langchain-trim", "--set-b", "max_tokens=300")
    assert "      1 message  (412 / 417 tokens)" in out
    assert differences_headline(1, 0) == "1 message decided differently"


# --- 2. a .traj is one JSON document, its errors at their real line and column ------------------

def test_a_truncated_traj_is_reported_at_its_real_line_and_column(capsys, tmp_path):
    cut = tmp_path / "t.traj"
    cut.write_bytes(SW.read_bytes()[:50_000])
    code, out, err = run(capsys, "report", cut, "-o", tmp_path / "x.html")
    assert code == 2
    assert err.strip() == f"{cut}:97: invalid JSON: Unterminated string starting at (column 18)"
    assert "Traceback" not in err and "truncated JSON line" not in err
    assert cut.read_bytes() == SW.read_bytes()[:50_000]
    code, out, err = run(capsys, "plan", SW)
    assert code == 0, err
