"""A test's outcomes: the one list, and the one definition of a failing outcome.

Stored as plain strings in ``test_results.outcome`` and results.jsonl (``Outcome`` is a
``StrEnum``, so a member equals its string).
"""
from __future__ import annotations

import enum


class Outcome(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # setup or teardown failed
    SKIPPED = "skipped"
    XFAILED = "xfailed"  # failed where a rule or upstream expects it
    XPASSED = "xpassed"  # passed where a failure was expected
    CRASHED = "crashed"  # the interpreter died
    TIMED_OUT = "timed_out"  # killed past the per-test or shard timeout


OUTCOMES = tuple(Outcome)
# The test did not do what it should: verdicts, re-runs, pass rates and charts count these.
FAILING = frozenset({Outcome.FAILED, Outcome.ERROR, Outcome.CRASHED, Outcome.TIMED_OUT})
# Worth a fresh-process re-run to tell flaky from consistent (a timeout would only time out again).
RERUN = FAILING - {Outcome.TIMED_OUT}
# Fine as it is: counted as passed in reports.
PASSING = frozenset({Outcome.PASSED, Outcome.XFAILED})
# A report back upstream also counts an unexpected pass against the run: someone must look at it.
FAILED_IN_REPORTS = FAILING | {Outcome.XPASSED}
