"""The colour defects a review of the app found: one meaning, one colour across the app (Context
was purple in the donut and pink as a category); in the dark theme the Timeline's System and
Dialog bands were both dark blue, and the × buttons read as disabled."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from ctxviz.engine.planner import plan_session  # noqa: E402
from ctxviz.engine.policies import get_policy, policy_names  # noqa: E402
from ctxviz.engine.session import Category  # noqa: E402
from ctxviz.gui.theme import CATEGORY_COLORS, CATEGORY_LABELS  # noqa: E402
from ctxviz.gui.widgets.budget_pie import BudgetPie, pretty  # noqa: E402
from ctxviz.io.loaders import load_session  # noqa: E402

from .colorvision import closest_pair  # noqa: E402

SAMPLES = Path(__file__).parent.parent / "sample_sessions"
#: A Claude Code log (its policy's part "context" is its window below the trigger) and a Codex
#: rollout (its part "initial_context" holds the Context category's messages).
LOGS = [SAMPLES / "claude_code_compaction.jsonl", SAMPLES / "codex_rollout.jsonl", SAMPLES / "support_chat.yaml"]


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_a_donut_part_named_as_a_category_is_drawn_in_that_categorys_colour(qtbot, path) -> None:  # type: ignore[no-untyped-def]
    """Claude Code's "Context 38,616 / 167,000" and Codex's "Initial context" were the donut's
    purple, while the strip, the bars and the Timeline's bands draw the Context category pink."""
    session = load_session(str(path))
    pie = BudgetPie()
    qtbot.addWidget(pie)
    pie.resize(700, 260)
    names = {label.lower(): category for category, label in CATEGORY_LABELS.items()}
    for policy in policy_names():
        plan = plan_session(session, policy, get_policy(policy).make_params({}))
        pie.set_plan(plan)
        for (name, _allotted, _used), colour in zip(pie.parts, pie.colors, strict=True):
            label = pretty(name, pie.categories)
            last = label.split()[-1].lower()
            if last in names and names[last] != "system":  # ("Retained user" is no category's; "System" parts are drawn as System)
                assert colour == CATEGORY_COLORS[names[last]], (policy, label, colour)
            elif colour in CATEGORY_COLORS.values():  # a category's colour only for what that category holds
                category = next(c for c, v in CATEGORY_COLORS.items() if v == colour)
                assert category == "system" or label == CATEGORY_LABELS[category], (policy, label, colour)


def test_codexs_initial_context_part_holds_the_context_categorys_messages() -> None:
    """Why the part takes the Context colour: the messages it counts are that category's."""
    session = load_session(str(SAMPLES / "codex_rollout.jsonl"))
    plan = plan_session(session, "codex-compaction", get_policy("codex-compaction").make_params({}))
    initial = [m for m in plan.messages if m.zone == "initial_context"]
    context = [m for m in session.messages if m.category == Category.CONTEXT]
    assert context and all(session.messages[m.index].category == Category.CONTEXT for m in initial)


@pytest.mark.parametrize("line", ["user instructions still sent", "request served from the cache"])
def test_the_instructions_and_cache_lines_take_no_categorys_colour(qtbot, line) -> None:  # type: ignore[no-untyped-def]
    """The instructions' line was the Context category's pink and the cache's the Dialog
    category's blue, on the tab whose bands draw "Context (sent)" and "Dialog (sent)" in them."""
    from ctxviz.engine.caching import cache_costs
    from ctxviz.engine.retention_timeline import timeline_retention
    from ctxviz.engine.simulate import simulate
    from ctxviz.gui.widgets.timeline import TimelineView

    view = TimelineView()
    qtbot.addWidget(view)
    timeline = simulate(load_session(str(SAMPLES / "claude_code_compaction.jsonl")), "claude-code")
    view.set_timeline(timeline)
    view.set_answers(timeline, timeline_retention(timeline), cache_costs(timeline))
    pens = {item.name(): item.opts["pen"].color().name() for item in view.answers_plot.listDataItems() if item.opts["pen"] is not None}
    colour = pens[line]
    assert colour not in CATEGORY_COLORS.values()
    for vision in ("normal", "deuteranopia", "protanopia"):
        distance, a, b = closest_pair({**CATEGORY_COLORS, "line": colour}, vision)
        assert "line" not in (a, b) or distance >= 15, (vision, a, b, distance)


@pytest.fixture(params=["light", "dark"])
def theme(request, qapp):  # type: ignore[no-untyped-def]
    """The app in the light or the dark theme for one test, then as it was."""
    from PySide6.QtWidgets import QApplication

    from ctxviz.gui.theme import apply_color_scheme

    palette, style, sheet = qapp.palette(), qapp.style().name(), qapp.styleSheet()
    apply_color_scheme(qapp, request.param)
    yield request.param
    qapp.setPalette(palette)
    QApplication.setStyle(style)
    qapp.setStyleSheet(sheet)


def over(colour, background):  # type: ignore[no-untyped-def]
    """A translucent colour as it shows over the chart's background."""
    from PySide6.QtGui import QColor

    c, bg = QColor(colour), QColor(background)
    a = c.alphaF()
    return QColor(*(round(x * a + y * (1 - a)) for x, y in ((c.red(), bg.red()), (c.green(), bg.green()), (c.blue(), bg.blue())))).name()


