"""Both layers on the real spyre device: the TORCH_TEST_DEVICES test base and the pytest plugin.

An upstream-style device-generic file (tests/fixtures/testdefs/upstream/test/test_demo_reuse.py)
runs in fresh interpreters; every result is read from the JSON reports the layers write and from
exit statuses, never from scraped console output.
"""
from __future__ import annotations

import json
import sys

import pytest

from tests.testdefs.testdefs_helpers import (
    DEMO_FILE,
    DEMO_RULES,
    TEST_BASE,
    UPSTREAM,
    device_env,
    pytest_command,
    read_report,
    run_command,
    write,
)

# mode declared in rules_demo_reuse.yaml -> outcome on the device
EXPECTED = {
    "TestDemoReusePRIVATEUSE1::test_passes_spyre": ("mandatory_success", "passed"),
    "TestDemoReusePRIVATEUSE1::test_known_failure_spyre": ("xfail", "xfailed"),
    "TestDemoReusePRIVATEUSE1::test_strict_fixed_spyre": ("xfail_strict", "xpassed_strict"),
    "TestDemoReusePRIVATEUSE1::test_strict_still_failing_spyre": ("xfail_strict", "xfailed"),
    "TestDemoReusePRIVATEUSE1::test_crashes_spyre": ("skip", "skipped"),
    "TestDemoReusePRIVATEUSE1::test_unsupported_spyre": ("exclude", "not_generated"),
    "TestDemoReusePRIVATEUSE1::test_dtype_sensitive_spyre_float32": ("mandatory_success", "passed"),
    "TestDemoReusePRIVATEUSE1::test_dtype_sensitive_spyre_float64": ("xfail_strict", "xfailed"),
    "TestDemoReusePRIVATEUSE1::test_dtype_sensitive_spyre_int64": ("mandatory_success", "passed"),
    "TestDemoReusePRIVATEUSE1::test_new_in_214_spyre": ("skip", "skipped"),
    "TestDemoReusePRIVATEUSE1::test_tolerance_spyre": ("mandatory_success", "passed"),
    # the second class is instantiated after the device base ran setUpClass: torch names it ...SPYRE
    "TestDemoOpsSPYRE::test_op_runs_add_spyre_float16": ("mandatory_success", "passed"),
    "TestDemoOpsSPYRE::test_op_runs_add_spyre_float32": ("mandatory_success", "passed"),
    "TestDemoOpsSPYRE::test_op_runs_mul_spyre_float16": ("xfail", "xfailed"),
    "TestDemoOpsSPYRE::test_op_runs_mul_spyre_float32": ("mandatory_success", "passed"),
    **{f"TestDemoOpsSPYRE::test_op_runs_div_{variant}_spyre_{dtype}": ("exclude", "not_generated")
       for variant in ("no_rounding_mode", "trunc_rounding", "floor_rounding") for dtype in ("float16", "float32")},
}
EXPECTED = {f"{DEMO_FILE}::{name}": value for name, value in EXPECTED.items()}
RULES_ARG = f"../{DEMO_RULES.name}"  # relative, as a user would type it in the checkout
# Options are given as --opt=value: pytest takes a separate value that names an existing file for a
# path argument when it chooses the rootdir, which would change the node ids.


@pytest.fixture(scope="module")
def pytest_run(tmp_path_factory, run_command):
    """pytest with the test base (TORCH_TEST_DEVICES) and the plugin (--testdefs)."""
    report = tmp_path_factory.mktemp("pytest-run") / "decisions.json"
    process = run_command(pytest_command(f"--testdefs={RULES_ARG}", f"--testdefs-report={report}", DEMO_FILE),
                  device_env(TORCH_TEST_DEVICES=str(TEST_BASE)))
    assert report.exists(), process.stdout[-3000:] + process.stderr[-3000:]
    return process, read_report(report)


