"""Stats aggregation: records per op and outcome, snapshots, and nested captures."""
import json

import tests.backend.sim.sim_helpers as sim_helpers  # noqa: F401
from spyre_device.sim.stats import SimStats, capture


def _run(stats, name, status, seconds, n=1):
    rec = stats.record(name, status)
    for _ in range(n):
        rec.count += 1
        rec.sim_seconds += seconds
        stats.sim_seconds += seconds


def test_snapshot_totals_by_outcome_and_is_json():
    stats = SimStats(device_transfers=lambda: {"host_to_device_bytes": 7})
    _run(stats, "aten::add.out", "native", 1.0, n=2)
    _run(stats, "aten::sin.out", "fallback", 0.5)
    _run(stats, "aten::pow.Tensor_Scalar_out", "adapted", 0.25)
    _run(stats, "aten::digamma.out", "unsupported", 0.0)
    stats.record("aten::never.out", "native")  # planned but never run: not reported
    snap = stats.snapshot()
    assert (snap["op_count"], snap["native_ops"], snap["fallback_ops"], snap["adapted_ops"], snap["unsupported_ops"]) == (5, 2, 1, 1, 1)
    assert snap["sim_seconds"] == 2.75
    assert set(snap["ops"]) == {"aten::add.out", "aten::sin.out", "aten::pow.Tensor_Scalar_out [adapted]",
                                "aten::digamma.out [unsupported]"}
    assert snap["fallbacks"] == {"aten::sin.out": 1}
    assert snap["device_copies"] == {"host_to_device_bytes": 7}
    json.dumps(snap)


def test_a_status_change_gets_its_own_record():
    stats = SimStats()
    native = stats.record("aten::add.out", "native")
    fallback = stats.record("aten::add.out", "fallback")
    assert native is not fallback and fallback.status == "fallback"
    assert stats.record("aten::add.out", "fallback") is fallback


def test_captures_report_only_their_block_and_nest():
    stats = SimStats()
    _run(stats, "aten::add.out", "native", 1.0)
    with capture(stats) as outer:
        _run(stats, "aten::add.out", "native", 1.0)
        with capture(stats) as inner:
            _run(stats, "aten::sin.out", "fallback", 0.5)
    assert inner.result["op_count"] == 1 and inner.result["fallbacks"] == {"aten::sin.out": 1}
    assert set(inner.result["ops"]) == {"aten::sin.out"}
    assert outer.result["op_count"] == 2 and outer.result["sim_seconds"] == 1.5
    assert outer.result["ops"]["aten::add.out"]["count"] == 1
    assert stats.snapshot()["op_count"] == 3  # capturing never resets the totals
