"""gemini-cli-compression against Gemini CLI's own tests (google-gemini/gemini-cli at 5411f11):

- packages/core/src/context/chatCompressionService.test.ts (findCompressSplitPoint, the threshold,
  the summary turn, "Reverse Token Budget Truncation");
- packages/core/src/utils/tokenCalculation.test.ts (estimateTokenCountSync);
- packages/core/src/utils/fileUtils.test.ts (formatTruncatedToolOutput);
- packages/core/src/core/tokenLimits.test.ts.

Gemini CLI is TypeScript, so its worked examples are ported here; where its test asserts a range
(`toBeGreaterThan`), the value below is the exact one its arithmetic gives, with the range kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.plan import Decision
from ctxviz.engine.planner import plan_session
from ctxviz.engine.policies import get_policy
from ctxviz.engine.policies.gemini.compression import (
    ACK_TEXT,
    find_compress_split_point,
    format_truncated_tool_output,
    token_limit,
    truncate_history_to_budget,
)
from ctxviz.engine.policies.gemini.history import Content, estimate_parts, js_length, stringify
from ctxviz.engine.simulate import simulate
from ctxviz.errors import ParameterError
from ctxviz.io.loaders import load_session

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "gemini_cli_session.json"
POLICY = "gemini-cli-compression"


def content(role: str, *parts: dict[str, Any]) -> Content:
    return Content(role, list(parts), [js_length(stringify(p)) for p in parts], 0.0, [])


def split(contents: list[Content], fraction: float) -> int:
    last = contents[-1] if contents else None
    return find_compress_split_point([c.json_length for c in contents], [c.role == "user" and not c.has_function_response for c in contents],
                                     last is not None and last.role == "model" and not last.has_function_call, fraction)


def five() -> list[Content]:
    words = ["first", "second", "third", "fourth", "fifth"]
    return [content("user" if i % 2 == 0 else "model", {"text": f"This is the {w} message."}) for i, w in enumerate(words)]


# -- findCompressSplitPoint ----------------------------------------------------------------------

def test_content_json_length_is_json_stringify_length():
    c = content("user", {"text": "This is the first message."})
    # (the test file's comments say 66 and 68: they are approximations; the split cases hold either way)
    assert c.json_length == len('{"role":"user","parts":[{"text":"This is the first message."}]}')
    assert content("model", {"text": "This is the second message."}).json_length == len('{"role":"model","parts":[{"text":"This is the second message."}]}')
    two = content("user", {"text": "a"}, {"functionResponse": {"name": "f", "response": {"output": "é😀"}}})
    assert two.json_length == js_length(json.dumps({"role": "user", "parts": two.parts}, ensure_ascii=False, separators=(",", ":")))
    assert js_length("😀") == 2  # UTF-16 code units, as JavaScript counts


@pytest.mark.parametrize("fraction", [0, 1])
def test_fraction_out_of_range_throws(fraction):
    with pytest.raises(ValueError, match="Fraction must be between 0 and 1"):
        split([], fraction)


def test_split_point_cases_from_gemini_cli():
    assert split([], 0.5) == 0  # should handle an empty history
    assert split(five(), 0.5) == 4  # a fraction in the middle
    assert split(five(), 0.9) == 4  # a fraction of last index
    assert split(five()[:4], 0.8) == 4  # after last index: the last is a plain model turn, so everything
    calls = five()[:3] + [content("model", {"functionCall": {"name": "foo", "args": {}}})]
    assert split(calls, 0.99) == 2  # can't return 4: the last item has a function call
    assert split([content("user", {"text": "Message 1"})], 0.5) == 0  # one item
    weird = [content("user", {"text": "Message 1"}), content("model", {"fileData": {"fileUri": "derp", "mimeType": "text/plain"}}),
             content("user", {"text": "Message 2"})]
    assert split(weird, 0.5) == 2  # weird parts


def test_split_at_exactly_the_target():
    # cumulative >= target: the user Content whose preceding characters equal the target starts the kept part
    assert find_compress_split_point([10] * 5, [True, False, True, False, True], False, 0.4) == 2


def test_function_responses_are_never_a_split_point():
    history = [content("user", {"text": "a" * 10}), content("model", {"functionCall": {"name": "f", "args": {}}}),
               content("user", {"functionResponse": {"name": "f", "response": {"output": "x" * 500}}}), content("model", {"text": "done"})]
    # The target lies before the response, but the response turn cannot start the kept part.
    assert split(history, 0.1) == len(history)


# -- estimateTokenCountSync, tokenLimit, formatTruncatedToolOutput -------------------------------

def test_estimate_token_count_sync_cases():
    assert estimate_parts([{"text": "Hello world!"}]) == 3
    assert estimate_parts([{"text": "Hi你好"}]) == 3
    assert estimate_parts([{"text": ""}]) == 0
    assert estimate_parts([{"text": "Hello"}, {"inlineData": {"mimeType": "image/png", "data": "data"}}]) == 3001
    assert estimate_parts([{"inlineData": {"mimeType": "image/png", "data": "large_data"}}]) == 3000
    assert estimate_parts([{"inlineData": {"mimeType": "application/pdf", "data": "large_pdf_data"}}]) == 25800
    assert estimate_parts([{"text": "a" * 200_000}]) == 50_000  # the fast heuristic past 100,000 characters
    tool = estimate_parts([{"functionResponse": {"name": "my_tool", "id": "123", "response": {"output": "result" * 1000}}}])
    assert 1500 < tool < 1600 and tool == (7 + len('{"output":""}') + 6000) // 4
    nested = estimate_parts([{"functionResponse": {"name": "multimodal_tool", "id": "456", "response": {"status": "success"},
                                                   "parts": [{"inlineData": {"mimeType": "image/png", "data": "base64..."}},
                                                             {"text": "Look at this image"}]}}])
    # name 15/4 + response 20/4 + floor(3000 + 18/4) = 3012.75 (the test's comment omits the name)
    assert 3000 < nested < 3100 and nested == 3012


def test_token_limit_table():
    for model in ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-3.1-flash-lite", "gemini-3-pro-preview", "gemini-3-flash-preview", "unknown-model", ""):
        assert token_limit(model) == 1_048_576
    assert token_limit("gemma-4-31b-it") == 256_000


def test_format_truncated_tool_output():
    short = format_truncated_tool_output("abcdefghijklmnopqrstuvwxyz", "/tmp/out.txt", 10)
    assert "Showing first 2 and last 8 characters" in short and "For full output see: /tmp/out.txt" in short
    assert "\nab\n" in short and short.endswith("stuvwxyz") and "[16 characters omitted]" in short
    large = format_truncated_tool_output("a" * 50_000, "/tmp/out.txt", 4000)
    assert "Showing first 800 and last 3,200 characters" in large and "[46,000 characters omitted]" in large
    assert format_truncated_tool_output("fits", "/tmp/out.txt", 10) == "fits"


# -- truncateHistoryToBudget ("Reverse Token Budget Truncation") ---------------------------------

def grep(name: str, key: str, text: str) -> Content:
    return content("user", {"functionResponse": {"name": name, "response": {key: text}}})


def test_older_function_responses_are_truncated_past_the_budget():
    large = "a" * 170_000  # 42,500 tokens each: the newer fits the 50,000 budget, the older does not
    history = [content("user", {"text": "old msg"}), content("model", {"text": "old resp"}), content("user", {"text": "msg 1"}),
               grep("grep", "content", large), content("model", {"text": "resp 2"}), grep("grep", "content", large)]
    truncations = truncate_history_to_budget(history, 40_000)
    assert [(t.content, t.part) for t in truncations] == [(3, 0)]
    assert truncations[0].output.startswith("Output too large.")
    assert "grep_1.txt" in truncations[0].output
    assert split(history, 0.7) == 2  # the kept part starts at 'msg 1': keptHistory[1] is the truncated response


@pytest.mark.parametrize("key", ["output", "content"])
def test_massive_single_line_keeps_8000_head_and_32000_tail(key):
    massive = "a" * 170_000
    history = [content("user", {"text": "old msg 1"}), content("model", {"text": "old resp 1"}), content("user", {"text": "msg 1"}),
               grep("shell", key, massive), grep("shell", key, massive)]
    (t,) = truncate_history_to_budget(history, 40_000)
    assert t.content == 3 and "Showing first 8,000 and last 32,000 characters" in t.output
    assert len(t.output) < 100_000


def test_the_newest_response_alone_over_budget_is_truncated():
    massive = "a" * 300_000  # 75,000 tokens: over the budget even as the newest output
    history = [grep("grep", "content", massive), content("user", {"text": "msg 2"}), content("model", {"text": "resp 2"}),
               content("user", {"text": "preserved msg"}), grep("massive_preserved", "content", massive)]
    truncations = truncate_history_to_budget(history, 40_000)
    assert [t.content for t in truncations] == [4, 0]
    assert all(t.output.startswith("Output too large.") for t in truncations)


# -- the policy on Gemini CLI session files -------------------------------------------------------

def record_session(tmp_path: Path, messages: list[dict[str, Any]], name: str = "s.json") -> Any:
    meta = {"sessionId": "s1", "projectHash": "p", "startTime": "2026-01-01T00:00:00.000Z", "lastUpdated": "2026-01-01T00:00:00.000Z",
            "kind": "main", "messages": messages}
    path = tmp_path / name
    path.write_text(json.dumps(meta), encoding="utf-8")
    return load_session(str(path))


def user(i: int, text: str) -> dict[str, Any]:
    return {"id": f"u{i}", "timestamp": f"2026-01-01T00:00:{i:02d}.000Z", "type": "user", "content": [{"text": text}]}


def gemini(i: int, text: str, prompt_tokens: int | None = None, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"id": f"g{i}", "timestamp": f"2026-01-01T00:00:{i:02d}.000Z", "type": "gemini", "content": text,
                              "model": "gemini-2.5-pro"}
    if prompt_tokens is not None:
        record["tokens"] = {"input": prompt_tokens, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": prompt_tokens + 5}
    if calls:
        record["toolCalls"] = calls
    return record


def test_compresses_over_the_threshold_and_sends_the_summary_turn(tmp_path):
    # 600,000 >= 0.5 x 1,048,576: compress; everything goes (the last turn is a plain model turn).
    s = record_session(tmp_path, [user(1, "msg1"), gemini(2, "msg2"), user(3, "msg3"), gemini(4, "msg4", 600_000)])
    plan = plan_session(s, POLICY, {}, store=CountStore())
    assert plan.extra["compression_status"] == "COMPRESSED"
    assert [m.decision for m in plan.messages] == [Decision.SUMMARIZED] * 4
    assert plan.context[1]["role"] == "user" and plan.context[1]["content"].startswith("<state_snapshot>")
    assert plan.context[2] == {"role": "assistant", "content": ACK_TEXT}
    assert plan.extra["prompt_token_source"] == "reported"


def test_under_the_threshold_nothing_changes(tmp_path):
    s = record_session(tmp_path, [user(1, "hi"), gemini(2, "hello", 600)])
    plan = plan_session(s, POLICY, {"tokenLimit": 1000, "compressionThreshold": 0.7}, store=CountStore())  # 600 < 700
    assert plan.extra["compression_status"] == "NOOP"
    assert all(m.decision is Decision.KEPT for m in plan.messages)
    fired = plan_session(s, POLICY, {"tokenLimit": 1000, "compressionThreshold": 0.6}, store=CountStore())  # 600 >= 600
    assert fired.extra["compression_status"] == "COMPRESSED"


def test_the_request_being_sent_is_not_compressed(tmp_path):
    s = record_session(tmp_path, [user(1, "a" * 400), gemini(2, "b" * 400), user(3, "c" * 400), gemini(4, "d" * 40, 900), user(5, "next question")])
    plan = plan_session(s, POLICY, {"tokenLimit": 1000}, store=CountStore())
    # findCompressSplitPoint runs on the history without the new request: the last history turn is a
    # plain model turn, so all of it is compressed and only the request is sent after the summary.
    assert [m.decision for m in plan.messages] == [Decision.SUMMARIZED] * 4 + [Decision.KEPT]
    assert plan.context[-1]["content"] == "next question"


def test_split_keeps_the_newest_share_by_json_characters(tmp_path):
    calls = [{"id": "c1", "name": "read_file", "args": {"path": "x"}, "status": "success", "result": "r" * 300}]
    s = record_session(tmp_path, [user(1, "a" * 300), gemini(2, "b" * 300), user(3, "c" * 300), gemini(4, "", 800, calls),
                                  user(5, "d" * 100), gemini(6, "e" * 50, 900)])
    plan = plan_session(s, POLICY, {"tokenLimit": 1000}, store=CountStore())
    history = [m for m in s.messages]
    decided = {m.id: plan.messages[m.index].decision for m in history}
    # Contents: u1, g2, u3, g4(call), g4_response, u5, g6. The 70 % target is past u3 and the
    # response is no split point: the first user message at or past the target is u5.
    assert decided["u5"] is Decision.KEPT and decided["g6"] is Decision.KEPT
    assert all(decided[i] is Decision.SUMMARIZED for i in ("u1", "g2", "u3", "g4"))
    assert plan.extra["split_point"] == 5


def test_inflated_compression_is_abandoned(tmp_path):
    s = record_session(tmp_path, [user(1, "x"), gemini(2, "y", 2)])
    plan = plan_session(s, POLICY, {"tokenLimit": 2, "compressionThreshold": 1.0}, store=CountStore())
    assert plan.extra["compression_status"] == "COMPRESSION_FAILED_INFLATED_TOKEN_COUNT"
    assert all(m.decision is Decision.KEPT for m in plan.messages)


def test_replay_compresses_once_and_carries_the_summary(tmp_path):
    s = load_session(str(SAMPLE))
    timeline = simulate(s, POLICY, {"tokenLimit": 20_000}, store=CountStore())
    kinds = [e.kind for e in timeline.events]
    assert kinds.count("compaction") == 1
    last = timeline.plan_at(len(timeline.turns) - 1)
    assert last.summaries and last.summaries[0].decision is Decision.KEPT
    assert any(m.decision is Decision.SUMMARIZED for m in last.messages)
    assert last.context[1]["content"].startswith("<state_snapshot>")


def test_sample_counts_the_reported_prompt(tmp_path):
    s = load_session(str(SAMPLE))
    plan = plan_session(s, POLICY, {}, store=CountStore())
    last = [m for m in s.messages if m.role == "assistant"][-1]
    assert plan.extra["prompt_token_count"] == last.raw["tokens"]["input"]
    assert plan.extra["compression_status"] == "NOOP"


def test_bad_parameters_are_one_line():
    with pytest.raises(ParameterError, match="compressionThreshold"):
        get_policy(POLICY).make_params({"compressionThreshold": "0"})
    with pytest.raises(ParameterError, match="tokenLimit"):
        get_policy(POLICY).make_params({"tokenLimit": "0"})


# -- the Contents, rebuilt from Gemini CLI's own files ---------------------------------------------

REAL = Path(__file__).parent / "data" / "real" / "gemini_cli"


def client_history(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An independent port of sessionUtils.ts convertSessionToClientHistory at 5411f11, reading the
    file's records directly, without the thought parts (the live history keeps none)."""
    def parts_of(content: Any) -> list[Any]:
        if isinstance(content, list):
            return [{"text": p} if isinstance(p, str) else p for p in content]
        return [{"text": content}] if isinstance(content, str) else [content]

    def text_of(content: Any) -> str:
        return "".join(p if isinstance(p, str) else p.get("text", "") if isinstance(p, dict) else "" for p in parts_of(content))

    out: list[dict[str, Any]] = []
    for msg in records:
        if msg["type"] in ("info", "error", "warning"):
            continue
        if msg["type"] == "user":
            trimmed = text_of(msg.get("content")).strip()
            if not trimmed or trimmed.startswith(("/", "?")):
                continue  # isIgnoredUserContent (ctxviz's loader keeps the <session_context> blocks it re-injects)
            out.append({"role": "user", "parts": parts_of(msg.get("content"))})
        elif msg["type"] == "gemini":
            content = parts_of(msg["content"]) if msg.get("content") else []
            model = [p for p in content if not p.get("thought")]
            if not any(p.get("functionCall") for p in content) and not any(p.get("thought") for p in content):
                model += [{"functionCall": {"id": c.get("id"), "name": c.get("name"), "args": c.get("args")}} for c in msg.get("toolCalls") or []]
            if model:
                out.append({"role": "model", "parts": model})
            responses: list[Any] = []
            for c in msg.get("toolCalls") or []:
                result = c.get("result")
                if result:
                    if isinstance(result, str):
                        responses.append({"functionResponse": {"id": c.get("id"), "name": c.get("name"), "response": {"output": result}}})
                    elif isinstance(result, list):
                        responses += parts_of(result)
                    else:
                        responses.append(result)
            if responses:
                out.append({"role": "user", "parts": responses})
    return out


