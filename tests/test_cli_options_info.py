"""Options offered only where they do something, and `info`'s summaries counted as the plan reads them.

`--real-count` and `--model` were offered by simulate, compare, why, where and export, whose output
was byte-identical with and without them; `info` said a file's summaries covered 79 of its messages
when every `covers` id named a message before the file (and counted two messages sharing one id as one).
"""

import json
from pathlib import Path

import pytest

from ctxviz.cli import main
from ctxviz.resources import resource_path

DATA = Path(__file__).parent / "data"
NATIVE = str(DATA / "native_small.yaml")
SUPPORT = str(Path(__file__).parent.parent / "sample_sessions" / "support_chat.yaml")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv):
    """An argparse refusal: its exit status and its (one-line) error."""
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    return exit_.value.code, capsys.readouterr().err


def help_of(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return capsys.readouterr().out


COMMAND_LINES = {"simulate": ["simulate", NATIVE], "why": ["why", NATIVE, "--message", "u1"], "where": ["where", NATIVE, "kubectl"]}


@pytest.mark.parametrize("command", sorted(COMMAND_LINES))
@pytest.mark.parametrize("option", [["--real-count"], ["--model", "gpt-4o"]])
def test_commands_that_never_show_the_real_count_do_not_offer_it(capsys, command, option):
    code, err = refused(capsys, *COMMAND_LINES[command], *option)
    assert code == 2 and err.count("\n") == 1 and f"unrecognized arguments: {' '.join(option)}" in err
    text = help_of(capsys, command)
    assert "--real-count" not in text and "--model" not in text
    assert run(capsys, *COMMAND_LINES[command])[0] == 0  # the command itself still runs


@pytest.mark.parametrize("command", ["plan", "report", "compare", "export"])
def test_commands_that_show_the_real_count_still_offer_it(capsys, command):
    text = help_of(capsys, command)
    assert "--real-count" in text and "--model" in text


def _plan_real(capsys, policy, *extra):
    code, out, _ = run(capsys, "plan", NATIVE, "--policy", policy, "--json", *extra)
    assert code == 0
    return json.loads(out)["real_count"]


def test_compare_shows_each_sides_real_count_on_one_scale(capsys):
    argv = ["compare", NATIVE, "--policy", "missy", "--policy", "supyagent"]
    _, plain, _ = run(capsys, *argv)
    code, out, _ = run(capsys, *argv, "--real-count")
    assert code == 0 and out != plain and "real count" not in plain
    a, b = _plan_real(capsys, "missy", "--real-count"), _plan_real(capsys, "supyagent", "--real-count")
    assert f"{'real count':18}{a['tokens']:>14,}{b['tokens']:>14,}\n" in out
    assert f"{'real margin':18}{a['margin']:>14,}{b['margin']:>14,}\n" in out
    assert "counted with o200k_base for gpt-4o, against its 128,000-token window" in out
    assert "not on one scale; the real count rows are" in out
    code, out, _ = run(capsys, *argv, "--model", "claude-sonnet-4-5", "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["a"]["real_count"] == _plan_real(capsys, "missy", "--model", "claude-sonnet-4-5")
    assert doc["b"]["real_count"] == _plan_real(capsys, "supyagent", "--model", "claude-sonnet-4-5")
    assert doc["a"]["real_count"]["model"] == "claude-sonnet-4-5" and doc["a"]["real_count"]["exact"] is False
    _, out, _ = run(capsys, *argv, "--json")
    assert "real_count" not in json.loads(out)["a"]


def test_export_says_the_real_count_of_what_it_wrote(capsys, tmp_path):
    plain, counted = tmp_path / "plain.json", tmp_path / "counted.json"
    code, _, err_plain = run(capsys, "export", NATIVE, "--to", "openai", "-o", str(plain))
    assert code == 0 and "real count" not in err_plain
    code, _, err = run(capsys, "export", NATIVE, "--to", "openai", "-o", str(counted), "--real-count")
    assert code == 0 and counted.read_text() == plain.read_text()  # the request itself is the same
    _, plan_out, _ = run(capsys, "plan", NATIVE, "--real-count")
    real_line = next(line for line in plan_out.splitlines() if line.startswith("real count with "))
    assert real_line in err.splitlines()
    assert err.startswith(err_plain.replace(str(plain), str(counted)))  # after the line that says what was written
    code, _, err = run(capsys, "export", NATIVE, "--to", "anthropic", "-o", str(tmp_path / "a.json"), "--model", "claude-sonnet-4-5")
    assert code == 0 and "estimated count (no tokenizer known for this model) with o200k_base" in err
    assert "window of claude-sonnet-4-5" in err


@pytest.mark.parametrize("command", sorted(COMMAND_LINES))
def test_presets_still_load_where_the_options_are_gone(capsys, tmp_path, command):
    """A preset carries a policy's parameters, never these options: it loads as before, and a
    `real_count` key is an unknown parameter for every command alike."""
    preset = str(resource_path("presets", "missy-premium.yaml"))
    assert run(capsys, *COMMAND_LINES[command], "--config", preset)[0] == 0
    bad = tmp_path / "p.yaml"
    bad.write_text("policy: missy\nreal_count: true\n")
    errors = {run(capsys, *argv, "--config", str(bad))[::2] for argv in (COMMAND_LINES[command], ["plan", NATIVE])}
    assert errors == {(2, f"{bad}:2: unknown parameter 'real_count'; this policy takes: fresh_tail_count, learnings_fraction, "
                          "memory_fraction, system_reserve, tool_definitions_reserve, total, trim_protected_tail\n")}


def _summarised_in_plan(capsys, path):
    code, out, _ = run(capsys, "plan", str(path), "--json")
    assert code == 0
    return sum(1 for m in json.loads(out)["messages"] if m["decision"] == "summarized")


def test_info_counts_no_message_for_summaries_of_what_came_before_the_file(capsys):
    code, out, _ = run(capsys, "info", SUPPORT)
    assert code == 0
    assert "  summaries: 3 recorded, covering 0 messages of the file (all 3 summarise only what came before the file)\n" in out
    code, out, _ = run(capsys, "info", SUPPORT, "--json")
    facts = json.loads(out)
    assert (facts["summaries"], facts["summarised_messages"], facts["summaries_before_file"]) == (3, 0, 3)
    assert facts["summarised_messages"] == _summarised_in_plan(capsys, SUPPORT)


SHARED_ID = """ctxviz: 1
summaries:
  - text: Earlier the user asked about the cluster.
    covers: [old1]
  - text: The user asked twice.
    covers: [u1]
messages:
  - {id: u1, role: user, content: "First question?"}
  - {id: a1, role: assistant, content: "First answer."}
  - {id: u1, role: user, content: "Second question?"}
  - {id: a2, role: assistant, content: "Second answer."}
  - {id: u3, role: user, content: "Third?"}
"""


def test_info_counts_every_message_a_shared_id_covers_and_says_the_id_is_shared(capsys, tmp_path):
    path = tmp_path / "shared.yaml"
    path.write_text(SHARED_ID)
    code, out, _ = run(capsys, "info", str(path))
    assert code == 0
    assert "  summaries: 2 recorded, covering 2 messages of the file (1 summarises only what came before the file)\n" in out
    assert "    - 1 id shared by several messages: 'u1' (2 messages); a summary whose `covers` names such an id covers every message " \
           "that has it, and `why --message ID` explains the first\n" in out
    facts = json.loads(run(capsys, "info", str(path), "--json")[1])
    assert (facts["summarised_messages"], facts["summaries_before_file"], facts["shared_ids"], facts["messages_sharing_an_id"]) == (2, 1, 1, 2)
    assert facts["summarised_messages"] == _summarised_in_plan(capsys, path) == 2


def test_info_of_a_file_with_unique_ids_has_no_shared_id_note(capsys):
    facts = json.loads(run(capsys, "info", NATIVE, "--json")[1])
    assert facts["shared_ids"] == 0 and not any("shared by several messages" in n for n in facts["notes"])
    assert (facts["summaries"], facts["summarised_messages"], facts["summaries_before_file"]) == (1, 0, 1)
