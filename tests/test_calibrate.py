"""`ctxviz calibrate`: Claude Code's effective auto-compact trigger, fitted from the preTokens its logs record.

Expected numbers are read off the files by hand (their `compact_boundary` lines), not computed by ctxviz.
"""

import json
from pathlib import Path

import pytest

from .loader_checks import run_cli

DATA = Path(__file__).parent / "data"
AUTO = DATA / "claude_code" / "spotter-autocompact-excerpt.jsonl"  # line 34: {"trigger": "auto", "preTokens": 170251}, claude-opus-4-6
MANUAL = [DATA / "real" / "claude_code" / "tugtool-compact-native.jsonl",  # manual 26,239
          DATA / "real" / "claude_code" / "tugtool-rewind-branch.jsonl",  # manual 25,546, 25,809, 27,792
          DATA / "claude_code" / "parser_fix.jsonl",  # manual 18,022
          Path(__file__).parents[1] / "sample_sessions" / "claude_code_compaction.jsonl"]  # manual 107,264


def boundaries(path: Path) -> list[dict]:
    return [json.loads(line)["compactMetadata"] for line in path.read_text().splitlines() if '"compact_boundary"' in line]


def test_the_files_hold_what_the_expectations_say():
    assert boundaries(AUTO) == [{"trigger": "auto", "preTokens": 170251}]
    manual = [(b["trigger"], b["preTokens"]) for p in MANUAL for b in boundaries(p)]
    assert manual == [("manual", 26239), ("manual", 25546), ("manual", 25809), ("manual", 27792), ("manual", 18022), ("manual", 107264)]


def test_a_real_auto_compaction_gives_the_trigger_buffer_and_the_documented_default():
    code, out, err = run_cli(["calibrate", str(AUTO), *map(str, MANUAL)])
    assert code == 0, err
    assert out.startswith("5 logs: 7 compactions recorded, 1 automatic, 6 manual (/compact: counted only as checks that did not auto-compact)")
    assert "claude-opus-4-6: 1 automatic compaction\n" in out
    assert "median 170,251, min 170,251, max 170,251" in out
    assert "trigger     170,251" in out
    assert "buffer      29,749 (window - trigger)" in out  # 200,000 - 170,251
    # The interval the log supports: the call on lines 2-3 reports 163,346 + 1,484 + 1 input + 1 output = 164,832
    # tokens and Claude Code did not compact after it; it did at 170,251 (issue 20: report the interval, not a point).
    assert "interval    (164,832, 170,251]: the logs show a check at 164,832 tokens that did not compact and one at 170,251 that did" in out
    # Claude Code's default for opus 4.6: 200,000 - min(128,000, 20,000) - 13,000 = 167,000, inside it
    assert "documented  167,000 (window - 33,000" in out and "inside the interval the logs support (164,832, 170,251]" in out
    assert "--set calibrated_trigger=170251" in out


def test_json_per_model_with_several_compactions(tmp_path):
    """Several sessions and models: n, median, min-max and the buffer per model (the trigger is the smallest)."""
    lines = AUTO.read_text().splitlines()
    files = []
    for k, (model, pre) in enumerate([("claude-opus-4-6", 168_500), ("claude-opus-4-6", 171_900), ("claude-opus-4-6", 169_000),
                                      ("claude-sonnet-4-5-20250929", 166_100), ("claude-sonnet-4-5-20250929", 167_300)]):
        text = "\n".join(lines).replace('"preTokens":170251', f'"preTokens":{pre}').replace('"model":"claude-opus-4-6"', f'"model":"{model}"')
        path = tmp_path / f"s{k}.jsonl"
        path.write_text(text + "\n")
        files.append(str(path))
    code, out, err = run_cli(["calibrate", *files, "--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert doc["files"] == 5 and doc["automatic"] == 5
    opus, sonnet = doc["models"]
    assert (opus["model"], opus["n"], opus["min"], opus["max"], opus["median"], opus["trigger"], opus["buffer"]) == \
        ("claude-opus-4-6", 3, 168_500, 171_900, 169_000, 168_500, 31_500)
    assert (sonnet["model"], sonnet["n"], sonnet["median"], sonnet["trigger"], sonnet["window"], sonnet["buffer"]) == \
        ("claude-sonnet-4-5-20250929", 2, 166_700, 166_100, 200_000, 33_900)
    assert sonnet["documented_trigger"] == 167_000 and sonnet["set"] == "calibrated_trigger=166100"
    # Every file has the check at 164,832 that did not compact: for sonnet, at 166,100 the documented
    # 167,000 lies above the interval; for opus it lies inside (164,832, 168,500].
    assert opus["interval"]["above"] == 164_832 and opus["interval"]["at_most"] == 168_500 and opus["interval"]["documented_inside"] is True
    assert sonnet["interval"]["above"] == 164_832 and sonnet["interval"]["documented_inside"] is False


def test_a_check_that_did_not_compact_above_one_that_did_is_a_contradiction(tmp_path):
    """A manual /compact at 171,000 means auto-compact had not fired at 171,000; with an automatic one at
    170,251 for the same model, no single trigger explains both, and calibrate says so."""
    auto = AUTO.read_text().splitlines()
    manual = [line.replace('"trigger":"auto","preTokens":170251', '"trigger":"manual","preTokens":171000') for line in auto]
    assert manual != auto
    (tmp_path / "a.jsonl").write_text("\n".join(auto) + "\n")
    (tmp_path / "m.jsonl").write_text("\n".join(manual) + "\n")
    code, out, err = run_cli(["calibrate", str(tmp_path / "a.jsonl"), str(tmp_path / "m.jsonl"), "--json"])
    assert code == 0, err
    (opus,) = json.loads(out)["models"]
    assert opus["interval"]["contradicting_checks"] == [171_000] and opus["interval"]["above"] == 164_832


def test_logs_without_an_auto_compaction_say_so():
    code, out, err = run_cli(["calibrate", *map(str, MANUAL)])
    assert code == 0, err
    assert out.startswith("4 logs: 6 compactions recorded, 0 automatic, 6 manual")
    assert "no automatic compaction in these logs: nothing to calibrate" in out
    code, out, _ = run_cli(["calibrate", str(DATA / "real" / "claude_code" / "agentcmd-full-session-two.jsonl"), "--json"])
    assert code == 0 and json.loads(out)["models"] == [] and json.loads(out)["compactions"] == []


def test_bad_files_are_refused_in_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "user", "message": \n')
    for argv, starts in ((["calibrate", str(AUTO), str(tmp_path / "missing.jsonl")], str(tmp_path / "missing.jsonl")),
                         (["calibrate", str(bad)], f"{bad}:1:")):
        code, out, err = run_cli(argv)
        assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith(starts), err
    with pytest.raises(SystemExit) as exit_info:
        run_cli(["calibrate"])
    assert exit_info.value.code == 2


def test_calibrate_can_be_tried_on_a_bundled_sample(capsys):
    """Only a test fixture had an automatic compaction; the README now points at a bundled real excerpt."""
    from pathlib import Path

    from ctxviz.cli import main

    root = Path(__file__).resolve().parent.parent
    sample = root / "sample_sessions" / "claude_code_autocompact.jsonl"
    assert sample.read_bytes() == (root / "tests" / "data" / "claude_code" / "spotter-autocompact-excerpt.jsonl").read_bytes()
    assert "ctxviz calibrate sample_sessions/claude_code_autocompact.jsonl" in (root / "README.md").read_text()
    assert main(["calibrate", str(sample)]) == 0
    out = capsys.readouterr().out
    assert "(164,832, 170,251]" in out and "167,000" in out and "inside the interval" in out
