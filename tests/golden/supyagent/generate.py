"""Golden cases for what supyagent's summariser is shown, from supyagent's own code.

Run by hand (never in the test suite), with supyagent's source at commit 60c69e0 (the last commit
with its agent framework on main; MIT licence) unpacked in a folder:

    git -C SUPYAGENT_CLONE archive 60c69e0 supyagent | tar -x -C /tmp/supy
    python tests/golden/supyagent/generate.py /tmp/supy

Its ContextManager.generate_summary is run on the history of each session below (the session's
messages as supyagent holds them: ctxviz's `to_openai()` dicts, the system messages left out, as
ctxviz's replay holds its history) with a stand-in LLM that keeps the prompt it is asked with, at
supyagent's limit for the model and at limits small enough that the prompt is over 80 % of them
and its transcript is cut. Only `supyagent.core.context_manager` and what it imports are loaded
(the package's `__init__` modules import the CLI's dependencies). Each case records the prompt's
length and SHA-256, and the prompt itself where it is short, into cases.json.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
OUT = Path(__file__).with_name("cases.json")
SESSIONS = ("tests/data/supyagent/5e1ec7ed.jsonl", "tests/data/supyagent/3fa9c1d2.jsonl", "sample_sessions/coding_agent.yaml",
            "sample_sessions/support_chat.yaml", "sample_sessions/multimodal_review.yaml", "sample_sessions/claude_code_compaction.jsonl")
#: Limits as fractions of the transcript's length in characters: 2 x limit characters keep that much of it.
CUTS = (0.15, 0.35, 0.5, 0.8)
SHORT = 20_000


class _Choice:
    def __init__(self) -> None:
        self.message = types.SimpleNamespace(content="snapshot")


class StandInLLM:
    """Keeps the prompt it is asked with and answers a fixed summary."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def chat(self, messages):  # noqa: ANN001, ANN201
        self.prompts.append(messages[0]["content"])
        return types.SimpleNamespace(choices=[_Choice()])


def load_supyagent(source: Path):  # noqa: ANN201
    sys.path.insert(0, str(source))
    for name in ("supyagent.core", "supyagent.models", "supyagent.utils"):
        module = types.ModuleType(name)
        module.__path__ = [str(source / name.replace(".", "/"))]
        sys.modules[name] = module
    from supyagent.core import context_manager

    return context_manager


def main() -> None:
    source = Path(sys.argv[1]).resolve()
    sys.path.insert(0, str(ROOT))
    import tiktoken

    from ctxviz.engine.tokenizers import load_encoding
    from ctxviz.io.loaders import load_session

    tiktoken.get_encoding = load_encoding  # ctxviz's vendored BPE files (tiktoken would fetch them)
    context_manager = load_supyagent(source)

    cases = []
    for path in SESSIONS:
        session = load_session(ROOT / path)
        history = [m for m in session.messages if m.role != "system"]
        dicts = [m.to_openai() for m in history]
        llm = StandInLLM()
        manager = context_manager.ContextManager(model="default", llm=llm)
        up_to = max(0, len(dicts) - manager.min_recent_messages - 1)
        transcript = len(manager._format_messages_for_summary(dicts[: up_to + 1]))
        limits = [manager.context_limit, *sorted({max(1, int(transcript * share / 2)) for share in CUTS})]
        for limit in limits:
            manager.context_limit = limit
            manager.generate_summary(dicts)
            prompt = llm.prompts[-1]
            case = {"session": path, "limit": limit, "up_to": up_to, "length": len(prompt),
                    "sha256": hashlib.sha256(prompt.encode()).hexdigest(),
                    "cut": prompt.endswith("\n... [truncated for summarization]\n\nSummary:")}
            if len(prompt) <= SHORT:
                case["prompt"] = prompt
            cases.append(case)
    commit = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    OUT.write_text(json.dumps({"supyagent": "60c69e0" if not commit else commit, "cases": cases}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main()
