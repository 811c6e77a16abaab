"""`ctxviz report`: the app's pie, strip, category bars and timeline, rendered without a display.

PNG through `grab()`, SVG through QSvgGenerator (pyqtgraph's own SVG exporter breaks on PySide6
6.11+), PDF through QPdfWriter, and a self-contained HTML page with the picture inlined and every
message escaped (a session file is untrusted input); beyond a few hundred messages its table is paged
by a small script over inert JSON, so 100,000 messages stay usable. Files are written atomically.
"""

from __future__ import annotations

import base64
import html
import json
import os
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPoint, QRect, QSize
from PySide6.QtGui import QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QApplication, QGridLayout, QLabel, QWidget

from ..engine.checks import counts_unseen, unseen_of
from ..engine.fill import fill
from ..engine.plan import Decision, MessagePlan, Plan
from ..engine.session import Session
from ..engine.simulate import Timeline, plan_versus_replay
from ..errors import CtxvizError
from ..io.output import check_output_path, stream_of, write_output
from .report_summaries import summaries_html
from .status import unseen_text, verdict
from .theme import part_label, parts_are_categories
from .widgets.budget_pie import BudgetPie
from .widgets.category_bars import CategoryBars
from .widgets.message_strip import MessageStrip
from .widgets.timeline import TimelineView

SIZE = QSize(1400, 980)


def provider_html(plan: Plan, session: Session) -> str:
    """What the provider's log says beside the plan, in the overview's words (the one fill figure
    to quote with the others explained beside it, then what the log does not record), escaped, or ""."""
    if plan.reported is None:
        return ""
    lines = [line for line in (fill(plan, session).sentence(), unseen_text(unseen_of(plan), counts_unseen(plan))) if line]
    return "".join(f"<p class='provider'>{html.escape(line)}</p>" for line in lines)


def plan_trigger(plan: Plan, session: Session) -> int | None:
    """The token count at which the plan's policy acts, from the plan's own parameters (or None)."""
    from ..engine.policies import get_policy
    from ..engine.vocabulary import trigger_level

    try:
        policy = get_policy(plan.policy)
        return trigger_level(policy, policy.make_params(dict(plan.params)), session)
    except Exception:  # a plugin policy, or parameters it resolved into a form it does not take back
        return None


#: The picture of the HTML report: the charts alone, as wide as a 900-pixel page shows them
#: unscaled. At 1,400 pixels a narrow browser scaled its text to some 6 pixels.
PAGE_SIZE = QSize(840, 820)
#: The height the timeline adds to it.
PAGE_TIMELINE = 440


class ReportWidget(QWidget):
    """The charts, for a still. `page`: the HTML report's picture, without the title, the fill
    sentences and the replay's sentence, which the page says as text (the picture said them a
    second time), and narrower (PAGE_SIZE)."""

    def __init__(self, session: Session, plan: Plan, timeline: Timeline | None, page: bool = False) -> None:
        super().__init__()
        self.resize(QSize(PAGE_SIZE.width(), PAGE_SIZE.height() + (PAGE_TIMELINE if timeline is not None else 0)) if page else SIZE)
        t = plan.totals
        said = html.escape(verdict(plan))  # the status bar's words
        said = said if t.fits else f"<span style='color:#d62728'>{said}</span>"
        # Rich text for the layout, every piece from the file escaped (an `<img src=...>` would be loaded).
        title = QLabel(f"<h2>{html.escape(session.title or os.path.basename(session.source))}</h2>"
                       f"<p>{len(session.messages):,} messages · policy <b>{html.escape(plan.policy)}</b> · {t.used:,} of {t.budget:,} tokens · "
                       f"{said} · "
                       f"{t.kept_messages:,} sent, {t.dropped_messages:,} not sent</p>" + provider_html(plan, session))
        title.setWordWrap(True)  # a long title or fill sentence wraps at the picture's width, never widens it
        self.pie = BudgetPie()
        self.pie.set_plan(plan, trigger=plan_trigger(plan, session))  # the app's verdict, past the trigger included
        self.bars = CategoryBars()
        self.bars.set_plan(plan)
        self.strip = MessageStrip()
        self.strip.set_plan(session, plan)
        layout = QGridLayout(self)
        if page:
            title.hide()
        else:
            layout.addWidget(title, 0, 0, 1, 2)
        if page:  # one chart a row: side by side at 840 pixels, the donut's legend was cut to "C…"
            layout.addWidget(self.pie, 1, 0, 1, 2)
            layout.addWidget(self.bars, 2, 0, 1, 2)
            strip_row = 3
        else:
            layout.addWidget(self.pie, 1, 0)
            layout.addWidget(self.bars, 1, 1)
            strip_row = 2
        layout.addWidget(self.strip, strip_row, 0, 1, 2)
        if timeline is not None:
            view = TimelineView()
            view.still = True  # every sentence under the charts shown: a picture cannot scroll
            view.set_timeline(timeline)
            if not page:  # (the page says it under the picture)
                view.set_versus(plan_versus_replay(plan, timeline))  # the sentence `ctxviz simulate` closes with
            for control in (view.run, view.latest, view.slider, view.find):  # a still has nothing to type in or drag
                control.hide()
            view.calls_box.hide()  # a scrolling table of calls has no place in a still (`ctxviz verify` lists them)
            self.timeline_view = view
            layout.addWidget(view, strip_row + 1, 0, 1, 2)
            layout.setRowStretch(strip_row + 1, 3)
        layout.setRowStretch(1, 3)
        layout.setRowStretch(2, 3 if page else 2)
        layout.setRowStretch(strip_row, 2)

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


