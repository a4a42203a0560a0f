"""The coverage table against evidence: an op_db sweep on spyre (spyre_device.sim.verify).

The slow test sweeps the whole op_db (bounded: float32/bfloat16/int32, one sample each, plus
float32 backward) in a fresh interpreter and fails on any disagreement between the shipped table
and what ran, and on any mismatch with the CPU that no numeric policy explains. The quick tests
check the comparison rules on small, real sweeps and on a deliberately wrong table.
"""
import json

import pytest
import torch
import yaml
from torch.testing._internal.common_methods_invocations import op_db

import tests.backend.sim.sim_helpers as sim_helpers  # noqa: F401  (torch first: it autoloads the device)
from spyre_device.sim import verify
from spyre_device.sim.coverage import DEFAULT_COVERAGE, load_coverage
from tests.backend.sim.sim_helpers import run_python  # noqa: F401  (fixture: a fresh interpreter)


def _opinfos(*names):
    return [op for op in op_db if op.name in names and op.variant_test_name == ""]


def _sweep_with(table, names, dtypes=("float32",)):
    sim = torch.spyre.sim
    previous = sim.coverage_table()
    sim.use_coverage(table)
    try:
        return verify.sweep(_opinfos(*names), dtypes=dtypes)
    finally:
        sim.use_coverage(previous)


def _edited_table(tmp_path, edit):
    data = yaml.safe_load(DEFAULT_COVERAGE.read_text())
    edit(data)
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_coverage(path)


def test_sweep_records_the_path_each_op_takes():
    results = {r.opinfo: r for r in verify.sweep(_opinfos("abs", "linalg.det", "nn.functional.layer_norm"),
                                                  dtypes=("float32",))}
    assert results["abs"].outcome == "ok" and "abs.out" in results["abs"].reached
    assert results["abs"].backward == "ok"  # sgn, its backward helper, runs on the card
    assert results["linalg.det"].outcome == "refused"
    assert results["linalg.det"].refused_by.startswith("_linalg_det")
    # F.layer_norm reaches the card as native_layer_norm, not as a batch-norm fallback.
    layer_norm = results["nn.functional.layer_norm"]
    assert "native_layer_norm.default" in layer_norm.reached
    assert not any("batch_norm" in op for op in layer_norm.reached)


def test_a_timed_sweep_sees_what_the_untimed_one_sees_and_repeats_the_spyre_call():
    sim = torch.spyre.sim
    opinfos = _opinfos("abs", "nn.functional.layer_norm")
    untimed = verify.sweep(opinfos, dtypes=("float32",))
    counts = []
    for runs in (1, 3):
        with sim.capture() as cap:
            timed = verify.sweep(opinfos, dtypes=("float32",), warm_up=True, timed_runs=runs)
        counts.append(cap.result["ops"]["aten::abs.out"]["count"])
        for a, b in zip(untimed, timed):
            assert (a.outcome, a.reached, a.policies) == (b.outcome, b.reached, b.policies)
            assert b.cpu_seconds > 0 and b.spyre_seconds > 0
    assert counts[1] - counts[0] == 2  # the warm-up and the backward check run alike; two more timed calls


def test_shipped_table_agrees_on_a_small_sweep():
    results = verify.sweep(_opinfos("abs", "cummax", "linalg.det", "ones_like", "mv", "randint", "addr",
                                    "nn.functional.group_norm"), dtypes=("float32", "bfloat16", "int32"))
    assert verify.disagreements(results, load_coverage()) == []
    assert {r.outcome for r in results} >= {"ok", "refused"}


def test_a_table_that_lies_is_caught(tmp_path):
    def lie(data):
        families = data["families"]
        families["elementwise"]["native"].remove("abs")
        families["elementwise"]["unsupported"].append("abs")  # refused: its backward helper sgn stays
        families["matmul"]["native"].append("mv")  # mv is decomposed into addmv
        data["composite"].remove("mv")
        families["matmul"]["unsupported"].remove("linalg_det")  # back to the default, fallback

    table = _edited_table(tmp_path, lie)
    found = {(d.op, d.kind) for d in verify.disagreements(
        verify.sweep(_opinfos("abs", "mv", "linalg.det"), dtypes=("float32",)), table)}
    assert ("mv", "listed-but-not-reached") in found
    assert ("linalg_det", "refused-by-helper") in found
    # With abs refused by the table the sweep sees it refused: table and reality agree on abs.
    assert not any(op == "abs" for op, _ in found)


def test_composite_ops_that_reach_the_card_are_caught(tmp_path):
    table = _edited_table(tmp_path, lambda data: (data["families"]["elementwise"]["native"].remove("abs"),
                                                  data["composite"].append("abs")))
    found = {(d.op, d.kind) for d in verify.disagreements(_sweep_with(table, ["abs"]), table)}
    assert found == {("abs", "composite-but-reached")}


def test_unexplained_mismatch_is_reported_and_policies_explain_the_rest():
    result = verify.PairResult("foo", "foo", "bfloat16", samples=1, outcome="mismatch", message="max abs error 0.1")
    explained = verify.PairResult("mm", "mm", "float32", samples=1, outcome="mismatch",
                                  policies={"reduced_precision_matmul"})
    found = verify.disagreements([result, explained], load_coverage())
    assert [(d.op, d.kind) for d in found] == [("foo", "unexplained-mismatch")]


def test_op_db_sweep_has_no_disagreement_and_no_unexplained_mismatch(run_python):
    out = run_python(
        """
        import json, torch
        from spyre_device.sim import verify
        results = verify.sweep()
        found = verify.disagreements(results, torch.spyre.sim.coverage_table())
        print(json.dumps({"summary": verify.summary(results), "found": [d.to_json() for d in found],
                          "mismatches": [r.to_json() for r in results if r.outcome == "mismatch"]}))
        """,
        timeout=1800,
    )
    report = json.loads(out.splitlines()[-1])
    assert report["found"] == [], json.dumps(report["found"], indent=1)
    summary = report["summary"]
    assert summary["pairs"] > 1500 and summary["outcomes"]["ok"] > 1200, summary
    assert summary["outcomes"].get("error", 0) == 0, summary
    # Every remaining difference from the CPU is a documented policy the stats reported.
    assert all(m["policies"] for m in report["mismatches"])
