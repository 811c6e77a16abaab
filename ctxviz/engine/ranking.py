"""Lost anchors in the order a person debugging a forgetful agent needs them, each with why.

1. **What the user asked** — their requests, instructions and decisions in their own words, and
   the requirements of an issue the agent read with a tool (acceptance criteria).
2. **Used again** — paths, ids, errors and values the user named, or that the agent came back
   to after it first met them (most used first, then the most recently used).
3. **Debris** — what only a tool's output or the harness said, and nobody used again: listed
   last, and folded by the views.

Pure, no Qt; cheap (one pass over each anchor's message list, once per index), so every lost list is ranked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .anchor_extract import USER_KINDS
from .anchors import Anchor, AnchorIndex

#: Language constants quoted in prose: no fact of the session.
KEYWORDS = frozenset({"None", "True", "False", "Null", "NULL", "Nil", "TODO", "Optional", "Any"})
#: Tier -> its name, as the views head each group.
TIERS: dict[int, str] = {1: "what the user asked", 2: "used again", 3: "tool-output debris"}


@dataclass(frozen=True)
class Rank:
    tier: int
    #: Why the anchor ranks there, in a few words ("your instruction, #3", "the agent used it again in #41, 5 messages in all"):
    #: callers put it in brackets, so it holds none of its own.
    why: str
    #: Sort key within the tier (smaller first).
    order: tuple[int, ...]


def first_tier(anchor: Anchor) -> bool:
    """Whether `rank` puts the anchor in tier 1 (what the user asked), read without ranking it: the
    head of a long lost list is its tier-1 anchors in rank order, whenever there are enough of them."""
    return anchor.kind in USER_KINDS and anchor.voice == "user" or anchor.kind == "requirement"


def rank(anchor: Anchor, index: AnchorIndex) -> Rank:
    """Where one anchor ranks among the lost, and why (tier 1 exactly when `first_tier`)."""
    a = anchor
    voices = index.voices
    if a.kind in USER_KINDS and a.voice == "user":
        noun = "instruction" if a.kind == "instruction" else "request"
        what = f"your opening {noun}" if a.opening else f"your {noun}"
        return Rank(1, f"{what}, #{a.first_index}", (0 if a.opening else (1 if a.kind == "instruction" else 3), a.first_index))
    if a.kind == "requirement":
        return Rank(1, f"a requirement the agent read with a tool, #{a.first_index}", (2, a.first_index))
    if a.kind in USER_KINDS:
        return Rank(2, f"text you pasted or forwarded, #{a.first_index}", (0, 0, a.first_index))
    if a.kind == "quoted" and (a.value.isalpha() and (a.value.islower() or a.value in KEYWORDS) or a.value[:1] in "|=<>!&+-*/%"):
        return Rank(3, f"a plain word or code fragment in backticks, #{a.first_index}", (2, a.first_index))
    if a.user_named >= 0:
        return Rank(2, f"you named it in #{a.user_named}", (0, -len(a.messages), a.first_index))
    later = [k for k in a.messages if k > a.first_index and voices[k] == "assistant"]
    if a.kind == "lines" and len(later) < 2:
        return Rank(3, f"a line position visited once or twice, #{a.first_index}", (1, a.first_index))
    if later:
        return Rank(2, f"the agent used it again in #{later[-1]}, {len(a.messages)} messages in all", (1, -len(later), -later[-1]))
    source = {"tool": "tool output", "observation": "tool output", "harness": "harness text", "assistant": "the agent's own message",
              "system": "the system prompt's message"}.get(a.voice, "one message")
    where = f"#{a.first_index}" + (f" and {len(a.messages) - 1} more" if len(a.messages) > 1 else "")
    return Rank(3, f"only in {source} at {where}, never used again", (0 if a.voice == "assistant" else 1, a.first_index))


def ranked(anchors: Iterable[Anchor], index: AnchorIndex) -> tuple[tuple[Anchor, ...], dict[int, Rank]]:
    """The anchors in rank order, and each one's rank by anchor id (each anchor ranked once per
    index: `AnchorIndex.rank_memo`)."""
    memo = index.rank_memo
    ranks: dict[int, Rank] = {}
    keys: dict[int, tuple[int, tuple[int, ...], int]] = {}
    for a in anchors:
        found = memo.get(a.id)
        if found is None:
            r = rank(a, index)
            found = memo[a.id] = (r, (r.tier, r.order, a.id))
        ranks[a.id], keys[a.id] = found
    order = sorted(keys, key=keys.__getitem__)
    return tuple(index.anchors[i] for i in order), ranks  # an anchor's id is its position


def ranked_often(anchors: Iterable[Anchor], index: AnchorIndex) -> tuple[tuple[Anchor, ...], dict[int, Rank]]:
    """`ranked`, for a caller that ranks many lists of one index (a replay's losses: 2,000 lists
    holding 100,000 anchors for 10,000 messages, about 40 % of the replay's retention): every
    anchor is ranked once and given its place among all (`AnchorIndex.rank_order`), and each list
    is then sorted by that place, an integer, instead of by its rank's tuple. Same order, same ranks."""
    return ranked_ids([a.id for a in anchors], index)


def ranked_ids(ids: Iterable[int], index: AnchorIndex) -> tuple[tuple[Anchor, ...], dict[int, Rank]]:
    """`ranked_often` of the anchors with these ids (an anchor's id is its position in the index):
    the sort, the anchors and the ranks are read by C loops (`map`, `zip`), none per anchor in Python."""
    places, ranks = _rank_order(index)
    unique = list(dict.fromkeys(ids))
    order = sorted(unique, key=places.__getitem__)
    return tuple(map(index.anchors.__getitem__, order)), dict(zip(unique, map(ranks.__getitem__, unique), strict=True))


def _rank_order(index: AnchorIndex) -> tuple[list[int], list[Rank]]:
    """Every anchor's place in rank order and its rank (`AnchorIndex.rank_order`), computed once per index."""
    order = index.rank_order
    if order is None:
        memo = index.rank_memo
        ranks = []
        for a in index.anchors:
            found = memo.get(a.id)
            if found is None:  # kept for `ranked` too (a replay's last turn ranks its lost anchors after its losses)
                r = rank(a, index)
                found = memo[a.id] = (r, (r.tier, r.order, a.id))
            ranks.append(found[0])
        places = [0] * len(ranks)
        for place, i in enumerate(sorted(range(len(ranks)), key=lambda i: (ranks[i].tier, ranks[i].order, i))):
            places[i] = place
        order = index.rank_order = (places, ranks)
    return order