#: Message rows per page of the HTML report's table: a browser lays out 100,000 rows (each with its
#: message) slowly or not at all, so larger sessions are paged by a small script over their data.
PAGE_ROWS = 200

_COLUMNS = ("#", "id", "role", "category", "tokens", "decision", "zone", "reason", "message")


def message_row(m: MessagePlan, text: str) -> list[Any]:
    """One message's cells as data: index, id, role, category, tokens, decision, zone, reason, text."""
    return [m.index, m.id, m.role, str(m.category), m.tokens, m.decision.value, m.zone, m.reason, text]


def row_html(row: list[Any]) -> str:
    """A table row, every piece from the file escaped (the paging script builds the same with textContent)."""
    esc = html.escape
    index, mid, role, category, tokens, decision, zone, reason, text = row
    return (f"<tr class='{esc(decision)}'><td>{index}</td><td>{esc(mid)}</td><td>{esc(role)}</td><td>{esc(category)}</td>"
            f"<td class='n'>{tokens:,}</td><td>{esc(decision)}</td><td>{esc(zone)}</td><td>{esc(reason)}</td>"
            f"<td><details><summary>{esc(text[:80])}</summary><pre>{esc(text)}</pre></details></td></tr>")


def script_json(value: Any) -> str:
    """JSON that is inert inside a <script> element: `<`, `>` and `&` as \\u escapes, so no text
    from the file can close the element or start markup (JSON.parse reads them back unchanged)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


#: Pages the table over the rows in #ctxviz-rows; cells are set with textContent (never parsed as HTML).
PAGER_SCRIPT = r"""
(function () {
  var rows = JSON.parse(document.getElementById("ctxviz-rows").textContent);
  var size = PAGE_ROWS, page = 0, shown = rows;
  var body = document.getElementById("ctxviz-body");
  var status = document.getElementById("ctxviz-page");
  var search = document.getElementById("ctxviz-search");
  var decision = document.getElementById("ctxviz-decision");
  function cell(tr, text, cls) { var td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; tr.appendChild(td); return td; }
  function render() {
    var pages = Math.max(1, Math.ceil(shown.length / size));
    page = Math.min(Math.max(0, page), pages - 1);
    var frag = document.createDocumentFragment();
    shown.slice(page * size, (page + 1) * size).forEach(function (r) {
      var tr = document.createElement("tr");
      tr.className = r[5];
      cell(tr, String(r[0])); cell(tr, r[1]); cell(tr, r[2]); cell(tr, r[3]);
      cell(tr, r[4].toLocaleString("en-US"), "n"); cell(tr, r[5]); cell(tr, r[6]); cell(tr, r[7]);
      var td = cell(tr, ""), details = document.createElement("details"), summary = document.createElement("summary");
      summary.textContent = r[8].slice(0, 80);
      details.appendChild(summary);
      details.addEventListener("toggle", function () {  // the whole text only when opened
        if (details.open && details.childNodes.length === 1) { var pre = document.createElement("pre"); pre.textContent = r[8]; details.appendChild(pre); }
      });
      td.appendChild(details);
      frag.appendChild(tr);
    });
    body.textContent = "";
    body.appendChild(frag);
    status.textContent = "page " + (page + 1) + " of " + pages + " (" + shown.length.toLocaleString("en-US") + " of " + rows.length.toLocaleString("en-US") + " messages)";
  }
  function filter() {
    var needle = search.value.toLowerCase(), want = decision.value;
    shown = rows.filter(function (r) {
      return (!want || r[5] === want) && (!needle || (r[1] + "\n" + r[7] + "\n" + r[8]).toLowerCase().indexOf(needle) >= 0);
    });
    page = 0;
    render();
  }
  document.getElementById("ctxviz-first").onclick = function () { page = 0; render(); };
  document.getElementById("ctxviz-prev").onclick = function () { page -= 1; render(); };
  document.getElementById("ctxviz-next").onclick = function () { page += 1; render(); };
  document.getElementById("ctxviz-last").onclick = function () { page = Infinity; render(); };
  search.oninput = filter;
  decision.onchange = filter;
  document.getElementById("ctxviz-pager").hidden = false;
  render();
})();
"""


def messages_html(session: Session, plan: Plan, page_rows: int = PAGE_ROWS) -> str:
    """The message table: whole when it has at most `page_rows` rows; beyond, the first page as
    HTML (what a reader without scripts sees) and every row as inert JSON that a small script
    pages, filters and searches, building cells with textContent."""
    texts = [m.text for m in session.messages]
    head = "<tr>" + "".join(f"<th>{c}</th>" for c in _COLUMNS) + "</tr>"
    rows = [message_row(m, texts[m.index]) for m in plan.messages]
    if len(rows) <= page_rows:
        return f"<table>{head}\n" + "\n".join(map(row_html, rows)) + "\n</table>"
    pages = -(-len(rows) // page_rows)
    options = "".join(f"<option value='{d.value}'>{d.value}</option>" for d in Decision)
    first = "\n".join(row_html(r) for r in rows[:page_rows])
    return f"""<p id="ctxviz-pager" hidden>
