"""The runner turns pytest phases into one outcome per test, isolates crashes and hangs."""
from __future__ import annotations

import pytest

from relay.errors import UserError
from relay.execution.runner import RunnerOptions
from tests.relay.runner_helpers import (
    CRASH_FILE,
    HANG_FILE,
    IMPORT_ERROR_FILE,
    OUTCOMES_FILE,
    UNINTERRUPTIBLE_HANG_FILE,
    ids,
    make_checkout,
)


def outcomes(records):
    return {r.test_id.rsplit("::", 1)[1]: r.outcome for r in records}


def test_every_pytest_outcome_maps_to_a_record(run_shard, tmp_path):
    checkout = make_checkout(tmp_path, {"test_kinds.py": OUTCOMES_FILE})
    wanted = ids("test_kinds.py", "test_passes", "test_fails", "test_errors_in_setup", "test_skipped",
                 "test_xfails", "test_xpasses", "test_strict_xpasses", "test_not_there")
    records = run_shard(checkout, wanted, RunnerOptions(reruns=0), shard=3)
    assert [r.test_id for r in records] == wanted
    assert outcomes(records) == {
        "test_passes": "passed", "test_fails": "failed", "test_errors_in_setup": "error",
        "test_skipped": "skipped", "test_xfails": "xfailed", "test_xpasses": "xpassed",
        "test_strict_xpasses": "xpassed", "test_not_there": "skipped",
    }
    by_name = {r.test_id.rsplit("::", 1)[1]: r for r in records}
    assert by_name["test_fails"].message == "NotImplementedError: aten::frobnicate is not implemented for spyre"
    assert "raise NotImplementedError" in by_name["test_fails"].traceback
    assert "fixture broke" in by_name["test_errors_in_setup"].message
    assert by_name["test_skipped"].message == "not for this device"
    assert by_name["test_strict_xpasses"].strict_xfail and not by_name["test_xpasses"].strict_xfail
    assert "not collected" in by_name["test_not_there"].message
    assert all(r.shard == 3 for r in records)


def test_abort_loses_only_the_running_test(run_shard, tmp_path):
    checkout = make_checkout(tmp_path, {"test_crash.py": CRASH_FILE})
    wanted = ids("test_crash.py", "test_before_crash", "test_aborts", "test_after_crash")
    records = run_shard(checkout, wanted, RunnerOptions(reruns=1))
    assert outcomes(records) == {"test_before_crash": "passed", "test_aborts": "crashed",
                                 "test_after_crash": "passed"}
    crashed = records[1]
    assert crashed.message == "interpreter killed by SIGABRT"
    assert "test_aborts" in crashed.traceback  # faulthandler's stack of the dying test
    assert crashed.attempts == 2 and not crashed.flaky  # re-run once, crashed again: consistent


def test_slow_test_times_out_and_the_file_goes_on(run_shard, tmp_path):
    checkout = make_checkout(tmp_path, {"test_hang.py": HANG_FILE})
    records = run_shard(checkout, ids("test_hang.py", "test_hangs", "test_after_hang"),
                        RunnerOptions(test_timeout=1, reruns=1))
    assert outcomes(records) == {"test_hangs": "timed_out", "test_after_hang": "passed"}
    assert records[0].attempts == 1  # timeouts are not re-run


def test_watchdog_kills_a_hang_signals_cannot_interrupt(run_shard, tmp_path, monkeypatch):
    monkeypatch.setattr("relay.execution.runner.process.GRACE", 1.0)
    checkout = make_checkout(tmp_path, {"test_block.py": UNINTERRUPTIBLE_HANG_FILE})
    records = run_shard(checkout, ids("test_block.py", "test_blocks_signals_and_hangs", "test_after_blocked_hang"),
                        RunnerOptions(test_timeout=1, reruns=0))
    assert outcomes(records) == {"test_blocks_signals_and_hangs": "timed_out", "test_after_blocked_hang": "passed"}
    assert "process killed" in records[0].message


def test_shard_timeout_marks_what_did_not_run(run_shard, tmp_path, monkeypatch):
    monkeypatch.setattr("relay.execution.runner.process.GRACE", 60.0)
    checkout = make_checkout(tmp_path, {"test_hang.py": HANG_FILE, "test_kinds.py": OUTCOMES_FILE})
    wanted = ids("test_hang.py", "test_hangs") + ids("test_kinds.py", "test_passes")
    records = run_shard(checkout, wanted, RunnerOptions(test_timeout=30, shard_timeout=5, reruns=0))
    assert outcomes(records) == {"test_hangs": "timed_out", "test_passes": "timed_out"}
    assert records[0].message.startswith("shard timeout exceeded")  # while running (or collecting, if slow)
    assert records[1].message == "shard timeout exceeded before it ran"


def test_import_error_fails_every_test_of_the_file(run_shard, tmp_path):
    checkout = make_checkout(tmp_path, {"test_broken.py": IMPORT_ERROR_FILE, "test_kinds.py": OUTCOMES_FILE})
    wanted = ids("test_broken.py", "test_never_runs") + ids("test_kinds.py", "test_passes")
    records = run_shard(checkout, wanted, RunnerOptions(reruns=0))
    assert outcomes(records) == {"test_never_runs": "error", "test_passes": "passed"}
    assert "no_such_module_anywhere" in records[0].traceback


