"""Colours and palettes: one place, so the strip, the pie, the bars and the legend always agree."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette

# Categories: distinguishable hues (also for the common colour-vision deficiencies), mid lightness
# so they read on both light and dark backgrounds.
CATEGORY_COLORS = {
    "system": "#7a8699",
    "context": "#9467bd",
    "dialog": "#1f77b4",
    "system_output": "#e69f00",
    "error": "#d62728",
    "internal": "#8c8c8c",
    "unknown": "#b0b0b0",
}
CATEGORY_LABELS = {"system": "System", "context": "Context", "dialog": "Dialog", "system_output": "Tool output",
                   "error": "Error", "internal": "Internal", "unknown": "Unknown"}
DECISION_COLORS = {"kept": "#2ca02c", "dropped": "#9e9e9e", "summarized": "#17becf", "truncated": "#ff7f0e", "replaced": "#bcbd22"}
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
