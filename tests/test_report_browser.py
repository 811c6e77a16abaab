"""The HTML report in a real browser: headless Chromium (Debian's `chromium`, which `.ci/run` installs).

The page is what `ctxviz report -o report.html` writes (`render_html`), for every sample and for a
10,000-message session. The test adds two scripts of its own around the report's: one first, that
records every uncaught error and console.error, and one last, that pages and searches the table as
a reader would and writes what it saw into the page, which Chromium's `--dump-dom` returns.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ctxviz.engine.counting import CountStore
from ctxviz.engine.planner import plan_session
from ctxviz.engine.session import Message, Session, TextPart
from ctxviz.io.loaders import load_session

SAMPLES = sorted(p for p in (Path(__file__).parent.parent / "sample_sessions").iterdir()
                 if p.suffix in (".yaml", ".json", ".jsonl", ".traj"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs Debian's chromium)")
# A 1x1 PNG: the picture is not what this test looks at.
PIXEL = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000" "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")

WATCH = """<script>window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
var __consoleError = console.error; console.error = function () { window.__errors.push(Array.prototype.join.call(arguments, " ")); __consoleError.apply(console, arguments); };
</script>"""

DRIVE = """<script>(function () {
  var out = {errors: window.__errors, paged: false};
  var status = document.getElementById("ctxviz-page"), body = document.getElementById("ctxviz-body");
  out.rows = document.querySelectorAll("table tr").length;
  if (status && body) {
    out.first = status.textContent;
    out.first_cell = body.querySelector("td").textContent;
    document.getElementById("ctxviz-next").click();
    out.second = status.textContent;
    out.second_cell = body.querySelector("td").textContent;
    document.getElementById("ctxviz-last").click();
    out.last = status.textContent;
    var search = document.getElementById("ctxviz-search");
    search.value = "needle-7777";
    search.dispatchEvent(new Event("input"));
    out.searched = status.textContent;
    out.searched_rows = body.querySelectorAll("tr").length;
    out.paged = true;
  }
  var pre = document.createElement("pre"); pre.id = "selftest"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();</script>"""


def report_page(session: Session) -> str:
    from ctxviz.gui.report import render_html

    plan = plan_session(session, "missy", None, store=CountStore())
    page = render_html(session, plan, PIXEL)
    return page.replace("<head>", "<head>" + WATCH, 1).replace("</body>", DRIVE + "</body>", 1)


def in_chromium(tmp_path: Path, page: str) -> dict:
    path = tmp_path / "report.html"
    path.write_text(page, encoding="utf-8")
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="selftest">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stderr[-2000:]
    return json.loads(html.unescape(found.group(1)))


def long_session(n: int = 10_000) -> Session:
    roles = ("user", "assistant", "tool")
    messages = tuple(Message(id=f"m{i}", index=i, role=roles[i % 3] if i % 3 != 2 else "user",
                             parts=(TextPart(f"message {i} needle-{i} <b>not bold</b> & {'x' * (i % 50)}"),)) for i in range(n))
    return Session(messages=messages, source="<long>", format="bench")


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_the_report_of_each_sample_runs_without_errors_in_chromium(tmp_path, sample):
    result = in_chromium(tmp_path, report_page(load_session(sample)))
    assert result["errors"] == []
    assert result["rows"] > 1


def test_a_10000_message_report_pages_and_searches_in_chromium(tmp_path):
    result = in_chromium(tmp_path, report_page(long_session()))
    assert result["errors"] == [] and result["paged"]
    assert result["first"].startswith("page 1 of ") and "10,000" in result["first"]
    assert result["second"].startswith("page 2 of ") and result["second_cell"] != result["first_cell"]
    pages = int(re.search(r"of ([\d,]+)", result["first"]).group(1).replace(",", ""))
    assert result["last"].startswith(f"page {pages:,} of {pages:,}")
    assert result["searched"].startswith("page 1 of 1 (1 of 10,000 messages)") and result["searched_rows"] == 1
