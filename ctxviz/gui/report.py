"""`ctxviz report`: the app's pie, strip, category bars and timeline, rendered without a display.

PNG through `grab()`, SVG through QSvgGenerator (pyqtgraph's own SVG exporter breaks on PySide6
6.11+), PDF through QPdfWriter, and a self-contained HTML page with the picture inlined and every
message escaped (a session file is untrusted input). Files are written atomically.
"""

from __future__ import annotations

import base64
import html
import os

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPoint, QRect, QSize
from PySide6.QtGui import QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QApplication, QGridLayout, QLabel, QWidget

from ..engine.plan import Plan
from ..engine.session import Session
from ..engine.simulate import Timeline, plan_versus_replay
from ..errors import CtxvizError
from ..io.exporters import write_atomic
from .status import reported_text, unseen_text, verdict
from .widgets.budget_pie import BudgetPie
from .widgets.category_bars import CategoryBars
from .widgets.message_strip import MessageStrip
from .widgets.timeline import TimelineView

SIZE = QSize(1400, 980)


def provider_html(plan: Plan) -> str:
    """What the provider's log says beside the plan (the overview's lines), escaped, or ""."""
    unseen = plan.reported.unseen if plan.reported is not None else 0
    lines = [line for line in (reported_text(plan), unseen_text(unseen)) if line]
    return "".join(f"<p class='provider'>{html.escape(line)}</p>" for line in lines)


class ReportWidget(QWidget):
    def __init__(self, session: Session, plan: Plan, timeline: Timeline | None) -> None:
        super().__init__()
        self.resize(SIZE)
        t = plan.totals
        said = html.escape(verdict(plan))  # the status bar's words
        said = said if t.fits else f"<span style='color:#d62728'>{said}</span>"
        # Rich text for the layout, every piece from the file escaped (an `<img src=...>` would be loaded).
        title = QLabel(f"<h2>{html.escape(session.title or os.path.basename(session.source))}</h2>"
                       f"<p>{len(session.messages):,} messages · policy <b>{html.escape(plan.policy)}</b> · {t.used:,} of {t.budget:,} tokens · "
                       f"{said} · "
                       f"{t.kept_messages:,} sent, {t.dropped_messages:,} not sent</p>" + provider_html(plan))
        self.pie = BudgetPie()
        self.pie.set_plan(plan)
        self.bars = CategoryBars()
        self.bars.set_plan(plan)
        self.strip = MessageStrip()
        self.strip.set_plan(session, plan)
        layout = QGridLayout(self)
        layout.addWidget(title, 0, 0, 1, 2)
        layout.addWidget(self.pie, 1, 0)
        layout.addWidget(self.bars, 1, 1)
        layout.addWidget(self.strip, 2, 0, 1, 2)
        if timeline is not None:
            view = TimelineView()
            view.set_timeline(timeline)
            view.set_versus(plan_versus_replay(plan, timeline))  # the sentence `ctxviz simulate` closes with
            view.run.hide()
            view.latest.hide()
            view.slider.hide()
            layout.addWidget(view, 3, 0, 1, 2)
            layout.setRowStretch(3, 3)
        layout.setRowStretch(1, 3)
        layout.setRowStretch(2, 2)

    def settle(self) -> None:
        """Lay out and paint once, so pyqtgraph sizes its axes before the real render."""
        self.show()
        for _ in range(3):
            QApplication.processEvents()
        self.grab()
        QApplication.processEvents()


def render_png(widget: QWidget) -> bytes:
    pixmap = widget.grab()
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    pixmap.save(buffer, "PNG")
    return bytes(buffer.data().data())


def render_svg(widget: QWidget) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    generator = QSvgGenerator()
    generator.setOutputDevice(buffer)
    generator.setSize(widget.size())
    generator.setViewBox(QRect(QPoint(0, 0), widget.size()))
    generator.setTitle("ctxviz report")
    painter = QPainter(generator)
    widget.render(painter, QPoint())
    painter.end()
    return bytes(data.data())


