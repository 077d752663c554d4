"""The judge check as a CI gate: which flags fail a pipeline, the one line saying why, and a JUnit report.

A CI job runs `calibration stats --fail-on revise` after importing a new judge run; the flag is
the report's (`calibration.flag`), never recomputed here. The JUnit file holds one test case per
gate, so CI systems that read JUnit (GitHub Actions reporters, GitLab, Jenkins) show the
decision and its reasons beside the pipeline's own tests.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Collection
from dataclasses import dataclass

from .flag import Flag, FlagStatus

FAILING: tuple[FlagStatus, ...] = ("revise", "inconclusive")  # the statuses a gate may fail on

# Characters XML 1.0 cannot hold at all; a name or reason carrying one is shown with it replaced.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True, slots=True)
class Gate:
    """The outcome of checking a flag against the statuses that fail: `line` is the one sentence."""

    failed: bool
    status: FlagStatus
    line: str


def check(flag: Flag, fail_on: Collection[FlagStatus], *, subject: str) -> Gate:
    """Fail when the flag's status is one of `fail_on`; `subject` names the run and scope in the line."""
    reason = next((r.message for r in flag.reasons if r.code != "human_ceiling"), "")
    why = f": {reason}" if reason else ""
    if flag.status in fail_on:
        return Gate(True, flag.status, f"judge check failed: {subject} is {flag.status.upper()}{why}")
    return Gate(False, flag.status, f"judge check passed: {subject} is {flag.status.upper()}")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def junit_xml(gate: Gate, *, suite: str, case: str, details: str) -> bytes:
    """One JUnit test suite with one test case: failed when the gate failed, with `details` (the
    plain report) as its output."""
    root = ET.Element("testsuites", tests="1", failures=str(int(gate.failed)))
    tests = ET.SubElement(root, "testsuite", name=_clean(suite), tests="1", failures=str(int(gate.failed)))
    test = ET.SubElement(tests, "testcase", classname=_clean(suite), name=_clean(case))
    if gate.failed:
        failure = ET.SubElement(test, "failure", message=_clean(gate.line), type=gate.status)
        failure.text = _clean(details)
    ET.SubElement(test, "system-out").text = _clean(details)
    out: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return out
