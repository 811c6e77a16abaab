"""Small CLI defects, each held by a test that fails without its fix: sweep's share floors, watch's
interval and quotes, simulate's loss lines and ordinals, check's part typos, counts of one, and the
screenshot's extension."""

import re
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.engine import sweep
from ctxviz.engine.anchors import Anchor
from ctxviz.engine.retention_timeline import Loss
from ctxviz.engine.wording import counted, noun, ordinal

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_sessions"
NATIVE = str(Path(__file__).parent / "data" / "native_small.yaml")


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- 1. sweep --require: a share is 0.4 or 40%, never a bare 40 --------------------------------

def test_sweep_require_takes_a_share_as_a_percent(capsys):
    code, out, err = run(capsys, "sweep", SAMPLES / "coding_agent.yaml", "--policy", "missy", "--grid", "total=10000,20000",
                         "--require", "retention_mean>=40%", "--jobs", "1")
    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith(("10000", "20000"))}
    assert "fails retention_mean>=40%" in rows["10000"]  # 26.0% is under 40 %
    assert "fails" not in rows["20000"]  # 46.5% meets 40 %
    assert "cheapest that meets retention_mean>=40%: total=20000" in out


@pytest.mark.parametrize("requirement", ["retention_mean>=40", "retention_worst>=90", "cache_hit_share>=50", "retention>=80"])
def test_sweep_refuses_a_bare_share_above_one_before_any_replay(capsys, requirement):
    code, out, err = run(capsys, "sweep", NATIVE, "--grid", "total=10000,20000", "--require", requirement, "--jobs", "1")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith(f"--require {requirement}: ")
    number = requirement.split(">=")[1]
    assert f"write {int(number) / 100:g} or {number}%" in err and "sweep:" not in err  # no replay ran


def test_sweep_requirements_parse_shares_exactly():
    assert sweep.parse_requirement("retention_mean>=40%").value == 0.4
    assert sweep.parse_requirement("cache_hit_share >= 57.5 %").value == 0.575
    assert sweep.parse_requirement("retention>=0.9").value == 0.9  # a share as before
    assert sweep.parse_requirement("overflows<=3").value == 3  # not a share: any number
    with pytest.raises(Exception, match="overflows is not a share"):
        sweep.parse_requirement("overflows<=3%")
    with pytest.raises(Exception, match=r"between 0 and 1 \(0% to 100%\)"):
        sweep.parse_requirement("retention_mean>=150%")


# --- 2. watch --interval: refused up front ------------------------------------------------------

@pytest.mark.parametrize("interval", ["-1", "0", "nan", "inf", "-inf", "1e10"])
def test_watch_refuses_a_bad_interval_before_reading_the_file(capsys, interval):
    with pytest.raises(SystemExit) as exit_:
        main(["watch", str(SAMPLES / "gemini_cli_session.json"), f"--interval={interval}", "--once"])
    out, err = capsys.readouterr()
    assert exit_.value.code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "argument --interval" in err and "above 0" in err


def test_watch_takes_a_good_interval(capsys):
    code, out, _ = run(capsys, "watch", SAMPLES / "gemini_cli_session.json", "--interval", "0.25", "--once")
    assert code == 0 and out.startswith(f"{SAMPLES / 'gemini_cli_session.json'}: 33 calls so far")


# --- 3. simulate: a loss line keeps the count of what it does not name ----------------------------

def test_simulate_loss_line_keeps_its_count(capsys):
    code, out, _ = run(capsys, "simulate", SAMPLES / "claude_code_compaction.jsonl")
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("  lost at turn 94 ("))
    assert len(line) <= 2 + 480
    assert re.search(r"' and \d+ more$", line), line[-120:]


def _anchor(k: int, value: str) -> Anchor:
    return Anchor(k, "path", value, value, 0, "m0", "user", (0,))


def test_a_loss_sentence_cut_to_a_width_names_fewer_anchors_and_counts_the_rest():
    loss = Loss(5, "summary", 4, "the summary took #0-#4", tuple(_anchor(k, f"src/module_{k}.py") for k in range(10)))
    whole = loss.sentence(6)
    assert whole.endswith("`src/module_5.py` and 4 more") and loss.sentence(6, width=1000) == whole
    cut = loss.sentence(6, width=100)
    assert len(cut) <= 100 and cut.endswith(" more")
    named = cut.count("`src/module_")
    assert 1 <= named < 6 and cut.endswith(f" and {10 - named} more")
    long_cause = Loss(5, "summary", 4, "x " * 500, loss.lost)
    line = long_cause.sentence(6, width=200)
    assert len(line) <= 200 and "…" in line and line.endswith("`src/module_0.py` and 9 more")


# --- 4. check: a part the policy does not have is a rules error ------------------------------------

