"""Run a shard: a process per upstream file, crash recovery, timeouts, flaky re-runs.

The processes are forks of one warm interpreter per shard (relay.execution.runner.forkserver), so torch,
op_db and the device are imported once per shard, not once per file and re-run; one the pipeline
started ahead (relay.execution.runner.warm) when it matches."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from relay.errors import UserError
from relay.execution.outcomes import RERUN, Outcome
from relay.execution.runner.process import ForkServer, PytestRun, device_env, run_pytest
from relay.execution.runner.records import TestRecord, first_line
from relay.execution.runner.warm import POOL

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
    warm: bool = True  # fork test processes from a warm interpreter (False: a new interpreter each)


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
        self.server: ForkServer | None = None

    def run(self, test_ids: list[str]) -> list[TestRecord]:
        self.deadline = time.time() + self.options.shard_timeout
        files = group_by_file(test_ids)
        records: dict[str, TestRecord] = {}
        self.server = ((POOL.take(self.options.python, self.env) or ForkServer(self.options.python, self.env,
                                                                               self.test_dir))
                       if self.options.warm and files else None)
        try:
            for tests in self._sessions(files):
                if self.should_stop():
                    break
                for record in self._run_tests(tests, live=True):
                    records[record.test_id] = record
            if not self.should_stop():
                self._rerun_failures(records)
        finally:
            if self.server is not None:
                self.server.close()
        ordered = [records[test_id] for test_id in test_ids if test_id in records]
        for record in ordered:  # report under the id pytest accepts (one naming convention everywhere)
            record.test_id = record.ran_as or record.test_id
        return ordered

    def _sessions(self, files: dict[str, list[str]]) -> list[list[str]]:
        """The tests of each pytest session: warm, one for all files (the session forks per file, so
        pytest starts and collects once); cold, one process per file (the runner before the fork server)."""
        if self.server is not None:
            return [[test for tests in files.values() for test in tests]]
        return list(files.values())

    def _run_tests(self, tests: list[str], *, live: bool = False) -> list[TestRecord]:
        """All of ``tests``, restarting the session after each crash or kill.

        ``live``: each record goes to ``on_record`` as soon as it exists (progress, and a
        ``should_stop`` that counts results), not when the file is done."""
        tell = self.on_record if live and self.on_record else (lambda record: None)
        out: list[TestRecord] = []
        remaining = list(tests)
        while remaining:
            if time.time() >= self.deadline:
                lost = [self._record(t, Outcome.TIMED_OUT, message="shard timeout exceeded before it ran")
                        for t in remaining]
                out += lost
                for record in lost:
                    tell(record)
                break
            run = run_pytest(self.test_dir, [t.removeprefix(TEST_ROOT) for t in remaining], env=self.env,
                             test_timeout=self.options.test_timeout, deadline=self.deadline,
                             rules=self.options.rules, python=self.options.python, server=self.server,
                             fork_files=self.server is not None, should_stop=self.should_stop,
                             on_result=lambda event: tell(self._from_event(event)))
            done = {TEST_ROOT + node: self._from_event(event) for node, event in run.results.items()}
            out += done.values()
            remaining = [t for t in remaining if t not in done]
            lost, remaining = self._settle(run, remaining)
            out += lost
            for record in lost:
                tell(record)
        return out

    def _settle(self, run: PytestRun, remaining: list[str]) -> tuple[list[TestRecord], list[str]]:
        """Records for tests the run could not report, and the tests still worth another process."""
        if not remaining or run.killed == "stopped":  # stopped: what did not finish stays unrun
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
            why = ("collection exceeded the per-test timeout" if run.killed == "test_timeout"
                   else "shard timeout exceeded before it ran")
            return lost + [self._record(t, Outcome.TIMED_OUT, message=why) for t in remaining], []
        if run.finished:  # pytest ended normally but never ran these: their file failed to collect, or usage
            return lost + [self._not_run(t, run, tail) for t in remaining], []
        if run.results:  # died between tests: carry on in a fresh interpreter
            return lost, remaining
        # died before running anything (import-time crash): no progress is possible
        return lost + [self._record(t, Outcome.CRASHED, message=f"interpreter {run.death} before the test ran",
                                    traceback=tail) for t in remaining], []

    def _not_run(self, test_id: str, run: PytestRun, tail: str) -> TestRecord:
        text = run.collect_errors.get(test_id.split("::", 1)[0].removeprefix(TEST_ROOT)) or tail
        message = first_line(text) or f"not run (pytest exit status {run.exitstatus})"
        return self._record(test_id, Outcome.ERROR, message=message, traceback=text)

    def _rerun_failures(self, records: dict[str, TestRecord]) -> None:
        """Fresh-process re-runs of the failing tests, in sessions as above; a pass marks the test flaky."""
        for _attempt in range(self.options.reruns):
            failing = [r.test_id for r in records.values() if r.outcome in RERUN and not r.flaky]
            if not failing or time.time() >= self.deadline:
                return
            for tests in self._sessions(group_by_file(failing)):
                if self.should_stop():
                    return
                for again in self._run_tests(tests):
                    first = records[again.test_id]
                    first.attempts += 1
                    if again.outcome in (Outcome.PASSED, Outcome.XFAILED, Outcome.XPASSED):
                        first.flaky = True
                        first.message = f"flaky: passed on attempt {first.attempts}; first failure: {first.message}"
                        first.outcome = again.outcome

    def _from_event(self, event: dict) -> TestRecord:
        return TestRecord(test_id=TEST_ROOT + event["id"], ran_as=TEST_ROOT + event.get("ran_as", event["id"]),
                          outcome=event["outcome"],
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
