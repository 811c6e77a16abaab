"""What the window shows before a session is open: the samples to try and the files opened
recently, each one click away, instead of charts with bare 0-1 axes."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

#: The bundled samples and what each shows (sample_sessions/README.md has more).
SAMPLES = (
    ("support_chat.yaml", "a 230-message support chat whose opening request missy drops"),
    ("coding_agent.yaml", "a coding agent's 146 messages with 80 tool calls and long test logs"),
    ("multimodal_review.yaml", "a design review with 9 images"),
    ("claude_code_compaction.jsonl", "a Claude Code log with a compaction and the provider's usage"),
    ("codex_rollout.jsonl", "a Codex CLI rollout with a /compact"),
    ("gemini_cli_session.json", "a Gemini CLI session with reported tokens"),
)


def samples_dir() -> Path | None:
    folder = Path(__file__).resolve().parents[3] / "sample_sessions"
    return folder if folder.is_dir() else None


class WelcomePanel(QWidget):
    openRequested = Signal(str)  # a path

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse | Qt.TextInteractionFlag.LinksAccessibleByKeyboard)
        self.label.linkActivated.connect(self.openRequested.emit)
        layout = QVBoxLayout(self)
        # Narrow margins: at 1024x700 margins of 40 and 30 pixels were part of what cut the text.
        layout.setContentsMargins(24, 12, 24, 12)
        layout.addWidget(self.label)
        self._layout = layout
        self.browser: QWidget | None = None
        layout.addStretch(1)
        self.set_recent([])

    def set_browser(self, browser: QWidget) -> None:
        """The agent sessions on this machine, under the samples and recent files, taking the room left."""
        heading = QLabel("<h3>Agent sessions on this machine</h3>")
        heading.setTextFormat(Qt.TextFormat.RichText)
        self._layout.takeAt(self._layout.count() - 1)  # the stretch: the browser takes the room instead
        self._layout.addWidget(heading)
        self._layout.addWidget(browser, 1)
        self.browser = browser

    def set_recent(self, recent: list[str]) -> None:
        parts = ["<h2>See what your agent's context manager keeps, drops and summarises</h2>",
                 "<p>Open a session log (<b>Ctrl+O</b>, or drop a file on the window): ctxviz reads its own format, OpenAI and "
                 "Anthropic messages, Claude Code, Codex and Gemini CLI logs, LangChain, SWE-agent, OpenTelemetry and more. "
                 "Then pick a policy on the left and move its trigger and keep.</p>"]
        folder = samples_dir()
        if folder is not None:
            # Two columns: six lines of samples took the session browser's room at 1024x700.
            items = [f'<a href="{html.escape(str(folder / name))}">{html.escape(name)}</a>: {html.escape(text)}'
                     for name, text in SAMPLES if (folder / name).exists()]
            half = (len(items) + 1) // 2
            rows = "".join(f'<tr><td width="50%">• {left}</td><td width="50%">{"• " + right if right else ""}</td></tr>'
                           for left, right in zip(items[:half], [*items[half:], ""], strict=False))
            parts.append(f'<h3>Samples</h3><table width="100%" cellspacing="0" cellpadding="1">{rows}</table>')
        existing = [p for p in recent if os.path.exists(p)]
        if existing:
            items = "".join(f'<li><a href="{html.escape(p)}">{html.escape(os.path.basename(p))}</a> '
                            f'<span style="color: palette(placeholder-text);">{html.escape(os.path.dirname(p))}</span></li>' for p in existing[:8])
            parts.append(f"<h3>Recent</h3><ul>{items}</ul>")
        parts.append("<p>Keys: <b>Ctrl+Shift+P</b> the command palette, <b>Ctrl+J</b> jump to the cut, "
                     "<b>Ctrl+D</b> the next user message not sent, <b>Ctrl+Z</b> undo a parameter change.</p>")
        self.label.setText("".join(parts))
        self._fit_label()

    def resizeEvent(self, event: Any) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._fit_label()

    def _fit_label(self) -> None:
        """The text as tall as it wraps to at the page's width, the browser the rest: a window's
        layout does not ask a label its height for its width, and at 1024x700 the keys' line was
        cut in half under the samples."""
        margins = self._layout.contentsMargins()
        width = (self.width() if self.width() > 100 else 1000) - margins.left() - margins.right()
        least = self.label.minimumHeight()
        self.label.setMinimumHeight(0)  # (QLabel's height for a width is never under its least height)
        needed = self.label.heightForWidth(width)
        self.label.setMinimumHeight(needed if needed > 0 else least)
