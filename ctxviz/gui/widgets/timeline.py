"""The timeline: context tokens per turn (the summarisation sawtooth) with events, and a turn slider.

Beside the replay: what the provider reported for each call, at the turn whose context that call
saw (the call that produced message N was made after turn N-1, as `ctxviz simulate` aligns it), the
compactions the log records (a line at the turn, a tick at the tokens before it), and under the
chart the engine's sentence on how the replay's last turn compares with the plan of the whole file.

Every plotted number goes through `safe.plot_values` (finite, within +-1e15): a provider's usage or
a budget of 10**20 tokens, turned into a numpy object array, crashed pyqtgraph. The turn label
states the exact figures whatever the chart can draw.
"""

from __future__ import annotations

import html
from bisect import bisect_left
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ...engine.policies import get_policy
from ...engine.session import Compaction
from ...engine.simulate import Timeline
from ...engine.vocabulary import token_trigger_fields, trigger_level
from ...engine.wording import counted
from ..safe import (
    PLOT_LIMIT,
    clipped,
    finite,
    idle_label,
    plain_label,
    plot_values,
    qt_int,
    rounded_tokens,
    set_plain_tooltip,
    short_number,
)
from ..theme import CATEGORY_COLORS, category_label, is_dark, plot_colors
from .axes import ThousandsAxis
from .calls_table import CallsView
from .event_slider import EventSlider
from .timeline_layout import LEGEND_COLUMNS, TimelineLayout, legend_below, not_sent_height
from .timeline_marks import CompactionMarks, scene_line

#: The composition band of what a request holds beyond the session's messages.
ADDED_COLOR = "#b0b0b0"
EVENT_COLORS = {"summary": "#17becf", "consolidation": "#9467bd", "compaction": "#2ca02c", "hard_threshold": "#d62728",
                "emergency_truncation": "#ff7f0e", "trim": "#bcbd22", "overflow": "#d62728"}
IDLE_TEXT = "Simulate to replay the session turn by turn."
#: The bands' opacity (light theme, dark theme). At 110 the System and Dialog bands were both a
#: dark blue over the dark theme's background (CIE distance 12.6; 11.3 in the light theme): at
#: these they stay 15 or more apart for normal vision, deuteranopia and protanopia in both.
BAND_ALPHA = {False: 170, True: 215}
#: The user instructions' retention line: a hue no category has (it was the Context category's
#: pink, beside the pink "Context (sent)" band on the same tab), apart from every category colour
#: for normal vision and simulated deuteranopia and protanopia.
INSTRUCTIONS_COLOR = "#8f724a"
#: The share of each request the cache served: likewise (it was the Dialog category's blue, beside
#: the "Dialog (sent)" band).
CACHE_COLOR = "#5e8eec"
#: The conversation's tokens left out of each turn's context, on the right-hand axis.
#: The chart's lines, by series. The tokens not sent are drawn in the theme's text colour (black or
#: near-white): a hue of their own merged with the blue of the tokens sent for protanopes.
SERIES_COLORS = {"tokens sent": "#1f77b4", "budget": "#888888", "trigger": "#d62728", "reported by the provider": "#ff7f0e"}
NOT_SENT_NAME = "not sent (right axis)"
#: The right axis and its legend row when every turn sent every message.
NOT_SENT_NONE = "tokens not sent: none"
#: Past this many events of one kind, the chart draws their counts per bin in a band along its
#: bottom instead of a marker each (9,762 summary markers hid the curve).
DENSE_EVENTS = 300
#: Bins of the density band (about one per 4 pixels of a full-width chart).
DENSITY_BINS = 200
#: The band's height, as a share of the chart's.
DENSITY_HEIGHT = 0.12
#: While the turn slider is dragged, the context at a turn is published once the handle rests this long.
REST_MS = 120





#: A trigger entry naming more characters of parameters than this says where to find them instead.
TRIGGER_NAME_CHARS = 36


def trigger_name(fields: tuple[str, ...] | list[str], level: int) -> str:
    """The trigger line's legend entry: the parameters that set it, or, when their names are long,
    the level they set (Codex's "trigger (model_auto_compact_token_limit, model_context_window)"
    took a legend column of 470 pixels and left the chart 60 pixels tall at 1280x720; pointing at
    the sidebar's marks meant nothing in an exported report, which has no sidebar)."""
    names = ", ".join(fields)
    if not names:
        return "trigger (the policy)"
    return f"trigger ({names})" if len(names) <= TRIGGER_NAME_CHARS else f"trigger ({level:,} tokens)"



