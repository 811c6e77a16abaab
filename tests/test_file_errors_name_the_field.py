"""A bad name or value in a preset, a rules file or a session is one line: `FILE:LINE: field: problem`, exit 2.

A preset's `tokenizer: bogus`, a rules file's `cost_model: nosuch` (or its tokenizer, policy and
params) were refused as if the command line had named them, with no file; `{"messages": "hello"}`
was "not a session format"; and unknown keys in a preset beside `params`, in a survive entry or a
baseline were ignored in silence (a typo planned with the defaults).
"""

from pathlib import Path

import pytest

from ctxviz.cli import main

SESSION = str(Path(__file__).parent / "data" / "native_small.yaml")


def error_of(capsys, *argv):
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    return err.rstrip("\n")


@pytest.mark.parametrize(("body", "expected"), [
    ("policy: missy\ntokenizer: bogus\nparams:\n  total: 30000\n", ":2: tokenizer: unknown tokenizer 'bogus'; use one of "),
    ("tokenizer: bogus\ntotal: 30000\n", ":1: tokenizer: unknown tokenizer 'bogus'; use one of "),
    ("params:\n  total: 30000\npolicy: nosuch\n", ":3: policy: unknown policy 'nosuch'; available: "),
    ("policy: missy\ntokenzer: o200k_base\nparams:\n  total: 30000\n",
     ":2: tokenzer: unknown key; did you mean 'tokenizer'? (known: policy, tokenizer, params, description)"),
])
def test_a_preset_names_its_file_line_and_field(capsys, tmp_path, body, expected):
    preset = tmp_path / "preset.yaml"
    preset.write_text(body, encoding="utf-8")
    assert error_of(capsys, "plan", SESSION, "--config", str(preset)).startswith(f"{preset}{expected}")


def test_the_command_lines_tokenizer_overrides_the_presets(capsys, tmp_path):
    preset = tmp_path / "preset.yaml"
    preset.write_text("tokenizer: bogus\ntotal: 30000\n", encoding="utf-8")
    assert main(["plan", SESSION, "--config", str(preset), "--tokenizer", "o200k_base"]) == 0


@pytest.mark.parametrize(("body", "expected"), [
    ("cost_model: nosuch\nrules:\n  max_cost: 1\n", ":1: cost_model: unknown model 'nosuch'"),
    ("rules:\n  max_tokens: 100000\ntokenizer: bogus\n", ":3: tokenizer: unknown tokenizer 'bogus'"),
    ("policy: nosuch\nrules:\n  max_tokens: 100000\n", ":1: policy: unknown policy 'nosuch'"),
    ("params:\n  total: 30000\n  fresh_tial_count: 4\nrules:\n  max_tokens: 100000\n",
     ":3: params.fresh_tial_count: unknown parameter 'fresh_tial_count'"),
    ("rules:\n  survive:\n    - {message: first-user, through_tun: 4}\n",
     ":3: rules.survive[0].through_tun: unknown key; did you mean 'through_turn'? (known: message, text, through_turn)"),
    ("rules:\n  max_tokens_over_baseline: {baseline: b.json, plsu: 4}\n",
     ":2: rules.max_tokens_over_baseline.plsu: unknown key; did you mean 'plus'? (known: baseline, plus)"),
    ("rules:\n  max_tokns: 4\n", ":2: rules.max_tokns: unknown rule; did you mean 'max_tokens'?"),
    ("polcy: missy\nrules:\n  max_tokens: 4\n", ":1: polcy: unknown key; did you mean 'policy'?"),
])
def test_a_rules_file_names_its_file_line_and_field(capsys, tmp_path, body, expected):
    rules = tmp_path / "rules.yaml"
    rules.write_text(body, encoding="utf-8")
    assert main(["plan", SESSION, "--json"]) == 0
    (tmp_path / "b.json").write_text(capsys.readouterr().out, encoding="utf-8")  # a baseline that reads
    assert error_of(capsys, "check", SESSION, "--rules", str(rules)).startswith(f"{rules}{expected}")


def test_the_command_lines_policy_is_not_blamed_on_the_rules_file(capsys, tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("policy: missy\nrules:\n  max_tokens: 100000\n", encoding="utf-8")
    err = error_of(capsys, "check", SESSION, "--rules", str(rules), "--policy", "nosuch")
    assert err.startswith("unknown policy 'nosuch'") and str(rules) not in err


@pytest.mark.parametrize(("text", "expected"), [
    ('{"messages": "hello"}', ":1: messages: expected a list of messages, got a string"),
    ('{\n  "model": "gpt-4o",\n  "messages": {"role": "user"}\n}\n', ":3: messages: expected a list of messages, got an object"),
])
def test_a_session_whose_messages_are_not_a_list_names_the_field(capsys, tmp_path, text, expected):
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    assert error_of(capsys, "plan", str(path)) == f"{path}{expected}"
    assert path.read_text(encoding="utf-8") == text


def test_a_mistyped_parameter_is_named_with_the_one_it_resembles(capsys, tmp_path):
    preset = tmp_path / "preset.yaml"
    preset.write_text("policy: missy\nparams:\n  total: 30000\n  fresh_tial_count: 10\n", encoding="utf-8")
    assert error_of(capsys, "plan", SESSION, "--config", str(preset)).startswith(
        f"{preset}:4: unknown parameter 'fresh_tial_count' (did you mean 'fresh_tail_count'?); this policy takes: fresh_tail_count, ")
    assert error_of(capsys, "plan", SESSION, "--set", "fresh_tial_count=4").startswith(
        "unknown parameter 'fresh_tial_count' (did you mean 'fresh_tail_count'?); ")
    # a name that only shares a word with one (the options the commands no longer take) gets no guess
    assert error_of(capsys, "plan", SESSION, "--set", "real_count=1").startswith("unknown parameter 'real_count'; this policy takes: ")
