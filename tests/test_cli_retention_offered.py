"""`--retention` is offered only by the commands that show retention (plan, simulate, compare).

why, where, export and report took it and printed byte for byte the same with `on` and `off`; like
`--real-count` (tests/test_cli_options_info.py), an option that does nothing there is refused.
"""

from pathlib import Path

import pytest

from ctxviz.cli import main
from tests.test_cli_options_info import help_of, refused

NATIVE = str(Path(__file__).parent / "data" / "native_small.yaml")


@pytest.mark.parametrize("argv", [["why", NATIVE, "--message", "u1"], ["where", NATIVE, "kubectl"],
                                  ["export", NATIVE, "--to", "openai", "-o", "-"], ["report", NATIVE, "-o", "{tmp}/r.html"]])
def test_commands_that_never_show_retention_refuse_it(capsys, tmp_path, argv):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, err = refused(capsys, *argv, "--retention", "off")
    assert code == 2 and err.count("\n") == 1 and "unrecognized arguments: --retention off" in err
    assert "--retention" not in help_of(capsys, argv[0])


@pytest.mark.parametrize("argv", [["plan", NATIVE], ["simulate", NATIVE], ["compare", NATIVE, "--policy", "missy", "--policy", "langchain-trim"]])
def test_commands_that_show_retention_still_take_it(capsys, argv):
    assert "--retention" in help_of(capsys, argv[0])
    assert main([*argv, "--retention", "off"]) == 0
    assert "retention: not computed (--retention off)" in capsys.readouterr().out
