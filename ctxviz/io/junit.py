"""JUnit XML for CI systems: one test suite per session, one test case per rule of `ctxviz check`.

The document validates against both schemas CI servers check it with (tests/data/schemas): Jenkins'
xUnit plugin (junit-10.xsd: `errors` is required on every suite) and the strict schema of Apache
Ant's JUnit task (every suite has `properties`, a timestamp without zone, a hostname, a time, an
`id` and a `package`; a test case holds at most one failure or error and no output of its own, so
each rule's sentence goes to its suite's `system-out`). A rule that held is a passing case, one
that was broken a `failure`, and one that could not be checked (an unreadable file, a premise the
session cannot meet) an `error`.
"""

from __future__ import annotations

import datetime
import socket
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any


def junit_xml(results: Mapping[str, Sequence[Any]], name: str = "ctxviz check", seconds: Mapping[str, float] | None = None,
              now: datetime.datetime | None = None) -> str:
    """`results`: session path -> its rule outcomes (`rule`, `passed`, `message`, and `errored` when
    the rule could not be checked); `seconds`: how long each session took. Every text is escaped by
    ElementTree (messages quote untrusted session text)."""
    stamp = (now or datetime.datetime.now()).replace(microsecond=0, tzinfo=None).isoformat()
    host = _hostname()
    suites = ET.Element("testsuites")  # Ant's strict schema declares no attribute here
    for number, (path, outcomes) in enumerate(results.items()):
        errors = [o for o in outcomes if _errored(o)]
        failures = [o for o in outcomes if not o.passed and not _errored(o)]
        took = (seconds or {}).get(path, 0.0)
        suite = ET.SubElement(suites, "testsuite", name=path or "(unnamed)", tests=str(len(outcomes)), failures=str(len(failures)),
                              errors=str(len(errors)), skipped="0", time=f"{took:.3f}", timestamp=stamp, hostname=host,
                              id=str(number), package=name.replace(" ", "."))
        ET.SubElement(suite, "properties")
        for outcome in outcomes:
            case = ET.SubElement(suite, "testcase", classname=path or "(unnamed)", name=outcome.rule or "(unnamed)",
                                 time=f"{took / max(1, len(outcomes)):.3f}")
            if _errored(outcome):
                ET.SubElement(case, "error", message=outcome.message, type="ctxviz.cannot_check").text = outcome.message
            elif not outcome.passed:
                ET.SubElement(case, "failure", message=outcome.message, type="ctxviz.rule").text = outcome.message
        verdict = {True: "holds", False: "BROKEN"}
        ET.SubElement(suite, "system-out").text = "\n".join(
            f"{o.rule}: {'could not be checked' if _errored(o) else verdict[o.passed]}: {o.message}" for o in outcomes)
        ET.SubElement(suite, "system-err").text = ""
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _errored(outcome: Any) -> bool:
    return bool(getattr(outcome, "errored", False))


def _hostname() -> str:
    try:
        return socket.gethostname() or "localhost"
    except OSError:
        return "localhost"
