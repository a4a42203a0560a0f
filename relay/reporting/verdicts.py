"""A result's verdict relative to the rules and the previous run, and a guess at why it failed."""
from __future__ import annotations

import re

from relay.execution.outcomes import FAILING, Outcome
from relay.execution.runner.records import TestRecord

EXPECTED_FAILURE_MODES = frozenset({"xfail", "xfail_strict", "skip", "exclude"})

# Verdicts (TestResult.verdict):
NEW_FAILURE = "new_failure"  # fails, no rule expects it, and it did not fail on the from side
KNOWN_FAILURE = "known_failure"  # fails (or xfails) where a rule expects it
STILL_FAILING = "still_failing"  # fails, no rule, but it already failed in the baseline run
FIXED = "fixed"  # passes under a strict xfail: the rule should be promoted
OK = "ok"
# The spyre device does not build or load on this side's torch: one record stands for all its tests.
DEVICE_BROKEN = "device_broken"

_CATEGORY_PATTERNS = [
    ("unsupported_op", re.compile(r"NotImplementedError|not implemented|could not run '?aten::|"
                                  r"no kernel|unsupported op", re.I)),
    ("unsupported_dtype", re.compile(r"dtype|does not support (?:dtype|type)|Double|not supported for "
                                     r"(?:float|int|complex|bool)|unsupported scalar type", re.I)),
    ("numerics", re.compile(r"not close|Mismatched elements|Greatest (?:absolute|relative) difference|"
                            r"tolerance|atol|rtol|allclose", re.I)),
]


def verdict(record: TestRecord, mode: str | None, baseline_failures: set[str], normalised: str) -> str:
    """``mode`` is the testdefs mode deciding the test (None without rules)."""
    if record.outcome == Outcome.XPASSED and (record.strict_xfail or mode == "xfail_strict"):
        return FIXED
    if record.outcome == Outcome.XFAILED:
        return KNOWN_FAILURE
    if record.outcome in FAILING:
        if mode in EXPECTED_FAILURE_MODES:
            return KNOWN_FAILURE
        if normalised in baseline_failures or record.test_id in baseline_failures:
            return STILL_FAILING
        return NEW_FAILURE
    return OK


def guess_category(record: TestRecord) -> str:
    """A testdefs reason category for a failure: from the outcome, else from the error text."""
    if record.outcome == Outcome.CRASHED:
        return "crash"
    if record.outcome == Outcome.TIMED_OUT:
        return "timeout"
    text = "\n".join(t for t in (record.message, record.traceback) if t)
    first = record.message or ""
    for category, pattern in _CATEGORY_PATTERNS:  # the message decides before the traceback
        if pattern.search(first):
            return category
    for category, pattern in _CATEGORY_PATTERNS:
        if pattern.search(text):
            return category
    return "upstream_bug"
