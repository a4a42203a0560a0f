"""`relay-cli testdefs bootstrap`: rules proposed from a real run on the device make that run green."""
from __future__ import annotations

from importlib.metadata import version

import pytest
import yaml
from packaging.version import Version

from relay.cli import main
from testdefs import load_rules
from testdefs.bootstrap import Result, failure_class, rules_for
from tests.testdefs.testdefs_helpers import (
    DEMO_FILE,
    TEST_BASE,
    UPSTREAM,
    collecting_main,
    device_env,
    pytest_command,
    read_report,
    run_command,
)


@pytest.fixture(scope="module")
def proposed(tmp_path_factory, collecting_main):
    out = tmp_path_factory.mktemp("bootstrap") / "proposed.yaml"
    assert collecting_main(["testdefs", "bootstrap", DEMO_FILE, "--upstream", str(UPSTREAM), "-o", str(out)]) == 0
    return out


def test_each_failure_class_is_an_entry_with_a_structured_reason(proposed):
    document = yaml.safe_load(proposed.read_text(encoding="utf-8"))
    [section] = document["files"]
    assert section["path"] == DEMO_FILE and section["unlisted_test_mode"] == "mandatory_success"
    by_name = {}
    for entry in section["entries"]:
        for name in entry["match"]:
            by_name.setdefault(name, []).append(entry)
    crash = by_name["TestDemoReuse::test_crashes"][0]
    assert crash["mode"] == "skip" and crash["reason"]["category"] == "crash"
    assert "exit status 86" in crash["reason"]["text"]
    [double] = by_name["TestDemoReuse::test_dtype_sensitive"]
    assert double["dtypes"] == {"include": ["float64"]} and double["reason"]["category"] == "unsupported_dtype"
    [mul] = by_name["TestDemoOps::test_op_runs"]
    assert (mul["ops"], mul["dtypes"]) == ({"include": ["mul"]}, {"include": ["float16"]})
    assert by_name["TestDemoReuse::test_known_failure"][0]["reason"] == {
        "category": "unsupported_op", "text": "RuntimeError: aten::frobnicate is not implemented for this device",
        "since": Version(version("torch")).public}
    assert "TestDemoReuse::test_passes" not in by_name and "TestDemoReuse::test_strict_fixed" not in by_name
    assert load_rules(proposed).sections  # valid rules


def test_the_proposed_rules_make_the_same_run_green(proposed, tmp_path, run_command):
    report = tmp_path / "report.json"
    process = run_command(pytest_command(f"--testdefs={proposed}", f"--testdefs-report={report}", DEMO_FILE),
                  device_env(TORCH_TEST_DEVICES=str(TEST_BASE)))
    assert process.returncode == 0, process.stdout[-3000:]
    outcomes = {d["outcome"] for d in read_report(report)["decisions"].values()}
    assert outcomes <= {"passed", "xfailed", "skipped"}


def test_failure_classes_ignore_what_varies():
    assert failure_class("AssertionError: Tensor-likes are not close!\n\nMismatched elements: 3 / 4") == \
        "AssertionError: Tensor-likes are not close!"
    assert failure_class("RuntimeError: bad size 12 at 0x7ffd1234") == "RuntimeError: bad size N at N"
    results = [Result("test/t.py::TestAPRIVATEUSE1::test_x_spyre_float16", "failed", "RuntimeError: size 1"),
               Result("test/t.py::TestAPRIVATEUSE1::test_x_spyre_float32", "failed", "RuntimeError: size 2"),
               Result("test/t.py::TestAPRIVATEUSE1::test_y_spyre_float32", "passed")]
    [entry] = rules_for("test/t.py", results, torch_version="2.13.0")["files"][0]["entries"]
    assert entry["match"] == ["TestA::test_x"] and "dtypes" not in entry  # every variant fails: the whole test


def test_bootstrap_needs_an_existing_test_file(tmp_path, capsys):
    assert main(["testdefs", "bootstrap", "test/nope.py", "--upstream", str(tmp_path)]) == 2
    assert "no such test file" in capsys.readouterr().err