def test_the_system_and_dialog_bands_stay_apart_in_both_themes(qtbot, theme) -> None:  # type: ignore[no-untyped-def]
    """In the dark theme both bands were a dark blue (the category colours at alpha 110 over a
    near-black background: CIE distance 12.6; 11.3 over the light theme's white)."""
    from ctxviz.engine.composition import composition
    from ctxviz.engine.simulate import simulate
    from ctxviz.gui.widgets.timeline import TimelineView

    view = TimelineView()
    qtbot.addWidget(view)
    assert (view.background == "#16181c") == (theme == "dark")
    timeline = simulate(load_session(str(SAMPLES / "codex_rollout.jsonl")), "codex-compaction")
    view.set_timeline(timeline)
    view.set_composition(timeline, composition(timeline))
    legend = view.plot.getPlotItem().legend
    shown = {label.text: over(sample.item.opts["brush"].color(), view.background) for sample, label in legend.items
             if label.text in ("System (sent)", "Dialog (sent)")}
    assert len(shown) == 2
    for vision in ("normal", "deuteranopia", "protanopia"):
        distance, _a, _b = closest_pair(shown, vision)
        assert distance >= 15, (theme, vision, shown, distance)
        # and each band apart from the background it is drawn on
        for band in shown.values():
            assert closest_pair({"band": band, "background": view.background}, vision)[0] >= 15


def test_an_unset_buttons_cross_shows_only_when_it_can_unset(qtbot, open_window) -> None:  # type: ignore[no-untyped-def]
    """Codex's two window fields start unset (the model's default): their × was drawn disabled,
    grey, and read as a broken close button in the dark theme. It shows while there is a value
    to unset, enabled, and the field keeps its place without it."""
    win = open_window(SAMPLES / "codex_rollout.jsonl")
    qtbot.wait(100)

    def field():  # type: ignore[no-untyped-def]  # (the form may be built again after a change)
        spin = win.params.editors["model_context_window"][1]
        return win.params.unsets["model_context_window"], spin, spin.mapTo(win, spin.rect().topLeft())

    unset, spin, place = field()
    assert win.vm.params.model_context_window is None
    assert not unset.isVisible()  # nothing to unset: no × at all, rather than a grey one
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        spin.setValue(300000)
    qtbot.waitUntil(lambda: field()[0].isVisible(), timeout=5000)
    unset, spin, moved = field()
    assert unset.isEnabled() and moved == place
    with qtbot.waitSignal(win.vm.planReady, timeout=30000):
        unset.click()
    qtbot.waitUntil(lambda: not field()[0].isVisible(), timeout=5000)
    assert win.vm.params.model_context_window is None and field()[2] == place


@pytest.mark.parametrize("kind", ["QPushButton", "QSpinBox", "QComboBox", "QSlider", "QCheckBox", "QLineEdit", "QLabel"])
def test_a_disabled_widget_is_drawn_muted_in_both_themes(qtbot, theme, kind) -> None:  # type: ignore[no-untyped-def]
    """In the light theme a disabled button, spin box, choice, slider or check box looked exactly
    like an enabled one: the palette gave its Disabled group the Active colours."""
    from PySide6 import QtWidgets
    from PySide6.QtGui import QPalette

    enabled, disabled = getattr(QtWidgets, kind)(), getattr(QtWidgets, kind)()
    for widget in (enabled, disabled):
        qtbot.addWidget(widget)
    disabled.setEnabled(False)
    roles = {"QLineEdit": QPalette.ColorRole.Text, "QSpinBox": QPalette.ColorRole.Text, "QLabel": QPalette.ColorRole.WindowText,
             "QCheckBox": QPalette.ColorRole.WindowText, "QSlider": QPalette.ColorRole.Highlight}
    role = roles.get(kind, QPalette.ColorRole.ButtonText)
    on = enabled.palette().color(QPalette.ColorGroup.Active, role).name()
    off = disabled.palette().color(disabled.palette().currentColorGroup(), role).name()
    assert disabled.palette().currentColorGroup() == QPalette.ColorGroup.Disabled
    # Apart enough to see (CIE Lab distance), and nearer the background than the enabled colour is.
    background = enabled.palette().color(QPalette.ColorGroup.Active, QPalette.ColorRole.Window).name()
    assert closest_pair({"on": on, "off": off}, "normal")[0] >= 15, (theme, kind, on, off)
    assert closest_pair({"off": off, "bg": background}, "normal")[0] < closest_pair({"on": on, "bg": background}, "normal")[0]


def test_a_disabled_buttons_words_have_less_contrast_on_screen(qtbot, theme) -> None:  # type: ignore[no-untyped-def]
    """What the user sees, not only the palette: the disabled button's words stand out less from
    its face (the most common colour) than the enabled one's."""
    from collections import Counter

    from PySide6.QtGui import QColor
    from PySide6.QtWidgets import QPushButton

    contrast = []
    for enabled in (True, False):
        button = QPushButton("Reset to defaults")
        qtbot.addWidget(button)
        button.setEnabled(enabled)
        button.resize(140, 28)
        image = button.grab().toImage()
        pixels = [image.pixel(x, y) for x in range(8, image.width() - 8) for y in range(6, image.height() - 6)]
        face = QColor.fromRgb(Counter(pixels).most_common(1)[0][0]).lightness()
        contrast.append(max(abs(QColor.fromRgb(p).lightness() - face) for p in pixels))
    assert contrast[1] < contrast[0] * 0.7, (theme, contrast)
