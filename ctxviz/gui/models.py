"""Qt model/view for the message table: one model of the plan that sorts, filters and searches itself.

Why not a QSortFilterProxyModel (or any proxy) over a plain model: a proxy sorts and filters
through `data()` once per comparison (over a million Python calls per re-plan on 10,000 messages),
and even a proxy written in Python answers `index()`, `flags()` and `mapToSource()` in Python for
every visible cell on every repaint, which cost more than painting the table. This model keeps the
rows in view order in a Python list: a re-plan costs one filter pass and one keyed sort, and Qt's
own `index()` and `flags()` stay in C++.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from itertools import compress
from operator import ne
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from ..engine.filters import SHOWN_VOICES, Query, matching, parse_query
from ..engine.plan import Plan
from ..engine.reasons import short
from ..engine.session import Session
from ..glossary import define
from .safe import tooltip_html
from .theme import CATEGORY_COLORS, DECISION_COLORS, category_label
from .words import spelled

COLUMNS = ("#", "id", "role", "category", "tokens", "sent", "decision", "zone", "reason")
#: Voices (engine/voices.py) of user turns the user did not write, shown in the role column as what they are.
MACHINE_USER_VOICES = SHOWN_VOICES
#: What each such voice is, for the role column's hover and the detail panel.
VOICE_MEANINGS = {
    "harness": "A user turn the agent's harness wrote (a system reminder, an attachment, command output, injected "
               "instructions): sent to the model as a user message, but not the user's words.",
    "observation": "A command's output the agent sends back as a user turn (SWE-agent, mini-swe-agent): not the user's words.",
}


def role_shown(role: str, voice: str) -> str:
    """The role column's word: the voice for a user turn the harness or a tool wrote, else the role."""
    return voice if role == "user" and voice in MACHINE_USER_VOICES else role

#: The MessagePlan field each column shows (also the PlanColumns field it sorts by).
FIELDS = ("index", "id", "role", "category", "tokens", "sent_tokens", "decision", "zone", "reason")
NUMERIC = {0, 4, 5}
HEADER_TIPS = (
    "The message's position in the session (0 is the first).",
    "The message's id in the file.",
    "Who wrote it: system, user, assistant, or tool (a tool's result); harness or observation for a user turn the "
    "agent's harness or a command wrote (Claude Code's reminders and attachments, Codex's environment context).",
    "Its category: the colour it has in the strip, the bars and the reports.",
    "Its tokens as the policy's own estimator measures it, before any cut.",
    "What it costs as sent: 0 when not sent; less than 'tokens' when truncated or replaced by a placeholder; "
    "more when the policy charges extra for it as sent (supyagent adds 3 for measuring it as a one-message list).",
    "What the policy did with it: kept, dropped, summarized, truncated or replaced.\n"
    f"Summarised: {define('summarised')}\nReplaced: {define('replaced')}\nTruncated: {define('truncated')}",
    f"The part of the context the policy placed it in (fresh tail, evictable prefix, ...).\nZone: {define('zone')}\n"
    f"Fresh tail: {define('fresh tail')}\nEvictable prefix: {define('evictable prefix')}",
    "Why, in a few words; hover a cell (or select the message) for the policy's full sentence.",
)
Index = QModelIndex | QPersistentModelIndex



#: The last rows of a grown log announced as changed whatever their record says (engine/growth.py's TAIL).
GROWN_TAIL = 16


def _grew(before: Session | None, after: Session, rows: int) -> bool:
    """`after` is a later state of the log `before` was read from, whose plan had `rows` rows: the same
    file, its messages then still its first ones (checked at both ends, not read)."""
    if before is None or before is after or not before.source or before.source != after.source:
        return False
    old, new = before.messages, after.messages
    if not old or len(old) != rows or len(new) < len(old):
        return False
    return new[0].id == old[0].id and new[len(old) - 1].id == old[-1].id

