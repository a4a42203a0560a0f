"""pytest plugin for `bootstrap`: writes, as it goes, which test starts and how each ends.

Loaded with ``-p testdefs.bootstrap_recorder`` and ``RELAY_BOOTSTRAP_RECORD=PATH``. Each line of
PATH is a JSON object, flushed at once, so a test that takes the process down (a segfault, an
``os._exit``) is still known: it has a ``start`` line and no ``outcome`` line.
"""
from __future__ import annotations

import json
import os

from testdefs.instantiation import op_of_test_function

RECORD_ENV = "RELAY_BOOTSTRAP_RECORD"


class _Recorder:
    def __init__(self, path: str) -> None:
        self.out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the whole session

    def write(self, record: dict) -> None:
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def pytest_collection_modifyitems(self, items) -> None:
        for item in items:
            self.write({"collected": item.nodeid, "op": op_of_test_function(getattr(item, "obj", None))})

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.write({"start": nodeid})

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            outcome = "error" if report.when == "setup" and report.failed else report.outcome
            self.write({"id": report.nodeid, "outcome": outcome, "message": _message(report)})

    def pytest_sessionfinish(self) -> None:
        self.out.close()


def _message(report) -> str:
    if report.passed:
        return ""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    if isinstance(report.longrepr, tuple):  # a skip: (file, line, reason)
        return str(report.longrepr[-1])
    return str(report.longrepr).strip().splitlines()[-1] if report.longrepr else ""


def pytest_configure(config) -> None:
    path = os.environ.get(RECORD_ENV)
    if path:
        config.pluginmanager.register(_Recorder(path), "testdefs-bootstrap-recorder")
