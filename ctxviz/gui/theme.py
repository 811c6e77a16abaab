"""Colours and palettes: one place, so the strip, the pie, the bars and the legend always agree."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from ..resources import resource_path

# Decisions: Okabe and Ito's colour-blind-safe hues. Categories: hues of their own, apart from every
# decision colour (they shared four: a Tool output bar read as "truncated", a System segment as
# "summarised", tests/test_colours.py), every pair of them apart too (CIE Lab distance >= 15) for
# normal vision and simulated deuteranopia and protanopia, at lightnesses that read on light and dark
# backgrounds. Dialog and Tool output, most of every strip, are far apart in lightness as well.
CATEGORY_COLORS = {
    "system": "#851f66",
    "context": "#cf78b2",
    "dialog": "#6752e5",
    "system_output": "#9ca052",
    "error": "#f33622",
    "internal": "#6a523e",
    "unknown": "#707070",
}
CATEGORY_LABELS = {"system": "System", "context": "Context", "dialog": "Dialog", "system_output": "Tool output",
                   "error": "Error", "internal": "Internal", "unknown": "Unknown"}
DECISION_COLORS = {"kept": "#009e73", "dropped": "#b8b8b8", "summarized": "#56b4e9", "truncated": "#e69f00", "replaced": "#0072b2"}
#: Allocation parts that are not categories (memory, history, a reserve...): hues apart from every
#: category colour and from each other, for normal vision and simulated deuteranopia and protanopia
#: (tests/test_colours.py), so that the donut's orange is never mistaken for the strip's tool output.
PART_COLORS = ["#56cd96", "#1a8710", "#dfd153"]
#: The part that holds the conversation (most of most budgets): the calmest of those hues.
CONVERSATION_COLOR = "#dbe393"
#: (Claude Code's "context" is its window below the trigger, which the conversation fills.)
CONVERSATION_PARTS = frozenset({"history", "messages", "events", "full_text", "below_threshold", "context"})
#: Parts that are not categories but bear a category's name, named for what they are: Claude
#: Code's "context" (its window below the trigger, which the conversation fills) read "Context" in
#: the donut's purple beside the Context category's pink. ("Window below the trigger" ran its
#: figures past the donut's legend at 1024x700.)
PART_LABELS = {"context": "Conversation"}
#: Parts that hold the system prompt under another name: drawn in the System category's colour.
SYSTEM_PARTS = frozenset({"system", "system_reserve", "instructions", "initial"})
#: Parts that hold the Context category's messages: Codex's initial context (its AGENTS.md and
#: environment, the strip's pink) was the donut's purple.
CONTEXT_PARTS = frozenset({"initial_context"})
WARNING = "#d62728"


def category_color(name: str) -> QColor:
    return QColor(CATEGORY_COLORS.get(name, "#b0b0b0"))


def category_label(name: str) -> str:
    """A category's one name everywhere ("Tool output", never "System output" or "system_output")."""
    return CATEGORY_LABELS.get(name) or name.replace("_", " ").capitalize()


def parts_are_categories(names: list[str] | tuple[str, ...]) -> bool:
    """The allocation divides the budget by category (the category policy): every part is one.
    Claude Code's part "context" is its context below the trigger, not the Context category."""
    return bool(names) and all(n in CATEGORY_COLORS for n in names)


def part_colors(names: list[str]) -> list[str]:
    """One colour per allocation part: a category's own colour when the parts are categories (or
    hold the system prompt, or the Context category's messages), the conversation's for the
    history, else the next of PART_COLORS."""
    out, k = [], 0
    categories = parts_are_categories(names)
    for name in names:
        if categories:
            out.append(CATEGORY_COLORS[name])
        elif name in CONVERSATION_PARTS:
            out.append(CONVERSATION_COLOR)
        elif name in SYSTEM_PARTS:
            out.append(CATEGORY_COLORS["system"])
        elif name in CONTEXT_PARTS:
            out.append(CATEGORY_COLORS["context"])
        else:
            out.append(PART_COLORS[k % len(PART_COLORS)])
            k += 1
    return out


def part_label(name: str, categories: bool = True) -> str:
    """A part's name as the legend shows it: a category's one name (when the parts are
    categories), else the policy's own words (`PART_LABELS` where those are a category's name)."""
    if categories and name in CATEGORY_LABELS:
        return CATEGORY_LABELS[name]
    return PART_LABELS.get(name) or name.replace("_", " ").capitalize()