@pytest.fixture(scope="module")
def unittest_run(tmp_path_factory, run_command):
    """Plain unittest (`python test/test_x.py`, as upstream CI runs it) with the test base only."""
    report = tmp_path_factory.mktemp("unittest-run") / "base.json"
    process = run_command([sys.executable, DEMO_FILE],
                  device_env(TORCH_TEST_DEVICES=str(TEST_BASE), RELAY_TESTDEFS=RULES_ARG,
                             RELAY_TESTDEFS_REPORT=str(report)))
    assert report.exists(), process.stdout[-3000:] + process.stderr[-3000:]
    return process, read_report(report)


@pytest.fixture(scope="module")
def plugin_only_run(tmp_path_factory, run_command):
    """The plugin alone: torch's own PrivateUse1TestBase generates every variant; nothing runs."""
    report = tmp_path_factory.mktemp("plugin-run") / "decisions.json"
    process = run_command(pytest_command("--collect-only", f"--testdefs={RULES_ARG}", f"--testdefs-report={report}",
                                 DEMO_FILE), device_env())
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-3000:]
    return read_report(report)


def _modes(decisions: dict) -> dict[str, tuple[str, str | None]]:
    return {test_id: (d["mode"], d["entry"]) for test_id, d in decisions.items()}


def test_pytest_runs_exactly_the_declared_modes(pytest_run):
    process, report = pytest_run
    got = {test_id: (d["mode"], d["outcome"]) for test_id, d in report["decisions"].items()}
    assert got == EXPECTED
    assert report["excluded_at_instantiation"] == 7
    excluded = {k for k, d in report["decisions"].items() if d["layer"] == "test_base"}
    assert excluded == {k for k, (mode, _) in EXPECTED.items() if mode == "exclude"}
    # the only failure is the strict xfail that passes, so the run fails (exit 1) and says what to do
    assert process.returncode == 1
    assert "promote that entry to mandatory_success" in process.stdout


def test_plain_unittest_applies_the_same_decisions(pytest_run, unittest_run):
    _, from_pytest = pytest_run
    process, from_base = unittest_run
    assert _modes(from_base["decisions"]) == _modes(from_pytest["decisions"])
    outcomes = {test_id: d["outcome"] for test_id, d in from_base["decisions"].items()}
    assert outcomes == {test_id: outcome for test_id, (_, outcome) in EXPECTED.items()}
    assert from_base["excluded_at_instantiation"] == 7
    assert process.returncode != 0  # the unexpected success of the strict xfail fails the run


def test_plugin_alone_decides_the_same_for_every_id(pytest_run, plugin_only_run):
    _, with_base = pytest_run
    assert _modes(plugin_only_run["decisions"]) == _modes(with_base["decisions"])
    assert plugin_only_run["excluded_at_instantiation"] == 0


def test_explain_agrees_with_what_ran(pytest_run, run_command):
    _, report = pytest_run
    ids = sorted(report["decisions"])
    process = run_command([sys.executable, "-m", "relay", "testdefs", "explain", "--rules", RULES_ARG, "--json", *ids],
                  device_env())
    assert process.returncode == 0, process.stderr
    explained = {d["test_id"]: (d["mode"], d["entry"]) for d in json.loads(process.stdout)}
    assert explained == _modes(report["decisions"])


def test_stale_collects_the_upstream_tree(tmp_path, run_command):
    rules = write(tmp_path / "rules.yaml", f"""
        files:
          - path: {DEMO_FILE}
            unlisted_test_mode: mandatory_success
            entries:
              - {{match: TestDemoReuse::test_passes, mode: mandatory_success}}
              - {{match: TestDemoReuse::test_renamed_away, mode: skip, reason: {{category: crash, text: x}}}}
              - match: TestDemoOps::test_op_runs
                mode: xfail
                ops: {{include: [mul]}}
                reason: {{category: unsupported_op, text: x}}
              - match: TestDemoOps::test_op_runs
                mode: xfail
                ops: {{include: [sub]}}
                reason: {{category: unsupported_op, text: "no such op in this test"}}
          - path: test/test_deleted_upstream.py
            unlisted_test_mode: skip
        """)
    process = run_command([sys.executable, "-m", "relay", "testdefs", "stale", "--upstream", str(UPSTREAM),
                   "--rules", str(rules), "--json"], device_env())
    assert process.returncode == 1, process.stderr
    data = json.loads(process.stdout)
    assert data["collected"] >= 15 and data["collection_errors"] == []
    found = {(s["kind"], s["subject"], s["ref"].rsplit(":", 1)[1]) for s in data["stale"]}
    assert found == {("pattern", "TestDemoReuse::test_renamed_away", "6"),
                     ("filters", "TestDemoOps::test_op_runs", "11"),
                     ("file", "test/test_deleted_upstream.py", "15")}


