"""What the incremental replays of several frameworks carry from turn to turn: the covers of a
summary as a view of the growing list of ids (`IdPrefix`, engine/id_prefix.py), and the offline summarizer's snapshot
(`summarizers.supyagent_snapshot`) built up as messages arrive (with its token count), so a summary
fired on every turn costs what the new messages add. supyagent's count of its summary message,
which sums the snapshot's line counts, is `_SummaryCounter` in supyagent/replay.py.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Any

from ..id_prefix import IdPrefix as IdPrefix  # (re-exported: the replays' covers views, engine/id_prefix.py)
from ..session import Message
from ..summarizers import SECTIONS, WORD_LIMIT, Features, features_of, render_snapshot


class _Snapshot:
    """`summarizers.supyagent_snapshot` over a list that only grows at the end: each message's
    features are gathered once; each section keeps its unique items in first-seen order, and the
    lines it shows (the last few items) are made when a summary shows them, the sections that did
    not change since the last summary kept as they were.

    With `count`, `counted` also gives the sum of `count` over the text's lines (each "-" or "#"
    line with the newlines after it, the last one as the word limit cuts it): each line is made,
    counted and measured in spaces once, when first shown (see supyagent/replay.py's
    `_SummaryCounter` for why the sum is the count).

    What a summary on nearly every turn costs is what changed since the one before:
    - the Current State section changes with nearly every message (its last action): its two lines
      are kept by the action and the request they show (`actions`, `requests`), looked up by the
      string the message's features hold (its hash kept), so only a new action's line is made
      and counted;
    - a section that gains items moves the lines it shows along (`_section`): the oldest go, the
      new ones are looked up, the others are kept with their sums;
    - the first three sections, which change far less often, are kept joined (`head`)."""

    LIMITS = (12, 8, 12, 2, 4)  # files, decisions, values, current state, pending

    def __init__(self, count: Callable[[str], int] | None = None, by_pieces: bool = False) -> None:
        self.count = count
        # With `by_pieces` (`count` is cl100k_base's or o200k_base's), an item's line is counted as
        # its fixed start and the item's own count, kept per item (`_after`).
        self.by_pieces = by_pieces and count is not None
        self.spaced: dict[str, int] = {}  # count(" " + text), by text
        self.fixed: dict[str, int] = {}  # the counts of the fixed pieces ("-", "- Last action:", "\u2026\n")
        self.seen: list[Message] = []
        self.unique: tuple[dict[str, None], ...] = ({}, {}, {}, {}, {})  # per section (current state has none)
        self.last_action = ""
        self.last_request = ""
        # Each line made once, kept by the item it shows, one dict per line ending (an item's own
        # string is the key: its hash is kept, where a key of (item, ending) is hashed anew).
        self.endings: dict[str, dict[str, tuple[str, int, int]]] = {"\n": {}, "\n\n": {}, "": {}}  # -> (line, count, spaces)
        self.headings: list[tuple[str, int, int] | None] = [None] * 5
        self.windows: list[list[Any] | None] = [None] * 5  # per section: what `_section` made it from
        self.actions: dict[str, tuple[str, int, int]] = {}  # last action -> its Current State line
        self.requests: dict[str, tuple[str, int, int]] = {}  # latest request -> its Current State line
        self.head: tuple[str, int, int] | None = None  # the first three sections' parts joined (None: one changed)
        self.parts: list[tuple[str, int, int] | None] = [None] * 5  # (text, count, spaces), None when it changed
        self.cuts: dict[tuple[tuple[str, int, int], int], tuple[str, int]] = {}  # (section part, spaces needed) -> cut

    def text(self, messages: list[Message]) -> str:
        if len(messages) < len(self.seen) or (self.seen and messages[len(self.seen) - 1] is not self.seen[-1]):
            self.__init__(self.count, self.by_pieces)  # type: ignore[misc]  # not the list seen before, grown: start again
        self.advance(messages[len(self.seen):])
        return self.render()

    def _line(self, line: str) -> tuple[str, int, int]:
        return line, self.count(line) if self.count is not None else -1, line.count(" ")

    def _entry(self, item: str, ending: str) -> tuple[str, int, int]:
        """The line "- item" with its ending: (line, count, spaces)."""
        lines = self.endings[ending]
        entry = lines.get(item)
        if entry is None:
            entry = lines[item] = self._started("-", item, ending)
        return entry

    def _started(self, start: str, item: str, ending: str) -> tuple[str, int, int]:
        """The line `start` + " " + `item` + `ending`: (line, count, spaces). By pieces, its count
        is the start's and the rest's (`_after`): under either pattern a space after a character
        that is not whitespace begins a pre-token (no alternative holds a space but as its first
        character, or in a run of whitespace), and the count is the sum over pre-tokens."""
        line = f"{start} {item}{ending}"
        if not self.by_pieces or item[:1].isspace() or not item:
            return self._line(line)
        fixed = self.fixed.get(start)
        if fixed is None:
            fixed = self.fixed[start] = self.count(start)  # type: ignore[misc]
        return line, fixed + self._after(item, ending), line.count(" ")

    def _after(self, item: str, ending: str) -> int:
        """count(" " + item + ending), the item's own count kept for its other endings: an item
        shows with "\n" as a middle line, with "\n\n" or none as a section's last, and a request
        in the Current State and the Pending Tasks. Where the item ends with an ASCII letter or
        digit, the newlines after it are a pre-token of their own (only a run of punctuation takes
        newlines after it), so the count is the item's and the ending's; where it ends with the
        clip's "\u2026" after a letter or digit, the "\u2026" and the newlines are one pre-token
        after the rest. Any other ending is counted with the item."""
        count = self.count
        last = item[-1]
        if last.isascii() and last.isalnum():
            body, tail = item, ending
        elif last == "\u2026" and len(item) > 1 and item[-2].isascii() and item[-2].isalnum():
            body, tail = item[:-1], "\u2026" + ending
        else:
            return count(f" {item}{ending}")  # type: ignore[misc]
        n = self.spaced.get(body)
        if n is None:
            n = self.spaced[body] = count(" " + body)  # type: ignore[misc]
        if tail:
            t = self.fixed.get(tail)
            if t is None:
                t = self.fixed[tail] = count(tail)  # type: ignore[misc]
            n += t
        return n

    def _heading(self, s: int) -> tuple[str, int, int]:
        heading = self.headings[s]
        if heading is None:
            heading = self.headings[s] = self._line(_HEADINGS[s])
        return heading

    def advance(self, messages: list[Message]) -> None:
        """Gather the messages that follow those seen so far.

        A new item only marks its section changed: the section's lines are made (and counted) when
        it is next rendered, from the items it shows then (`_part`), so an item that many others
        follow before the next summary (a summary's first covers hundreds of messages) is never
        made into a line, and with `count` never counted."""
        if not messages:
            return
        self.gather(features_of(messages))
        self.seen += messages

    def gather(self, readings: list[Features]) -> None:
        """`advance` from the messages' readings (`summarizers.features_of`'s), for a caller that
        reads them otherwise (supyagent's views, read without making them). Such a snapshot is
        carried by its caller alone: `text`, which finds its place by the messages seen, is not
        asked of it."""
        files, decisions, values, _, requests = self.unique
        parts = self.parts
        last_action, last_request = self.last_action, self.last_request
        for f, d, v, action, request in readings:  # (the three lists unrolled: most are empty)
            if f:
                for item in f:
                    if item and item not in files:
                        files[item] = None
                        parts[0] = None
            if d:
                for item in d:
                    if item and item not in decisions:
                        decisions[item] = None
                        parts[1] = None
            if v:
                for item in v:
                    if item and item not in values:
                        values[item] = None
                        parts[2] = None
            if action and action != last_action:
                last_action = action
                parts[3] = None
            if request:
                if request not in requests:
                    requests[request] = None
                    parts[4] = None
                if request != last_request:
                    last_request = request
                    parts[3] = None
        self.last_action, self.last_request = last_action, last_request

    def render(self) -> str:
        return self.counted()[0]

    def _shown(self, s: int) -> tuple[list[str], str | None]:
        """Section `s`'s items shown but the last, and the last (None: the section has none)."""
        shown = _last(self.unique[s], self.LIMITS[s])
        return shown[:-1], shown[-1] if shown else None

    def _lines(self, s: int) -> list[tuple[str, int, int]]:
        """Section `s`'s lines: (line, count, spaces), its heading first."""
        if s == 3:
            return list(self._state())
        mid, last = self._shown(s)
        lines = [self._heading(s)]
        mids = self.endings["\n"]
        for item in mid:
            entry = mids.get(item)
            lines.append(entry if entry is not None else self._entry(item, "\n"))
        lines.append(self._entry(last or "(none)", "\n\n" if s < 4 else ""))
        return lines

    def _state(self) -> tuple[tuple[str, int, int], tuple[str, int, int], tuple[str, int, int]]:
        """The Current State section's lines: its heading, the last action, the latest request."""
        action = self.actions.get(self.last_action)
        if action is None:
            a = self.last_action
            action = self.actions[a] = self._started("- Last action:", a, "\n") if a else self._line("- No action taken yet\n")
        request = self.requests.get(self.last_request)
        if request is None:
            r = self.last_request
            request = self.requests[r] = self._started("- Latest request:", r, "\n\n") if r else self._line("- No request yet\n\n")
        return self._heading(3), action, request

    def _part(self, s: int) -> tuple[str, int, int]:
        part = self.parts[s]
        if part is None:
            if s == 3:  # (summed without a list of lines: it changes with nearly every message)
                heading, action, request = self._state()
                part = (heading[0] + action[0] + request[0], heading[1] + action[1] + request[1], heading[2] + action[2] + request[2])
            else:
                part = self._section(s)
            self.parts[s] = part
        return part

    def _section(self, s: int) -> tuple[str, int, int]:
        """Section `s`'s part (its lines as `_lines` makes them). A section's items only grow at
        the end, so with fewer new items than it shows, its lines are those shown before less the
        oldest, the last before now a middle line, and the new ones: only those are looked up (a
        section of 12 files changes by a file or two at a time)."""
        unique, limit = self.unique[s], self.LIMITS[s]
        window = self.windows[s]  # [items when made, middle lines, their count, their spaces, the last item]
        new = len(unique) - window[0] if window is not None else limit
        if window is None or window[4] is None or not 0 < new < limit:  # made whole
            mid, last = self._shown(s)
            mids = [self._entry(item, "\n") for item in mid]
            window = self.windows[s] = [len(unique), mids, sum([e[1] for e in mids]), sum([e[2] for e in mids]), last]
        else:
            mids, count, spaces = window[1], window[2], window[3]
            added = [window[4], *_last(unique, new)]
            for item in added[:-1]:  # the last shown before, and each new one but the newest, now middle lines
                entry = self._entry(item, "\n")
                mids.append(entry)
                count += entry[1]
                spaces += entry[2]
            drop = len(mids) - (limit - 1)  # the oldest middle lines no longer shown
            if drop > 0:
                for entry in mids[:drop]:
                    count -= entry[1]
                    spaces -= entry[2]
                del mids[:drop]
            window[0], window[2], window[3], window[4] = len(unique), count, spaces, added[-1]
        heading = self._heading(s)
        # a blank line after a section's last item; strip() ends the text after the last section's
        last_entry = self._entry(window[4] or "(none)", "\n\n" if s < 4 else "")
        return ("".join([heading[0], *[e[0] for e in window[1]], last_entry[0]]), heading[1] + window[2] + last_entry[1],
                heading[2] + window[3] + last_entry[2])

    def counted(self) -> tuple[str, int]:
        """`render_snapshot`'s text and the sum of `count` over its lines (-1 without `count`)."""
        parts = self.parts
        if parts[3] is None:  # (nearly every call: the last action changed; its lines looked up by the strings they show)
            action, request = self.actions.get(self.last_action), self.requests.get(self.last_request)
            heading = self.headings[3]
            if action is None or request is None or heading is None:
                self._part(3)
            else:
                parts[3] = (heading[0] + action[0] + request[0], heading[1] + action[1] + request[1], heading[2] + action[2] + request[2])
        head = self.head
        if None in parts:  # (a section unchanged since the last call keeps its part)
            for s in (0, 1, 2, 4):
                if parts[s] is None:
                    self._part(s)
                    if s < 3:
                        head = None
        if head is None:  # the first three sections together (they change far less often than the fourth)
            p0, p1, p2 = parts[0], parts[1], parts[2]
            head = self.head = (p0[0] + p1[0] + p2[0], p0[1] + p1[1] + p2[1], p0[2] + p1[2] + p2[2])  # type: ignore[index]
        p3, p4 = parts[3], parts[4]
        text = "".join((head[0], p3[0], p4[0]))  # type: ignore[index]
        if text[-1].isspace():  # an item with trailing blanks that strip() would take: the summarizer's own way
            text = render_snapshot(_last(self.unique[0], 12), _last(self.unique[1], 8), _last(self.unique[2], 12), self.last_action,
                                   self.last_request, _last(self.unique[4], 4))
            return text, self.count(text) if self.count is not None else -1
        if head[2] + p3[2] + p4[2] < WORD_LIMIT:  # type: ignore[index]  # at most WORD_LIMIT words, as text.split(" ") counts them
            return text, head[1] + p3[1] + p4[1] if self.count is not None else -1  # type: ignore[index]
        seen = start = total = 0  # the WORD_LIMIT-th space: in which section
        for s, part in enumerate(parts):
            if seen + part[2] < WORD_LIMIT:
                seen += part[2]
                start += len(part[0])
                total += part[1]
                continue
            cut = self.cuts.get((part, WORD_LIMIT - seen))  # the section as cut, its count
            if cut is None:
                cut = self.cuts[(part, WORD_LIMIT - seen)] = self._cut(s, WORD_LIMIT - seen)
            return text[:start] + cut[0], total + cut[1]
        raise AssertionError("unreachable: the spaces were counted")

    def _cut(self, s: int, need: int) -> tuple[str, int]:
        """Section `s` up to its `need`-th space, then " …"; the sum of `count` over its lines."""
        seen = total = 0
        kept: list[str] = []
        for line, c, n in self._lines(s):
            if seen + n >= need:
                at = -1
                for _ in range(need - seen):
                    at = line.index(" ", at + 1)
                cut = line[:at] + " \u2026"
                return "".join(kept) + cut, total + (self.count(cut) if self.count is not None else -1)
            kept.append(line)
            seen += n
            total += c
        raise AssertionError("unreachable: the section has the spaces")


_HEADINGS = tuple(f"## {title}\n" for title in SECTIONS)


def _last(unique: dict[str, None], limit: int) -> list[str]:
    """The last `limit` keys of an insertion-ordered dict (what `_unique(items, limit)` returns)."""
    out = list(islice(reversed(unique), limit))
    out.reverse()
    return out
