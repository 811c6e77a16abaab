"""The window's menus, toolbar and command palette, built from one action registry (id, title,
menu, shortcut, callback), and the commands that open a dialog of their own (sweep, report, about).

A mixin of `MainWindow` (gui/main_window.py).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QCheckBox, QComboBox, QFileDialog, QLabel, QMessageBox, QToolBar

from ...engine.catalog import load_catalog
from ...engine.tokenizers import tokenizer_names
from ...errors import CtxvizError
from ..actions import ActionRegistry, ActionSpec, CommandPalette, PaletteEntry


class Menus:
    """Menus, toolbar and palette, for `MainWindow`."""

    vm: Any
    tabs: Any
    shown_plan: Any
    status_label: Any
    recent_menu: Any

    def _build_toolbar(self) -> None:
        bar = QToolBar("Policy")
        bar.setObjectName("policy-toolbar")
        self.addToolBar(bar)
        self.policy_box = QComboBox()
        self.policy_box.addItems(self.vm.policies())
        self.tokenizer_box = QComboBox()
        self.tokenizer_box.addItems(["policy's own", *tokenizer_names()])
        self.model_box = QComboBox()
        self.model_box.addItems(["session's model", *[m.name for m in load_catalog()]])
        self.real_box = QCheckBox("real count")
        self.real_box.setChecked(self.vm.options.real_count)
        self.pair_box = QCheckBox("pair-safe")
        for label, widget in (("Policy", self.policy_box), ("Tokenizer", self.tokenizer_box), ("Model", self.model_box)):
            bar.addWidget(QLabel(f" {label} "))
            bar.addWidget(widget)
        bar.addSeparator()
        bar.addWidget(self.real_box)
        bar.addWidget(self.pair_box)
        bar.addSeparator()
        for action_id in ("open", "export", "palette"):
            bar.addAction(self.registry.actions[action_id])

    def _build_actions(self) -> None:
        r = self.registry = ActionRegistry(self)
        S = QKeySequence.StandardKey
        specs = [
            ActionSpec("open", "&Open…", "File", self.open_dialog, S.Open),
            ActionSpec("browse", "&Browse sessions on this machine…", "File", self.browse_sessions, "Ctrl+Shift+O"),
            ActionSpec("follow", "&Follow the file as it grows", "File", self.toggle_follow, "Ctrl+Shift+F"),
            ActionSpec("export", "&Export context…", "File", self.export_context, "Ctrl+E"),
            ActionSpec("report", "Export &report…", "File", self.export_report, "Ctrl+Shift+R"),
            ActionSpec("save-preset", "&Save parameters as preset…", "File", self.save_preset, S.Save),
            ActionSpec("load-preset", "&Load parameter preset…", "File", self.load_preset_dialog, "Ctrl+L"),
            ActionSpec("quit", "&Quit", "File", self.close, "Ctrl+Q"),
            ActionSpec("undo", "&Undo parameter change", "Edit", self.vm.undo, S.Undo),
            ActionSpec("redo", "&Redo parameter change", "Edit", self.vm.redo, "Ctrl+Shift+Z"),
            ActionSpec("reset-params", "Reset parameters to the &defaults", "Edit", self.vm.reset_params, "Ctrl+Shift+0"),
            ActionSpec("copy-context", "&Copy context as sent", "Edit", self.copy_context, "Ctrl+Shift+C"),
            ActionSpec("copy-command", "Copy as co&mmand", "Edit", self.copy_command, "Ctrl+Shift+M"),
            ActionSpec("find", "&Find message", "Edit", self.focus_search, S.Find),
            ActionSpec("go-to", "&Go to message…", "Edit", self.go_to_dialog, "Ctrl+G"),
            ActionSpec("jump-cut", "&Jump to the cut", "Edit", self.jump_to_cut, "Ctrl+J"),
            ActionSpec("next-dropped-user", "&Next dropped user message", "Edit", self.next_dropped_user, "Ctrl+D"),
            ActionSpec("pin", "P&in / unpin the selected message", "Edit", self.toggle_pin, "Ctrl+K"),
            ActionSpec("switch-policy", "S&witch policy…", "Tools", self.choose_policy, "Ctrl+P"),
            ActionSpec("view-overview", "&Overview", "View", lambda: self.tabs.setCurrentIndex(0), "Ctrl+1"),
            ActionSpec("view-timeline", "&Timeline", "View", lambda: self.tabs.setCurrentIndex(1), "Ctrl+2"),
            ActionSpec("view-compare", "&Compare", "View", lambda: self.tabs.setCurrentIndex(2), "Ctrl+3"),
            ActionSpec("view-context", "Context as &sent", "View", lambda: self.tabs.setCurrentIndex(3), "Ctrl+4"),
            ActionSpec("strip-width", "Strip: width by tokens / by message", "View", self.toggle_strip_width, "Ctrl+T"),
            ActionSpec("toggle-params", "&Parameter panel (show / hide)", "View", self.toggle_params, "Ctrl+B"),
            ActionSpec("zoom-cut", "Strip: zoom to the &cut", "View", self.zoom_to_cut, "Ctrl+Shift+J"),
            ActionSpec("zoom-sent", "Strip: zoom to what is &sent", "View", self.zoom_to_sent, "Ctrl+Shift+S"),
            ActionSpec("zoom-all", "Strip: show &all", "View", self.zoom_all, "Ctrl+Shift+A"),
            ActionSpec("simulate", "&Simulate turn by turn", "Tools", self.simulate, "Ctrl+R"),
            ActionSpec("sweep", "S&weep trigger and keep…", "Tools", self.show_sweep, "Ctrl+Shift+W"),
            ActionSpec("palette", "Command &palette…", "Tools", self.show_palette, "Ctrl+Shift+P"),
            ActionSpec("about", "&About ctxviz", "Help", self.about, S.HelpContents),
        ]
        for spec in specs:
            r.add(spec)
        r.actions["follow"].setCheckable(True)
        menus = {}
        for name in ("File", "Edit", "View", "Tools", "Help"):
            menus[name] = self.menuBar().addMenu(f"&{name}")
        self.recent_menu = menus["File"].addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._refresh_recent)  # files deleted since are left out
        for spec in specs:
            menus[spec.menu].addAction(r.actions[spec.id])
            if spec.id == "open":
                menus["File"].addMenu(self.recent_menu)
        self._refresh_recent()

    def show_palette(self) -> None:
        self.palette_dialog = CommandPalette(self.registry, self, self.palette_entries)
        self.palette_dialog.open()

    def palette_entries(self, query: str) -> list[PaletteEntry]:
        """The palette's own entries: one per policy, and "go to message N" when the query is a number."""
        entries = [PaletteEntry(f"Switch policy: {name}", lambda name=name: self.policy_box.setCurrentText(name))
                   for name in self.vm.policies() if name != self.vm.policy]
        number = query.strip().lstrip("#").removeprefix("go to").strip().lstrip("#")
        if number.isdigit() and self.shown_plan is not None and int(number) < len(self.shown_plan.messages):
            entries.insert(0, PaletteEntry(f"Go to message #{int(number)}", lambda n=int(number): self.show_message(n)))
        return entries

    def choose_policy(self) -> None:
        self.policy_box.setFocus()
        self.policy_box.showPopup()

    def about(self) -> None:
        QMessageBox.about(self, "About ctxviz", "ctxviz: see and tune how agent context managers trim a conversation.")

    def show_sweep(self) -> None:
        if self.vm.session is None:
            self.statusBar().showMessage("open a session to sweep its settings", 4000)
            return
        from ..sweep_dialog import SweepDialog

        self.sweep_dialog = SweepDialog(self.vm, self)
        self.sweep_dialog.open()

    def export_report(self) -> None:
        if self.vm.session is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export report", "report.html", "Report (*.html *.png *.svg *.pdf)")
        if path:
            from ..report import write_report

            try:
                # The plan on screen (planning again here could count 100,000 messages on this thread).
                plan = self.vm.plan if self.vm.plan is not None else self.vm.plan_now()
                write_report(self.vm.session, plan, self.vm.timeline, path, inputs=self._input_files())  # type: ignore[arg-type]
            except CtxvizError as exc:
                self.show_error(str(exc))
            else:
                self.status_label.setText(f"Report written to {path}")
