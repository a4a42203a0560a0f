"""The pytest plugin, driven through pytester on plain pytest and unittest tests (no device needed)."""
from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

TESTS = '''
import unittest

def test_passes():
    pass

def test_known_failure():
    raise RuntimeError("not implemented")

def test_fixed_now():
    pass

def test_crashes():
    raise SystemExit(3)

def test_excluded():
    raise AssertionError("never runs")

def test_tagged():
    pass

class TestCaseStyle(unittest.TestCase):
    def test_unittest_xfail(self):
        raise RuntimeError("boom")
'''

RULES = '''
files:
  - path: test_sample.py
    unlisted_test_mode: mandatory_success
    entries:
      - match: test_known_failure
        mode: xfail
        reason: {category: unsupported_op, text: "kernel missing", issue: "https://example.org/1"}
      - match: test_fixed_now
        mode: xfail_strict
        reason: {category: unsupported_op, text: "was failing"}
      - match: test_crashes
        mode: skip
        reason: {category: crash, text: "exits the process"}
      - match: test_excluded
        mode: exclude
        reason: {category: not_applicable, text: "not for this device"}
      - match: test_tagged
        mode: mandatory_success
        tags: [numerics_sensitive]
      - match: TestCaseStyle::test_unittest_xfail
        mode: xfail
        reason: {category: flaky, text: "unittest style"}
'''


@pytest.fixture
def sample(pytester):
    pytester.makepyfile(test_sample=TESTS)
    pytester.makefile(".yaml", rules=RULES)
    return pytester


def test_inert_without_rules(sample):
    result = sample.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=4)
    assert "testdefs:" not in result.stdout.str()


def test_modes_become_marks_and_deselection(sample):
    report = sample.path / "decisions.json"
    result = sample.runpytest("-p", "no:randomly", "--testdefs", "rules.yaml", "--testdefs-report", str(report), "-rxXs")
    result.assert_outcomes(passed=2, failed=1, skipped=1, xfailed=2, deselected=1)
    output = result.stdout.str()
    assert "unsupported_op: kernel missing https://example.org/1 [rules.yaml:5]" in output
    assert ("testdefs: test_sample.py::test_fixed_now passed although rules.yaml:8 declares it xfail_strict; "
            "promote that entry to mandatory_success") in output
    assert "testdefs: 1 exclude, 2 mandatory_success, 1 skip, 2 xfail, 1 xfail_strict" in output
    data = json.loads(report.read_text())
    decisions = data["decisions"]
    assert data["counts"] == {"exclude": 1, "mandatory_success": 2, "skip": 1, "xfail": 2, "xfail_strict": 1}
    assert {k: (v["mode"], v["outcome"]) for k, v in decisions.items()} == {
        "test_sample.py::test_passes": ("mandatory_success", "passed"),
        "test_sample.py::test_known_failure": ("xfail", "xfailed"),
        "test_sample.py::test_fixed_now": ("xfail_strict", "xpassed_strict"),
        "test_sample.py::test_crashes": ("skip", "skipped"),
        "test_sample.py::test_excluded": ("exclude", None),
        "test_sample.py::test_tagged": ("mandatory_success", "passed"),
        "test_sample.py::TestCaseStyle::test_unittest_xfail": ("xfail", "xfailed"),
    }
    assert decisions["test_sample.py::test_known_failure"]["entry"] == "rules.yaml:5"
    assert decisions["test_sample.py::test_known_failure"]["reason"]["category"] == "unsupported_op"


def test_tags_are_markers(sample):
    result = sample.runpytest("-p", "no:randomly", "--testdefs", "rules.yaml", "-m", "numerics_sensitive")
    result.assert_outcomes(passed=1, deselected=6)


def test_rules_from_the_environment(sample, monkeypatch):
    monkeypatch.setenv("RELAY_TESTDEFS", str(sample.path / "rules.yaml"))
    result = sample.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=1, skipped=1, xfailed=2, deselected=1)


def test_version_option_activates_when_conditions(pytester):
    pytester.makepyfile(test_sample="def test_new():\n    raise RuntimeError('2.14 only')\n")
    pytester.makefile(".yaml", rules='''
files:
  - path: test_sample.py
    unlisted_test_mode: mandatory_success
    entries:
      - match: test_new
        mode: xfail
        when: {torch: ">=2.14"}
        reason: {category: upstream_bug, text: "2.14 regression"}
''')
    pytester.runpytest("-p", "no:randomly", "--testdefs", "rules.yaml").assert_outcomes(failed=1)
    pytester.runpytest("-p", "no:randomly", "--testdefs", "rules.yaml",
                       "--testdefs-torch-version", "2.14").assert_outcomes(xfailed=1)


def test_invalid_rules_stop_the_session_with_every_problem(pytester):
    pytester.makepyfile(test_sample="def test_a():\n    pass\n")
    pytester.makefile(".yaml", rules="files:\n  - path: x.py\n    unlisted_test_mode: sometimes\n")
    result = pytester.runpytest("--testdefs", "rules.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str()
    assert "testdefs rules are invalid:" in errors
    assert "rules.yaml:3: files[0].unlisted_test_mode: Input should be 'mandatory_success'" in errors


def test_a_torch_version_that_is_not_a_version_is_a_usage_error(sample):
    result = sample.runpytest("--testdefs", "rules.yaml", "--testdefs-torch-version", "main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "torch version 'main' is not a version number" in result.stderr.str()