def test_check_refuses_a_part_the_policy_does_not_have(capsys, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("policy: missy\nrules:\n  max_part_tokens: {nopart: 5}\n", encoding="utf-8")
    code, out, err = run(capsys, "check", NATIVE, "--rules", rules)
    assert code == 2 and out == "" and "broken" not in err
    assert err == (f"{rules}:3: rules.max_part_tokens.nopart: missy has no part 'nopart' "
                   "(its parts: system_reserve, tool_definitions_reserve, memory, learnings, history)\n")


def test_check_still_holds_a_part_the_policy_has(capsys, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("policy: missy\nrules:\n  max_part_tokens: {history: 1}\n", encoding="utf-8")
    code, out, _ = run(capsys, "check", NATIVE, "--rules", rules)
    assert code == 1 and "max_part_tokens.history: history uses" in out


# --- 5. ordinals and counts of one ---------------------------------------------------------------

def test_ordinals_and_counted_nouns():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111, 112, 1002)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th", "112th", "1,002nd"]
    assert counted(1, "call") == "1 call" and counted(0, "call") == "0 calls" and counted(1200, "call") == "1,200 calls"
    assert counted(2, "reply", "replies") == "2 replies" and noun(1, "summary", "summaries") == "summary"


def test_simulate_says_every_3rd_step(capsys):
    code, out, _ = run(capsys, "simulate", SAMPLES / "coding_agent.yaml", "--per-message")
    assert code == 0 and "(of 146 steps, every 3rd is shown" in out and "3th" not in out


def test_simulate_counts_one_message_after_the_last_call(capsys):
    code, out, _ = run(capsys, "simulate", SAMPLES / "claude_code_autocompact.jsonl")
    assert code == 0
    assert "steps: 3 steps, one per model call the log records (3 with the provider's usage); the last message came after the last call " \
           "and is in no step" in out
    assert "(s)" not in out.split("\n", 3)[2]


def test_watch_counts_one_thing_and_its_calls(capsys):
    code, out, _ = run(capsys, "watch", SAMPLES / "gemini_cli_session.json", "--once")
    assert code == 0 and "(s)" not in out
    assert ": 33 calls so far;" in out and " calls to compaction" in out
    assert "would lose 1 thing you asked: 'Keep the existing tests passing and add tests for both.'" in out


def test_info_counts_one_thinking_block(capsys):
    code, out, _ = run(capsys, "info", SAMPLES / "claude_code_autocompact.jsonl")
    assert code == 0
    assert "  content: 1 thinking block\n" in out
    assert "covering 3 messages of the file" in out and "reported usage: on 3 messages;" in out


def test_calibrate_counts_one_automatic_compaction(capsys):
    code, out, _ = run(capsys, "calibrate", SAMPLES / "claude_code_autocompact.jsonl")
    assert code == 0
    assert out.startswith("1 log: 1 compaction recorded, 1 automatic, 0 manual")
    assert "claude-opus-4-6: 1 automatic compaction\n" in out and "(s)" not in out


def test_count_says_one_chat_message(capsys, tmp_path):
    messages = tmp_path / "one.json"
    messages.write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    code, out, err = run(capsys, "count", messages, "--messages", "-v")
    assert code == 0 and out.strip().isdigit()
    assert "ctxviz count: 1 chat message with gpt-4o's chat-format overhead" in err


# --- 6. watch: a cut quote ends with an ellipsis -------------------------------------------------

def test_watch_marks_a_cut_quote(capsys):
    # claude-code named: a ctxviz YAML opens under missy, which has no compaction to warn of
    code, out, _ = run(capsys, "watch", SAMPLES / "coding_agent.yaml", "--once", "--policy", "claude-code")
    assert code == 0
    warning = next(line for line in out.splitlines() if line.startswith("  warning: compacting now would lose"))
    assert "\"Don't pin pydantic back to 1.x, the new payments SDK needs …\"" in warning
    quotes = re.findall(r"""'[^']*'|"[^"]*\"""", warning.split(" you asked: ", 1)[1])
    assert all(len(q) <= 62 for q in quotes)
    total = int(re.search(r"would lose (\d+) things", warning).group(1))
    assert total > 3 and warning.endswith(f" and {total - 3} more")


# --- 7. gui --screenshot: a PNG, named so --------------------------------------------------------

@pytest.mark.parametrize("name", ["s.txt", "shot.jpg", "shot"])
def test_screenshot_refuses_a_name_that_is_not_png_before_any_window(capsys, tmp_path, monkeypatch, name):
    import ctxviz.gui.app as app

    monkeypatch.setattr(app, "run", lambda *a, **k: pytest.fail("a window was opened"))
    target = tmp_path / name
    code, out, err = run(capsys, "gui", NATIVE, "--screenshot", target)
    assert code == 2 and out == "" and not target.exists()
    assert err == f"--screenshot {target}: the screenshot is a PNG; name it FILE.png\n"


def test_plan_numbers_recorded_summaries_from_one_as_the_reasons_do(capsys) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    sample = Path(__file__).resolve().parent.parent / "sample_sessions" / "support_chat.yaml"
    assert main(["plan", str(sample)]) == 0
    out = capsys.readouterr().out
    # It printed "summary 0: kept ..." beside reasons saying "recorded summary #1 covers it".
    assert "summary #1: kept" in out and "summary #3:" in out and "summary 0:" not in out


# --- sweep's table: each column as wide as its header or widest cell ------------------------------

def test_sweep_table_columns_fit_their_contents(capsys):
    code, out, _ = run(capsys, "sweep", SAMPLES / "coding_agent.yaml", "--policy", "missy", "--grid", "total=10000,20000")
    assert code == 0
    lines = out.splitlines()
    assert "missy: 2 combinations x 1 session" in lines
    header = next(line for line in lines if line.startswith("total"))
    # A fixed width of 19 per metric made this 171 columns for 8 metrics; each is now its header's width.
    assert len(header) < 120 and "  overflows  " in header
    rows = [line for line in lines if line.startswith(("10000", "20000"))]
    assert len(rows) == 2 and all(len(row.rstrip(" *")) <= len(header) for row in rows)
