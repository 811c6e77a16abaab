"""Compare: the current plan (A) against another policy or parameter set (B), differences highlighted."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...engine.explain import (
    Difference,
    DifferenceGroup,
    SummaryDifference,
    compare,
    compare_summaries,
    differences_headline,
    group_differences,
)
from ...engine.plan import Plan, SummaryPlan
from ...engine.policies import get_policy, policy_names
from ...engine.policies.base import params_dict
from ...engine.reason_codes import code_of
from ...engine.reasons import short
from ...engine.wording import clip, counted
from ..safe import idle_label, plain_label, tooltip_html
from ..theme import WARNING
from ..words import spelled
from .diff_lane import DiffLane, lane_legend_html
from .message_strip import MessageStrip


def settings_text(plan: Plan) -> str:
    """The policy and the parameters that differ from its defaults: how a strip is labelled."""
    defaults = params_dict(get_policy(plan.policy).default_params()) if plan.policy in policy_names() else {}
    changed = [f"{k}={v}" for k, v in plan.params.items() if defaults.get(k, v) != v]
    return f"{plan.policy} ({', '.join(changed) if changed else 'defaults'})"


def side_headline(side: str, plan: Plan) -> str:
    """One side's figures and its plan's own verdict: "7,120 of 8,000 tokens, 17 sent" read as
    fitting when missy's history was over its allotment (the CLI's compare says so)."""
    t = plan.totals
    return f"{side} ({plan.policy}): {t.used:,} of {t.budget:,} tokens, {t.kept_messages:,} sent, {plan.fit_verdict()}"


def side_headline_html(side: str, plan: Plan) -> str:
    """`side_headline`, escaped, in the warning colour when the plan does not fit."""
    text = html.escape(side_headline(side, plan))
    return text if plan.totals.fits else f"<span style='color:{WARNING}'>{text}</span>"


#: What a strip's segments are as wide as when the two sides count tokens differently.
BY_MESSAGE_HELP = "one step wide (A and B count tokens with different estimators, so the strips step by message)"


def scale_sentence(a: Plan, b: Plan) -> str:
    """Why the strips step by message: the CLI's sentence, and what the strips do about it."""
    return (f"Tokens counted with {a.tokenizer} for A and {b.tokenizer} for B, so their token figures are not on one scale: "
            "the strips are drawn one step per message (the same position is the same message), and each side's tokens are its own count.")


#: The tree's columns: a group row fills them for its messages, a message row for itself.
TREE_COLUMNS = ("messages", "A", "B", "A's reason", "B's reason", "tokens (A / B)")
#: Where a message row keeps its message's index.
MESSAGE_ROLE = int(Qt.ItemDataRole.UserRole.value)
#: Where a group row keeps its number (its messages are made when it is opened).
GROUP_ROLE = MESSAGE_ROLE + 1


def cost_text(c: Any) -> str:
    """One side's replay priced with prompt caching, or why it is not: a model without cache prices
    read "input $0.0000 with (no model named)'s prompt caching, cache hits 0%", a price and a share
    the replay never had."""
    if c is None:
        return "could not be replayed"
    if not c.caches:
        if c.known and c.model.input_per_mtok:  # priced, without caching: the price stands, every token as input
            return f"input ${c.cost:,.4f}, every token priced as input ({c.model.name} has no prompt caching in the catalogue)"
        name = c.model.name.strip("()")  # "(no model named)", "(unknown model)" or a name the catalogue lacks
        return f"no cache model for this model ({name}): no price and no cache share"
    return f"input ${c.cost:,.4f} with {c.model.name}'s prompt caching, cache hits {c.hit_share:.0%}, cache broken at {counted(len(c.breaks), 'turn')}"


#: The tab before any comparison.
IDLE_TEXT = ("Compare the current view (A) with another policy, or the same one with other parameters (B): "
             "choose B above and press Compare. The messages the two decide differently appear here, grouped by both sides' reasons, "
             "with both strips and the tokens at stake.")


