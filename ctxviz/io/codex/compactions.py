"""The compactions a Codex rollout records (`compacted` lines): a summary of the replacement history
that covers what came before, and whether Codex compacted on its own or by `/compact`, told from
the task the line sits in."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...engine.session import Compaction, Summary
from ..base import Fields, type_name
from ..responses import ItemReader
from .records import NOT_SENT_ITEMS, TASK_EVENTS


class CompactionReading:
    """`_Rollout`'s reading of compactions and of the tasks they sit in (a mixin: the state is `_Rollout`'s)."""

    def _task_item(self) -> None:
        """An item recorded in the task: a compaction in it is the turn's own (automatic)."""
        self.task_items += 1
        if self.quiet is not None:
            self._trigger(self.quiet, "auto")

    def _task_event(self, kind: str) -> None:
        """A task starts or ends: a compaction in a task that recorded no item was `/compact`'s."""
        if kind not in TASK_EVENTS:
            return
        if self.quiet is not None:
            self._trigger(self.quiet, "manual")
        self.in_task, self.task_items = kind == "task_started", 0

    def _trigger(self, k: int, trigger: str) -> None:
        self.compactions[k] = replace(self.compactions[k], trigger=trigger)
        self.quiet = None

    def compacted(self, p: Fields, timestamp: str, lineno: int) -> None:
        history = p.get("replacement_history")
        if history is not None:
            if not isinstance(history, list):
                raise p.error(f"expected a list, got {type_name(history)}", "replacement_history")
            text = self.history_text(p.child("replacement_history", history), history)
            self.src.tally("read {n} `compacted` line(s) as compactions: the messages before each are summarised by its replacement history")
        else:
            text = p.str("message") or "[compaction: no summary text recorded]"
            self.src.tally("read {n} `compacted` line(s) without a replacement history as compactions summarised by their `message`")
        self.reader.close()
        self.reader.latest_model = None
        drafts = self.reader.drafts
        covered = [d for d in drafts if d.role != "system"]
        self.summaries.append(Summary(
            text=text,
            depth=1,
            messages_covered=len(covered),
            time_range_start=covered[0].timestamp if covered else "",
            time_range_end=covered[-1].timestamp if covered else "",
            covers=tuple(d.id for d in covered),
            created_at=timestamp,
        ))
        trigger = p.get("trigger")
        self.compactions.append(Compaction(before_index=len(drafts), trigger=trigger if isinstance(trigger, str) else "",
                                           pre_tokens=self.last_fill))
        if not isinstance(trigger, str) and self.in_task:  # which it was, from the task it sits in (`_task_event`)
            if self.task_items:
                self._trigger(len(self.compactions) - 1, "auto")
            else:
                self.quiet = len(self.compactions) - 1

    def history_text(self, h: Fields, history: list[Any]) -> str:
        """The replacement history as the summary's text: each message as `[role]` and its text.

        Its developer messages are left out: the session's own system messages, which every policy
        keeps, stand for them.
        """
        reader = ItemReader(self.src)
        for i, item in enumerate(history):
            if isinstance(item, dict) and item.get("type") in NOT_SENT_ITEMS:
                # Codex never sends them, here as anywhere (they were read as summary text before).
                self.src.tally(f"left {{n}} `{item['type']}` item(s) out of replacement histories ({NOT_SENT_ITEMS[item['type']]})")
                continue
            reader.add(h.child(i, item))
        blocks = []
        for message in reader.messages():
            if message.role == "system":
                self.src.tally("left {n} developer message(s) of replacement histories out of their summaries "
                               "(the session's own system messages stand for them)")
                continue
            blocks.append(f"[{message.role}]\n{message.text}")
        return "\n\n".join(blocks)
