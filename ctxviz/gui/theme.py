"""Colours and palettes: one place, so the strip, the pie, the bars and the legend always agree."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from ..resources import resource_path

# Categories and decisions: Okabe and Ito's colour-blind-safe hues, picked so that every pair stays
# apart (CIE Lab distance >= 15) for normal vision and simulated deuteranopia and protanopia
# (tests/test_colours.py), at mid lightness so they read on light and dark backgrounds.
CATEGORY_COLORS = {
    "system": "#56b4e9",
    "context": "#cc79a7",
    "dialog": "#0072b2",
    "system_output": "#e69f00",
    "error": "#d55e00",
    "internal": "#009e73",
    "unknown": "#5f5f5f",
}
CATEGORY_LABELS = {"system": "System", "context": "Context", "dialog": "Dialog", "system_output": "Tool output",
                   "error": "Error", "internal": "Internal", "unknown": "Unknown"}
DECISION_COLORS = {"kept": "#009e73", "dropped": "#b8b8b8", "summarized": "#56b4e9", "truncated": "#e69f00", "replaced": "#0072b2"}
PART_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#e15759", "#9c755f", "#ff9da7", "#bab0ac"]
WARNING = "#d62728"


def category_color(name: str) -> QColor:
    return QColor(CATEGORY_COLORS.get(name, "#b0b0b0"))


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
    return p


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
    for group in (QPalette.ColorGroup.Disabled,):
        p.setColor(group, QPalette.ColorRole.Text, QColor("#6b717c"))
        p.setColor(group, QPalette.ColorRole.ButtonText, QColor("#6b717c"))
        p.setColor(group, QPalette.ColorRole.WindowText, QColor("#6b717c"))
    return p


def plot_colors() -> tuple[str, str]:
    """(background, foreground) for pyqtgraph plots in the current palette."""
    palette = QGuiApplication.palette()
    return palette.color(QPalette.ColorRole.Base).name(), palette.color(QPalette.ColorRole.Text).name()
