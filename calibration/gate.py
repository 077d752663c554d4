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

# What a gate may fail on: the flag's statuses, and "worse": the run is worse than a baseline run
# beyond chance on the claims both judged (the paired exact McNemar test of `dashboard.compare`).
FAILING = ("revise", "inconclusive", "worse")
NOTHING_TO_COMPARE = "no claim judged by both runs has a human label"

# Characters XML 1.0 cannot hold at all; a name or reason carrying one is shown with it replaced.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True, slots=True)
class Baseline:
    """The paired comparison with a baseline run: its sentence, or None when no claim was judged
    by both runs and labeled by humans (nothing to compare), and whether the run is worse."""

    name: str
    text: str | None
    worse: bool


@dataclass(frozen=True, slots=True)
class Gate:
    """The outcome of checking a flag (and a comparison) against what fails: `line` is the one sentence."""

    failed: bool
    status: str  # the flag's status, or "worse" when the comparison failed the gate
    line: str


def check(flag: Flag, fail_on: Collection[str], *, subject: str, baseline: Baseline | None = None) -> Gate:
    """Fail when the flag's status is one of `fail_on`, or on "worse" when the run is worse than
    `baseline` beyond chance or cannot be compared with it (a gate that cannot check does not
    pass); `subject` names the run and scope in the line."""
    status: FlagStatus = flag.status
    reason = next((r.message for r in flag.reasons if r.code != "human_ceiling"), "")
    if status in fail_on:
        why = f": {reason}" if reason else ""
        return Gate(True, status, f"judge check failed: {subject} is {status.upper()}{why}")
    if "worse" in fail_on and baseline is not None:
        if baseline.text is None:
            line = (
                f"judge check failed: {subject} cannot be compared with {baseline.name}: {NOTHING_TO_COMPARE}"
            )
            return Gate(True, "worse", line)
        if baseline.worse:
            return Gate(
                True, "worse", f"judge check failed: {subject} is worse than {baseline.name}: {baseline.text}"
            )
    return Gate(False, status, f"judge check passed: {subject} is {status.upper()}")


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