class CompareView(QWidget):
    compareRequested = Signal(str, dict)
    #: A message index to show (a row of the differences was opened).
    messageRequested = Signal(int)

    def __init__(self, policies: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.policy = QComboBox()
        self.policy.addItems(policies)
        self.overrides = QLineEdit()
        self.overrides.setPlaceholderText("B's parameters, e.g. total=50000 fresh_tail_count=24")
        run = QPushButton("Compare")
        run.clicked.connect(self.request)
        self.overrides.returnPressed.connect(self.request)
        top = QHBoxLayout()
        top.addWidget(QLabel("B:"))
        top.addWidget(self.policy)
        top.addWidget(self.overrides, 1)
        top.addWidget(run)
        self.summary = QLabel("A is the current view. Choose B and press Compare.")
        self.summary.setTextFormat(Qt.TextFormat.RichText)  # escaped by `side_headline_html`: a colour for a side that does not fit
        self.summary.setWordWrap(True)
        self.costs = plain_label()
        self.costs.setWordWrap(True)
        self.costs.hide()
        # Shown when A has changed since the comparison: never an old result passed off as current.
        self.stale = QWidget()
        stale = QHBoxLayout(self.stale)
        stale.setContentsMargins(0, 0, 0, 0)
        self.stale_label = plain_label()
        self.stale_label.setStyleSheet(f"color: {WARNING};")
        self.stale_label.setWordWrap(True)
        refresh = QPushButton("Compare again")
        refresh.clicked.connect(self.request)
        stale.addWidget(self.stale_label, 1)
        stale.addWidget(refresh)
        self.stale.hide()
        self.shown: tuple[Plan, Plan] | None = None
        self.groups: list[DifferenceGroup] = []
        self._group_members: dict[int, list[Difference]] = {}
        self.strip_a = MessageStrip()
        self.strip_b = MessageStrip()
        self._token_help = self.strip_a.help_text
        # One row per group of differences (both sides' decisions and reason codes), with its count
        # and tokens; a group opens to its messages (139 identical rows were one reason said 139 times).
        self.table = QTreeWidget()
        self.table.setColumnCount(len(TREE_COLUMNS))
        self.table.setHeaderLabels(list(TREE_COLUMNS))
        self.table.setRootIsDecorated(True)
        self.table.setUniformRowHeights(True)
        self.table.setAlternatingRowColors(True)
        self.table.itemExpanded.connect(self._fill_group)
        self.table.itemActivated.connect(self._open_item)
        self.table.setToolTip("Differences grouped by both sides' decisions and reasons; open a group for its messages, "
                              "double-click (or Enter) a message to show it on the overview")
        header = self.table.header()
        header.setStretchLastSection(False)
        for col in (3, 4):  # the reasons share the width; hover shows a long one whole
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)
        # The strips stay out of the way until there is something to compare.
        self.strips = QWidget()
        strips = QVBoxLayout(self.strips)
        strips.setContentsMargins(0, 0, 0, 0)
        self.label_a, self.label_b = plain_label("A (current view)"), plain_label("B")
        # Said when the two sides count tokens with different estimators (as `ctxviz compare` says it).
        self.scale_note = plain_label()
        self.scale_note.setObjectName("compare-scale")
        self.scale_note.hide()
        strips.addWidget(self.scale_note)
        # Between the strips, a thin lane marks the messages decided differently (not outlines).
        self.lane = DiffLane(self.strip_a)
        self.lane.messageClicked.connect(self.messageRequested)
        self.lane_label = QLabel()
        self.lane_label.setTextFormat(Qt.TextFormat.RichText)  # our own words and colours only
        # Wrapped, as the labels over the strips: on one line the lane's key (820 pixels) widened a
        # 1024-pixel window to 1098 once a comparison was shown.
        for label in (self.lane_label, self.label_a, self.label_b, self.scale_note):
            label.setWordWrap(True)
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        for label, strip in ((self.label_a, self.strip_a), (self.label_b, self.strip_b)):
            strip.setFixedHeight(120)
            strips.addWidget(label)
            strips.addWidget(strip)
            if strip is self.strip_a:
                strips.addWidget(self.lane_label)
                strips.addWidget(self.lane)
        self.strips.setVisible(False)
        # One token axis for both: zooming or panning one moves the other.
        self.strip_b.setXLink(self.strip_a)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(self.costs)
        layout.addWidget(self.stale)
        layout.addWidget(self.strips)
        layout.addWidget(self.table, 1)
        # With no difference, a sentence where the table would be an empty box under its headers.
        self.same = plain_label()
        self.same.setObjectName("compare-same")
        self.same.setWordWrap(True)
        self.same.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.same.hide()
        layout.addWidget(self.same, 1)
        # Before any comparison, what the tab will show, not an empty table under its headers.
        self.idle = idle_label(IDLE_TEXT, "compare-idle")
        self.table.hide()
        layout.addWidget(self.idle, 1)

    def check_current(self, plan: Plan, changes: Sequence[str] = ()) -> None:
        """Say so when A has changed since the comparison shown: its policy, parameters or length,
        or `changes`, the other inputs of A's plan that differ in words (tokenizer, pins,
        pair safety, the real count's model: the comparison went on saying "the current view")."""
        if self.shown is None:
            return
        a = self.shown[0]
        if (a.policy, dict(a.params)) != (plan.policy, dict(plan.params)) or len(a.messages) != len(plan.messages):
            self.mark_stale(f"This comparison is of an earlier A ({settings_text(a)}); the current view is {settings_text(plan)}"
                            + (f"; since then: {'; '.join(changes)}." if changes else "."))
        elif changes:
            self.mark_stale(f"This comparison is of an earlier A ({settings_text(a)}); since then: {'; '.join(changes)}.")
        else:
            self.stale.hide()
            self.label_a.setText(f"A: {settings_text(a)} (the current view)")

    def mark_stale(self, text: str) -> None:
        """The comparison shown is not of the current view: `text` says why, with one click to compare again."""
        if self.shown is None:
            return
        self.stale_label.setText(text)
        self.stale.show()
        self.label_a.setText(f"A: {settings_text(self.shown[0])} (an earlier view, not the current one)")

    def _open_item(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        """A message row opens the message on the overview (a group row opens or closes itself)."""
        index = item.data(0, MESSAGE_ROLE)
        if index is not None:
            self.messageRequested.emit(int(index))

    def _fill_group(self, item: QTreeWidgetItem) -> None:
        """A group's message rows, made when it is first opened (a group may hold 10,000)."""
        group = item.data(0, GROUP_ROLE)
        diffs = self._group_members.pop(group, None) if group is not None else None
        if diffs is None:
            return
        item.takeChildren()
        children = []
        for d in diffs:
            tokens = f"{d.a.tokens:,}" if d.a.tokens == d.b.tokens else f"{d.a.tokens:,} / {d.b.tokens:,}"
            child = QTreeWidgetItem([f"#{d.index}", spelled(d.a.decision.value), spelled(d.b.decision.value), short(d.a), short(d.b), tokens])
            child.setData(0, MESSAGE_ROLE, d.index)
            child.setTextAlignment(5, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            child.setToolTip(3, tooltip_html(d.a.reason))
            child.setToolTip(4, tooltip_html(d.b.reason))
            children.append(child)
        item.addChildren(children)

    def group_items(self) -> list[QTreeWidgetItem]:
        """The rows of the message groups (each opens to its messages)."""
        return [item for item in self._rows() if item.data(0, GROUP_ROLE) is not None]

    def summary_items(self) -> list[QTreeWidgetItem]:
        """The rows of the summaries decided differently, after the groups."""
        return [item for item in self._rows() if item.data(0, GROUP_ROLE) is None]

    def _rows(self) -> list[QTreeWidgetItem]:
        return [self.table.topLevelItem(i) for i in range(self.table.topLevelItemCount())]

    def set_request(self, policy: str, overrides: str) -> None:
        """Fill in B (the app's `--compare` options) without running it."""
        self.policy.setCurrentText(policy)
        self.overrides.setText(overrides)

    def request(self) -> None:
        """Compare with B as filled in (the Compare button, Enter in the parameters field)."""
        overrides = {}
        for item in self.overrides.text().replace(",", " ").split():
            key, _, value = item.partition("=")
            if key:
                overrides[key] = value
        self.compareRequested.emit(self.policy.currentText(), overrides)

    def show_costs(self, a: Plan, b: Plan, cost_a: Any, cost_b: Any) -> None:
        """Each side replayed turn by turn and priced with prompt caching, under the totals."""
        if self.shown is None or self.shown[0] is not a or self.shown[1] is not b:
            return
        lines = [f"{side} replayed: " + cost_text(c) for side, c in (("A", cost_a), ("B", cost_b))]
        self.costs.setText("\n".join(lines))
        self.costs.show()

    def show_result(self, a: Plan, b: Plan, recorded: int | None = None) -> None:
        """Both plans side by side; `recorded` is how many summaries the session's file records
        (without it a summary both sides write now was named "summary #2", as if the log had it)."""
        self.shown = (a, b)
        self.stale.hide()
        self.costs.setText("Replaying both sides to price them with prompt caching…")
        self.costs.show()
        diffs = compare(a, b)
        # Two estimators put the same messages at different token positions (Gemini CLI's count of
        # 30 messages ended at 6,894, missy's near 1,400, as if B's session were shorter): the
        # strips then step one message at a time, so the same position is the same message.
        same_scale = a.tokenizer == b.tokenizer
        for strip in (self.strip_a, self.strip_b):
            strip.by_tokens = same_scale
        self.strip_a.set_plan(None, a)
        self.strip_b.set_plan(None, b)
        for strip in (self.strip_a, self.strip_b):
            strip.getAxis("bottom").setLabel("cumulative tokens" if same_scale else "message index (one step per message)")
            strip.help_text = self._token_help if same_scale else self._token_help.replace("as wide as its tokens", BY_MESSAGE_HELP)
            strip.setToolTip(strip.help_text)
        self.scale_note.setText("" if same_scale else scale_sentence(a, b))
        self.scale_note.setVisible(not same_scale)
        # Linked, the strips showed B's width: A's messages past it were off the edge (each policy
        # counts with its own counter, so the two totals differ). Both show the wider whole.
        widest = max(self.strip_a.full_width(), self.strip_b.full_width())
        self.strip_a.show_width(widest)
        self.strip_b.show_width(widest)
        self.lane.set_differences(diffs)
        self.lane_label.setText(lane_legend_html(len(diffs)))
        # One axis for both strips (tokens, or messages when the two count differently): the same position is the same message.
        self.label_a.setText(f"A: {settings_text(a)} (the current view)")
        self.label_b.setText(f"B: {settings_text(b)}")
        summary_diffs = compare_summaries(a, b, recorded)  # (a summary one side sends and the other drops: "0 messages decided differently" hid it)
        differ = differences_headline(len(diffs), len(summary_diffs)) + (" (marked in the lane between the strips)" if diffs else "")
        self.summary.setText(" &nbsp;|&nbsp; ".join([side_headline_html("A", a), side_headline_html("B", b), html.escape(differ)]))
        self.strips.setVisible(True)
        self.groups = group_differences(diffs)
        by_index = {d.index: d for d in diffs}
        self.table.clear()
        self._group_members = {}
        items = []
        for number, g in enumerate(self.groups):
            item = self._group_item(g)
            item.setData(0, GROUP_ROLE, number)
            self._group_members[number] = [by_index[i] for i in g.indices]
            items.append(item)
        items += [self._summary_item(sd) for sd in summary_diffs]
        self.table.addTopLevelItems(items)
        for col in (0, 1, 2, 5):
            self.table.resizeColumnToContents(col)
        if len(items) == 1:  # one group: its messages at once
            items[0].setExpanded(True)
        self.idle.hide()
        self.table.setVisible(bool(items))
        self.lane.setVisible(bool(items))
        self.same.setVisible(not items)
        if not items:
            self.same.setText(f"No message is decided differently, and no summary: A and B make the same decision on each of the "
                              f"{len(a.messages):,} messages and every summary.")

    @staticmethod
    def _summary_item(sd: SummaryDifference) -> QTreeWidgetItem:
        """A summary decided differently: its row beside the message groups (sent on one side, the
        20 messages it stands for are covered there and lost on the other)."""
        def decision(s: SummaryPlan | None) -> str:
            return "none" if s is None else spelled(s.decision.value)

        def reason(s: SummaryPlan | None) -> str:
            return "" if s is None else clip(s.reason, 60)

        sides = [f"{s.tokens:,}" if s is not None else "-" for s in (sd.a, sd.b)]
        tokens = sides[0] if sides[0] == sides[1] else " / ".join(sides)  # (A / B, as the column says)
        item = QTreeWidgetItem([sd.name, decision(sd.a), decision(sd.b), reason(sd.a), reason(sd.b), tokens])
        for column, side in ((3, sd.a), (4, sd.b)):
            if side is not None:
                item.setToolTip(column, tooltip_html(side.reason))
        item.setTextAlignment(5, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        font = item.font(0)
        font.setBold(True)
        item.setFont(0, font)
        return item

    @staticmethod
    def _group_item(g: DifferenceGroup) -> QTreeWidgetItem:
        """A group's row: how many, which, both sides' decisions and reasons, and the tokens at stake."""
        a, b = code_of(g.a_code, g.a_decision), code_of(g.b_code, g.b_decision)
        tokens = f"{g.a_tokens:,}" if g.a_tokens == g.b_tokens else f"{g.a_tokens:,} / {g.b_tokens:,}"
        item = QTreeWidgetItem([f"{counted(g.count, 'message')}: {g.span()}", spelled(g.a_decision), spelled(g.b_decision),
                                a.label, b.label, tokens])
        item.setChildIndicatorPolicy(QTreeWidgetItem.ChildIndicatorPolicy.ShowIndicator)
        item.setTextAlignment(5, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        font = item.font(0)
        font.setBold(True)
        item.setFont(0, font)
        item.setToolTip(3, tooltip_html(f"A: {a.meaning}"))
        item.setToolTip(4, tooltip_html(f"B: {b.meaning}"))
        item.setToolTip(0, tooltip_html(f"{counted(g.count, 'message')}: {g.span()}"))
        return item
