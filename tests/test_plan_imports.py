"""A fresh `ctxviz plan` imports what its plan uses, and the loaders are found by name.

`ctxviz plan sample.yaml` once imported every loader (OpenTelemetry's, LangChain's with part of its
policy...), the model catalogue and the JSON exporter at start, though a plan of a YAML session uses
none of them. `io/loaders.py` now names each format's `module:Class` and imports a loader when
detection reaches it; these tests hold the start to that, and the lazy lookup to the answers of
the list of every loader it replaced (same names, same order, same format detected, same errors).
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import io
import os
import subprocess
import sys

import pytest

from ctxviz.errors import LoadError
from ctxviz.io import loaders
from ctxviz.io.anthropic import AnthropicLoader
from ctxviz.io.base import Loader
from ctxviz.io.bedrock import BedrockConverseLoader
from ctxviz.io.claude_code import ClaudeCodeLoader
from ctxviz.io.codex import CodexLoader
from ctxviz.io.gemini_cli import GeminiCliLoader
from ctxviz.io.langchain import LangChainLoader
from ctxviz.io.native import NativeLoader
from ctxviz.io.openai_chat import OpenAIChatLoader
from ctxviz.io.otel import OtelLoader
from ctxviz.io.responses import ResponsesLoader
from ctxviz.io.source import read_source
from ctxviz.io.supyagent import SupyagentLoader
from ctxviz.io.swe_agent import SweAgentLoader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "sample_sessions", "support_chat.yaml")

#: The detection order as the module listed its loaders before they were looked up by name (formats.md B8).
EAGER: list[Loader] = [CodexLoader(), ClaudeCodeLoader(), SupyagentLoader(), NativeLoader(), GeminiCliLoader(), SweAgentLoader(), OtelLoader(),
                       LangChainLoader(), ResponsesLoader(), BedrockConverseLoader(), AnthropicLoader(), OpenAIChatLoader()]

#: Modules a plan of the YAML sample does not use: the loaders detection never reaches (the native
#: one claims the file fourth), what only --json, --real-count, --model or a log's usage needs, the
#: other policies, the replay, and the app.
NOT_IMPORTED = ("ctxviz.io.gemini_cli", "ctxviz.io.swe_agent", "ctxviz.io.otel", "ctxviz.io.langchain", "ctxviz.io.bedrock",
                "ctxviz.io.anthropic", "ctxviz.io.openai_chat", "ctxviz.io.unsupported", "ctxviz.io.exporters",
                "ctxviz.io.output", "ctxviz.engine.catalog", "ctxviz.engine.sources", "ctxviz.engine.simulate", "ctxviz.engine.replay",
                "ctxviz.engine.policies.langchain", "ctxviz.engine.policies.claude_code", "ctxviz.engine.policies.codex",
                "ctxviz.engine.policies.gemini", "ctxviz.engine.summarizers", "ctxviz.gui", "PySide6", "pyqtgraph")


def _fresh_plan(*args: str) -> tuple[str, list[str]]:
    """What `ctxviz plan ARGS` prints, and every module it imported, in a fresh interpreter."""
    code = ("import sys, io, contextlib\nfrom ctxviz.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out): code = main(sys.argv[1:])\n"
            "print(repr(out.getvalue())); print(sorted(sys.modules)); sys.exit(code)")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code, "plan", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    printed, modules = done.stdout.strip().splitlines()[-2:]
    return eval(printed), eval(modules)  # noqa: S307 (our own literals)


def test_every_module_named_exists() -> None:
    """A name that is not a module would pass the test below whatever a plan imports."""
    missing = [name for name in NOT_IMPORTED if name.startswith("ctxviz.") and importlib.util.find_spec(name) is None]
    assert missing == []


def _imported(modules: list[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


@pytest.mark.parametrize("args", [(), ("--retention", "off")])
def test_a_plan_of_the_yaml_sample_imports_only_what_it_uses(args: tuple[str, ...]) -> None:
    printed, modules = _fresh_plan(SAMPLE, *args)
    assert "ctxviz.io.native" in modules and "ctxviz.engine.policies.missy.context_manager" in modules  # the probe sees the plan's own
    assert [name for name in NOT_IMPORTED if _imported(modules, name)] == []
    from ctxviz.cli import main

    here = io.StringIO()
    with contextlib.redirect_stdout(here):
        assert main(["plan", SAMPLE, *args]) == 0
    assert printed == here.getvalue()  # what it prints is what the plan prints with every module imported


def test_loader_names_and_order_are_the_eager_lists() -> None:
    names = [loader.name for loader in EAGER]
    assert loaders.loader_names()[-len(names):] == names  # (a test may have registered its own in front)
    for loader in EAGER:
        found = loaders.get_loader(loader.name)
        assert type(found) is type(loader) and found.title == loader.title
        assert loaders.get_loader(loader.name) is found  # one instance: --input-format's notes compare them by identity
    assert [type(x) for x in loaders.LOADERS][-len(names):] == [type(x) for x in EAGER]
    with pytest.raises(Exception, match=r"^unknown input format 'nope'; available: codex, claude-code, supyagent, ctxviz, gemini-cli"):
        loaders.get_loader("nope")


def test_loader_names_need_no_loader_imported() -> None:
    code = "import sys\nfrom ctxviz.io.loaders import loader_names\nprint(loader_names()); print(sorted(m for m in sys.modules if m.startswith('ctxviz.io.')))"
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    names, modules = (eval(line) for line in done.stdout.strip().splitlines())  # noqa: S307
    assert names == [loader.name for loader in EAGER]
    assert set(modules) <= {"ctxviz.io.loaders", "ctxviz.io.base", "ctxviz.io.source", "ctxviz.io.untrusted"}


def _eager_detect(path: str) -> str:
    """The format the list of every loader detected (the first that claims the file), or the error."""
    try:
        src = read_source(path)
        found = next((loader for loader in EAGER if loaders.sniffs(loader, src)), None)
    except LoadError as exc:
        return f"LoadError: {exc}"
    return found.name if found is not None else "none"


def _lazy_detect(path: str) -> str:
    try:
        return loaders.detect(read_source(path)).name
    except LoadError as exc:
        return f"LoadError: {exc}"


FILES = sorted(f for pattern in ("tests/data/**/*.json", "tests/data/**/*.jsonl", "tests/data/**/*.yaml", "tests/data/**/*.traj", "sample_sessions/*")
               for f in glob.glob(os.path.join(ROOT, pattern), recursive=True) if os.path.getsize(f) < 4_000_000)


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, ROOT))
def test_detection_is_the_eager_lists(path: str) -> None:
    eager, lazy = _eager_detect(path), _lazy_detect(path)
    if eager == "none":  # no loader claims it: detection refuses it with its own line
        assert lazy.startswith("LoadError: ")
    elif eager.startswith("LoadError: "):  # the file does not parse: the same error, or the known log it is
        assert lazy.startswith("LoadError: ")
    else:
        assert lazy == eager