<button id="ctxviz-first">&laquo; first</button> <button id="ctxviz-prev">&lsaquo; previous</button>
<button id="ctxviz-next">next &rsaquo;</button> <button id="ctxviz-last">last &raquo;</button>
<select id="ctxviz-decision"><option value="">all decisions</option>{options}</select>
<input id="ctxviz-search" type="search" placeholder="search id, reason, text"></p>
<p id="ctxviz-page">page 1 of {pages:,} ({len(rows):,} messages, {page_rows:,} a page; the others need scripts enabled)</p>
<table>{head}<tbody id="ctxviz-body">
{first}
</tbody></table>
<script type="application/json" id="ctxviz-rows">{script_json(rows)}</script>
<script>{PAGER_SCRIPT.replace("PAGE_ROWS", str(int(page_rows)))}</script>"""


def render_html(session: Session, plan: Plan, png: bytes, timeline: Timeline | None = None, page_rows: int = PAGE_ROWS,
                preset: str = "") -> str:
    """A self-contained page: the picture inlined, how the replay compares with the plan (when there
    is a timeline), then every message, escaped (paged beyond `page_rows` messages). `preset`: the
    --config preset the parameters came from, said in the header ("" without one)."""
    esc = html.escape
    from_preset = f" · parameters from the preset {esc(preset)}" if preset else ""
    versus = f"<p class='versus'>{esc(plan_versus_replay(plan, timeline))}</p>" if timeline is not None else ""
    notes = "".join(f"<li>{esc(n)}</li>" for n in plan.notes)
    categories = parts_are_categories(list(plan.allocation))  # (named as the donut names them: Claude Code's "context" is its "Conversation")
    allocation = "".join(f"<tr><td>{esc(part_label(k, categories))}</td><td class='n'>{v:,}</td><td class='n'>{plan.usage.get(k, 0):,}</td></tr>" for k, v in plan.allocation.items())
    t = plan.totals
    title = esc(session.title or os.path.basename(session.source))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ctxviz report: {title}</title>
<style>
body {{ font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 24px; color: #1d2330; }}
table {{ border-collapse: collapse; font-size: 13px; }} td, th {{ border-bottom: 1px solid #e3e6eb; padding: 3px 8px; text-align: left; vertical-align: top; }}
td.n {{ text-align: right; }} tr.dropped {{ color: #888; }} tr.summarized {{ color: #0e8a99; }} tr.truncated, tr.replaced {{ color: #b35900; }}
pre {{ white-space: pre-wrap; max-width: 900px; }} img {{ max-width: 100%; height: auto; border: 1px solid #e3e6eb; }}
tr.stand-in td:first-child {{ font-style: italic; }}
</style></head><body>
<h1>{title}</h1>
<p>{len(session.messages):,} messages ({esc(session.format)}) · policy <b>{esc(plan.policy)}</b>{from_preset} · tokens counted with {esc(plan.tokenizer)} ·
{t.used:,} of {t.budget:,} tokens · {esc(verdict(plan))} · {t.kept_messages:,} sent, {t.dropped_messages:,} not sent</p>
{provider_html(plan, session)}
<img alt="budget, strip, categories and timeline" src="data:image/png;base64,{base64.b64encode(png).decode()}">
{versus}
{summaries_html(session, plan)}
<h2>Allocation</h2><table><tr><th>part</th><th>allotted</th><th>used</th></tr>{allocation}</table>
{f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""}
<h2>Messages</h2>
{messages_html(session, plan, page_rows)}
</body></html>
"""


def write_report(session: Session, plan: Plan, timeline: Timeline | None, path: str, inputs: Sequence[str] = (), preset: str = "") -> None:
    """Render and write the report; `inputs` (the session's file) are never written over."""
    suffix = ".html" if stream_of(path) is not None else os.path.splitext(path)[1].lower()  # a stream gets the page
    if suffix not in (".html", ".htm", ".png", ".svg", ".pdf"):
        raise CtxvizError(f"{path}: the report can be .html, .png, .svg or .pdf")
    check_output_path(path, inputs)
    widget = ReportWidget(session, plan, timeline, page=suffix in (".html", ".htm"))
    widget.settle()
    try:
        if suffix == ".png":
            write_output(path, render_png(widget), inputs)
        elif suffix == ".svg":
            write_output(path, render_svg(widget), inputs)
        elif suffix == ".pdf":
            write_output(path, render_pdf(widget), inputs)
        else:
            write_output(path, render_html(session, plan, render_png(widget), timeline, preset=preset), inputs)
    finally:
        widget.close()
        widget.deleteLater()
