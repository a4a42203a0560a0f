"""Run a shard: one pytest subprocess per upstream file, crash recovery, timeouts, flaky re-runs."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from relay.errors import UserError
from relay.execution.outcomes import RERUN, Outcome
from relay.execution.runner.process import PytestRun, device_env, run_pytest
from relay.execution.runner.records import TestRecord, first_line

TEST_ROOT = "test/"  # upstream test ids are relative to the checkout: test/test_foo.py::...
# Timeouts are not re-run: a hang costs the full timeout every time and is rarely flaky.


@dataclass
class RunnerOptions:
    test_timeout: float = 300.0  # seconds per test
    shard_timeout: float = 3600.0  # seconds per shard, re-runs included
    reruns: int = 1  # fresh-process re-runs of a failing test before it counts as consistent
    rules: list[str] = field(default_factory=list)  # testdefs rule paths for the test process
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)  # extra environment for the test process


OnRecord = Callable[[TestRecord], None]
ShouldStop = Callable[[], bool]


def group_by_file(test_ids: list[str]) -> dict[str, list[str]]:
    """Test ids per file, files and tests in their first-seen (execution) order."""
    files: dict[str, list[str]] = {}
    for test_id in test_ids:
        if not test_id.startswith(TEST_ROOT) or "::" not in test_id:
            raise UserError(f"test id {test_id!r} is not an upstream node id",
                            hint="expected test/<file>.py::<Class>::<test>")
        files.setdefault(test_id.split("::", 1)[0], []).append(test_id)
    return files


class ShardRunner:
    """Runs the tests of one shard inside an upstream checkout."""

    def __init__(self, checkout: Path, options: RunnerOptions | None = None, *, shard: int = 0,
                 on_record: OnRecord | None = None, should_stop: ShouldStop | None = None) -> None:
        self.test_dir = Path(checkout) / TEST_ROOT.rstrip("/")
        if not self.test_dir.is_dir():
            raise UserError(f"upstream checkout {checkout} has no test/ directory")
        self.options = options or RunnerOptions()
        self.shard = shard
        self.on_record = on_record
        self.should_stop = should_stop or (lambda: False)  # asked between files: a cancelled run
        self.env = device_env(Path(checkout), self.options.env)
        self.deadline = 0.0

    def run(self, test_ids: list[str]) -> list[TestRecord]:
        self.deadline = time.time() + self.options.shard_timeout
        records: dict[str, TestRecord] = {}
        for tests in group_by_file(test_ids).values():
            if self.should_stop():
                return [records[test_id] for test_id in test_ids if test_id in records]
            for record in self._run_file(tests):
                records[record.test_id] = record
                if self.on_record:
                    self.on_record(record)
        if not self.should_stop():
            self._rerun_failures(records)
        return [records[test_id] for test_id in test_ids if test_id in records]

    def _run_file(self, tests: list[str]) -> list[TestRecord]:
        """All of ``tests`` (one file), restarting the interpreter after each crash or kill."""
        out: list[TestRecord] = []
        remaining = list(tests)
        while remaining:
            if time.time() >= self.deadline:
                out += [self._record(t, Outcome.TIMED_OUT, message="shard timeout exceeded before it ran")
                        for t in remaining]
                break
            run = run_pytest(self.test_dir, [t.removeprefix(TEST_ROOT) for t in remaining], env=self.env,
                             test_timeout=self.options.test_timeout, deadline=self.deadline,
                             rules=self.options.rules, python=self.options.python)
            done = {TEST_ROOT + node: self._from_event(event) for node, event in run.results.items()}
            out += done.values()
            remaining = [t for t in remaining if t not in done]
            lost, remaining = self._settle(run, remaining)
            out += lost
        return out

    def _settle(self, run: PytestRun, remaining: list[str]) -> tuple[list[TestRecord], list[str]]:
        """Records for tests the run could not report, and the tests still worth another process."""
        if not remaining:
            return [], []
        tail = run.output.strip()
        if run.running is not None:  # a test was interrupted: it alone is lost, the rest re-run
            victim = TEST_ROOT + run.running
            if run.killed == "test_timeout":
                record = self._record(victim, Outcome.TIMED_OUT, traceback=tail,
                                      message=f"no result after {self.options.test_timeout:g}s; process killed")
            elif run.killed == "shard_timeout":
                record = self._record(victim, Outcome.TIMED_OUT, message="shard timeout exceeded while running")
            else:
                record = self._record(victim, Outcome.CRASHED, message=f"interpreter {run.death}", traceback=tail)
            return [record], [t for t in remaining if t != victim]
        missing = {TEST_ROOT + node for node in run.missing}
        lost = [self._record(t, "skipped", message="not collected: no such test on this device")
                for t in remaining if t in missing]
        remaining = [t for t in remaining if t not in missing]
        if run.killed:  # killed outside any test: collection hang or the shard deadline
            why = "collection exceeded the per-test timeout" if run.killed == "test_timeout" else "shard timeout exceeded"
            return lost + [self._record(t, Outcome.TIMED_OUT, message=why) for t in remaining], []
        if run.finished:  # pytest ended normally but never ran these: collection or usage error
            text = "\n".join(run.collect_errors.values()) or tail
            message = first_line(text) or f"not run (pytest exit status {run.exitstatus})"
            return lost + [self._record(t, Outcome.ERROR, message=message, traceback=text) for t in remaining], []
        if run.results:  # died between tests: carry on in a fresh interpreter
            return lost, remaining
        # died before running anything (import-time crash): no progress is possible
        return lost + [self._record(t, Outcome.CRASHED, message=f"interpreter {run.death} before the test ran",
                                    traceback=tail) for t in remaining], []

    def _rerun_failures(self, records: dict[str, TestRecord]) -> None:
        """Fresh-process re-runs, all failing tests of a file together; a pass marks the test flaky."""
        for _attempt in range(self.options.reruns):
            failing = [r.test_id for r in records.values() if r.outcome in RERUN and not r.flaky]
            if not failing or time.time() >= self.deadline:
                return
            for tests in group_by_file(failing).values():
                for again in self._run_file(tests):
                    first = records[again.test_id]
                    first.attempts += 1
                    if again.outcome in (Outcome.PASSED, Outcome.XFAILED, Outcome.XPASSED):
                        first.flaky = True
                        first.message = f"flaky: passed on attempt {first.attempts}; first failure: {first.message}"
                        first.outcome = again.outcome

    def _from_event(self, event: dict) -> TestRecord:
        return TestRecord(test_id=TEST_ROOT + event["id"], outcome=event["outcome"],
                          duration=event.get("duration", 0.0), message=event.get("message"),
                          traceback=event.get("traceback"), sim_stats=event.get("sim_stats") or {},
                          strict_xfail=event.get("strict_xfail", False), shard=self.shard)

    def _record(self, test_id: str, outcome: str, *, message: str, traceback: str | None = None) -> TestRecord:
        return TestRecord(test_id=test_id, outcome=outcome, message=message,
                          traceback=traceback[-4000:] if traceback else None, shard=self.shard)


def run_shard(checkout: Path, test_ids: list[str], options: RunnerOptions | None = None, *,
              shard: int = 0, on_record: OnRecord | None = None,
              should_stop: ShouldStop | None = None) -> list[TestRecord]:
    """Run ``test_ids`` (upstream ids) from ``checkout``; one record per test, in the given order
    (tests left unrun because ``should_stop`` said so have none)."""
    return ShardRunner(checkout, options, shard=shard, on_record=on_record,
                       should_stop=should_stop).run(test_ids)
