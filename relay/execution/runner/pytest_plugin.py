"""pytest plugin loaded into each test subprocess (``-p relay.execution.runner.pytest_plugin``).

It writes one JSON line per event to ``--relay-report`` as tests run, flushed at once, so a
file whose interpreter dies still leaves the results of the tests before the crash and the id
of the test that was running. ``--relay-select`` names the node ids to run: others are
deselected and ids that do not exist are reported instead of failing the whole file, which is
what pytest does with an unknown id on its command line.

``--relay-fork-files``: the session collects every file once, then runs each file's tests in a
forked child of itself, so files keep their own process (no state leaks from one file into the
next) without paying pytest's start and collection per file. A child that dies takes the
session with it the same way (same signal or status); the runner goes on in a fresh session.

Kept free of relay imports beyond records (the subprocess should start fast) and of torch:
the simulator's stats are read only when the test itself imported torch.
"""
from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import time
from typing import Any

import pytest

from relay.execution.runner.records import drift_key, first_line, trim_traceback

TIMEOUT_MARK = "from pytest-timeout"


def pytest_addoption(parser):
    group = parser.getgroup("relay", "Spyre CI Relay runner")
    group.addoption("--relay-report", default=None, metavar="PATH", help="JSON-lines event report")
    group.addoption("--relay-select", default=None, metavar="PATH", help="JSON list of node ids to run")
    group.addoption("--relay-fork-files", action="store_true", help="run each file's tests in a forked child")


def pytest_configure(config):
    path = config.getoption("relay_report")
    if path:
        config.pluginmanager.register(_Reporter(path, config.getoption("relay_select")), "relay-reporter")
    if config.getoption("relay_fork_files"):
        config.pluginmanager.register(_FilePerProcess(), "relay-fork-files")


def _sim_capture():
    """``torch.spyre.sim.capture`` when the simulator is loaded, else None (tolerated)."""
    torch = sys.modules.get("torch")
    sim = getattr(getattr(torch, "spyre", None), "sim", None) if torch else None
    return getattr(sim, "capture", None)


def _as_dict(stats: Any) -> dict[str, Any]:
    if isinstance(getattr(stats, "result", None), dict):  # spyre's Capture holder
        stats = stats.result
    for name in ("as_dict", "to_dict", "model_dump"):
        method = getattr(stats, name, None)
        if callable(method):
            stats = method()
            break
    if isinstance(stats, dict):
        return json.loads(json.dumps(stats, default=str))
    if stats is not None and hasattr(stats, "__dict__"):
        return json.loads(json.dumps(vars(stats), default=str))
    return {}