@pytest.mark.parametrize("path", [SAMPLE, *sorted(p for p in REAL.glob("*.json") if not p.name.startswith("SOURCES"))], ids=lambda p: p.name)
def test_contents_match_convert_session_to_client_history(path):
    from ctxviz.engine.policies.gemini.history import build_contents

    records = json.loads(path.read_text(encoding="utf-8"))["messages"]
    expected = [len(json.dumps(c, ensure_ascii=False, separators=(",", ":")).encode("utf-16-le")) // 2 for c in client_history(records)]
    s = load_session(str(path))
    history = [m for m in s.messages if m.role != "system"]
    names = {c.id: c.name for m in history for c in m.tool_calls if c.id}
    got = [c.json_length for c in build_contents(history, names)]
    assert got == expected


def test_outputs_truncated_at_compression_stay_truncated(tmp_path):
    calls = [{"id": "c1", "name": "grep", "args": {}, "status": "success", "result": "r" * 300_000}]  # 75,000 tokens: over the budget
    s = record_session(tmp_path, [user(1, "a" * 200_000), gemini(2, "ok"), user(3, "next"), gemini(4, "", 100, calls),
                                  gemini(5, "done", 600_000), user(6, "more"), gemini(7, "fine", 10)])
    timeline = simulate(s, POLICY, {}, store=CountStore())
    compressed_at = next(e.turn for e in timeline.events if e.kind == "compaction")
    # g5 reported 600,000: the next request (#6, the user's "more") is compressed before it is sent
    assert s.messages[compressed_at].id == "u6"
    at = timeline.plan_at(timeline.step_of(compressed_at))
    assert [at.find(i).decision for i in ("u1", "g2", "u3")] == [Decision.SUMMARIZED, Decision.SUMMARIZED, Decision.KEPT]
    tool = next(m for m in s.messages if m.role == "tool")
    assert at.messages[tool.index].decision is Decision.TRUNCATED
    from ctxviz.engine.simulate import prefix_counts, state

    whole = state(s, POLICY, len(s.messages) - 1, timeline.summaries)  # the file with the answer: the summary is in force
    later = get_policy(POLICY).plan(whole, timeline.params, prefix_counts(timeline.counts, whole))  # no new compression
    assert later.extra["compression_status"] == "NOOP"
    assert later.messages[tool.index].decision is Decision.TRUNCATED
    assert later.messages[tool.index].sent_tokens == at.messages[tool.index].sent_tokens < tool_tokens(s, tool)


def tool_tokens(s, tool) -> int:
    return CountStore().get(s, get_policy(POLICY).scheme()).message_tokens[tool.index]


def test_a_compression_that_frees_nothing_is_said_in_the_replay(tmp_path):
    """Over the threshold in a long tool loop, findCompressSplitPoint finds no user message to split
    before: Gemini CLI compresses nothing. The replay said nothing either; now each such call says why."""
    calls = [gemini(2 + 2 * k, f"step {k}", 200 + 150 * k,
                    calls=[{"id": f"c{k}", "name": "read_file", "args": {"path": f"f{k}.py"}, "status": "success",
                            "result": [{"functionResponse": {"id": f"c{k}", "name": "read_file", "response": {"output": "x" * 600}}}]}])
             for k in range(8)]
    s = record_session(tmp_path, [user(1, "fix every file"), *calls])
    params = {"tokenLimit": 1500, "compressionThreshold": 0.5}
    timeline = simulate(s, POLICY, params, store=CountStore())
    noops = [e for e in timeline.events if e.kind == "compression_noop"]
    assert noops and not [e for e in timeline.events if e.kind == "compaction"]
    assert "frees nothing" in noops[0].message and "user message" in noops[0].message
    # each said at a call whose plan tried and found no split
    for e in noops:
        plan = timeline.plan_at(next(k for k, t in enumerate(timeline.turns) if e in t.events))
        assert plan.extra["split_point"] == 0 and plan.extra["prompt_token_count"] >= 750
    # incremental and from-scratch replays say it alike
    reference = simulate(s, POLICY, params, store=CountStore(), incremental=False)
    assert [e for t in reference.turns for e in t.events] == timeline.events
