"""Anchors: the facts found in a session's messages, checked on text whose facts are known by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from ctxviz.engine.anchor_extract import extract, instructions
from ctxviz.engine.anchors import AnchorStore, anchors_of, build_index
from ctxviz.io.loaders import load_session
from tests.builders import session

SAMPLES = Path(__file__).parent.parent / "sample_sessions"


def values(text: str, role: str = "user") -> dict[str, list[str]]:
    """kind -> the values found, sorted (the order kinds are read in is no promise)."""
    out: dict[str, list[str]] = {}
    for kind, _, value in extract(text, role):
        out.setdefault(kind, []).append(value)
    return {kind: sorted(found) for kind, found in out.items()}


def test_each_kind_on_a_written_text():
    found = values(
        "Please fix src/auth/session.py, see https://github.com/acme/api/pull/12. Commit 3f2a9c1d broke it (#4512, GH-12, PR 88).\n"
        "Order ORD-2231, case CS-88412, request 123e4567-e89b-12d3-a456-426614174000. Timeout 30 s, 500ms, 2GB, $12.50, 15%.\n"
        "Never push to main. Always run `ruff check` before 'config.yaml' changes.\n"
        "E   ValueError: bad value\n")
    assert found["path"] == ["config.yaml", "src/auth/session.py"]
    assert found["url"] == ["https://github.com/acme/api/pull/12"]
    assert found["commit"] == ["3f2a9c1d"]
    assert found["issue"] == ["#4512", "GH-12", "PR 88"]
    assert found["id"] == ["123e4567-e89b-12d3-a456-426614174000", "CS-88412", "ORD-2231"]
    assert found["quantity"] == ["$12.50", "15%", "2 GB", "30 s", "500 ms"]
    assert found["quoted"] == ["ruff check"]
    assert found["error"] == ["E ValueError: bad value"]
    assert found["exception"] == ["ValueError"]
    assert found["instruction"] == ["Always run `ruff check` before 'config.yaml' changes.", "Never push to main."]


@pytest.mark.parametrize("text", ["and/or", "read/write", "1/2 of it", "on 2024/01/02", "12.99/month", "UTF-8 and ISO-8601",
                                  "a .py file", "ratio 0.5", "the word 'hello'", "cafe facade"])
def test_no_false_anchor(text):
    assert extract(text, "assistant") == []


def test_one_fact_is_one_anchor_however_it_is_written():
    s = session(("user", "Fix the 30s timeout"), ("assistant", "Raised it from 30 seconds"), ("user", "PR #88 and pull request 88"))
    index = anchors_of(s)
    quantity = [a for a in index.anchors if a.kind == "quantity"]
    assert [(a.value, a.messages) for a in quantity] == [("30 s", (0, 1))]
    assert [(a.value, a.messages) for a in index.anchors if a.kind == "issue"] == [("PR 88", (2,))]


def test_instructions_only_from_the_user():
    s = session(("user", "Hi. Never push to main."), ("assistant", "I will never push to main."), ("user", "Thanks, that's all."))
    index = anchors_of(s)
    rules = [a for a in index.anchors if a.kind == "instruction"]
    assert [(a.value, a.first_index, a.messages) for a in rules] == [("Never push to main.", 0, (0,))]
    assert instructions("Make sure the tests pass. Thanks!") == ["Make sure the tests pass."]
    requests = [a for a in index.anchors if a.kind == "request"]
    assert [(a.first_index, a.opening) for a in requests] == [(0, True), (2, False)]


def test_coding_agent_sample():
    s = load_session(str(SAMPLES / "coding_agent.yaml"))
    index = anchors_of(s)
    by = {(a.kind, a.value): a for a in index.anchors}
    # message 0 (the user): "... the pydantic 2 bump (#412). ... Don't pin pydantic back to 1.x, the new payments SDK needs 2.x."
    assert by[("issue", "#412")].first_index == 0
    assert by[("instruction", "Don't pin pydantic back to 1.x, the new payments SDK needs 2.x.")].role == "user"
    assert index.anchors[0].first_index == 0 and any(a.opening and a.first_index == 0 for a in index.anchors)
    # message 2 is list_dir's tree, message 3 reads pyproject.toml
    pyproject = by[("path", "pyproject.toml")]
    assert (pyproject.first_index, pyproject.role, pyproject.messages[:2]) == (2, "tool", (2, 3))
    assert ("path", ".github/") in by and ("path", "ci.yml") in by
    assert all(a.first_index == min(a.messages) for a in index.anchors)


def test_support_and_claude_code_samples():
    support = anchors_of(load_session(str(SAMPLES / "support_chat.yaml")))
    by = {a.value: a for a in support.anchors}
    # message 0 (system): "... Case CS-88412 created."; message 1 (user): "My rower (order BW-58231) ..."
    assert (by["CS-88412"].kind, by["CS-88412"].first_index, by["CS-88412"].role) == ("id", 0, "system")
    assert (by["BW-58231"].first_index, by["BW-58231"].role) == (1, "user")
    assert {2, 5, 6, 7} <= set(by["BW-58231"].messages)
    claude = anchors_of(load_session(str(SAMPLES / "claude_code_compaction.jsonl")))
    first = {(a.kind, a.value) for a in claude.anchors if a.first_index == 0}
    # "... Health checks must never be limited. Default something like 600 req/min ... to /tmp/acme-burst.log"
    assert {("instruction", "Health checks must never be limited."), ("quantity", "600 req/min"), ("path", "/tmp/acme-burst.log")} <= first


def test_extracted_once_per_session():
    s = session(("user", "look at app/main.py"))
    store = AnchorStore()
    first = store.get(s)
    assert store.get(s) is first
    twin = dataclasses.replace(s)
    assert store.get(twin) is not first and [a.value for a in store.get(twin).anchors] == [a.value for a in first.anchors]


def test_ids_in_text_finds_anchors_and_repeated_instructions():
    s = session(("user", "Never push to main. Check app/main.py and ORD-2231."), ("assistant", "ok"))
    index = build_index(s)
    by = {a.kind: a.id for a in index.anchors}
    found = index.ids_in_text("Summary: user said never  push to MAIN. Files: app/main.py")
    assert by["instruction"] in found and by["path"] in found and by["id"] not in found


def test_a_path_after_a_json_escape_starts_after_it():
    """A tool output kept as a JSON string (the bundled Codex 0.46 rollout's `{"output": "…"}`)
    holds `\\n` as two characters: `ls -R`'s `./tests:\\ntest_ledger.py` named the path
    `ntest_ledger.py`, and the lost list showed 14 such paths. A Windows path's backslashes are
    not escapes: its names keep their first letter."""
    listing = '{"output": "./potluck:\\n__init__.py\\ncli.py\\n\\n./tests:\\ntest_ledger.py\\n", "metadata": {"exit_code": 0}}'
    assert values(listing, "tool")["path"] == sorted(["./potluck", "__init__.py", "cli.py", "./tests", "test_ledger.py"])
    assert "nAGENTS.md" not in values('{"output": "AGENTS.md\\nREADME.md\\nnotes.txt\\n"}', "tool")["path"]
    assert values('{"output": "AGENTS.md\\nREADME.md\\nnotes.txt\\n"}', "tool")["path"] == ["AGENTS.md", "README.md", "notes.txt"]
    windows = values("open C:\\Users\\dana\\notes.txt and D:\\work\\new.py please", "user")["path"]
    assert not any(p.startswith(("otes", "ew.py")) for p in windows)
    s = load_session(SAMPLES / "codex_rollout.jsonl")
    paths = [a.value for a in anchors_of(s).anchors if a.kind == "path"]
    texts = [m.text for m in s.messages]
    assert not [p for p in paths if p[0] in "ntr" and any("\\" + p in t for t in texts)]
    assert "tests/test_ledger.py" in paths


def test_a_backticked_escape_sequence_is_no_fact():
    """`\\n` and `\\r\\n` in the agent's prose name line endings in code: they were listed among
    what a compaction lost (the Codex sample's "lost at turn 39: ... `\\n`"). Backticked code with a
    letter or a symbol of its own is still quoted."""
    found = values("csv defaults to `\\r\\n`; accept `\\n` line endings, use `&&` and `split_lines()`", "assistant")
    assert found["quoted"] == ["&&", "split_lines()"]
    s = load_session(SAMPLES / "codex_rollout.jsonl")
    assert not [a.value for a in anchors_of(s).anchors if a.kind == "quoted" and a.value in ("\\n", "\\r\\n")]


def test_a_url_ends_at_a_backslash():
    """In code or output kept as a JSON string a URL is followed by an escape (`orders?\\"`, `/\\n`):
    the bundled sessions' URLs read `http://testserver/v1/orders?\\` and `http://[2001:DB8::1]/\\`."""
    found = values('assert link.startswith(\\"<http://testserver/v1/orders?\\") and "see http://[2001:DB8::1]/\\n ok"', "assistant")
    assert found["url"] == ["http://[2001:DB8::1]/", "http://testserver/v1/orders"]
    for name in ("coding_agent.yaml", "coding_agent.langchain.json"):
        urls = [a.value for a in anchors_of(load_session(SAMPLES / name)).anchors if a.kind == "url"]
        assert urls and not [u for u in urls if "\\" in u]
