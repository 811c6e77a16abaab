"""`export` says what it did to the request it wrote, and `--strict` what it refuses.

support_chat under langchain-trim sends a tool result whose call is cut. The OpenAI and Anthropic
exports drop it, yet stderr went on to warn that "the exported context has 1 broken tool-call
pair"; and `--strict`, which writes nothing, printed "refused: dropped 1 tool message(s) ..." for a
message it never dropped.
"""

import json
from pathlib import Path

import pytest

from ctxviz.cli import main

SUPPORT = str(Path(__file__).parent.parent / "sample_sessions" / "support_chat.yaml")


def export(capsys, tmp_path, to, *extra):
    target = tmp_path / f"out.{to}"
    code = main(["export", SUPPORT, "--policy", "langchain-trim", "--to", to, "-o", str(target), *extra])
    return code, capsys.readouterr().err, target


@pytest.mark.parametrize(("to", "fix"), [("openai", "fixed: dropped 1 tool message that answers no tool call"),
                                         ("anthropic", "fixed: dropped 1 tool_result block whose tool_use is not in the turn before")])
def test_a_repaired_pair_is_not_warned_of_as_still_broken(capsys, tmp_path, to, fix):
    code, err, target = export(capsys, tmp_path, to)
    assert code == 0 and fix in err
    assert "the exported context has" not in err
    assert ("note: the plan sends 1 broken tool-call pair (`ctxviz plan` lists them); the export removed its unpaired half (above); "
            "--pair-safe keeps calls and results together") in err
    request = json.loads(target.read_text(encoding="utf-8"))
    if to == "openai":  # what the note claims: every tool message in the file answers a call just before it
        messages = request["messages"]
        for i, message in enumerate(messages):
            if message["role"] == "tool":
                j = i - 1
                while messages[j]["role"] == "tool":
                    j -= 1
                assert message["tool_call_id"] in {c["id"] for c in messages[j].get("tool_calls", [])}


@pytest.mark.parametrize(("to", "problems"), [
    ("openai", ["refused: the request has 1 tool message that answers no tool call of the assistant message before them"]),
    ("anthropic", ["refused: the request starts with an assistant turn: the Messages API requires the first message to be from the user",
                   "refused: the request has 1 tool_result block whose tool_use is not in the turn before"])])
def test_strict_says_the_problem_it_refuses_not_a_fix_it_never_made(capsys, tmp_path, to, problems):
    code, err, target = export(capsys, tmp_path, to, "--strict")
    assert code == 1 and not target.exists()
    assert [line for line in err.splitlines() if line.startswith("refused:")] == problems
    assert "dropped" not in err and "added a user turn" not in err and "exported context" not in err
    assert err.splitlines()[-1] == f"export --strict: the provider would refuse this {to} request (above); nothing written"


def test_markdown_is_not_repaired_so_it_still_warns_and_strict_writes_it(capsys, tmp_path):
    for extra in ((), ("--strict",)):
        code, err, target = export(capsys, tmp_path, "markdown", *extra)
        assert code == 0 and target.exists()
        assert "warning: the exported context has 1 broken tool-call pair (`ctxviz plan` lists them)" in err
        assert "refused" not in err and "fixed" not in err


REUSED_IDS = str(Path(__file__).parent / "data" / "real" / "swe_agent" / "marshmallow-code__marshmallow-1867.function_calling_replace.traj")


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_pairs_broken_only_by_a_reused_call_id_are_not_said_repaired(capsys, tmp_path, to):
    """This trajectory sends call_5iDd... twice; the plan pairs the sent call with earlier, unsent
    results of the same id (2 broken pairs), but the request answers every call right after it:
    the export removed nothing, and the Anthropic export's only fix is the user turn it adds."""
    target = tmp_path / "out.json"
    assert main(["export", REUSED_IDS, "--policy", "langchain-trim", "--to", to, "-o", str(target)]) == 0
    err = capsys.readouterr().err
    assert "dropped" not in err and "removed" not in err
    assert (f"note: the plan sends 2 broken tool-call pairs (`ctxviz plan` lists them); the {to} request has no unpaired call "
            "or result; --pair-safe keeps calls and results together") in err
