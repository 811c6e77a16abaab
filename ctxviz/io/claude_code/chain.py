"""Which lines of a Claude Code file are the conversation (`_Chain`, a part of `reader._Reader`): the
chain of `parentUuid`s from the file's last line back to the root, crossing compactions through
`logicalParentUuid`, and the lines that hang beside it (the streamed parts of one assistant message,
the results of parallel tool calls, a hook's context); the lines off it are counted by why (a
rewind, a `/compact` request, a missing parent). Also how the chain grows when a followed file
appends lines (`_grow_included`), or why it cannot be carried on (`_unsure`)."""

from __future__ import annotations

import os
from bisect import bisect_left
from typing import Any

from ...engine.session import ToolCallPart, ToolResultPart
from .lines import _BOUNDARIES, _CHAINED_TYPES, _MISSING, MESSAGE_TYPES, SUBAGENT_FILE, _build_parts, _Line


class _Chain:
    """The conversation's lines among a file's lines. A part of `reader._Reader`, which sets the
    attributes these methods read and grow (`lines`, `by_uuid`, `chained`, `chain`, `included`,
    `verdict`...; see its `__init__`)."""

    def _scope(self) -> list[_Line]:
        """The lines of the conversation this file is about; sets `agent` when the file is a
        sub-agent's own transcript (then its `isSidechain` lines are the conversation)."""
        lines = self.lines
        scope = [x for x in lines if not x.sidechain]
        # _is_turn_line, inlined (one pass over a large file's lines costs what its checks cost)
        self.main_turns = sum(1 for x in scope if x.uuid and (x.kind in MESSAGE_TYPES or x.role))
        match = SUBAGENT_FILE.match(os.path.basename(self.src.path))
        if match or (not self.main_turns and any(_is_turn_line(x) for x in lines)):
            turns = [x for x in lines if _is_turn_line(x)]
            self.sub = True
            self.agent_id = next((str(x.record["agentId"]) for x in turns if isinstance(x.record.get("agentId"), (str, int))), "")
            self.agent_default = match.group("id") if match else "unknown"
            _build_parts(self.src, lines)
            return list(lines)
        self.sidechain = len(lines) - len(scope)
        return scope

    @property
    def agent(self) -> str:
        """A sub-agent transcript's id ("" for a main session)."""
        return (self.agent_id or self.agent_default) if self.sub else ""

    def _included(self, scope: list[_Line]) -> set[int]:
        """Positions (in `scope`) of the lines that make up the conversation."""
        is_turn = self._is_turn
        if not any(((x.parent is not _MISSING and x.parent is not None) or x.logical) and is_turn(x) for x in scope):
            self.in_order = True
            return {i for i, x in enumerate(scope) if is_turn(x)}  # no line says what it follows (hand-made or stream output): the file's order is the conversation
        by_uuid = self.by_uuid
        previous = None
        chained: list[int] = []
        segments: list[int] = []
        for i, x in enumerate(scope):  # one pass: each line's uuid, its parent, whether the chain runs through it
            if x.parent is _MISSING:
                x.parent = previous
            uuid = x.uuid
            if uuid:
                if uuid not in by_uuid:
                    by_uuid[uuid] = i
                kind = x.kind
                if kind != "progress":
                    previous = uuid
                    if kind in _CHAINED_TYPES or x.role:  # _chained, inlined
                        chained.append(i)
            if x.segment:
                segments.append(i)
        self.previous = previous
        self.chained = chained
        if not chained:
            return set()
        chain = self.chain
        at: int | None = chained[-1]
        find = by_uuid.get
        while at is not None and at not in chain:
            chain.add(at)
            # _parent_position, with the common case (a parent the file has) inlined
            x = scope[at]
            parent = x.parent if x.parent else (x.logical or None)
            found = find(parent) if parent is not None else None
            at = found if found is not None or parent is None else self._parent_position(scope, at)
        included = set(chain)
        # A compaction that kept a segment verbatim: the lines after it continue from that segment's
        # tail, so the boundary and its summary hang beside the chain (they lead to the segment's head).
        for i in segments:
            ends = scope[i].segment
            if i in included or not any(by_uuid.get(ends[k]) in chain for k in ("headUuid", "tailUuid")):
                continue
            at = by_uuid.get(ends["anchorUuid"])
            while at is not None and at not in included:
                included.add(at)
                if at == i:
                    break
                at = by_uuid.get(scope[at].parent) if scope[at].parent else None
            included.add(i)
        self._siblings(scope, range(len(scope)), included, chain)
        self._count_left_out(scope, range(len(scope)), included)
        return included

    def _parent_position(self, scope: list[_Line], at: int) -> int | None:
        """The next line up the chain from `at` (None at a root)."""
        x = scope[at]
        parent = x.parent if x.parent else (x.logical or None)  # a compaction starts a new root
        if parent is None:
            return None
        found = self.by_uuid.get(parent)
        if found is None:
            # A parent the file does not have: a compaction naming a last message Claude Code never
            # wrote (2.1.x), or a file trimmed by hand. The conversation goes on with the line before.
            before = bisect_left(self.chained, at)
            found = self.chained[before - 1] if before else None
            self.breaks += 1
            if found is not None:
                self.continued += 1
        return found

    def _siblings(self, scope: list[_Line], positions: range, included: set[int], chain: set[int], strict: bool = False) -> bool:
        """Add to `included` the lines at `positions` that hang beside the chain: the streamed lines
        of one assistant message, the results of parallel tool calls, and what a parallel branch
        brought with it (a hook's context after one of the parallel calls)."""
        # What a load that is carried on later needs (`more`) is kept for every line; a load that is
        # not (`keep` off) looks only at the lines off the chain, usually none or a few.
        track = self.keep
        off = [i for i in positions if i not in included]
        off_assistants = [i for i in off if scope[i].role == "assistant" and scope[i].message_id]
        if track or off_assistants:
            self.included_ids.update(x.message_id for i in positions if (x := scope[i]).role == "assistant" and x.message_id and i in included)
            ids = self.included_ids
            for i in off_assistants:
                if scope[i].message_id in ids:
                    included.add(i)
        off_users = [i for i in off if scope[i].role == "user" and scope[i].parts]
        if track or off_users:
            calls, answered = self.calls, self.answered
            new_calls: set[str] = set()
            new_answers: set[str] = set()
            for i in positions:
                x = scope[i]
                if x.parts and i in included:
                    for p in x.parts:
                        if isinstance(p, ToolCallPart) and p.id:
                            new_calls.add(p.id)
                        elif isinstance(p, ToolResultPart):
                            new_answers.add(p.tool_call_id)
            if strict and (any(c in self.off_results and c not in answered and c not in calls for c in new_calls)
                           or any(a in self.parallel_answers for a in new_answers)):
                # A call whose result was left out (it would now be taken in), or a call answered again
                # on the chain that a parallel result answered (that result would now be left out).
                return self._unsure("a call whose result was left out, or one answered again", False)
            calls |= new_calls
            answered |= new_answers
            for i in off_users:
                results = [p.tool_call_id for p in scope[i].parts if isinstance(p, ToolResultPart)]
                if results and all(r in calls and r not in answered for r in results):
                    included.add(i)
                    answered.update(results)
                    self.parallel_answers.update(results)
        attachments = [(i, x) for i in off if (x := scope[i]).kind == "attachment" and x.parent]
        grew = True
        while grew:
            grew = False
            for i, x in attachments:
                if i not in included and (at := self.by_uuid.get(x.parent)) in included and at not in chain:
                    included.add(i)
                    grew = True
        for i in off:  # what a later line could still bring in (carrying on is then not sure: see `more`)
            x = scope[i]
            if x.role and i not in included:
                if x.role == "assistant" and x.message_id:
                    self.off_ids.add(x.message_id)
                if x.role == "user":
                    self.off_results.update(p.tool_call_id for p in x.parts if isinstance(p, ToolResultPart))
        return True

    def _count_left_out(self, scope: list[_Line], positions: range, included: set[int]) -> None:
        """Conversation lines off the chain: a branch a rewind abandoned, the `/compact` request a
        compaction took the place of, or lines whose parent is not in the file."""
        by_uuid = self.by_uuid
        self.compacted_after.update(x.logical for i in positions if (x := scope[i]).subtype == "compact_boundary" and x.logical)
        compacted_after = self.compacted_after
        verdict = self.verdict  # position -> "rewind", "compact" or "unlinked"

        def classify(i: int) -> str:
            path: list[int] = []
            at: int | None = i
            result = "rewind"
            while at is not None:
                if at in verdict:
                    result = verdict[at]
                    break
                path.append(at)
                x = scope[at]
                parent = x.parent if x.parent else (x.logical or None)
                if parent is None:
                    break
                if parent not in by_uuid:
                    result = "unlinked"
                    break
                at = by_uuid[parent]
                if at in included:
                    # The branch leaves the conversation at `parent`: a `/compact` request hangs where the
                    # boundary's logical parent is (the boundary takes its place), anything else was rewound.
                    result = "compact" if parent in compacted_after and scope[path[-1]].role == "user" else "rewind"
                    break
                if at in path:
                    break
            for p in path:
                verdict[p] = result
            return result

        for i in positions:
            if i not in included:
                x = scope[i]
                if x.uuid and (x.kind in MESSAGE_TYPES or x.role):
                    self.left_out[classify(i)] += 1

    def _unsure(self, why: str, value: Any = None) -> Any:
        """Not carried on: a full load is needed; `why` says which case (for tests and curiosity)."""
        self.why_full = why
        return value

    def _grow_included(self, scope: list[_Line], positions: range) -> bool:
        """`_included` for lines appended to `scope` at `positions`, when the lines before keep
        their places (False when that is not sure)."""
        included = self.included
        if self.in_order:
            if any((scope[i].parent is not _MISSING and scope[i].parent is not None) or scope[i].logical
                   for i in positions if self._is_turn(scope[i])):
                return self._unsure("a line gives its parent in a file whose lines gave none", False)
            included.update(i for i in positions if self._is_turn(scope[i]))
            return True
        by_uuid, missing = self.by_uuid, self.missing
        previous = self.previous
        for i in positions:
            x = scope[i]
            if x.parent is _MISSING:
                x.parent = previous
            if x.uuid:
                if x.uuid in missing:
                    return self._unsure("a line an earlier line named as its parent (or cleared) was written after it", False)  # an earlier line named it: what that line meant changes
                by_uuid.setdefault(x.uuid, i)
            if x.uuid and x.kind != "progress":
                previous = x.uuid
        self.previous = previous
        missing.update(u for i in positions for u in _references(scope[i]) if u not in by_uuid)
        new_chained = [i for i in positions if _chained(scope[i])]
        chain = self.chain
        if new_chained:
            old_tip = self.chained[-1] if self.chained else None
            if old_tip is None and any(x.role or x.kind == "attachment" for x in scope[: positions.start]):
                return self._unsure("the first chain of the file", False)  # the first chain: lines read before may hang beside it
            self.chained += new_chained
            path: set[int] = set()
            at: int | None = new_chained[-1]
            while at is not None and at != old_tip and at not in path:
                if at < positions.start and (at in chain or _chained(scope[at]) or at in self.verdict or self.has_segments):
                    # An earlier turn (a rewind to it), or an earlier line whose place on the chain
                    # changes how other lines were read.
                    return self._unsure("the new last line does not hang from the previous one (a rewind, a new root)", False)
                path.add(at)  # new lines, and earlier lines no turn hangs from (a progress line, a snapshot)
                at = self._parent_position(scope, at)
            if at != old_tip:
                return self._unsure("the new last line does not hang from the previous one (a rewind, a new root, a loop)", False)
            new_ids = {scope[i].message_id for i in path if scope[i].role == "assistant" and scope[i].message_id}
            if new_ids & self.off_ids:
                return self._unsure("a streamed part of a message left out before", False)  # it would take in a streamed part of a message left out before
            chain |= path
            included |= path
        elif not self.chained:
            return True  # still no chain: nothing is included (as a full load finds)
        if not self._siblings(scope, positions, included, chain, strict=True):
            return False
        self._count_left_out(scope, positions, included)
        return True

    @staticmethod
    def _is_turn(x: _Line) -> bool:
        """A line that is part of the conversation (as opposed to bookkeeping)."""
        if x.kind == "system":
            return x.subtype in _BOUNDARIES
        return x.kind == "attachment" or bool(x.role)


def _is_turn_line(x: _Line) -> bool:
    """A turn, for telling a sub-agent's transcript from a main session."""
    return bool(x.uuid) and (x.kind in MESSAGE_TYPES or bool(x.role))


def _chained(x: _Line) -> bool:
    """A line the chain of `parentUuid`s runs through."""
    return bool(x.uuid) and x.kind != "progress" and (x.kind in MESSAGE_TYPES or bool(x.role) or x.kind == "system")


def _references(x: _Line) -> list[str]:
    """The uuids a line names: its parent, its logical parent, its preserved segment's ends, the
    attachments a microcompaction cleared."""
    refs = [x.parent] if isinstance(x.parent, str) and x.parent else []
    if x.logical:
        refs.append(x.logical)
    if x.segment:
        refs += [u for u in x.segment.values() if u]
    refs += x.cleared[1]
    return refs
