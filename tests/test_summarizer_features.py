"""The offline summarizer reads each message's features faster (the word found, then its line; only
the head of a long text flattened), and reads exactly what it read before: every summary ctxviz
writes offline (and so every replayed compaction's size) is unchanged.

The reference below is the summarizer's per-message reading as it was written before, line patterns
over the whole text; random texts mix the words it looks for with the characters that make
case-insensitive matching and whitespace splitting differ from their ASCII reading.
"""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine import summarizers
from ctxviz.engine.session import Message, TextPart, ToolCallPart, ToolResultPart

from .hypothesis_budget import examples


def reference_clip(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def reference_features(m: Message) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str, str]:
    """`summarizers._features` as it was before it found words instead of lines."""
    text = m.text
    files: list[str] = []
    decisions: list[str] = []
    values: list[str] = []
    action = request = ""
    for call in m.tool_calls:
        verb = "changed" if any(w in call.name.lower() for w in summarizers.WRITE_TOOLS) else "read"
        files += [f"{p} ({verb} via {call.name})" for p in summarizers.PATH_RE.findall(call.arguments)]
        action = f"called {call.name}({reference_clip(call.arguments, 80)})"
    if m.role == "tool":
        values += [reference_clip(line, 160) for line in summarizers.ERROR_RE.findall(text)[:2]]
        if text.strip() and not re.fullmatch(r"\s*(\{\s*\"ok\"\s*:\s*true\s*\}|ok|done|success)\s*", text, re.I):
            values.append(f"[{m.name or 'tool'}] {reference_clip(text, 120)}")
    if m.role == "assistant":
        decisions += [reference_clip(line, 160) for line in summarizers.DECISION_RE.findall(text)]
        if text.strip():
            action = reference_clip(text, 160)
    if m.role == "user" and text.strip():
        request = reference_clip(text, 160)
    values += summarizers.URL_RE.findall(text)[:3]
    return tuple(files), tuple(decisions), tuple(values), action, request


# Words the summarizer looks for, and characters that differ from their ASCII reading: dotless and
# dotted I and the Kelvin sign match "i" and "k" case-insensitively; the line and paragraph
# separators and \x1c split words but not lines; \r ends neither a line nor a match.
PIECES = ["error", "Error", "FAILED", "failure", "exception", "Traceback", "decided", "decision", "we'll use", "will use", "chose",
          "going with", "let's use", "plan is", "PLAN IS", "errors", "xerror", "ok", "done", "success", '{"ok": true}',
          "http://a.io/x", "https://b.org/p?q=1", "src/app.py", "notes.md", "\u0131", "\u0130", "\u212a", "TRACEBAC\u212a", "exceptıon",
          " ", "  ", "\n", "\n\n", "\r", "\t", "\u2028", "\u2029", "\x1c", "\u00a0", "word", "a", "é", "-", "_", ".", "'", "\""]
texts = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=60).map("".join),
    # past the head `_clip` flattens first (several hundred characters): a drawn run repeated
    st.tuples(st.lists(st.sampled_from(PIECES), min_size=1, max_size=40).map("".join), st.integers(2, 60)).map(lambda t: t[0] * t[1]),
    st.text(max_size=300),
)


@st.composite
def messages(draw) -> Message:
    role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
    parts: list = [TextPart(draw(texts))]
    if role == "tool":
        parts = [ToolResultPart("c1", draw(texts))] + ([TextPart(draw(texts))] if draw(st.booleans()) else [])
    if role == "assistant" and draw(st.booleans()):
        parts.append(ToolCallPart("c1", draw(st.sampled_from(["write_file", "read", "Edit"])), draw(texts)))
    return Message(id="m", index=0, role=role, parts=tuple(parts), name=draw(st.sampled_from(["", "bash"])))


@settings(max_examples=examples(300), deadline=None)
@given(messages())
def test_each_message_is_read_as_before(m: Message) -> None:
    assert summarizers._features.__wrapped__(m) == reference_features(m)


@settings(max_examples=examples(300), deadline=None)
@given(texts, st.sampled_from([1, 2, 80, 120, 160]))
def test_a_long_text_is_clipped_as_when_flattened_whole(text: str, width: int) -> None:
    assert summarizers._clip(text, width) == reference_clip(text, width)


def test_a_long_tool_output_gives_its_first_two_error_lines_and_its_head() -> None:
    """A 60 KB output, errors on lines far apart, the same line twice: the lines, once each, in order."""
    lines = [f"step {k} ok" for k in range(3000)]
    lines[5] = "ERROR: disk full; error again"
    lines[2000] = "Traceback (most recent call last):"
    lines[2500] = "error"
    text = "\n".join(lines)
    m = Message(id="m", index=0, role="tool", parts=(ToolResultPart("c1", text),), name="bash")
    assert summarizers._features(m) == reference_features(m)
    assert summarizers._features(m)[2][:2] == ("ERROR: disk full; error again", "Traceback (most recent call last):")


def test_only_four_characters_outside_ascii_match_a_looked_for_letter() -> None:
    """A non-ASCII text skips the case-insensitive word pattern when its lower case holds none of
    the words and it holds none of `_FOLDS_TO_ASCII`: sound only if no other character outside
    ASCII matches an ASCII letter (or the apostrophe or space in a word) under re.I, and no other's
    lower case holds an ASCII character. Checked over every code point."""
    letter = re.compile(r"[a-z' ]", re.I)
    folds = {chr(cp) for cp in range(128, 0x110000) if letter.fullmatch(chr(cp))}
    assert folds == set(summarizers._FOLDS_TO_ASCII)
    lowered = {chr(cp) for cp in range(128, 0x110000) if any(c.isascii() for c in chr(cp).lower())}
    assert lowered <= folds
