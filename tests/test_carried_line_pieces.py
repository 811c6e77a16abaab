"""The carried snapshot counts a line by its pieces (`carried._Snapshot(count, by_pieces=True)`,
supyagent's replay under cl100k_base and o200k_base): the fixed start ("-", "- Last action:",
"- Latest request:") and the item with its ending, the item's own count kept for its other
endings. Each such count is tiktoken's count of the whole line, for items that end in a letter, a
digit, the clip's "…" after one, punctuation, a mark or a space, start with one or not, and hold
newlines, "'s" or "/" (the pieces the two encodings' patterns treat apart); and the snapshot's
count is still tiktoken's count of its text (test_carried_snapshot_lines, counting by pieces)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxviz.engine.policies.carried import _Snapshot
from ctxviz.engine.tokenizers import TiktokenTokenizer

from .hypothesis_budget import examples

ENCODINGS = ("cl100k_base", "o200k_base")
PIECES = ["word", "Word", "x", "7", "123", "4567", "\u2026", "...", ".", "!", "-", "/", "'s", "'", " ", "  ", "\n", "\n\n", "\t", "\u00e9",
          "\u00c9t\u00e9", "\u0301", "\u4e00", "\u0661", "\u00b2", "_", "(", ")", "[tool]", "src/a.py", "https://x.io/p", ":", "#", "\u2014"]
ITEMS = st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map("".join)


@settings(max_examples=examples(400), deadline=None)
@given(item=ITEMS, start=st.sampled_from(["-", "- Last action:", "- Latest request:"]), ending=st.sampled_from(["", "\n", "\n\n"]),
       encoding=st.sampled_from(ENCODINGS))
def test_a_line_counted_by_pieces_is_counted_as_whole(item: str, start: str, ending: str, encoding: str) -> None:
    tok = TiktokenTokenizer(encoding)
    snapshot = _Snapshot(tok.count, by_pieces=True)
    for end in ("", "\n", "\n\n", ending):  # the item's count kept from one ending to the next
        line, count, spaces = snapshot._started(start, item, end)
        assert line == f"{start} {item}{end}"
        assert count == tok.count(line), (start, item, end)
        assert spaces == line.count(" ")