def render_pdf(widget: QWidget) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    writer.setPageOrientation(writer.pageLayout().orientation().Landscape)
    writer.setResolution(150)
    painter = QPainter(writer)
    page = writer.pageLayout().paintRectPixels(writer.resolution())
    scale = min(page.width() / widget.width(), page.height() / widget.height())
    painter.scale(scale, scale)
    widget.render(painter, QPoint())
    painter.end()
    return bytes(data.data())


def render_html(session: Session, plan: Plan, png: bytes, timeline: Timeline | None = None) -> str:
    """A self-contained page: the picture inlined, how the replay compares with the plan (when there
    is a timeline), then every message, escaped."""
    esc = html.escape
    versus = f"<p class='versus'>{esc(plan_versus_replay(plan, timeline))}</p>" if timeline is not None else ""
    texts = {m.index: m.text for m in session.messages}
    rows = "\n".join(
        f"<tr class='{m.decision.value}'><td>{m.index}</td><td>{esc(m.id)}</td><td>{esc(m.role)}</td><td>{esc(str(m.category))}</td>"
        f"<td class='n'>{m.tokens:,}</td><td>{m.decision.value}</td><td>{esc(m.zone)}</td><td>{esc(m.reason)}</td>"
        f"<td><details><summary>{esc(texts[m.index][:80])}</summary><pre>{esc(texts[m.index])}</pre></details></td></tr>"
        for m in plan.messages
    )
    notes = "".join(f"<li>{esc(n)}</li>" for n in plan.notes)
    allocation = "".join(f"<tr><td>{esc(k)}</td><td class='n'>{v:,}</td><td class='n'>{plan.usage.get(k, 0):,}</td></tr>" for k, v in plan.allocation.items())
    t = plan.totals
    title = esc(session.title or os.path.basename(session.source))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ctxviz report: {title}</title>
<style>
body {{ font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 24px; color: #1d2330; }}
table {{ border-collapse: collapse; font-size: 13px; }} td, th {{ border-bottom: 1px solid #e3e6eb; padding: 3px 8px; text-align: left; vertical-align: top; }}
td.n {{ text-align: right; }} tr.dropped {{ color: #888; }} tr.summarized {{ color: #0e8a99; }} tr.truncated, tr.replaced {{ color: #b35900; }}
pre {{ white-space: pre-wrap; max-width: 900px; }} img {{ max-width: 100%; border: 1px solid #e3e6eb; }}
</style></head><body>
<h1>{title}</h1>
<p>{len(session.messages):,} messages ({esc(session.format)}) · policy <b>{esc(plan.policy)}</b> · tokens counted with {esc(plan.tokenizer)} ·
{t.used:,} of {t.budget:,} tokens · {esc(verdict(plan))} · {t.kept_messages:,} sent, {t.dropped_messages:,} not sent</p>
{provider_html(plan)}
<img alt="budget, strip, categories and timeline" src="data:image/png;base64,{base64.b64encode(png).decode()}">
{versus}
<h2>Allocation</h2><table><tr><th>part</th><th>allotted</th><th>used</th></tr>{allocation}</table>
{f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""}
<h2>Messages</h2>
<table><tr><th>#</th><th>id</th><th>role</th><th>category</th><th>tokens</th><th>decision</th><th>zone</th><th>reason</th><th>message</th></tr>
{rows}
</table></body></html>
"""


def write_report(session: Session, plan: Plan, timeline: Timeline | None, path: str) -> None:
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in (".html", ".htm", ".png", ".svg", ".pdf"):
        raise CtxvizError(f"{path}: the report can be .html, .png, .svg or .pdf")
    widget = ReportWidget(session, plan, timeline)
    widget.settle()
    try:
        if suffix == ".png":
            write_atomic(path, render_png(widget))
        elif suffix == ".svg":
            write_atomic(path, render_svg(widget))
        elif suffix == ".pdf":
            write_atomic(path, render_pdf(widget))
        else:
            write_atomic(path, render_html(session, plan, render_png(widget), timeline))
    finally:
        widget.close()
        widget.deleteLater()
