"""pytest plugin: apply testdefs rules to collected tests.

Inert unless ``--testdefs PATH`` (repeatable) or ``RELAY_TESTDEFS`` names rules. Then every
collected test gets its decision: ``skip`` and ``xfail``/``xfail_strict`` become pytest marks
carrying the reason, ``exclude`` is deselected, and ``--testdefs-report PATH`` writes every
decision (and the outcome of tests that ran) to JSON. A strict xfail that passes fails with a
message naming the entry to promote. ``--testdefs-report`` without rules reports what was
collected (every test ``unlisted``) and why files failed to collect, changing nothing: the
selector's stage 4 reads it.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from packaging.version import InvalidVersion, Version

from testdefs import instantiation
from testdefs.errors import RulesError
from testdefs.loader import build_ruleset, load_rules
from testdefs.ruleset import RuleSet, TestDecision
from testdefs.schema import Mode

PLUGIN_NAME = "testdefs-rules"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("testdefs", "declarative test-reuse rules (testdefs)")
    group.addoption("--testdefs", action="append", default=[], metavar="PATH",
                    help=f"rules file or directory; repeatable (default: ${instantiation.RULES_ENV})")
    group.addoption("--testdefs-report", default=None, metavar="PATH",
                    help="write every decision (test id -> mode, entry, reason, outcome) to this JSON file")
    group.addoption("--testdefs-torch-version", default=None, metavar="VERSION",
                    help="decide `when` conditions for this torch version (default: the installed one)")


def pytest_configure(config: pytest.Config) -> None:
    paths = list(config.getoption("testdefs") or []) or instantiation.rule_paths_from_env()
    report = config.getoption("testdefs_report")
    if not paths:
        if report:  # report only: no rules, so nothing to mark and no test base state
            config.pluginmanager.register(RulesPlugin(build_ruleset([]), None), PLUGIN_NAME)
        return
    try:
        rules = load_rules([Path(p) for p in paths])
    except RulesError as exc:
        raise pytest.UsageError(f"testdefs rules are invalid:\n{exc}") from None
    torch_version = (config.getoption("testdefs_torch_version")
                     or os.environ.get(instantiation.TORCH_VERSION_ENV) or None)
    if torch_version is not None:
        try:
            Version(torch_version)
        except InvalidVersion:
            raise pytest.UsageError(f"testdefs: torch version {torch_version!r} is not a version number "
                                    "(e.g. 2.14 or 2.14.0)") from None
    # The test base (TORCH_TEST_DEVICES) runs later in this process and must use the same rules.
    state = instantiation.STATE
    state.rules, state.rule_paths, state.plugin_active, state.torch_version = rules, paths, True, torch_version
    for tag in sorted(rules.tags()):
        config.addinivalue_line("markers", f"{tag}: testdefs tag")
    config.pluginmanager.register(RulesPlugin(rules, torch_version), PLUGIN_NAME)


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.pluginmanager.has_plugin(PLUGIN_NAME):
        instantiation.STATE.reset()


class RulesPlugin:
    def __init__(self, rules: RuleSet, torch_version: str | None) -> None:
        self.rules = rules
        self.torch_version = torch_version
        self.decisions: dict[str, TestDecision] = {}
        self.outcomes: dict[str, str] = {}
        self.collection_errors: list[str] = []
        self.collection_error_lines: dict[str, str] = {}  # node id -> the error a human reads first

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors.append(report.nodeid)
            self.collection_error_lines[report.nodeid] = error_line(report.longreprtext)

    def decide(self, item: pytest.Item) -> TestDecision:
        op = instantiation.op_of_test_function(getattr(item, "obj", None))
        return self.rules.decide(item.nodeid, torch_version=self.torch_version, op=op,
                                 file_path=item.path.as_posix())

    @pytest.hookimpl(tryfirst=True)  # before -m / -k, so tags are markers by then
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        kept, deselected = [], []
        for item in items:
            decision = self.decide(item)
            self.decisions[item.nodeid] = decision
            if decision.mode == Mode.exclude:
                deselected.append(item)
                continue
            kept.append(item)
            for tag in decision.tags:
                item.add_marker(getattr(pytest.mark, tag))
            if decision.mode == Mode.skip:
                item.add_marker(pytest.mark.skip(reason=decision.describe()))
            elif decision.mode in (Mode.xfail, Mode.xfail_strict):
                item.add_marker(pytest.mark.xfail(reason=decision.describe(), strict=decision.strict))
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = yield
        decision = self.decisions.get(item.nodeid)
        if (decision is not None and decision.strict and report.failed and call.when == "call"
                and str(report.longrepr).startswith("[XPASS(strict)]")):
            report.longrepr = (f"{report.longrepr}\ntestdefs: {item.nodeid} passed although {decision.entry} "
                               f"declares it xfail_strict; promote that entry to mandatory_success")
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "xpassed"
            elif report.failed and str(report.longrepr).startswith("[XPASS(strict)]"):
                outcome = "xpassed_strict"
            else:
                outcome = report.outcome
            self.outcomes[report.nodeid] = outcome

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # read at the end: a session prepared once and forked (testdefs/warm_pytest.py) sets each
        # child's own path
        path = session.config.getoption("testdefs_report")
        if not path:
            return
        report = Path(path)
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(self.report_data(), indent=2, sort_keys=True) + "\n", encoding="utf-8")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        counts = Counter(d.mode for d in self.decisions.values())
        excluded = len(instantiation.STATE.excluded)
        if counts or excluded:
            parts = [f"{n} {mode}" for mode, n in sorted(counts.items())]
            if excluded:
                parts.append(f"{excluded} excluded at instantiation (test base)")
            terminalreporter.write_line("testdefs: " + ", ".join(parts))

    def report_data(self) -> dict:
        decisions = {}
        for test_id, decision in self.decisions.items():
            record = decision.to_dict()
            record["layer"] = "pytest_plugin"
            record["outcome"] = self.outcomes.get(test_id)
            decisions[test_id] = record
        for decision in instantiation.STATE.excluded:
            record = decision.to_dict()
            record["layer"] = "test_base"
            record["outcome"] = "not_generated"
            decisions.setdefault(decision.test_id, record)
        return {
            "rules": list(self.rules.sources),
            "torch_version": self.torch_version,
            "counts": dict(sorted(Counter(d["mode"] for d in decisions.values()).items())),
            "excluded_at_instantiation": len(instantiation.STATE.excluded),
            "ops_filtered_by_allowlist": instantiation.STATE.ops_filtered,
            "collection_errors": self.collection_errors,
            "collection_error_lines": self.collection_error_lines,
            "decisions": decisions,
        }


def error_line(text: str) -> str:
    """The exception line of a collection error ('E   ImportError: ...'), else its last line."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (errors[0] if errors else lines[-1] if lines else "collection error")[:500]