def test_global_op_list_filters_ops_before_instantiation(tmp_path, run_command):
    """global.exclude_unsupported with supported_ops: unsupported OpInfos generate no variants at all."""
    supported = write(tmp_path / "global.yaml", """
        global:
          supported_dtypes: [float16, float32, int64]
          supported_ops: [add, mul]
          exclude_unsupported: true
        """)
    report = tmp_path / "base.json"
    process = run_command([sys.executable, DEMO_FILE],
                  device_env(TORCH_TEST_DEVICES=str(TEST_BASE), RELAY_TESTDEFS=f"{RULES_ARG}:{supported}",
                             RELAY_TESTDEFS_REPORT=str(report)))
    assert report.exists(), process.stdout[-3000:] + process.stderr[-3000:]
    data = read_report(report)
    assert data["ops_filtered_by_allowlist"] == 3  # div's three OpInfo variants
    decisions = data["decisions"]
    assert not [test_id for test_id in decisions if "_div_" in test_id]
    float64 = decisions[f"{DEMO_FILE}::TestDemoReusePRIVATEUSE1::test_dtype_sensitive_spyre_float64"]
    assert (float64["mode"], float64["outcome"]) == ("xfail_strict", "xfailed")  # explicitly included dtype
    assert decisions[f"{DEMO_FILE}::TestDemoOpsSPYRE::test_op_runs_add_spyre_float16"]["outcome"] == "passed"


DTYPES_IF_DEVICE = """
    import torch
    from torch.testing._internal.common_device_type import dtypes, dtypesIfPRIVATEUSE1, instantiate_device_type_tests
    from torch.testing._internal.common_utils import TestCase


    class TestFirst(TestCase):
        @dtypes(torch.float32)
        @dtypesIfPRIVATEUSE1(torch.float64)
        def test_on_device(self, device, dtype):
            pass


    class TestSecond(TestCase):
        @dtypes(torch.float32)
        @dtypesIfPRIVATEUSE1(torch.float64)
        def test_on_device(self, device, dtype):
            pass


    instantiate_device_type_tests(TestFirst, globals())
    instantiate_device_type_tests(TestSecond, globals())
    """
LIST_VARIANTS = ("import json, test_dtypes_if as m; print(json.dumps(sorted(f'{c}::{t}' for c, k in vars(m).items() "
                 "if isinstance(k, type) and c.startswith('Test') for t in vars(k) if t.startswith('test'))))")


def test_device_dtypes_apply_whatever_was_instantiated_before(tmp_path, run_command):
    """``@dtypesIfPRIVATEUSE1`` keys its dtypes by the backend name (``spyre``); torch looks them up by
    the class's device_type, which is ``privateuse1`` until some class has run setUpClass (which
    instantiating a test taking ``device`` does, on the shared base). So the dtypes of whichever test
    was instantiated first in the process were silently ignored: which one that is depends on the
    files run together and on the hash seed (set order of the class members). The base makes it the
    backend name before each class instantiates its tests."""
    write(tmp_path / "test_dtypes_if.py", DTYPES_IF_DEVICE)
    process = run_command([sys.executable, "-c", LIST_VARIANTS], device_env(TORCH_TEST_DEVICES=str(TEST_BASE)),
                          cwd=tmp_path)
    assert process.returncode == 0, process.stderr[-3000:]
    variants = {name.split("::", 1)[0].removesuffix("PRIVATEUSE1").removesuffix("SPYRE") + "::" + name.split("::")[1]
                for name in json.loads(process.stdout)}
    assert variants == {"TestFirst::test_on_device_spyre_float64", "TestSecond::test_on_device_spyre_float64"}