class TimelineView(TimelineLayout, CompactionMarks, QWidget):
    turnChanged = Signal(int)
    simulateRequested = Signal()
    #: A term to follow through the replay ("where did X go?").
    findRequested = Signal(str)
    latestRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.background, self.foreground = plot_colors()
        background = self.background
        self.plot = pg.PlotWidget(background=background, axisItems={"left": ThousandsAxis("left"), "right": ThousandsAxis("right"),
                                                                     "bottom": ThousandsAxis("bottom")})
        self.plot.setLabel("left", "tokens sent")
        self.plot.setLabel("bottom", "turn (message index)")
        self.plot.getAxis("left").setWidth(70)
        for axis in ("left", "bottom", "right"):
            self.plot.getAxis(axis).setPen(self.foreground)
            self.plot.getAxis(axis).setTextPen(self.foreground)
        # The tokens not sent grow with the conversation, far past the budget: their own axis on
        # the right, so the sawtooth keeps its height.
        item = self.plot.getPlotItem()
        self.not_sent_box = pg.ViewBox(enableMouse=False)
        self.not_sent_box.setZValue(-50)
        item.showAxis("right")
        item.getAxis("right").setWidth(70)
        item.setLabel("right", "tokens not sent", color=self.foreground)
        item.scene().addItem(self.not_sent_box)
        item.getAxis("right").linkToView(self.not_sent_box)
        self.not_sent_box.setXLink(item)
        item.vb.sigResized.connect(self._align_not_sent_box)
        item.vb.sigXRangeChanged.connect(lambda *_: self._place_compaction_labels())
        self.not_sent_curve: pg.PlotDataItem | None = None
        #: The composition bands (`set_composition`) and their legend samples.
        self.band_items: list[pg.GraphicsObject] = []
        self.band_samples: list[pg.BarGraphItem] = []
        self.composition_note = ""
        self._not_sent_peak = 1.0
        self._trigger_drawn: int | None = None  # the trigger level the chart draws (`_draw_series`)
        self._y_peak: float | None = None  # the highest value the y range is fitted to
        self._applied_top: float | None = None  # the top it was given (a different top: the user zoomed)
        # Opaque, so the budget line or the curve never runs through the legend's text.
        legend_pen = QColor(self.foreground)
        legend_pen.setAlpha(90)
        legend_below(self.plot.getPlotItem(), LEGEND_COLUMNS, labelTextColor=self.foreground, brush=pg.mkBrush(background), pen=pg.mkPen(legend_pen))
        # Dense events as counts per bin, in a band of their own along the chart's bottom.
        self.density_box = pg.ViewBox(enableMouse=False)
        self.density_box.setZValue(-40)
        item.scene().addItem(self.density_box)
        self.density_box.setXLink(item)
        self.density_box.setYRange(0, 1, padding=0)
        self.density_items: list[pg.BarGraphItem] = []
        self.slider = EventSlider()
        self.slider.setEnabled(False)
        self.slider.valueChanged.connect(self._moved)
        self.slider.sliderReleased.connect(self._publish_turn)
        # The context at a turn is published once per frame at most, and during a drag only where
        # the handle rests: a plan per mouse move took 0.4-0.8 s at 10,000 messages.
        self._pending_turn: int | None = None
        self._publish_timer = QTimer(self)
        self._publish_timer.setSingleShot(True)
        self._publish_timer.timeout.connect(self._publish_turn)
        #: Turns published (for tests: a drag publishes the turn it rests on, not every step).
        self.published: list[int] = []
        self.label = plain_label(IDLE_TEXT)  # event messages quote the session
        self.label.setWordWrap(True)
        # However long a turn's description (events, a 300-digit budget), it never widens the window.
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        # The engine's `plan_versus_replay` sentence (the plan's figures are the policy's, never the file's text).
        self.versus = plain_label()
        self.versus.setObjectName("plan-versus-replay")
        self.versus.setWordWrap(True)
        self.versus.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.versus.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.versus.hide()
        self.run = QPushButton("Simulate")
        self.run.clicked.connect(self.simulateRequested)
        self.latest = QPushButton("Back to latest")
        self.latest.clicked.connect(self._drop_pending_turn)  # a turn still to be published must not follow it
        self.latest.clicked.connect(self.latestRequested)
        row = QHBoxLayout()
        row.addWidget(self.run)
        row.addWidget(self.slider, 1)
        row.addWidget(self.latest)
        # Below the tokens: what the context still holds (retention) and what the provider's cache
        # could serve, per turn, on the same turn axis.
        self.answers_plot = pg.PlotWidget(background=background, axisItems={"bottom": ThousandsAxis("bottom"), "left": ThousandsAxis("left")})
        self.answers_plot.setLabel("left", "%")
        self.answers_plot.getAxis("left").setWidth(70)
        for axis in ("left", "bottom"):
            self.answers_plot.getAxis(axis).setPen(self.foreground)
            self.answers_plot.getAxis(axis).setTextPen(self.foreground)
        self.answers_plot.setYRange(0, 105, padding=0)
        # An empty right axis as wide as the chart's: the same turn at the same x in both.
        self.answers_plot.showAxis("right")
        self.answers_plot.getAxis("right").setWidth(70)
        self.answers_plot.getAxis("right").setStyle(showValues=False)
        self.answers_plot.getAxis("right").setPen(self.foreground)
        self.answers_plot.setMouseEnabled(y=False)
        self.answers_plot.setXLink(self.plot)
        legend_below(self.answers_plot.getPlotItem(), 4, labelTextColor=self.foreground, brush=pg.mkBrush(background), pen=pg.mkPen(legend_pen))

        self.answers_plot.hide()
        self.answers_label = plain_label()
        self.answers_label.setWordWrap(True)
        self.answers_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.answers_label.hide()
        self.plot.scene().sigMouseClicked.connect(self._clicked)
        self.find = QLineEdit()
        self.find.setPlaceholderText("Where did it go? A file, an id, an instruction… (Enter)")
        self.find.setClearButtonEnabled(True)
        self.find.returnPressed.connect(lambda: self.findRequested.emit(self.find.text()))
        self.find_result = plain_label()
        self.find_result.setWordWrap(True)
        self.find_result.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.find_result.hide()
        self.find_regions: list[pg.LinearRegionItem] = []
        # Before a replay: a sentence where the chart will be, not bare axes.
        self.empty = idle_label(IDLE_TEXT, "timeline-empty")
        # The agent's calls under the charts (a splitter: the user decides how much each gets).
        self.calls = CallsView()
        self.calls.setObjectName("agent-calls")
        self.calls.stepChosen.connect(self.slider.setValue)
        self.calls_title = plain_label()
        self.calls_title.setWordWrap(True)
        self.calls_title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.calls_box = QWidget()
        calls_layout = QVBoxLayout(self.calls_box)
        calls_layout.setContentsMargins(0, 0, 0, 0)
        calls_layout.setSpacing(2)
        calls_layout.addWidget(self.calls_title)
        calls_layout.addWidget(self.calls, 1)
        self.calls_box.hide()
        charts = QWidget()
        charts_layout = QVBoxLayout(charts)
        charts_layout.setContentsMargins(0, 0, 0, 0)
        charts_layout.addWidget(self.empty, 1)
        charts_layout.addWidget(self.plot, 1)
        self.plot.hide()
        self.plot.setMinimumHeight(150)
        self.answers_plot.setMinimumHeight(110)
        self.calls_box.setMinimumHeight(80)
        # The tokens, the answers and the calls share the height as the user drags them (the
        # tokens first); each legend has a row of its own under its chart.
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.addWidget(charts)
        self.split.addWidget(self.answers_plot)
        self.split.addWidget(self.calls_box)
        for pane, stretch in enumerate((5, 2, 3)):
            self.split.setStretchFactor(pane, stretch)
        self.split.setChildrenCollapsible(False)
        self._split_moved = False  # the user's drag keeps its sizes (`_fit_split`)
        self.still = False  # (`TimelineLayout._fit_words`)
        self.split.splitterMoved.connect(self._split_dragged)
        layout = QVBoxLayout(self)
        layout.addWidget(self.find)
        layout.addWidget(self.find_result)
        layout.addWidget(self.split, 1)
        layout.addLayout(row)
        # What the turn, the answers and the replay-versus-plan say, scrolling rather than taking
        # the charts' height on a short screen (`resizeEvent` caps it).
        words = QWidget()
        words_layout = QVBoxLayout(words)
        words_layout.setContentsMargins(0, 0, 0, 0)
        words_layout.addWidget(self.label)
        # Right under the turn's line: why the replay's figures differ from the Overview's plan (under
        # supyagent every message is sent in the plan, a fifth of the tokens at the replay's last turn),
        # which below the answers was scrolled out of view even at 1920x1080.
        words_layout.addWidget(self.versus)
        words_layout.addWidget(self.answers_label)
        words_layout.addStretch(1)
        self.words = QScrollArea()
        self.words.setWidget(words)
        self.words.setWidgetResizable(True)
        self.words.setFrameShape(QScrollArea.Shape.NoFrame)
        self.words.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.words.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        layout.addWidget(self.words)
        self.cursor = pg.InfiniteLine(angle=90, pen=pg.mkPen(self.foreground, width=1))
        self.timeline: Timeline | None = None
        #: (compaction, its line, its tick) for every compaction the log records, as drawn.
        self.compaction_marks: list[tuple[Compaction, pg.InfiniteLine, pg.PlotDataItem]] = []

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        """The sentences under the charts take at most a fifth of the tab's height (at least four
        lines; four on a short tab), and no more than they need; the legends and the split follow."""
        super().resizeEvent(event)
        self._fit_words()
        self._lay_out_legend()

    def _align_not_sent_box(self) -> None:
        vb = self.plot.getPlotItem().vb
        self.not_sent_box.setGeometry(vb.sceneBoundingRect())
        self.not_sent_box.linkedViewChanged(vb, self.not_sent_box.XAxis)
        self.density_box.setGeometry(vb.sceneBoundingRect())
        self.density_box.linkedViewChanged(vb, self.density_box.XAxis)
        self._leave_room()
        self._place_compaction_labels()

    def set_composition(self, timeline: Timeline, composition: Any) -> None:
        """Stacked bands under the tokens-sent line: what each (sampled) step sent, per category
        (claude-devtools' per-turn attribution). Computed on a worker after the replay."""
        if timeline is not self.timeline or composition is None or not composition.steps:
            return
        self._clear_bands()
        legend = self.plot.getPlotItem().legend
        xs = plot_values(composition.indices)
        # Curves (not PlotDataItems): a PlotDataItem without a pen has no path to fill between.
        below = pg.PlotCurveItem(xs, [0.0] * len(xs), pen=pg.mkPen(None))
        self.plot.addItem(below)
        self.band_items.append(below)
        running = [0.0] * len(xs)
        for category, sent in composition.bands.items():
            running = [r + v for r, v in zip(running, plot_values(sent), strict=True)]
            above = pg.PlotCurveItem(xs, running, pen=pg.mkPen(None))
            color = QColor(CATEGORY_COLORS.get(category, ADDED_COLOR))
            color.setAlpha(BAND_ALPHA[is_dark()])
            fill = pg.FillBetweenItem(below, above, brush=pg.mkBrush(color))
            fill.setZValue(-30)
            self.plot.addItem(above)
            self.plot.addItem(fill)
            self.band_items += [above, fill]
            below = above
            if legend is not None:
                sample = pg.BarGraphItem(x=[0], height=[0], width=0, brush=pg.mkBrush(color), pen=pg.mkPen(None))
                name = category_label(category)  # ("Outside the messages", as the category bars name it)
                legend.addItem(sample, html.escape(f"{name} (sent)"))
                self.band_samples.append(sample)
        self.composition_note = "Bands: tokens sent per category at each step; " + composition.describe()
        set_plain_tooltip(self.plot, self.composition_note)
        if composition.sampled:
            text = self.answers_label.text()
            self.answers_label.setText((text + "\n" if text else "") + self.composition_note)
            self.answers_label.show()
            self._fit_words()
        self._lay_out_legend()

    def _clear_bands(self) -> None:
        legend = self.plot.getPlotItem().legend
        for item in self.band_items:
            self.plot.removeItem(item)
        for sample in self.band_samples if legend is not None else ():
            legend.removeItem(sample)
        self.band_items, self.band_samples = [], []

    def _clear(self) -> None:
        self._clear_bands()
        legend = self.plot.getPlotItem().legend
        if self.not_sent_curve is not None and legend is not None:
            legend.removeItem(self.not_sent_curve)  # not the plot's item: plot.clear() leaves its entry
        for bar in self.density_items if legend is not None else ():
            legend.removeItem(bar)
        self.plot.clear()
        self._y_peak = None
        self.not_sent_box.clear()
        self.not_sent_curve = None
        self.density_box.clear()
        self.density_items = []
        self.slider.set_marks([])

    def set_partial(self, timeline: Timeline, total: int) -> None:
        """A replay still running: its turns so far, on the session's whole turn axis, filling
        left to right (the slider waits for the whole replay)."""
        if not timeline.turns:
            return
        self._clear()
        self.timeline = None
        self._show_chart(True)
        self.slider.setEnabled(False)
        self.slider.blockSignals(True)
        self.slider.setRange(0, qt_int(total - 1, 0))
        self.slider.setValue(qt_int(len(timeline.turns) - 1, 0))  # the handle shows how far the replay got
        self.slider.blockSignals(False)
        self._draw_series(timeline)
        self._draw_events(timeline)
        self.plot.setXRange(0, finite(max(len(timeline.session.messages) - 1, 1)), padding=0.02)  # the steps sit at their messages
        self._lay_out_legend()
        self._fit_y(timeline, [])
        done = len(timeline.turns)
        self.label.setText(f"Simulating turn by turn… {done:,} of {total:,} turns replayed (Cancel, at the bottom right, stops it)")

    def _draw_series(self, timeline: Timeline) -> None:
        """Tokens sent, the budget, the trigger, and the tokens not sent on the right-hand axis."""
        xs = plot_values(t.index for t in timeline.turns)
        sent = plot_values(t.tokens_sent for t in timeline.turns)
        self.curves = [(xs, sent)]  # (a compaction's label keeps off them: `CompactionMarks.curve_points`)
        self.plot.plot(xs, sent, pen=pg.mkPen(SERIES_COLORS["tokens sent"], width=2), name="tokens sent")
        self.plot.plot(xs, plot_values(t.budget for t in timeline.turns), pen=pg.mkPen(SERIES_COLORS["budget"], width=1, style=Qt.PenStyle.DashLine), name="budget")
        trigger = trigger_level(get_policy(timeline.policy), timeline.params, timeline.session)
        self._trigger_drawn = trigger if trigger is not None and trigger != timeline.turns[-1].budget else None
        if self._trigger_drawn is not None:
            # Where the policy's own trigger stands, in tokens (its fraction of the window, its threshold).
            self.plot.plot([xs[0], xs[-1]], plot_values([trigger, trigger]), pen=pg.mkPen(SERIES_COLORS["trigger"], width=1, style=Qt.PenStyle.DashDotLine),
                           name=html.escape(trigger_name(token_trigger_fields(get_policy(timeline.policy)), trigger)))
        not_sent = [t.not_sent for t in timeline.turns]
        self.not_sent_curve = pg.PlotDataItem(xs, plot_values(not_sent), pen=pg.mkPen(self.foreground, width=1.5, style=Qt.PenStyle.DashLine))
        self.not_sent_box.addItem(self.not_sent_curve)
        self._not_sent_peak = max(finite(max(not_sent)), 1.0)
        # A replay that sent every message: no scale to read on the right (it showed a lone "1").
        nothing = not any(not_sent)
        item = self.plot.getPlotItem()
        item.getAxis("right").setStyle(showValues=not nothing)
        item.setLabel("right", NOT_SENT_NONE if nothing else "tokens not sent", color=self.foreground)
        legend = item.legend
        if legend is not None:
            legend.addItem(self.not_sent_curve, NOT_SENT_NONE if nothing else NOT_SENT_NAME)
        self._align_not_sent_box()

    def _draw_events(self, timeline: Timeline) -> None:
        """Every event the replay recorded, marked at its turn on the tokens-sent curve; a kind
        with more than DENSE_EVENTS events is drawn as its count per bin along the chart's bottom."""
        by_kind: dict[str, tuple[list[int], list[int]]] = {}
        for t in timeline.turns:
            for e in t.events:
                by_kind.setdefault(e.kind, ([], []))
                by_kind[e.kind][0].append(t.index)
                by_kind[e.kind][1].append(t.tokens_sent)
        dense = {kind: xs for kind, (xs, _) in by_kind.items() if len(xs) > DENSE_EVENTS}
        for kind, (ex, ey) in by_kind.items():
            if kind in dense:
                continue
            # Legend names are drawn as HTML by pyqtgraph.
            name = "the context stops fitting" if kind == "overflow" else kind.replace("_", " ")
            self.plot.plot(plot_values(ex), plot_values(ey), pen=None, symbol="x" if kind == "overflow" else "t", symbolSize=11,
                           symbolBrush=EVENT_COLORS.get(kind, "#ff7f0e"), symbolPen=EVENT_COLORS.get(kind, "#ff7f0e") if kind == "overflow" else None,
                           name=html.escape(name))
        if dense:
            self._draw_density(timeline, dense)

    def _draw_density(self, timeline: Timeline, dense: dict[str, list[int]]) -> None:
        """Counts per bin of the dense kinds, stacked, in a band DENSITY_HEIGHT of the chart tall;
        the legend names each kind with its total."""
        first, last = timeline.turns[0].index, timeline.turns[-1].index
        bins = max(1, min(DENSITY_BINS, last - first + 1))
        width = (last - first + 1) / bins
        edges = [first - 0.5 + k * width for k in range(bins)]
        counts = {kind: [0] * bins for kind in dense}
        for kind, xs in dense.items():
            for x in xs:
                counts[kind][min(bins - 1, int((x - first + 0.5) / width))] += 1
        peak = max(max(sum(c[k] for c in counts.values()) for k in range(bins)), 1)
        base = [0.0] * bins
        legend = self.plot.getPlotItem().legend
        for kind, per_bin in counts.items():
            heights = [DENSITY_HEIGHT * c / peak for c in per_bin]
            color = EVENT_COLORS.get(kind, "#ff7f0e")
            bar = pg.BarGraphItem(x0=plot_values(edges), width=width, y0=base, height=heights, brush=pg.mkBrush(color), pen=pg.mkPen(None))
            self.density_box.addItem(bar)
            self.density_items.append(bar)
            base = [b + h for b, h in zip(base, heights, strict=True)]
            if legend is not None:
                word = "the context stops fitting" if kind == "overflow" else kind.replace("_", " ")
                legend.addItem(bar, html.escape(f"{word}: {len(dense[kind]):,} (count per bin, at the bottom)"))

    def set_timeline(self, timeline: Timeline | None, idle_text: str = IDLE_TEXT) -> None:
        self._clear()
        self.find_regions = []
        self.find_result.hide()
        self.answers_plot.clear()
        self.answers_plot.hide()
        self.answers_label.hide()
        self.compaction_marks = []
        self.curves = []
        self.timeline = timeline
        self.set_versus("")
        self._pending_turn = None
        self._publish_timer.stop()
        if timeline is None or not timeline.turns:
            self._show_calls(None, None)
            self.slider.setEnabled(False)
            self.label.setText(idle_text)
            self.empty.setText(idle_text)
            self._show_chart(False)
            return
        self._show_chart(True)
        self._show_calls(timeline, None)
        self._draw_series(timeline)
        self._label_x_axis()
        reported = self.reported_usage(timeline)
        if reported:
            # What the provider reported was in the window for each call (input + cache), against the replay.
            # A single point gets no line (an empty path is invalid SVG in the report).
            provider = SERIES_COLORS["reported by the provider"]
            line = pg.mkPen(provider, width=1, style=Qt.PenStyle.DotLine) if len(reported) > 1 else None
            points = (plot_values(i for i, _ in reported), plot_values(v for _, v in reported))
            self.curves.append(points)
            self.plot.plot(*points, pen=line, symbol="o", symbolSize=4, symbolPen=None, symbolBrush=provider, name="reported by the provider")
        self._draw_events(timeline)
        self._mark_compactions(timeline)
        self._lay_out_legend()
        self.slider.set_marks([(k, EVENT_COLORS.get(e.kind, "#ff7f0e"), f"turn {t.index}: {e.kind.replace('_', ' ')}: {e.message}")
                               for k, t in enumerate(timeline.turns) for e in t.events])
        self.plot.addItem(self.cursor)
        self._fit_range(timeline, reported)
        self.slider.setEnabled(True)
        self.slider.blockSignals(True)
        self.slider.setRange(0, qt_int(len(timeline.turns) - 1, 0))
        self.slider.setValue(qt_int(len(timeline.turns) - 1, 0))
        self.slider.blockSignals(False)
        self._describe(len(timeline.turns) - 1)

    def set_answers(self, timeline: Timeline, retention: Any, cache: Any, note: str = "") -> None:
        """Retention and cache hits per turn under the tokens, and the replay's cost in a sentence."""
        if timeline is not self.timeline:
            return  # the answers of a replay no longer shown
        self._show_calls(timeline, cache)
        self.answers_plot.clear()
        lines: list[str] = []
        if retention is not None and retention.points:
            xs = plot_values(p.turn for p in retention.points)
            self.answers_plot.plot(xs, plot_values(100 * p.score for p in retention.points), pen=pg.mkPen("#009e73", width=2),
                                   name="anchors still sent (retention)")
            # The instructions' line starts where the first one is said: before it (and in a session
            # with none) "100 %" would claim instructions that do not exist. Dashed over the anchors'
            # line and as thick: at 100 % both, a 1-pixel dash vanished into the 2-pixel line.
            said = [p for p in retention.points if p.instructions]
            if said:
                self.answers_plot.plot(plot_values(p.turn for p in said), plot_values(100 * p.instruction_score for p in said),
                                       pen=pg.mkPen(INSTRUCTIONS_COLOR, width=2, style=Qt.PenStyle.DashLine), name="user instructions still sent")
            last = retention.points[-1]
            instructions = (f"{last.instruction_score:.0%} of user instructions" if last.instructions
                            else "no user instruction in the session so far")
            lines.append(f"Retention at turn {last.turn}: {last.score:.0%} of anchors, {instructions}"
                         + ("" if retention.exact else " (turns sampled: " + retention.method + ")"))
        cached = cache is not None and cache.turns and cache.caches
        if cache is not None and cache.turns and not cache.caches:
            # No cache prices for the model: "0 % cached" over every turn would read as a fact about the replay.
            model = self.timeline.session.model if self.timeline is not None else ""
            why = ("the log names no model" if not model else "not in the catalogue" if cache.model.name == "(unknown model)"
                   else "the catalogue has no cache price for it")  # (no model named read "the catalogue has no cache price for it")
            lines.append(f"Prompt caching: no cache model for this model ({model + ': ' if model else ''}{why}); "
                         "`ctxviz simulate --cost --cost-model MODEL` prices it as another model")
        if cached:
            xs = plot_values(t.turn for t in cache.turns)
            self.answers_plot.plot(xs, plot_values(100 * t.cache_read / t.request if t.request else 0 for t in cache.turns),
                                   pen=pg.mkPen(CACHE_COLOR, width=1), name="request served from the cache")
            broke = [t for t in cache.turns if t.broke_cache]
            if len(broke) > DENSE_EVENTS:  # counts per bin along the bottom, not an orange wall of markers
                first, last = cache.turns[0].turn, cache.turns[-1].turn
                bins = max(1, min(DENSITY_BINS, last - first + 1))
                width = (last - first + 1) / bins
                counts = [0] * bins
                for t in broke:
                    counts[min(bins - 1, int((t.turn - first + 0.5) / width))] += 1
                peak = max(max(counts), 1)
                bar = pg.BarGraphItem(x0=plot_values(first - 0.5 + k * width for k in range(bins)), width=width, y0=0,
                                      height=[100 * DENSITY_HEIGHT * c / peak for c in counts], brush=pg.mkBrush("#d55e00"), pen=pg.mkPen(None))
                self.answers_plot.addItem(bar)
                legend = self.answers_plot.getPlotItem().legend
                if legend is not None:
                    legend.addItem(bar, f"cache broken ({counted(len(broke), 'turn')}; count per bin)")
            elif broke:
                self.answers_plot.plot(plot_values(t.turn for t in broke), plot_values(0 for _ in broke), pen=None, symbol="t1",
                                       symbolSize=9, symbolBrush="#d55e00", symbolPen=None, name=f"cache broken ({counted(len(broke), 'turn')})")
            lines.append(f"Prompt caching ({cache.model.name}): {cache.sentence()}")
        if note:
            lines.append(note)
        self.answers_plot.setVisible(bool((retention is not None and retention.points) or cached))
        self.answers_label.setText("\n".join(lines))
        self.answers_label.setVisible(bool(lines))
        self._fit_words()

    def set_found(self, timeline: Timeline, term: str, found: Any, message: str) -> None:
        """Shade the turns the term was in the context, and say when it left and why."""
        if timeline is not self.timeline:
            return
        for region in self.find_regions:
            self.plot.removeItem(region)
        self.find_regions = []
        if found is None:
            self.find_result.setText(message or f"{term!r}: no answer")
            self.find_result.show()
            return
        for first, last in found.spans:
            region = pg.LinearRegionItem((finite(first) - 0.5, finite(last) + 0.5), movable=False,
                                         brush=pg.mkBrush(0, 114, 178, 35), pen=pg.mkPen(None))
            region.setZValue(-20)
            self.plot.addItem(region)
            self.find_regions.append(region)
        from ...io.text_summary import where_summary

        self.find_result.setText(where_summary(found, "the session", timeline.policy).strip())
        self.find_result.show()

    def _clicked(self, event: Any) -> None:
        """A click on the chart moves to the nearest turn (and the overview shows it)."""
        if self.timeline is None or not self.timeline.turns or not self.slider.isEnabled():
            return
        point = self.plot.getPlotItem().vb.mapSceneToView(event.scenePos())
        indices = [t.index for t in self.timeline.turns]
        k = min(bisect_left(indices, round(point.x())), len(indices) - 1)
        if k > 0 and abs(indices[k - 1] - point.x()) < abs(indices[k] - point.x()):
            k -= 1
        self.slider.setValue(k)

    def set_versus(self, text: str) -> None:
        """The engine's sentence comparing the replay's last turn with the plan of the whole file."""
        self.versus.setText(text)
        self.versus.setVisible(bool(text))
        self._fit_words()

    @staticmethod
    def reported_usage(timeline: Timeline) -> list[tuple[int, int]]:
        """(turn, input + cache tokens) for every call the log carries the provider's usage of, at the
        turn whose context it saw: the call that produced message N was made after turn N-1
        (`ctxviz simulate`'s alignment). A first message's call saw no turn of the replay."""
        return [(m.index - 1, m.usage.window_fill) for m in timeline.session.messages
                if m.usage is not None and m.usage.window_fill and m.index > 0]

    def _fit_range(self, timeline: Timeline, reported: list[tuple[int, int]]) -> None:
        """The turns, and every compaction the log records (one after the last call was drawn off
        the chart, only its label's left end in view)."""
        self._fit_y(timeline, reported)
        xs = [timeline.turns[0].index, timeline.turns[-1].index, *(self.compaction_x(timeline, c) for c in timeline.session.compactions)]
        self.plot.setXRange(finite(min(xs)), finite(max(xs)), padding=0.02)

    def _fit_y(self, timeline: Timeline, reported: list[tuple[int, int]]) -> None:
        """Scale to the sawtooth (and what the provider reported, and the compactions the log
        records); a budget far above it would flatten the teeth, so it is then noted in the title
        instead (pan or zoom out to see it)."""
        values = [t.tokens_sent for t in timeline.turns] + [v for _, v in reported] + [c.pre_tokens for c in timeline.session.compactions]
        exact_peak = max(values)
        exact_budget = max(t.budget for t in timeline.turns)
        peak, budget = finite(exact_peak), finite(exact_budget)
        # The trigger line `_draw_series` drew: in view when near the peak, else named in the title
        # with the budget, as far from the curve as it is.
        exact_trigger = self._trigger_drawn
        trigger = finite(exact_trigger) if exact_trigger is not None else None
        notes = []
        if budget > 2.5 * peak > 0:
            far_trigger = trigger is not None and trigger > 2.5 * peak
            self._y_peak = peak if trigger is None or far_trigger else max(peak, trigger)
            # (Rounded when both are named: the title's width is the chart's least width beside a legend at 1024 px.)
            notes.append(f"trigger {rounded_tokens(exact_trigger)}, budget {rounded_tokens(exact_budget)}: above the chart" if far_trigger
                         else f"budget {short_number(exact_budget)} tokens, above the chart")
        else:
            self._y_peak = max(peak, budget, 1.0)
        if clipped(values + [exact_budget]):
            notes.append(f"values beyond {short_number(int(PLOT_LIMIT))} tokens drawn at that height")
        self.plot.setTitle(html.escape("; ".join(notes)) if notes else None, color=self.foreground, size="9pt")
        self._applied_top = None
        self._leave_room()

    def _leave_room(self) -> None:
        """Both y ranges reach far enough above their peaks for the legend's rows (measured in
        pixels, so at 720p as at 1080p the legend sits above the curves and the budget). Again on
        every resize, unless the user has zoomed the y axis since."""
        if self._y_peak is None:
            return
        current = self.plot.getPlotItem().vb.viewRange()[1][1]
        if self._applied_top is not None and abs(current - self._applied_top) > 1e-6 * max(abs(current), 1.0):
            return  # the user's own y zoom
        room = self._room()
        # Bounded like every plotted number (pyqtgraph misdraws beyond ~1e15).
        self._applied_top = min(self._y_peak * room, PLOT_LIMIT * 1.2)
        self.plot.setYRange(0, self._applied_top, padding=0)
        height = not_sent_height([y / self._applied_top for y in self.flat_lines()], 1 / room)
        self.not_sent_box.setYRange(0, min(self._not_sent_peak / height, PLOT_LIMIT * 1.2), padding=0)

    def scene_lines(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The tokens chart's lines and, on its own right-hand scale, the tokens not sent."""
        lines = super().scene_lines()
        curve = getattr(self, "not_sent_curve", None)
        if curve is not None and curve.getViewBox() is self.not_sent_box:
            xs, ys = curve.getData()
            if xs is not None and len(xs):
                lines.append(scene_line(self.not_sent_box, np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)))
        return lines

    def flat_lines(self) -> list[float]:
        """The heights of the chart's level lines: the budget (when one for every turn) and the trigger."""
        if self.timeline is None or not self.timeline.turns:
            return []
        budgets = {t.budget for t in self.timeline.turns}
        return [float(y) for y in (*(budgets if len(budgets) == 1 else ()), self._trigger_drawn) if y is not None]

    def _describe(self, turn: int) -> None:
        if self.timeline is None:
            return
        t = self.timeline.turns[turn]
        self.cursor.setPos(finite(t.index))
        events = "; ".join(f"{e.kind}: {e.message}" for e in t.events) or "no event"
        messages = self.timeline.session.messages
        after = messages[t.index + 1] if t.index + 1 < len(messages) else None  # the call made after this turn produced it
        usage = after.usage if after is not None else None
        reported = (f" (the provider reported {usage.window_fill:,} for the call made after this turn, which produced #{after.index})"
                    if after is not None and usage is not None and usage.window_fill else "")
        recorded = "".join(f"; in the log: {self.compaction_text(c)}" for c in self.timeline.session.compactions
                           if self.compaction_step(self.timeline, c) == turn)
        step = f"Step {turn + 1:,} of {len(self.timeline.turns):,}, " if self.timeline.step_rule != "messages" else ""
        self.label.setText(f"{step}Turn {t.index}: {t.tokens_sent:,} of {t.budget:,} tokens sent{reported}, {t.kept:,} kept, {t.dropped:,} dropped, "
                           f"{t.summarized:,} summarised, {t.truncated:,} cut; {t.not_sent:,} tokens of the conversation not sent — {events}{recorded}")
        self._fit_words()

    def _show_chart(self, shown: bool) -> None:
        """The chart, or (before any replay) a sentence in its place."""
        self.plot.setVisible(shown)
        self.empty.setVisible(not shown)

    def _show_calls(self, timeline: Timeline | None, cache: Any) -> None:
        """The agent's calls, a row each (priced once the replay's cache report is in)."""
        self.calls.calls.set_calls(timeline, cache)
        rows = self.calls.calls.rows
        self.calls_box.setVisible(bool(rows))
        if not rows:
            return
        reported = sum(1 for r in rows if not r.estimated)
        source = (f"{reported:,} with the provider's figures" + (f", {len(rows) - reported:,} estimated by the cache model" if reported < len(rows) else "")
                  if reported else "figures estimated by the cache model (the log records no usage)")
        self.calls_title.setText(f"The agent's calls: {len(rows):,} ({source}{'' if cache is not None else '; pricing…'}). "
                                 "Click one to move the turn slider there.")
        self.calls.show_step(self.slider.value())

    def _moved(self, turn: int) -> None:
        """The label and the cursor follow the handle at once; the context at the turn is published
        at the next frame (a few moves in one frame publish one), and during a drag only once the
        handle rests or is released."""
        self._describe(turn)
        self.calls.show_step(turn)
        self._pending_turn = turn
        self._publish_timer.start(REST_MS if self.slider.isSliderDown() else 0)

    def _drop_pending_turn(self) -> None:
        self._publish_timer.stop()
        self._pending_turn = None

    def _publish_turn(self) -> None:
        self._publish_timer.stop()
        if self._pending_turn is None or self.timeline is None:
            return
        turn, self._pending_turn = self._pending_turn, None
        self.published.append(turn)
        self.turnChanged.emit(turn)
