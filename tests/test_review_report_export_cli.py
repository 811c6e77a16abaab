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


def test_compare_names_a_summary_only_one_side_writes(capsys):
    code, out, err = run(capsys, "compare", ROOT / "sample_sessions" / "coding_agent.yaml", "--policy", "missy-consolidator", "--policy", "missy")
    assert code == 0, err
    assert "142 messages and 1 summary decided differently" in out
    assert "  a new summary: A kept (sent) / B has none\n" in out


def test_compare_says_a_decision_once_and_counts_one_message_as_one(capsys):
    code, out, err = run(capsys, "compare", ROOT / "sample_sessions" / "coding_agent.yaml", "--policy", "missy", "--policy", "langchain-summarization",
                         "--trigger-tokens", "20000", "--keep-messages", "10")
    assert code == 0, err
    assert "A dropped (after cut) / B summarised: #0-#66" in out
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


# --- 3. exports say what was added, and that a summary is ctxviz's stand-in ---------------------

def test_an_export_counts_the_summary_and_the_acknowledgement_apart_and_writes_no_empty_system(capsys, tmp_path):
    out_file = tmp_path / "x.json"
    code, out, err = run(capsys, "export", GM, "--set", "tokenLimit=8000", "--to", "openai", "-o", out_file)
    assert code == 0, err
    assert "2 summaries added" not in err
    assert ("wrote " + str(out_file) + ": 2 messages (openai): the plan sends 0 messages; 1 summary (ctxviz's offline stand-in, not the agent's own) "
            "and 1 acknowledgement turn added; no system message (the session records no system prompt)") in err
    assert "note: the exported context's summary is ctxviz's offline stand-in (offline extractive snapshot" in err
    assert "note: the agent's real system prompt (about 5,900 tokens, by the provider's figures) is not in the log" in err
    messages = json.loads(out_file.read_text())["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert all(str(m.get("content") or "").strip() for m in messages)
    assert messages[0]["content"].startswith("<state_snapshot>")


def test_every_format_says_the_summary_is_ctxvizs_stand_in_and_markdown_heads_it_so(capsys, tmp_path):
    for fmt in ("anthropic", "jsonl", "markdown"):
        out_file = tmp_path / f"x.{fmt}"
        code, out, err = run(capsys, "export", GM, "--set", "tokenLimit=8000", "--to", fmt, "-o", out_file)
        assert code == 0, err
        assert "note: the exported context's summary is ctxviz's offline stand-in" in err, fmt
        if fmt == "anthropic":
            assert "system" not in json.loads(out_file.read_text())
        if fmt == "jsonl":
            assert [json.loads(line)["role"] for line in out_file.read_text().splitlines()] == ["user", "assistant"]
    headings = [line for line in (tmp_path / "x.markdown").read_text().splitlines() if line.startswith("## ") and line[3].isdigit()]
    assert headings == ["## 0. system · system prompt: not in the log", "## 1. user · ctxviz's offline stand-in summary, not the agent's (covers #0-#29)",
                        "## 2. assistant · inserted by the policy: not in the log"]


def test_a_codex_export_that_compacts_says_its_summary_is_the_stand_in(capsys, tmp_path):
    code, out, err = run(capsys, "export", CXL, "--policy", "codex-compaction", "--set", "model_auto_compact_token_limit=20000",
                         "--to", "openai", "-o", tmp_path / "c.json")
    assert code == 0, err
    assert "1 summary (ctxviz's offline stand-in, not the agent's own) added" in err
    assert "note: the exported context's summary is ctxviz's offline stand-in (offline extractive snapshot after Codex's SUMMARY_PREFIX" in err
    # a recorded summary is the agent's own: no stand-in word
    code, out, err = run(capsys, "export", CC, "--to", "markdown", "-o", tmp_path / "cc.md")
    assert code == 0, err
    assert "stand-in" not in err and "stand-in" not in (tmp_path / "cc.md").read_text()
    assert "1 summary added" in err


def test_an_export_of_one_message_says_one_message(capsys, tmp_path):
    code, out, err = run(capsys, "export", CC, "--policy", "langchain-trim", "--set", "max_tokens=450", "--to", "anthropic", "-o", tmp_path / "a.json")
    assert code == 0, err
    assert ": 1 message (anthropic):" in err, err


# --- 4. the HTML report lists the summaries the plan sends ----------------------------------------

def test_the_html_report_shows_the_summary_the_plan_sends(capsys, tmp_path):
    import html

    page_file = tmp_path / "r.html"
    code, out, err = run(capsys, "report", CC, "-o", page_file)
    assert code == 0, err
    page = page_file.read_text()
    section = page.split("<h2>Summaries</h2>", 1)[1].split("<h2>", 1)[0]
    assert "The plan sends 1 summary of 1, in place of the messages it summarised." in section
    row = section.split("<tr class='kept'>", 1)[1].split("</tr>", 1)[0]
    assert "<td>summary #1 (recorded in the log)</td><td>kept</td><td class='n'>837</td><td>kept: the compact summary opens the context</td>" in row
    text = load_session(CC).summaries[0].text
    assert text.startswith("This session is being continued")
    assert f"<details><summary>{html.escape(text[:80])}</summary><pre>{html.escape(text)}</pre></details>" in row
    assert "stand-in" not in section


def test_the_html_report_says_a_summary_is_ctxvizs_stand_in(capsys, tmp_path):
    page_file = tmp_path / "g.html"
    code, out, err = run(capsys, "report", GM, "--set", "tokenLimit=8000", "-o", page_file)
    assert code == 0, err
    section = page_file.read_text().split("<h2>Summaries</h2>", 1)[1].split("<h2>", 1)[0]
    assert "Its text is ctxviz&#x27;s offline stand-in (offline extractive snapshot" in section
    assert "<tr class='kept stand-in'><td>new summary (ctxviz&#x27;s offline stand-in, not the agent&#x27;s own)</td><td>kept</td>" in section
    assert "&lt;state_snapshot&gt;" in section and "<state_snapshot>" not in section


# --- 5. the header says when the plan's figure holds the unseen prompt and tools -------------------

def test_the_fill_sentence_says_the_plans_figure_holds_what_the_log_does_not_record():
    from ctxviz.engine.checks import counts_unseen, unseen_of
    from ctxviz.engine.fill import fill

    session = load_session(CC)
    plan = plan_session(session, "claude-code", {})
    assert counts_unseen(plan) and unseen_of(plan) == 22_100 and plan.totals.used == 23_567
    said = fill(plan, session).sentence()
    assert "its own estimate of what the log records" not in said
    assert ("claude-code's plan sends 23,567 of its 200,000 (its own estimate of the whole request: about 1,467 of what the log "
            "records and about 22,100 of system prompt and tools it does not)") in said
    missy = plan_session(session, "missy", {})
    assert "(its own estimate of what the log records)" in fill(missy, session).sentence()  # its figures leave the unseen out


# --- 6. the HTML report says each thing once, and its picture stays readable at 900 pixels ---------

def test_the_pages_picture_has_the_charts_without_the_text_the_page_says(qtbot):
    from PySide6.QtWidgets import QLabel

    from ctxviz.engine.simulate import plan_versus_replay, simulate
    from ctxviz.gui.report import PAGE_SIZE, ReportWidget, render_png

    session = load_session(CC)
    plan = plan_session(session, "claude-code", {})
    timeline = simulate(session, "claude-code", None)
    sentence = plan_versus_replay(plan, timeline)
    for page in (True, False):
        widget = ReportWidget(session, plan, timeline, page=page)
        qtbot.addWidget(widget)
        widget.settle()
        shown = "\n".join(label.text() for label in widget.findChildren(QLabel) if label.isVisible())
        said_twice = [words for words in ("Generate fun fact", "Fill to quote", "Unseen: about", sentence) if words in shown]
        if page:
            assert said_twice == []
            width = int.from_bytes(render_png(widget)[16:20], "big")  # (the PNG header's width)
            assert width == PAGE_SIZE.width() <= 852  # shown unscaled on a 900-pixel page (24-pixel margins)
        else:  # a PNG, SVG or PDF report is all there is: it keeps its title and sentences
            assert len(said_twice) == 4


def test_the_html_report_embeds_the_narrow_picture_and_says_the_replays_sentence_once(capsys, tmp_path):
    import base64
    import re

    page_file = tmp_path / "r.html"
    code, out, err = run(capsys, "report", CC, "-o", page_file)
    assert code == 0, err
    page = page_file.read_text()
    png = base64.b64decode(re.search(r'src="data:image/png;base64,([^"]+)"', page)[1])
    assert int.from_bytes(png[16:20], "big") == 840
    assert page.count("The plan puts all 26 messages") == 1


# --- 7. wording: one number format, a YAML tab named, real plurals --------------------------------

def test_why_writes_every_count_with_thousands_separators(capsys):
    code, out, err = run(capsys, "why", ROOT / "sample_sessions" / "coding_agent.yaml", "--policy", "langchain-trim", "--message", "3")
    assert code == 0, err
    assert "max_tokens >= 45,387" in out and "max_tokens >= 45387" not in out
    assert "chars_per_token >= 51.5" in out
    code, out, err = run(capsys, "why", ROOT / "sample_sessions" / "coding_agent.yaml", "--policy", "missy", "--message", "3")
    assert out.startswith("#3 (m3, assistant, dialog, 1 token): ")


def test_a_yaml_tab_is_named_with_its_column(capsys, tmp_path):
    bad = tmp_path / "t.yaml"
    bad.write_text("ctxviz: 1\nmessages:\n\t- role: user\n")
    code, out, err = run(capsys, "plan", bad)
    assert code == 2
    assert err.strip() == f"{bad}:3: invalid YAML: a tab character (YAML indents with spaces only), column 1"
    bad.write_text("ctxviz: 1\nmessages:\n  - role: user\n    content: [unclosed\n")
    code, out, err = run(capsys, "plan", bad)
    assert code == 2 and err.strip() == f"{bad}:5: invalid YAML: did not find expected ',' or ']' (column 1)"


def test_an_exports_fixes_count_in_real_plurals(capsys, tmp_path):
    from ctxviz.io.exporters import Fix, valid_for_chat_api

    fixes: list[Fix] = []
    valid_for_chat_api([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "r"},
                        {"role": "tool", "tool_call_id": "y", "content": "r"}], fixes)
    assert fixes == ["dropped 2 tool messages that answer no tool call of the assistant message before them"]
    fixes = []
    valid_for_chat_api([{"role": "assistant", "content": "", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]}], fixes)
    assert fixes == ["dropped 1 tool call that no tool message right after answers (1 assistant message left empty went too)"]
