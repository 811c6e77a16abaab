"""The "Context as sent" tab: the request the plan sends (or the replay's at a scrubbed turn), in
the export formats, with its gaps marked; copy, export and the `ctxviz plan` command.

A mixin of `MainWindow` (gui/main_window.py).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ...engine.plan import Plan
from ...engine.session import Session
from ...engine.sources import plan_sources
from ...errors import CtxvizError
from ...io.exporters import EXPORTERS, GAP_MARK, export, export_text, write_atomic
from ..safe import plain_label
from .context_sources import added_counts, labelled_markdown

CONTEXT_TAB = 3  # Overview, Timeline, Compare, Context as sent


class ContextTab:
    """What is sent, as text, for `MainWindow`."""

    vm: Any
    tabs: Any
    status_label: Any
    shown_plan: Plan | None
    shown_session: Session | None
    _context_stale: bool

    def _build_context_tab(self) -> QWidget:
        """The format, the buttons, what the text is of, and the text."""
        self.context_view = QPlainTextEdit()
        self.context_view.setReadOnly(True)
        self.context_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.context_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))  # JSON and fences line up
        context_box = QWidget()
        cl = QVBoxLayout(context_box)
        buttons = QHBoxLayout()
        self.context_format = QComboBox()
        self.context_format.addItems(list(EXPORTERS))
        self.context_format.setCurrentText("markdown")
        copy = QPushButton("Copy")
        copy.clicked.connect(self.copy_context)
        export = QPushButton("Export…")
        export.clicked.connect(self.export_context)
        command = QPushButton("Copy as command")
        command.clicked.connect(self.copy_command)
        buttons.addWidget(QLabel("Format:"))
        buttons.addWidget(self.context_format)
        buttons.addStretch(1)
        buttons.addWidget(copy)
        buttons.addWidget(export)
        buttons.addWidget(command)
        cl.addLayout(buttons)
        # Which context this is: the plan of the whole file, or a turn of the replay scrubbed to.
        self.context_scope = plain_label()
        self.context_scope.setWordWrap(True)  # however long, it never widens the window
        self.context_scope.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        cl.addWidget(self.context_scope)
        cl.addWidget(self.context_view)
        return context_box

    def _render_context(self) -> None:
        """The context text is the whole trimmed conversation: build it only when its tab is shown."""
        self._context_stale = True
        if self.tabs.currentIndex() == CONTEXT_TAB:
            marked = self.context_format.currentText() == "markdown" and self.shown_plan is not None
            # The markdown view marks each section's #index and the gaps between sent runs; copy and
            # export give the request itself. The JSON forms are shown exactly as they are copied.
            self.context_view.setPlainText(labelled_markdown(self.shown_plan, self.shown_session) if marked  # type: ignore[arg-type]
                                           else self._context_text())
            self.context_scope.setText(f"Showing, copying and exporting: {self._context_scope()}"
                                       + (f". Shown with each section's source (#index, or what wrote it) and a {GAP_MARK} line where messages are not sent "
                                          "(copy and export keep the sources and leave out the gap lines)" if marked else
                                          f". The markdown format marks each section's #index and the messages not sent ({GAP_MARK})"))
            self._context_stale = False

    def _context_scope(self) -> str:
        plan, session = self.shown_plan, self.shown_session
        if plan is None or session is None:
            return "nothing yet"
        sent = sum(plan.sent_flags)
        counted = f"{sent:,} of {len(plan.messages):,} messages sent{self._entries_note(plan, session, sent)}"
        if session is self.vm.session:
            return f"the plan of the whole file ({counted})"
        return (f"the replay at turn {len(session.messages) - 1} ({counted}); "
                "Back to latest on the Timeline returns to the whole file")

    def _entries_note(self, plan: Plan, session: Session, sent: int) -> str:
        """Why the request below has another number of entries than messages sent: system messages
        folded into the system prompt, a system prompt or summaries added, turns merged (the
        Anthropic form). "" when the two agree."""
        try:
            entries = export(plan, session, self.context_format.currentText()).messages
        except CtxvizError:
            return ""
        if entries == sent:
            return ""
        from_messages = {i for i in plan.context_index if i is not None}
        folded = sum(1 for i, is_sent in enumerate(plan.sent_flags) if is_sent and i not in from_messages)
        why = []
        if folded:
            why.append(f"{folded:,} system message{'s' if folded != 1 else ''} folded into the system prompt")
        # Counted by the sources the markdown view's headings name (a recorded summary is the agent's, not the policy's).
        why += added_counts(plan_sources(plan, session)["context_sources"])
        merged = len(plan.context) - entries
        if self.context_format.currentText() == "anthropic" and merged:
            why.append(f"{merged:,} {'fewer' if merged > 0 else 'more'} after the Messages API's turns are merged "
                       "(the system prompt apart, tool results in user turns)")
        return f"; the request below has {entries:,} entries" + (f": {', '.join(why)}" if why else "")

    def _context_text(self) -> str:
        if self.shown_plan is None or self.shown_session is None:
            return ""
        return export_text(self.shown_plan, self.shown_session, self.context_format.currentText())

    def copy_context(self) -> None:
        QGuiApplication.clipboard().setText(self._context_text())
        self.status_label.setText("Context copied to the clipboard")

    def copy_command(self) -> None:
        QGuiApplication.clipboard().setText(self.vm.command_line())
        self.status_label.setText(f"Copied: {self.vm.command_line()}")

    def export_context(self) -> None:
        if self.shown_plan is None or self.shown_session is None:
            return
        fmt = self.context_format.currentText()
        suffix = {"openai": "json", "anthropic": "json", "jsonl": "jsonl", "markdown": "md"}[fmt]
        path, _ = QFileDialog.getSaveFileName(self, "Export context", f"context.{suffix}")
        if path:
            self.write_export(path, fmt)

    def write_export(self, path: str, fmt: str) -> None:
        try:
            # What the context tab shows and copies: the scrubbed turn's context when one is shown.
            write_atomic(path, export_text(self.shown_plan, self.shown_session, fmt), inputs=self._input_files())  # type: ignore[arg-type]
        except CtxvizError as exc:
            self.show_error(str(exc))
        else:
            self.status_label.setText(f"Exported {fmt} ({self._context_scope()}) to {path}")

    def _input_files(self) -> list[str]:
        """The open session's file: no export, report or preset may be written over it."""
        session = self.vm.session
        return [session.source] if session is not None and session.source else []
