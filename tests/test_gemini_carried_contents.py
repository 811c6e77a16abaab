"""Gemini CLI's replay carries the held Contents in columns, so a compression reads no message again:
each message's parts are measured once (`measure_part`: estimate and JSON length from one reading),
the function responses are listed as they come (`truncate_parts` walks them alone), and after a
compression the columns of the Contents kept are sliced, not made again. Each is checked against
what it replaces: `estimate_part` and `json_length`, the step-by-step `truncateHistoryToBudget`, and
`build_contents` of the history held, after every turn of random and real sessions."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.checks import PlanOptions
from ctxviz.engine.policies.gemini import history, service
from ctxviz.engine.policies.gemini.history import Content, build_contents, estimate_part, json_length, measure_part
from ctxviz.engine.policies.gemini.replay import GeminiCliReplay
from ctxviz.engine.simulate import simulate

from .hypothesis_budget import examples
from .test_replay_edits import edit_sessions
from .test_replay_incremental import SETTINGS, same

REAL = Path(__file__).parent / "data" / "real" / "gemini_cli"

texts = st.one_of(st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=60),
                  st.text(alphabet=st.sampled_from('a"\\\n\t\x01\x1f\x7f\b\f\r é\U0001F600'), max_size=30))
values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.sampled_from([1.0, 2.5, 1e21]), texts),
                      lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)), max_leaves=8)
bodies = st.one_of(st.builds(lambda o: {"output": o}, texts), st.builds(lambda o: {"error": o}, texts),
                   st.dictionaries(texts, values, max_size=3), texts, values)
responses = st.builds(lambda pid, name, body, extra: {**({"id": pid} if pid is not None else {}), **({"name": name} if name is not None else {}),
                                                      **({"response": body} if body is not None else {}), **extra},
                      st.one_of(st.none(), texts, st.integers()), st.one_of(st.none(), texts, st.integers()), st.one_of(st.none(), bodies),
                      st.one_of(st.just({}), st.just({"parts": [{"text": "nested"}]}), st.just({"parts": []}), st.dictionaries(texts, values, max_size=1)))
parts = st.one_of(
    st.builds(lambda t: {"text": t}, texts),
    st.builds(lambda t, x: {"text": t, "thought": x}, texts, st.booleans()),
    st.builds(lambda r: {"functionResponse": r}, responses),
    st.builds(lambda r: {"functionResponse": r, "thoughtSignature": "s"}, responses),
    st.builds(lambda name, args: {"functionCall": {"name": name, "args": args}}, texts, values),
    st.builds(lambda mime: {"inlineData": {"mimeType": mime, "data": "AAAA"}}, st.sampled_from(["image/png", "application/pdf", "text/plain"])),
    st.builds(lambda t: {"text": t}, values),
    st.dictionaries(st.sampled_from(["text", "functionCall", "functionResponse", "other"]), values, max_size=2),
)


@settings(max_examples=examples(300), deadline=None)
@given(parts)
def test_a_part_measures_as_its_estimate_and_json_length(part: dict[str, Any]) -> None:
    """`measure_part` reads a part once for both: what `estimate_part` and `json_length` give, for any part shape."""
    try:
        expected = (estimate_part(part), json_length(part))
    except ValueError:  # (a value json.dumps refuses: measuring it must refuse too)
        return
    assert measure_part(part) == expected


def truncate_step_by_step(contents: list[Content], max_chars: int) -> list[service.Truncation]:
    """truncateHistoryToBudget as it was written before `truncate_parts`: every Content, newest first."""
    counter = 0
    truncation_id = 0
    out: list[service.Truncation] = []
    for ci in range(len(contents) - 1, -1, -1):
        ps = contents[ci].parts
        for pi in range(len(ps) - 1, -1, -1):
            response = ps[pi].get("functionResponse")
            if not response:
                continue
            text = history.response_string(response.get("response") if isinstance(response, dict) else None)
            tokens = math.floor(estimate_part({"text": text}))
            if counter + tokens > service.COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET:
                truncation_id += 1
                name = response.get("name") if isinstance(response, dict) else None
                output = service.format_truncated_tool_output(text, service._file_name(name or "unknown_tool", truncation_id), max_chars)
                out.append(service.Truncation(ci, pi, output, tokens))
                counter += math.floor(estimate_part({"text": output}))
            else:
                counter += tokens
    return out


outputs = st.builds(lambda base, n: (base * (n // max(1, len(base)) + 1))[:n], st.sampled_from(["ab\n", 'x"y\\', "é ü", "\U0001F600a"]),
                    st.integers(0, 3000))
response_parts = st.builds(lambda name, out: {"functionResponse": {"name": name, "response": {"output": out}}},
                           st.sampled_from(["read", "shell", "", "ü/x"]), outputs)
named = st.builds(lambda r, name: {**r, "name": name}, responses, texts)  # (a name that is no string: no file is named for it)
content_parts = st.one_of(response_parts, response_parts, st.builds(lambda t: {"text": t}, texts),
                          st.builds(lambda r: {"functionResponse": r}, named), st.just({"functionResponse": {}}))


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.lists(content_parts, max_size=4), max_size=8), st.integers(0, 4000), st.sampled_from([0, 10, 300, 2000]))
def test_the_response_parts_alone_truncate_as_every_content_does(contents_parts: list, max_chars: int, budget: int) -> None:
    """`truncate_history_to_budget` (now over the response parts listed alone, `truncate_parts`):
    the same truncations, outputs and token counts as walking every Content, at small budgets so
    that outputs long and short, ASCII or not, are truncated or kept whole."""
    contents = [Content("user", ps, [json_length(p) for p in ps], 0.0, []) for ps in contents_parts]
    with mock.patch.object(service, "COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET", budget):
        assert service.truncate_history_to_budget(contents, max_chars) == truncate_step_by_step(contents, max_chars)


def check_columns(replay: GeminiCliReplay) -> None:
    """The replayer's columns (brought up to the turn, as a compression reads them) are those of
    `build_contents` over the history it holds (`rest`)."""
    replay._columns()
    contents = build_contents(replay.rest, replay.call_names)
    assert replay.contents == len(contents) == len(replay.c_start)
    starts, j = [], 0
    for c in contents:
        starts.append(j)
        j += len(c.messages)
    assert replay.c_start == starts
    assert replay.c_length == [c.json_length for c in contents]
    assert replay.c_splittable == [c.role == "user" and not c.has_function_response for c in contents]
    before, total = [], 0.0
    for c in contents:
        before.append(total)
        total += c.estimate
    assert replay.c_before == before and replay.estimate == total == replay.columns_total
    assert replay._responses(replay.contents) == [
        (ci, pi, p, c.part_lengths[pi], estimate_part(p)) for ci, c in enumerate(contents) for pi, p in enumerate(c.parts) if p.get("functionResponse")]
    for ci, c in enumerate(contents):
        made = replay._content_object(ci)
        assert (made.role, made.parts, made.part_lengths, made.estimate, made.messages) == (c.role, c.parts, c.part_lengths, c.estimate, c.messages)
    assert replay.history_sum == sum(replay.tokens[m.index] for m in replay.rest)


def checked_step(original):  # noqa: ANN001, ANN201
    """The step, then the columns checked every third turn (so that they are also brought up by
    several messages at once, as a compression does)."""
    def step(self: GeminiCliReplay, i: int):  # noqa: ANN202
        turn = original(self, i)
        if i % 3 == 0:
            check_columns(self)
        return turn
    return step


@settings(SETTINGS, max_examples=examples(25))
@given(s=edit_sessions(), limit=st.integers(100, 6000), threshold=st.sampled_from([0.05, 0.3, 0.5, 0.9]),
       budget=st.sampled_from([0, 20, 200, 50_000]), chars=st.sampled_from([0, 50, 40_000]), pair_safe=st.booleans())
def test_the_carried_columns_are_the_contents_held_after_every_turn(s, limit, threshold, budget, chars, pair_safe) -> None:
    """On random agent logs compressing at small limits (often more than once, the kept Contents'
    columns sliced after each compression), after every turn: the columns equal those made afresh
    from the history held, and the replay equals the reference."""
    params = {"tokenLimit": limit, "compressionThreshold": threshold, "truncateToolOutputThreshold": chars}
    with mock.patch.object(service, "COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET", budget), \
            mock.patch.object(GeminiCliReplay, "step", checked_step(GeminiCliReplay.step)):
        same(s, "gemini-cli-compression", params, PlanOptions(pair_safe=pair_safe))


def test_the_carried_columns_hold_a_real_logs_records() -> None:
    """aim_matrix_flash.json (Gemini CLI's own records: a user record's function responses are one
    Content, counted once) compressing at a limit of 80,000 with outputs truncated after it: the
    columns equal the Contents held after every turn, and the compression is carried."""
    from ctxviz.io.loaders import load_session

    session = load_session(REAL / "aim_matrix_flash.json")
    params = {"tokenLimit": 80_000, "truncateToolOutputThreshold": 200}
    with mock.patch.object(service, "COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET", 2_000), \
            mock.patch.object(GeminiCliReplay, "step", checked_step(GeminiCliReplay.step)):
        fast = simulate(session, "gemini-cli-compression", params)
    assert len(fast.summaries) == 1 and fast.scratch_steps == 0