class _Reporter:
    def __init__(self, path: str, select_path: str | None) -> None:
        self.out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the session
        self.wanted: list[str] | None = None
        if select_path:
            with open(select_path, encoding="utf-8") as handle:
                self.wanted = json.load(handle)
        self.phases: dict[str, dict[str, Any]] = {}
        self.stats: dict[str, Any] = {}
        self.broken_files: set[str] = set()
        self.renamed: dict[str, str] = {}  # collected node id -> the requested id it answers for

    def pytest_collectreport(self, report):
        if report.failed:  # e.g. an import error: its tests are errors, not missing
            self.broken_files.add(report.nodeid.split("::", 1)[0])
            self._emit(event="collect_error", file=report.nodeid, text=trim_traceback(report.longreprtext))

    def _emit(self, **event: Any) -> None:
        self.out.write(json.dumps(event) + "\n")
        self.out.flush()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        if self.wanted is not None:
            by_id = {item.nodeid: item for item in items}
            by_drift = {drift_key(item.nodeid): item for item in items}
            keep, kept, missing = [], set(), []
            for nodeid in dict.fromkeys(self.wanted):
                item = by_id.get(nodeid) or by_drift.get(drift_key(nodeid))
                if item is None:
                    if nodeid.split("::", 1)[0] not in self.broken_files:
                        missing.append(nodeid)
                elif item.nodeid not in kept:
                    keep.append(item)
                    kept.add(item.nodeid)
                    if item.nodeid != nodeid:
                        self.renamed[item.nodeid] = nodeid
            dropped = [item for item in items if item.nodeid not in kept]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
            items[:] = keep
            if missing:
                self._emit(event="missing", ids=missing)
        self._emit(event="collected", ids=[self._id(item.nodeid) for item in items])

    def _id(self, nodeid: str) -> str:
        return self.renamed.get(nodeid, nodeid)

    def pytest_runtest_logstart(self, nodeid, location):
        self.phases[nodeid] = {}
        self._emit(event="start", id=self._id(nodeid), time=time.time())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        """The exception's own first line, kept on the report: with ``--tb=native`` (no source
        excerpts: formatting those parsed torch's largest files for each failure) it is the message."""
        outcome = yield
        if call.excinfo is not None:
            outcome.get_result().relay_error = call.excinfo.exconly().strip().split("\n", 1)[0]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        capture = _sim_capture()
        if capture is None:
            yield
            return
        try:
            context = capture()
            stats = context.__enter__()
        except Exception:  # a simulator without capture support must not fail the test
            yield
            return
        try:
            yield
        finally:
            context.__exit__(None, None, None)
            self.stats[item.nodeid] = stats

    def pytest_runtest_logreport(self, report):
        self.phases.setdefault(report.nodeid, {})[report.when] = report
        if report.when == "teardown":
            self._emit(event="result", **self._combine(report.nodeid))

    def _combine(self, nodeid: str) -> dict[str, Any]:
        phases = self.phases.pop(nodeid, {})
        duration = sum(r.duration for r in phases.values())
        outcome, report, strict = "passed", None, False
        setup, call, teardown = phases.get("setup"), phases.get("call"), phases.get("teardown")
        if setup is not None and not setup.passed:
            report = setup
            outcome = "error" if setup.failed else _skip_kind(setup)
        elif call is not None:
            report = call
            if hasattr(call, "wasxfail"):
                outcome = "xfailed" if call.skipped else "xpassed"
            elif call.failed and str(call.longrepr).startswith("[XPASS(strict)]"):
                outcome, strict = "xpassed", True
            else:
                outcome = call.outcome
        if teardown is not None and teardown.failed and outcome == "passed":
            outcome, report = "error", teardown
        text = _report_text(report)
        if outcome in ("failed", "error") and text and TIMEOUT_MARK in text:
            outcome = "timed_out"
        message = _message(report, text)
        return {
            "id": self._id(nodeid), "ran_as": nodeid, "outcome": outcome, "duration": round(duration, 4), "message": message,
            "traceback": trim_traceback(text) if outcome in ("failed", "error", "timed_out") else None,
            "sim_stats": _as_dict(self.stats.pop(nodeid, None)), "strict_xfail": strict,
        }

    def pytest_sessionfinish(self, session, exitstatus):
        self._emit(event="finish", exitstatus=int(exitstatus))
        self.out.close()


class _FilePerProcess:
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        if session.config.option.collectonly or (session.testsfailed and
                                                 not session.config.option.continue_on_collection_errors):
            return None  # pytest's own loop: nothing to run, or it reports the interruption
        for group in _by_file(session.items):
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _run_in_child(group)
            _, status = os.waitpid(pid, 0)
            if status:
                _end_like(status)
        return True


def _by_file(items: list) -> list[list]:
    """Consecutive items of one file, in execution order."""
    groups: list[list] = []
    for item in items:
        if groups and groups[-1][0].path == item.path:
            groups[-1].append(item)
        else:
            groups.append([item])
    return groups


def _run_in_child(items: list) -> None:
    """Never returns. The last item's ``nextitem`` is None: the file's fixtures end in its process."""
    code = 0
    try:
        for index, item in enumerate(items):
            nextitem = items[index + 1] if index + 1 < len(items) else None
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
    except BaseException:  # noqa: BLE001 - an internal error: reported in the log, the status says so
        import traceback

        traceback.print_exc()
        code = 3
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _end_like(status: int) -> None:
    """End this session as its child ended: the runner reads a crash from the session's status."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        faulthandler.disable()  # the child's stack is in the output already; this one would bury it
        try:
            signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL and SIGSTOP keep their default anyway
            pass
        os.kill(os.getpid(), number)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(os.WEXITSTATUS(status) or 3)


def _skip_kind(report) -> str:
    return "xfailed" if hasattr(report, "wasxfail") else "skipped"


def _report_text(report) -> str | None:
    if report is None or report.longrepr is None:
        return None
    if isinstance(report.longrepr, tuple):  # skip: (file, line, reason)
        return str(report.longrepr[2])
    return report.longreprtext


def _message(report, text: str | None) -> str | None:
    if report is None:
        return None
    if hasattr(report, "wasxfail"):
        return report.wasxfail or "expected failure"
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return getattr(report, "relay_error", None) or first_line(text)
