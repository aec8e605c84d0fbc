"""A grade result as JUnit XML: one test suite per lab, one test case per gate and per
check, so a CI dashboard that reads JUnit shows which gate failed and why."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

# The gates in order; a grade that stopped at one has not run the later ones.
GATES = ("build", "tests", "run", "verdict", "cross-check")


def to_xml(doc: dict[str, Any]) -> str:
    lab = doc["lab"]
    suite = ET.Element("testsuite", name=f"leaklab.{lab}", time=f"{doc['seconds']:.1f}")
    stopped = doc["stage"] if not doc["passed"] else None
    reached = True
    for gate in GATES:
        case = ET.SubElement(suite, "testcase", classname=f"leaklab.{lab}", name=gate)
        if doc["status"] == "not_attempted":
            ET.SubElement(case, "skipped", message="not attempted: nothing changed")
        elif gate == stopped:
            failure = ET.SubElement(case, "failure", message=doc["reason"])
            failure.text = "\n".join(doc.get("failed_tests") or []) or doc["reason"]
            reached = False
        elif not reached or stopped in ("scope",):
            ET.SubElement(case, "skipped", message=f"not reached: the grade stopped at {stopped}")
    for check in doc["checks"]:
        case = ET.SubElement(suite, "testcase", classname=f"leaklab.{lab}.checks")
        case.set("name", check["name"])
        if not check["passed"]:
            ET.SubElement(case, "failure", message=check["detail"])
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def write(doc: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_xml(doc))
