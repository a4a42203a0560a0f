"""results.jsonl and junit.xml from a run's judged results."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from relay.execution.outcomes import Outcome
from relay.reporting.patch import Judged
from relay.reporting.verdicts import DEVICE_BROKEN

JUNIT_FAILURE = {Outcome.FAILED: "failure", Outcome.ERROR: "error", Outcome.CRASHED: "error", Outcome.TIMED_OUT: "error"}


def result_line(item: Judged) -> dict:
    r = item.record
    return {"id": r.test_id, "normalised": item.normalised, "outcome": r.outcome, "verdict": item.verdict,
            "duration": r.duration, "message": r.message, "sim_stats": r.sim_stats, "shard": r.shard,
            "attempts": r.attempts, "flaky": r.flaky,
            # A side whose device is broken: the compiler's or loader's key lines, the verdict's evidence.
            **({"lines": (r.traceback or "").splitlines()} if item.verdict == DEVICE_BROKEN else {})}


def write_results_jsonl(judged: list[Judged], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for item in judged:
            out.write(json.dumps(result_line(item), sort_keys=True) + "\n")


def write_junit(judged: list[Judged], path: Path, *, name: str) -> None:
    suite = ET.Element("testsuite", name=name, tests=str(len(judged)))
    counts = {"failures": 0, "errors": 0, "skipped": 0}
    total = 0.0
    for item in judged:
        r = item.record
        file, _, rest = r.test_id.partition("::")
        classname, _, method = rest.rpartition("::")
        case = ET.SubElement(suite, "testcase", classname=f"{file}::{classname}" if classname else file,
                             name=method or rest, time=f"{r.duration:.3f}", file=file)
        total += r.duration
        kind = JUNIT_FAILURE.get(r.outcome)
        if kind:
            counts["failures" if kind == "failure" else "errors"] += 1
            element = ET.SubElement(case, kind, message=r.message or r.outcome, type=r.outcome)
            element.text = r.traceback or ""
        elif r.outcome in ("skipped", "xfailed"):
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=r.message or r.outcome, type=r.outcome)
        properties = ET.SubElement(case, "properties")
        ET.SubElement(properties, "property", name="outcome", value=r.outcome)
        ET.SubElement(properties, "property", name="verdict", value=item.verdict)
        if r.flaky:
            ET.SubElement(properties, "property", name="flaky", value=f"passed on attempt {r.attempts}")
    suite.set("time", f"{total:.3f}")
    for key, value in counts.items():
        suite.set(key, str(value))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
