"""JUnit XML for CI systems: one test suite per session, one test case per rule of `ctxviz check`."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any


def junit_xml(results: Mapping[str, Sequence[Any]], name: str = "ctxviz check") -> str:
    """`results`: session path -> its rule outcomes (`rule`, `passed`, `message`). Every text is
    escaped by ElementTree (messages quote untrusted session text)."""
    suites = ET.Element("testsuites", name=name, tests=str(sum(len(r) for r in results.values())),
                        failures=str(sum(1 for r in results.values() for o in r if not o.passed)))
    for path, outcomes in results.items():
        suite = ET.SubElement(suites, "testsuite", name=path, tests=str(len(outcomes)), failures=str(sum(1 for o in outcomes if not o.passed)))
        for outcome in outcomes:
            case = ET.SubElement(suite, "testcase", classname=path, name=outcome.rule)
            if outcome.passed:
                ET.SubElement(case, "system-out").text = outcome.message
            else:
                ET.SubElement(case, "failure", message=outcome.message, type="ctxviz.rule").text = outcome.message
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