class MessageTableModel(QAbstractTableModel):
    """Rows are the plan's messages that pass the filters, in the chosen sort order.

    `message_index(row)` and `view_row(message)` translate between table rows and message indices.
    """

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.plan: Plan | None = None
        self._texts: list[str] | None = []
        self._texts_of: Session | None = None
        self.role = ""
        self.decision = ""
        #: A reason code (engine/reason_codes.py): only the messages with it ("" all).
        self.reason = ""
        self.search = ""
        #: The search box's last parsed query (its `error` is shown beside the box).
        self.query = Query()
        self.sort_column = 0
        self.sort_order = Qt.SortOrder.AscendingOrder
        self.rows: list[int] = []  # message indices in view order
        #: Each message's voice (engine/voices.py), or () when unknown: harness turns show as such.
        self.voices: tuple[str, ...] = ()
        self._position: dict[int, int] | None = None  # message index -> view row, built on demand
        #: The plan whose records `data` has read, and those records by message index.
        self._records: tuple[Plan | None, dict[int, Any]] = (None, {})
        #: (first, last) row the view can show, set by a `MessageTableView`; None: compare every row.
        self.shown_rows: Callable[[], tuple[int, int]] | None = None

    # --- inputs -------------------------------------------------------------------------------
    @property
    def _identity(self) -> bool:
        """No filter and the default order: row r shows message r."""
        return not (self.role or self.decision or self.reason or self.search) and self.sort_column == 0 and self.sort_order == Qt.SortOrder.AscendingOrder

    def set_plan(self, session: Session | None, plan: Plan | None, voices: tuple[str, ...] = ()) -> None:
        self.voices = voices if plan is not None and len(voices) == len(plan.messages) else ()
        old, rows = self.plan, None
        if plan is not None and session is not None and session is self._texts_of:
            same_length = old is not None and len(old.messages) == len(plan.messages)
            # Filters and order may depend on what changed; with neither, the rows are 0..n-1 anyway.
            rows = self.rows if same_length and self._identity else self._ordered(plan)
            if same_length and rows == self.rows:
                # A re-plan of the same session with the same rows: tell the view which messages
                # changed, so it repaints only those it shows (often none) instead of all.
                self.plan = plan
                self._announce_changes(old, plan)  # type: ignore[arg-type]  (same_length implies old)
                return
        if plan is not None and session is not None and old is not None and self._identity and _grew(self._texts_of, session, len(old.messages)):
            self._grow(session, old, plan)
            return
        self.beginResetModel()
        self.plan = plan
        if session is None or plan is None:
            self._texts, self._texts_of = [], None
        elif session is not self._texts_of:  # the text search needs them (made then); a re-plan keeps them
            self._texts, self._texts_of = None, session
        self._set_rows(rows if rows is not None else self._ordered(plan))
        self.endResetModel()

    def _grow(self, session: Session, old: Plan, plan: Plan) -> None:
        """A followed log grew (no filter, the file's order): its new messages are rows inserted at
        the end, and of the others only those whose record changed are announced, so the view keeps
        its place and repaints what changed instead of resetting (reading every cell it shows again)."""
        before, after = len(old.messages), len(plan.messages)
        self._texts, self._texts_of = None, session  # the search's texts: made again on the next search
        if after > before:
            self.beginInsertRows(QModelIndex(), before, after - 1)
            self.plan = plan
            self._set_rows(list(range(after)))
            self.endInsertRows()
        else:
            self.plan = plan
        self._announce_changes(old, plan)
        # The last messages a loader may have rebuilt (their text can change with the same record).
        tail = max(0, before - GROWN_TAIL)
        if tail < before:
            self.dataChanged.emit(self.index(tail, 0), self.index(before - 1, len(COLUMNS) - 1))

    def _announce_changes(self, old: Plan, new: Plan) -> None:
        """dataChanged for the rows whose record changed. A re-plan of 10,000 messages can change
        thousands of reasons (they quote the budget), so with a view that says which rows it shows
        (`shown_rows`) only those are compared: the others are read afresh whenever scrolled to."""
        rows, olds, news = self.rows, old.messages, new.messages
        if self.shown_rows is not None:
            first, last = self.shown_rows()
            # Each row's old and new record read once (the records are built as they are read).
            shown = [(r, olds[rows[r]], news[rows[r]]) for r in range(max(0, first), min(last, len(rows) - 1, len(olds) - 1) + 1)]
            pairs = {r: (a, b) for r, a, b in shown if a != b}
            changed = list(pairs)
        else:
            messages = list(compress(range(len(news)), map(ne, olds, news)))
            changed = messages if self._identity else sorted(r for r in map(self.view_row, messages) if r is not None)
            pairs = {}
        if not changed:
            return
        # The columns that changed (often the reason alone: it quotes the budget or the cut).
        sample = changed if len(changed) <= 256 else changed[:: len(changed) // 256]
        records = [pairs.get(r) or (olds[rows[r]], news[rows[r]]) for r in sample]
        differing = [c for c, f in enumerate(FIELDS) if any(getattr(a, f) != getattr(b, f) for a, b in records)]
        left, right = (differing[0], differing[-1]) if differing and len(sample) == len(changed) else (0, len(COLUMNS) - 1)
        runs: list[tuple[int, int]] = []
        for r in changed:
            if runs and r == runs[-1][1] + 1:
                runs[-1] = (runs[-1][0], r)
            else:
                runs.append((r, r))
        if len(runs) > 64:  # scattered changes: one range; the view still repaints only what it shows
            runs = [(changed[0], changed[-1])]
        for top, bottom in runs:
            self.dataChanged.emit(self.index(top, left), self.index(bottom, right))

    def set_filters(self, role: str | None = None, decision: str | None = None, search: str | None = None,
                    reason: str | None = None) -> None:
        if role is not None:
            self.role = role
        if reason is not None:
            self.reason = reason
        if decision is not None:
            self.decision = decision
        if search is not None:
            self.search = search
        self.beginResetModel()
        self._set_rows(self._ordered(self.plan))
        self.endResetModel()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.sort_column, self.sort_order = column, order
        self.layoutAboutToBeChanged.emit()
        # Keep the selection (and any other persistent index) on the same messages.
        before = self.persistentIndexList()
        messages = [self.rows[i.row()] if i.row() < len(self.rows) else None for i in before]
        self._set_rows(self._ordered(self.plan))
        after = []
        for old, message in zip(before, messages, strict=True):
            row = self.view_row(message) if message is not None else None
            after.append(self.index(row, old.column()) if row is not None else QModelIndex())
        self.changePersistentIndexList(before, after)
        self.layoutChanged.emit()

    def _set_rows(self, rows: list[int]) -> None:
        self.rows, self._position = rows, None

    def _ordered(self, plan: Plan | None) -> list[int]:
        """The message indices `plan` shows under the current filters, in the current order."""
        if plan is None:
            return []
        rows = self._accepted(plan)
        if rows and not (self.sort_column == 0 and self.sort_order == Qt.SortOrder.AscendingOrder):
            keys = self.sort_keys(plan, self.sort_column)
            if self.sort_column == 2 and self.voices:  # by the role as shown
                keys = list(map(role_shown, keys, self.voices))
            rows.sort(key=keys.__getitem__, reverse=self.sort_order == Qt.SortOrder.DescendingOrder)
        return rows

    def _accepted(self, plan: Plan) -> list[int]:
        rows: range | list[int] = range(len(plan.messages))
        cols = plan.columns
        if self.role:
            voices = self.voices
            if self.role in MACHINE_USER_VOICES:
                rows = [r for r in rows if voices and voices[r] == self.role and cols.role[r] == "user"]
            elif self.role == "user" and voices:  # the user's own turns, not the harness's
                rows = [r for r in rows if cols.role[r] == "user" and voices[r] not in MACHINE_USER_VOICES]
            else:
                rows = [r for r in rows if cols.role[r] == self.role]
        if self.decision:
            rows = [r for r in rows if cols.decision[r].value == self.decision]
        if self.reason:
            codes = plan.reason_codes
            rows = [r for r in rows if codes[r] == self.reason]
        if self.search:
            self.query = parse_query(self.search, plan)
            if not self.query.empty:
                rows = matching(plan, self.texts, self.query, rows, self.voices)
        return list(rows)

    def rows_by_other_filters(self) -> list[int] | None:
        """The messages the role, decision and search filters accept, whatever the reason filter
        (what the grouped view groups by reason); None when those filters accept every message."""
        if self.plan is None or not (self.role or self.decision or self.search):
            return None
        reason, self.reason = self.reason, ""
        try:
            return self._accepted(self.plan)
        finally:
            self.reason = reason

    @property
    def texts(self) -> list[str]:
        """Each message's text, made on the first search: joining the parts of 100,000 messages
        takes seconds, which the first plan of a long session should not wait for."""
        if self._texts is None:
            self._texts = [m.text for m in self._texts_of.messages] if self._texts_of is not None else []
        return self._texts

    @staticmethod
    def sort_keys(plan: Plan, col: int) -> list[Any]:
        """One sort key per message, so sorting is a single `list.sort` instead of a call per comparison."""
        values = list(getattr(plan.columns, FIELDS[col]))
        if col in (3, 6):
            values = [str(v) if col == 3 else v.value for v in values]
        return values

    # --- rows and messages --------------------------------------------------------------------
    def total_count(self) -> int:
        """Messages in the plan, whatever the filters show."""
        return 0 if self.plan is None else len(self.plan.messages)

    def message_index(self, row: int) -> int:
        return self.rows[row]

    def view_row(self, message_index: int) -> int | None:
        """The table row showing a message, or None when the filters hide it."""
        if self._position is None:
            if self._identity:
                return message_index if 0 <= message_index < len(self.rows) else None
            self._position = {message: row for row, message in enumerate(self.rows)}
        return self._position.get(message_index)

    # --- QAbstractTableModel ------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return HEADER_TIPS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        """The view asks about seven roles per visible cell on every repaint, so the common
        "nothing for this role" answer comes first and colours are built once."""
        if role not in _ROLES or self.plan is None or not index.isValid():
            return None
        # The records the view shows, kept per plan: four roles of nine cells ask for each row's.
        records, i = self._records, self.rows[index.row()]
        if records[0] is not self.plan:
            records = self._records = (self.plan, {})
        m = records[1].get(i)
        if m is None:
            m = records[1][i] = self.plan.messages[i]
        col = index.column()
        if role == _DISPLAY:
            if col == 8:
                return short(m)  # the sentence is the tooltip and the detail panel's
            value = getattr(m, FIELDS[col])
            if col in (4, 5):
                return f"{value:,}"
            if col == 2 and self.voices:
                return role_shown(value, self.voices[m.index])
            if col == 6:
                return spelled(value.value)
            return category_label(str(value)) if col == 3 else (spelled(value) if col == 7 else value)
        if role == _ALIGN:
            return _RIGHT if col in NUMERIC else None
        if role == _FOREGROUND:
            if col == 2 and self.voices and role_shown(m.role, self.voices[m.index]) != m.role:
                return _MACHINE_BRUSH
            return _decision_brush(m.decision.value) if col == 6 else None
        if role == _DECORATION:
            return _category_color(str(m.category)) if col == 3 else None
        # Tooltips are auto-detected as rich text: the reason or message text, escaped (safe.py).
        if col == 8:
            return _tooltip(spelled(m.reason))
        if col == 2 and self.voices and role_shown(m.role, self.voices[m.index]) != m.role:
            return _tooltip(VOICE_MEANINGS[self.voices[m.index]])
        return _tooltip(self._texts[m.index][:600] if self._texts is not None else self._texts_of.messages[m.index].text[:600]
                        if self._texts_of is not None else "")


_DISPLAY = int(Qt.ItemDataRole.DisplayRole.value)
_ALIGN = int(Qt.ItemDataRole.TextAlignmentRole.value)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole.value)
_DECORATION = int(Qt.ItemDataRole.DecorationRole.value)
_ROLES = frozenset({_DISPLAY, _ALIGN, _FOREGROUND, _DECORATION, int(Qt.ItemDataRole.ToolTipRole.value)})
_RIGHT = int((Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter).value)
#: A harness turn's role, greyed: not the user's words.
_MACHINE_BRUSH = QBrush(QColor("#8a8a8a"))


def _tooltip(text: str) -> str | None:
    return tooltip_html(text) or None


@cache
def _decision_brush(decision: str) -> QBrush:
    return QBrush(QColor(DECISION_COLORS.get(decision, "#888888")).darker(115))


@cache
def _category_color(category: str) -> QColor:
    return QColor(CATEGORY_COLORS.get(category, "#b0b0b0"))