def test_ids_outside_test_dir_are_rejected(run_shard, tmp_path):
    checkout = make_checkout(tmp_path, {"test_kinds.py": OUTCOMES_FILE})
    with pytest.raises(UserError, match="not an upstream node id"):
        run_shard(checkout, ["test_kinds.py::test_passes"])


def test_class_suffix_drift_still_runs_the_test(run_shard, tmp_path):
    checkout = make_checkout(tmp_path, {"test_drift.py": """
class TestDriftPRIVATEUSE1:
    def test_add_spyre_float32(self):
        pass
"""})
    (record,) = run_shard(checkout, ["test/test_drift.py::TestDriftSPYRE::test_add_spyre_float32"], RunnerOptions(reruns=0))
    # reported under the id pytest collected, the one a user can paste into pytest
    assert (record.test_id, record.outcome) == ("test/test_drift.py::TestDriftPRIVATEUSE1::test_add_spyre_float32",
                                                "passed")


RULED_FILE = '''
def test_strict_now_passes():
    pass

def test_known_gap():
    raise NotImplementedError("aten::frobnicate")

def test_not_for_spyre():
    pass
'''

RULES = '''
version: 1
files:
  - path: test/test_ruled.py
    unlisted_test_mode: mandatory_success
    entries:
      - match: test_strict_now_passes
        mode: xfail_strict
        reason: {category: unsupported_op, text: "was missing"}
      - match: test_known_gap
        mode: xfail
        reason: {category: unsupported_op, text: "frobnicate is not on spyre"}
      - match: test_not_for_spyre
        mode: exclude
        reason: {category: not_applicable, text: "another device's test"}
'''


def test_rules_naming_files_from_the_upstream_root_apply_in_the_runner(run_shard, tmp_path):
    # The runner runs files with rootdir test/, so node ids lack the test/ prefix the rules use.
    checkout = make_checkout(tmp_path / "upstream", {"test_ruled.py": RULED_FILE})
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    wanted = ids("test_ruled.py", "test_strict_now_passes", "test_known_gap", "test_not_for_spyre")
    records = run_shard(checkout, wanted, RunnerOptions(reruns=0, rules=[str(rules)]))
    assert outcomes(records) == {"test_strict_now_passes": "xpassed", "test_known_gap": "xfailed",
                                 "test_not_for_spyre": "skipped"}
    strict = records[0]
    assert strict.strict_xfail and "promote that entry to mandatory_success" in strict.message


LEAKING_FILE = '''
import os
import sys

def test_leaves_state_behind():
    sys.modules["relay_leaked_state"] = object()  # what a test file may do to its interpreter
    os.environ["RELAY_LEAKED"] = "1"

def test_sees_its_own_file_state():
    assert "relay_leaked_state" in sys.modules
'''

CLEAN_FILE = '''
import os
import sys

def test_starts_clean():
    assert "relay_leaked_state" not in sys.modules and "RELAY_LEAKED" not in os.environ
'''


def test_each_file_runs_in_its_own_process(run_shard, tmp_path):
    # one pytest session for the shard, but a file's state never reaches the next file
    checkout = make_checkout(tmp_path, {"test_leaks.py": LEAKING_FILE, "test_clean.py": CLEAN_FILE})
    wanted = ids("test_leaks.py", "test_leaves_state_behind", "test_sees_its_own_file_state") + \
        ids("test_clean.py", "test_starts_clean")
    records = run_shard(checkout, wanted, RunnerOptions(reruns=0))
    assert outcomes(records) == {"test_leaves_state_behind": "passed", "test_sees_its_own_file_state": "passed",
                                 "test_starts_clean": "passed"}


def test_a_crash_in_one_file_leaves_the_other_files_running(run_shard, tmp_path):
    checkout = make_checkout(tmp_path, {"test_crash.py": CRASH_FILE, "test_broken.py": IMPORT_ERROR_FILE,
                                        "test_kinds.py": OUTCOMES_FILE})
    wanted = (ids("test_crash.py", "test_before_crash", "test_aborts", "test_after_crash")
              + ids("test_broken.py", "test_never_runs") + ids("test_kinds.py", "test_passes", "test_fails"))
    records = run_shard(checkout, wanted, RunnerOptions(reruns=0))
    assert outcomes(records) == {"test_before_crash": "passed", "test_aborts": "crashed", "test_after_crash": "passed",
                                 "test_never_runs": "error", "test_passes": "passed", "test_fails": "failed"}
    by_name = {r.test_id.rsplit("::", 1)[1]: r for r in records}
    assert by_name["test_aborts"].message == "interpreter killed by SIGABRT"
    assert "no_such_module_anywhere" in by_name["test_never_runs"].message  # its own file's error, not another's
    assert "frobnicate" in by_name["test_fails"].message
