"""Replay-evaluation arithmetic: ground truth, recall, APFDc, baselines."""
import json

import pytest

from selector.errors import SelectorError
from selector.eval import baselines
from selector.eval.metrics import apfdc, cause_recall, recall
from selector.eval.truth import GroundTruth, Transition
from selector.history import History

REG = Transition(test="test/test_a.py::TestA::test_x", kind="regression", cause="float64", dtype="float64")
REG2 = Transition(test="test/test_b.py::TestB::test_y", kind="regression", cause="float64")
X64 = "test/test_a.py::TestAPRIVATEUSE1::test_x_spyre_float64"
X32 = "test/test_a.py::TestAPRIVATEUSE1::test_x_spyre_float32"
Y = "test/test_b.py::TestBSPYRE::test_y_spyre"


def test_transition_matches_the_right_dtype_variant():
    assert REG.matches(X64) and not REG.matches(X32)
    assert REG.matches("test/test_a.py::TestA::test_x")  # a normalised selection (no verify) counts


def test_recall_and_cause_recall():
    assert recall([X64], [REG, REG2]) == 0.5
    assert cause_recall([X64], [REG, REG2]) == 1.0  # both share the cause
    assert recall([], []) is None


def test_apfdc_rewards_running_failures_first():
    seconds = {X64: 1.0, X32: 1.0, Y: 1.0}
    early = apfdc([X64, Y, X32], seconds, [REG, REG2])
    late = apfdc([X32, Y, X64], seconds, [REG, REG2])
    assert early > late
    assert apfdc([X64], seconds, [REG]) == pytest.approx(0.5)  # one test that reveals the one fault
    assert apfdc([X32], seconds, [REG]) == 0.0  # undetected faults count zero


def test_apfdc_counts_a_root_cause_once_at_its_first_failing_test():
    seconds = {X64: 1.0, X32: 1.0, Y: 1.0}
    # REG and REG2 share one cause: revealed by X64 at once, wherever Y runs
    assert apfdc([X64, X32, Y], seconds, [REG, REG2]) == apfdc([X64, Y, X32], seconds, [REG, REG2]) \
        == pytest.approx(1 - 1 / 3 + 1 / 6)
    other = Transition(test=REG2.test, kind="regression", cause="another cause")
    assert apfdc([X64, X32, Y], seconds, [REG, other]) == pytest.approx((2.5 + 0.5) / (3 * 2))  # two faults


def test_demo_changeset_truth(tmp_path):
    path = tmp_path / "demo-changeset.json"
    path.write_text(json.dumps({
        "expected_regressions": [{"test": REG.test, "dtype": "float64", "why": "spyre refuses float64"}],
        "fixed": [{"test": REG2.test, "dtype": "complex64", "was": "complex128 at v2.13.0"}]}))
    truth = GroundTruth.from_demo_changeset(path)
    assert [(t.kind, t.cause) for t in truth.transitions] == [("regression", "spyre refuses float64"),
                                                             ("fixed", "complex128 at v2.13.0")]
    path.write_text("{}")
    with pytest.raises(SelectorError, match="expected_regressions"):
        GroundTruth.from_demo_changeset(path)


def test_truth_from_two_full_runs_ignores_flakes(tmp_path):
    def run(name, records):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "results.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
        return folder
    before = run("a", [{"id": X64, "outcome": "passed"}, {"id": X32, "outcome": "failed"}, {"id": Y, "outcome": "passed"}])
    after = run("b", [{"id": X64, "outcome": "failed"}, {"id": X32, "outcome": "passed"},
                      {"id": Y, "outcome": "failed", "flaky": True}])
    truth = GroundTruth.from_results(before, after)
    assert [(t.test, t.kind) for t in truth.transitions] == [(X32, "fixed"), (X64, "regression")]


def test_baselines_pick_files():
    universe = [X64, X32, Y, "test/test_c.py::TestCSPYRE::test_z_spyre"]
    assert baselines.changed_files(universe, ["test/test_a.py", "torch/x.py"]) == [X64, X32]
    td = baselines.td_files(universe, ["test/test_b.py"], History())
    assert td == [Y]  # 3 files, top 25% rounds up to one: the edited one
    assert baselines.random_same_count(universe, 4, [REG]) == 1.0
    assert 0.0 < baselines.random_same_count(universe, 2, [REG]) < 1.0
