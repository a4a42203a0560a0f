"""What the simulator did: per-op counts, simulated time, fallbacks, adapters and host transfers.

Counters are plain attributes updated on the hot path; ``snapshot()`` turns them into a
JSON-serialisable dict, and ``capture()`` reports the difference over a block of code.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
from typing import Callable, Iterator


@dataclasses.dataclass
class OpRecord:
    """Totals for one op overload (``aten::name.overload``)."""

    status: str  # native | fallback | adapted | unsupported
    count: int = 0
    sim_seconds: float = 0.0
    flops: float = 0.0
    bytes_moved: int = 0
    host_seconds: float = 0.0  # wall time spent on the host (fallbacks and adapters); not simulated


# reduced_precision_matmul: an fp32 matmul-class op computed at fp16-class precision (SPYRE_REDUCED_PRECISION);
# int64_downcast: an int64 result whose values wrapped to the int32 range (SPYRE_INT64=downcast).
POLICIES = ("reduced_precision_matmul", "int64_downcast")


class SimStats:
    def __init__(self, device_transfers: Callable[[], dict] | None = None,
                 before_read: Callable[[], None] | None = None) -> None:
        self._device_transfers = device_transfers
        # Adds counts kept elsewhere (the C++ fast path) before the totals are read or reset.
        self._before_read = before_read
        self.reset()

    def reset(self) -> None:
        if self._before_read is not None:
            self._before_read()
        self.ops: dict[str, OpRecord] = {}
        self.sim_seconds = 0.0
        self.device_to_host = [0, 0]  # [count, bytes] moved by fallbacks
        self.host_to_device = [0, 0]
        self.adapters: dict[str, int] = {}
        # Numeric policies: how often each made a result differ from the CPU's by design.
        self.policies: dict[str, int] = {name: 0 for name in POLICIES}

    def record(self, name: str, status: str) -> OpRecord:
        """The record for ``name`` with this outcome; callers cache it per op."""
        key = name if status in ("native", "fallback") else f"{name} [{status}]"
        rec = self.ops.get(key)
        if rec is not None and rec.status != status:  # the coverage table changed for this op
            key = f"{name} [{status}]"
            rec = self.ops.get(key)
        if rec is None:
            rec = self.ops[key] = OpRecord(status)
        return rec

    def snapshot(self) -> dict:
        if self._before_read is not None:
            self._before_read()
        ops = {name: dataclasses.asdict(rec) for name, rec in sorted(self.ops.items()) if rec.count}
        by_status = {"native": 0, "fallback": 0, "adapted": 0, "unsupported": 0}
        for rec in self.ops.values():
            by_status[rec.status] += rec.count
        result = {
            "ops": ops,
            "op_count": sum(by_status.values()),
            "native_ops": by_status["native"],
            "fallback_ops": by_status["fallback"],
            "adapted_ops": by_status["adapted"],
            "unsupported_ops": by_status["unsupported"],
            "sim_seconds": self.sim_seconds,
            "fallbacks": {n.split(" [")[0]: r.count for n, r in sorted(self.ops.items()) if r.status == "fallback" and r.count},
            "adapters": dict(sorted(self.adapters.items())),
            "policies": dict(self.policies),
            "host_transfers": {
                "device_to_host": {"count": self.device_to_host[0], "bytes": self.device_to_host[1]},
                "host_to_device": {"count": self.host_to_device[0], "bytes": self.host_to_device[1]},
            },
        }
        if self._device_transfers is not None:
            result["device_copies"] = self._device_transfers()
        return result


def difference(after: dict, before: dict) -> dict:
    """``after - before`` for two snapshots: every number subtracted, ops with no activity dropped."""

    def sub(a, b):
        if isinstance(a, dict):
            out = {}
            for key, value in a.items():
                if key in b:
                    value = sub(value, b[key])
                if isinstance(value, dict) and "count" in value and value.get("status") and not value["count"]:
                    continue
                out[key] = value
            return out
        if isinstance(a, bool) or not isinstance(a, (int, float)):
            return a
        return a - b

    result = sub(after, before)
    result["fallbacks"] = {k: v for k, v in result["fallbacks"].items() if v}
    result["adapters"] = {k: v for k, v in result["adapters"].items() if v}
    return result


class Capture:
    """Result holder of :func:`capture`; ``result`` is filled when the block exits."""

    def __init__(self) -> None:
        self.result: dict = {}


@contextlib.contextmanager
def capture(stats: SimStats) -> Iterator[Capture]:
    """Record what the simulator does inside the ``with`` block (nests; does not reset totals)."""
    holder = Capture()
    before = copy.deepcopy(stats.snapshot())
    try:
        yield holder
    finally:
        holder.result = difference(stats.snapshot(), before)
