"""Gemini CLI's compression reads each tool output faster where nothing changes: an ASCII output is
cut without encoding it to UTF-16, and a response kept whole is not written as JSON again for its
length. Both give what the long way gives (the JavaScript lengths Gemini CLI measures), on random
outputs and response shapes."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.policies.gemini import service
from ctxviz.engine.policies.gemini.history import Content, js_length, stringify

from .hypothesis_budget import examples


def cut_the_long_way(content: str, output_file: str, max_chars: int) -> str:
    """`format_truncated_tool_output` through UTF-16 units, for any text."""
    units = content.encode("utf-16-le", "surrogatepass")
    length = len(units) // 2
    if length <= max_chars:
        return content
    head_chars = math.floor(max_chars * 0.2)
    tail_chars = max_chars - head_chars
    head = units[: head_chars * 2].decode("utf-16-le", "surrogatepass")
    tail = units[len(units) - tail_chars * 2:].decode("utf-16-le", "surrogatepass") if tail_chars else content
    omitted = length - head_chars - tail_chars
    return (f"Output too large. Showing first {head_chars:,} and last {tail_chars:,} characters. For full output see: {output_file}\n"
            f"{head}\n\n... [{omitted:,} characters omitted] ...\n\n{tail}")


outputs = st.one_of(st.text(alphabet=st.characters(max_codepoint=127), max_size=400), st.text(max_size=200))


@settings(max_examples=examples(300), deadline=None)
@given(outputs, st.integers(0, 300))
def test_an_output_is_cut_as_through_utf16(content: str, max_chars: int) -> None:
    assert service.format_truncated_tool_output(content, "f.txt", max_chars) == cut_the_long_way(content, "f.txt", max_chars)


responses = st.one_of(
    st.builds(lambda o: {"output": o}, outputs),
    st.builds(lambda o, x: {"output": o, "extra": x}, outputs, st.integers()),
    st.builds(lambda c: {"content": c}, outputs),
    st.builds(lambda o: {"output": o, "n": 1.0}, outputs),
)
parts = st.one_of(
    st.builds(lambda r, name, pid: {"functionResponse": {**({"id": pid} if pid else {}), "name": name, "response": r}},
              responses, st.sampled_from(["read_file", "shell"]), st.sampled_from(["", "c1"])),
    st.builds(lambda r: {"functionResponse": {"name": "x", "response": r}, "thoughtSignature": "s"}, responses),
    st.builds(lambda t: {"text": t}, outputs),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(parts, min_size=1, max_size=4), st.data())
def test_a_content_measures_as_when_every_truncated_part_is_written_again(ps: list, data) -> None:
    c = Content("user", ps, [js_length(stringify(p)) for p in ps], 0.0, [])
    truncations = {}
    for pi, p in enumerate(ps):
        if "functionResponse" in p and data.draw(st.booleans()):
            body = p["functionResponse"]["response"]
            kept = body.get("output") if isinstance(body.get("output"), str) else stringify(body)
            output = data.draw(st.sampled_from([kept, kept[:3], "cut"]))
            truncations[(0, pi)] = service.Truncation(0, pi, output, 0)
    lengths = [js_length(stringify(service.truncated_part(p, truncations[(0, pi)].output))) if (0, pi) in truncations else c.part_lengths[pi]
               for pi, p in enumerate(ps)]
    wrapper = len('{"role":"') + len(c.role) + len('","parts":[') + len("]}")
    assert service._content_length(c, 0, truncations) == wrapper + sum(lengths) + max(0, len(lengths) - 1)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.sampled_from([1.0, -0.0, 1e21, 3e20, 2.5]), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner), st.dictionaries(st.text(max_size=5), inner, max_size=4),
                            st.dictionaries(st.one_of(st.integers(), st.booleans(), st.none()), inner, max_size=2)),
    max_leaves=12,
)


@settings(max_examples=examples(500), deadline=None)
@given(json_values)
def test_a_value_is_written_as_json_dumps_writes_it(value) -> None:
    """`stringify` writes the plain values of a session's parts directly (`_compact`) instead of
    through json.dumps: the same text for any value, integral floats without ".0" as before, and
    the json.dumps way for what it does not write (a fraction, a tuple, a key that is no string)."""
    from ctxviz.engine.policies.gemini.history import _js_numbers

    try:
        expected = json.dumps(_js_numbers(value), ensure_ascii=False, separators=(",", ":"))
    except ValueError:  # (a NaN key...: json.dumps raises, and so must stringify)
        with pytest.raises(ValueError):
            stringify(value)
        return
    assert stringify(value) == expected


@settings(max_examples=examples(500), deadline=None)
@given(st.one_of(json_values, st.text(alphabet=st.characters(max_codepoint=0x7F)), st.text(alphabet=st.sampled_from('a"\\\n\t\x01\x1f\x7f\b\f\r é\U0001F600'))))
def test_a_value_measures_as_its_json_written_out(value) -> None:
    """`json_length` sums a part's JSON length from its pieces (an ASCII string from the characters
    JSON escapes) without writing it: the length of what `stringify` writes, in UTF-16 units."""
    from ctxviz.engine.policies.gemini.history import json_length

    try:
        expected = js_length(stringify(value))
    except ValueError:
        with pytest.raises(ValueError):
            json_length(value)
        return
    assert json_length(value) == expected


@pytest.mark.parametrize("text", ["", "plain", 'a "quoted" \\path\\ line\nnext\ttab\r\x00\x01\x1f\x7f\b\f', "x" * 10_000 + "\n" * 500 + '"',
                                  "é\U0001F600\n\"\\\x02"])
def test_an_output_measures_as_written_out(text) -> None:
    from ctxviz.engine.policies.gemini.history import json_length

    part = {"functionResponse": {"id": "c1", "name": "grep", "response": {"output": text}}}
    assert json_length(text) == js_length(stringify(text)) and json_length(part) == js_length(stringify(part))