def is_dark(palette: QPalette | None = None) -> bool:
    palette = palette or QGuiApplication.palette()
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def apply_color_scheme(app: QGuiApplication, scheme: str = "auto") -> None:
    """Follow the system's light or dark scheme ("auto"), or force one (for screenshots and tests)."""
    hints = app.styleHints()
    if scheme == "auto":
        dark = hints.colorScheme() == Qt.ColorScheme.Dark
    else:
        dark = scheme == "dark"
    app.setStyle("Fusion")
    app.setPalette(dark_palette() if dark else light_palette())
    if isinstance(app, QApplication):
        # Fusion draws a check box's frame a shade darker than the window: invisible on a dark one.
        app.setStyleSheet(DARK_CHECKBOXES.replace("CHECK", resource_path("icons", "check-light.svg").as_posix()) if dark else "")


DARK_CHECKBOXES = """
QCheckBox::indicator { width: 13px; height: 13px; border: 1px solid #8a919e; border-radius: 3px; background: #16181c; }
QCheckBox::indicator:hover { border-color: #c3c8d1; }
QCheckBox::indicator:checked { background: #3d7eea; border-color: #3d7eea; image: url(CHECK); }
QCheckBox::indicator:disabled { border-color: #4a505b; background: #1f2228; }
QCheckBox::indicator:checked:disabled { background: #4b5263; border-color: #4b5263; }
"""


def light_palette() -> QPalette:
    p = QPalette()
    for role, color in {
        QPalette.ColorRole.Window: "#f4f5f7", QPalette.ColorRole.WindowText: "#1d2330", QPalette.ColorRole.Base: "#ffffff",
        QPalette.ColorRole.AlternateBase: "#f0f2f5", QPalette.ColorRole.Text: "#1d2330", QPalette.ColorRole.Button: "#e9ebef",
        QPalette.ColorRole.ButtonText: "#1d2330", QPalette.ColorRole.Highlight: "#2f6fde", QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.ToolTipBase: "#ffffe8", QPalette.ColorRole.ToolTipText: "#1d2330", QPalette.ColorRole.PlaceholderText: "#7a8190",
        QPalette.ColorRole.Link: "#2f6fde", QPalette.ColorRole.Mid: "#c9ced6",
    }.items():
        p.setColor(role, QColor(color))
    mute_disabled(p, text="#9ba1ac", button="#eef0f3", base="#f4f5f7", highlight="#b9c1ce")
    return p


def mute_disabled(p: QPalette, *, text: str, button: str, base: str, highlight: str) -> None:
    """A disabled widget drawn muted: a palette built with `setColor(role, ...)` gives the Disabled
    group the Active colours, so a disabled button, spin box, choice, slider or check box in the
    light theme looked exactly like an enabled one, and a click on it did nothing with no sign why."""
    disabled = QPalette.ColorGroup.Disabled
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        p.setColor(disabled, role, QColor(text))
    p.setColor(disabled, QPalette.ColorRole.Button, QColor(button))
    p.setColor(disabled, QPalette.ColorRole.Base, QColor(base))
    p.setColor(disabled, QPalette.ColorRole.Highlight, QColor(highlight))


def dark_palette() -> QPalette:
    p = QPalette()
    for role, color in {
        QPalette.ColorRole.Window: "#1f2228", QPalette.ColorRole.WindowText: "#e3e6eb", QPalette.ColorRole.Base: "#16181c",
        QPalette.ColorRole.AlternateBase: "#23262d", QPalette.ColorRole.Text: "#e3e6eb", QPalette.ColorRole.Button: "#2b2f37",
        QPalette.ColorRole.ButtonText: "#e3e6eb", QPalette.ColorRole.Highlight: "#3d7eea", QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.ToolTipBase: "#2b2f37", QPalette.ColorRole.ToolTipText: "#e3e6eb", QPalette.ColorRole.PlaceholderText: "#8a919e",
        QPalette.ColorRole.Link: "#7aa7f5", QPalette.ColorRole.Mid: "#3a3f49",
    }.items():
        p.setColor(role, QColor(color))
    mute_disabled(p, text="#6b717c", button="#25282e", base="#1c1e23", highlight="#4b5263")
    return p


def plot_colors() -> tuple[str, str]:
    """(background, foreground) for pyqtgraph plots in the current palette."""
    palette = QGuiApplication.palette()
    return palette.color(QPalette.ColorRole.Base).name(), palette.color(QPalette.ColorRole.Text).name()
