"""The simulator's op hooks: decide each op's fate, cost it, count it.

``spyre_device.hooks`` calls ``before_op`` for every aten op the C++ extension does not implement
(raise to refuse it, return a callable to run instead of it on the host, or None to run it as is)
and ``after_op`` once it has run. Everything that depends only on the op, such as its coverage rule, adapter
and stats record, is resolved once per ``OpOverload`` and cached in a ``Plan``; per call
the hooks only look at the arguments.

Once planned, an op whose fate does not depend on Python code is *armed* in the C++ fallback
(``NativeFastPath``): its later calls are run, costed with the same formulas and counted there,
without entering Python; the totals are drained into ``stats`` whenever someone reads them.
"""
from __future__ import annotations

import dataclasses
import threading
import warnings
from typing import Any, Callable

import torch

from .adapters import Adapter, adapter_for, with_out
from .constants import load_constants
from .cost import CostModel
from .coverage import DEVICE, CoverageTable, OpRule, Status, load_coverage, lookup_names
from .precision import REDUCED_PRECISION_KERNELS, Int64Policy, wants_reduced_precision
from .settings import SimSettings
from .stats import OpRecord, SimStats


@dataclasses.dataclass
class Plan:
    name: str  # aten::name.overload
    rule: OpRule
    adapter: Adapter | None
    adapter_runner: Callable | None  # the adapter's rewrite, accepting out= like the op
    reduced_kernel: Callable | None
    record: OpRecord  # native or fallback totals
    adapted: OpRecord | None = None
    refused: OpRecord | None = None
    warned: bool = False
    arm_checked: bool = False  # whether the C++ fallback was offered this op


def _tensors(values) -> list[torch.Tensor]:
    """Tensors among ``values``, looking one level into lists and tuples."""
    found = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value if isinstance(v, torch.Tensor))
    return found


def _device_tensors(values) -> list[torch.Tensor]:
    # The fallback only lets spyre tensors and CPU scalars through; `is_cpu` is far cheaper than `.device`.
    return [t for t in _tensors(values) if not t.is_cpu]


def _outputs(outputs) -> list[torch.Tensor]:
    if isinstance(outputs, torch.Tensor):
        return [] if outputs.is_cpu else [outputs]
    if isinstance(outputs, (list, tuple)):
        return _device_tensors(outputs)
    return []


# Cost families and reduced-precision kernels as the C++ side numbers them (csrc/sim_costing.h).
_COST_KINDS = {"none": 0, "elementwise": 1, "reduction": 2, "normalization": 3, "matmul": 4, "copy": 5, "gather": 6}
# Only these overloads take the C++ reduced kernel; others keep Python's handling.
_REDUCED_KINDS = {"mm.default": 1, "mm.out": 1, "bmm.default": 1, "bmm.out": 1,
                  "addmm.default": 2, "addmm.out": 2, "baddbmm.default": 2, "baddbmm.out": 2}


class NativeFastPath:
    """The simulator's half of the C++ fast path: arms ops there and drains their totals."""

    owner: Simulator | None = None  # the simulator whose constants and plans the C++ side holds

    def __init__(self, sim: Simulator) -> None:
        try:
            from spyre_device import _C
        except ImportError:  # the pure parts (cost, coverage) work without the built extension
            _C = None
        self._C = _C if _C is not None and hasattr(_C, "_sim_arm") else None
        self.sim = sim
        self.slots: list[OpRecord] = []

    def _claim(self) -> None:
        if NativeFastPath.owner is self.sim:
            return
        if NativeFastPath.owner is not None:
            NativeFastPath.owner.native.forget()
        NativeFastPath.owner = self.sim
        cost = self.sim.cost
        c = cost.c
        self._C._sim_set_constants({
            "stick_bytes": c.stick_bytes, "cores": c.cores, "launch_seconds": c.launch_seconds,
            "vector_flops": c.vector_flops, "lpddr5_bytes_per_second": c.lpddr5_bytes_per_second,
            "ring_latency_seconds": cost._ring_latency, "ring_broadcast_bytes_per_second": cost._ring_broadcast_bw,
            "usable_scratchpad_bytes": c.usable_scratchpad_bytes, "peak_ops_int8": c.peak_ops_int8,
            "peak_flops_fp16": c.peak_flops_fp16, "peak_flops_fp32": c.peak_flops_fp32,
            "pcie_bytes_per_second": c.pcie_bytes_per_second, "pcie_latency_seconds": c.pcie_latency_seconds,
        })
        self.sync_policies()

    def sync_policies(self) -> None:
        if self._C is not None and NativeFastPath.owner is self.sim:
            int64 = self.sim.int64
            self._C._sim_set_policies(self.sim.reduced_precision, int64.downcast, int64.warned)

    def offer(self, op, plan: Plan) -> None:
        """Arm ``op`` in C++ when every call's fate follows from its plan (see ``before_op``)."""
        plan.arm_checked = True
        sim, rule = self.sim, plan.rule
        if self._C is None or rule.status is Status.UNSUPPORTED or (plan.adapter is not None and sim.adapters_enabled):
            return
        if rule.status is Status.FALLBACK and sim.warn_fallback and not plan.warned:
            return
        reduced = 0
        if plan.reduced_kernel is not None:
            reduced = _REDUCED_KINDS.get(plan.name.removeprefix("aten::"))
            if reduced is None:
                return
        schema = op._schema
        if not schema.name.startswith("aten::") or rule.cost not in _COST_KINDS:
            return
        self._claim()
        self.slots.append(plan.record)
        self._C._sim_arm(schema.name, schema.overload_name, len(self.slots) - 1, rule.status is Status.FALLBACK,
                         _COST_KINDS[rule.cost], float(rule.flops_per_element), reduced)

    def drain(self) -> None:
        """Add what the C++ side counted since the last drain to ``stats``."""
        if self._C is None or NativeFastPath.owner is not self.sim:
            return
        records, totals = self._C._sim_drain()
        for slot, count, sim_seconds, flops, bytes_moved, host_seconds in records:
            record = self.slots[slot]
            record.count += count
            record.sim_seconds += sim_seconds
            record.flops += flops
            record.bytes_moved += bytes_moved
            record.host_seconds += host_seconds
        stats = self.sim.stats
        stats.sim_seconds += totals["sim_seconds"]
        for direction in ("device_to_host", "host_to_device"):
            count, nbytes = totals[direction]
            getattr(stats, direction)[0] += count
            getattr(stats, direction)[1] += nbytes
        for policy in ("reduced_precision_matmul", "int64_downcast"):
            stats.policies[policy] += totals[policy]

    def forget(self) -> None:
        """Disarm every op (plans are about to change); what was counted is kept."""
        if self._C is None or NativeFastPath.owner is not self.sim:
            return
        self.drain()
        self._C._sim_disarm_all()
        self.slots.clear()


class Simulator:
    native_fast_path = True  # spyre_device.hooks: the C++ fallback may run armed ops without our hooks

    def __init__(
        self,
        settings: SimSettings,
        clock_advance: Callable[[float, int], None] | None = None,
        device_transfers: Callable[[], dict] | None = None,
    ) -> None:
        self.settings = settings
        self.cost = CostModel(load_constants(settings.constants))
        self.int64 = Int64Policy(settings.int64)
        self.native = NativeFastPath(self)
        self._reduced_precision = settings.reduced_precision
        self.adapters_enabled = settings.adapters
        self.stats = SimStats(device_transfers, before_read=self.native.drain)
        self._clock_advance = clock_advance
        self._plans: dict[Any, Plan] = {}
        self._local = threading.local()  # .adapted: op whose adapter runs between before_op and after_op
        self.use_coverage(load_coverage(settings.coverage))

    # ---- configuration -------------------------------------------------------------------------
    @property
    def reduced_precision(self) -> bool:
        return self._reduced_precision

    @reduced_precision.setter
    def reduced_precision(self, enabled: bool) -> None:
        self._reduced_precision = enabled
        self.native.sync_policies()

    def use_coverage(self, table: CoverageTable) -> None:
        self.coverage = table
        self.warn_fallback = (
            table.warn_on_fallback if self.settings.warn_fallback is None else self.settings.warn_fallback
        )
        self.forget_plans()  # rules are cached per op

    def forget_plans(self) -> None:
        """Drop every cached plan (and the C++ side's copies); the next call of each op plans again."""
        self.native.forget()
        self._plans.clear()

    def _plan(self, op) -> Plan:
        name = op.name()  # "aten::add.Tensor"
        short = name.split("::", 1)[-1]
        if "." not in short:
            short += ".default"
        rule = self.coverage.resolve(short)
        status = "fallback" if rule.status is Status.FALLBACK else "native"
        adapter = adapter_for(short)
        reduced = next((REDUCED_PRECISION_KERNELS[n] for n in lookup_names(short) if n in REDUCED_PRECISION_KERNELS), None)
        plan = Plan(
            name=f"aten::{short}" if name.startswith("aten::") else name,
            rule=rule,
            adapter=adapter,
            adapter_runner=with_out(adapter.rewrite) if adapter else None,
            reduced_kernel=with_out(reduced) if reduced else None,
            record=self.stats.record(f"aten::{short}", status),
        )
        self._plans[op] = plan
        return plan

    # ---- hooks ----------------------------------------------------------------------------------
    def before_op(self, op, args: tuple, kwargs: dict):
        plan = self._plans.get(op) or self._plan(op)
        runner = None
        if plan.rule.status is Status.UNSUPPORTED:
            runner = self._adapter_runner(op, plan, args, kwargs)
        elif plan.adapter is not None and self.adapters_enabled and plan.adapter.applies(args, kwargs):
            # A fallback op its adapter can rewrite runs on the card instead of the host.
            self._local.adapted = op
            runner = plan.adapter_runner
        elif plan.reduced_kernel is not None and self.reduced_precision and wants_reduced_precision(args):
            runner = plan.reduced_kernel
            self.stats.policies["reduced_precision_matmul"] += 1
        if self.int64.downcast and (
            kwargs.get("dtype") == torch.int64
            or any(t.dtype == torch.int64 for t in _tensors(args))
            or (kwargs and any(t.dtype == torch.int64 for t in _tensors(kwargs.values())))
        ):
            runner = self._int64_runner(runner or op)
        return runner

    def after_op(self, op, args: tuple, kwargs: dict, outputs, host_seconds: float) -> None:
        plan = self._plans.get(op) or self._plan(op)
        inputs = _device_tensors(args)
        if kwargs:
            inputs += _device_tensors([v for k, v in kwargs.items() if k != "out"])
        results = _outputs(outputs)
        adapted = getattr(self._local, "adapted", None) is op
        if plan.rule.status is Status.FALLBACK and not adapted:
            record = plan.record
            transfer = self.cost.fallback(inputs, results)
            seconds = transfer.seconds
            self.stats.device_to_host[0] += 1
            self.stats.device_to_host[1] += transfer.device_to_host_bytes
            self.stats.host_to_device[0] += 1
            self.stats.host_to_device[1] += transfer.host_to_device_bytes
            record.bytes_moved += transfer.device_to_host_bytes + transfer.host_to_device_bytes
            if self.warn_fallback and not plan.warned:
                plan.warned = True
                warnings.warn(f"spyre: {plan.name} runs on the host (fallback, {plan.rule.where})", stacklevel=2)
        else:
            if adapted:  # an op its adapter rewrote into ops the card runs
                self._local.adapted = None
                plan.adapted = plan.adapted or self.stats.record(plan.name, "adapted")
                record = plan.adapted
                self.stats.adapters[plan.adapter.name] = self.stats.adapters.get(plan.adapter.name, 0) + 1
            else:
                record = plan.record
            # An adapted op costs what its rewritten form costs on the card: the family's formula.
            cost = self.cost.native(plan.rule.cost, plan.rule.flops_per_element, inputs, results, self.reduced_precision)
            seconds = cost.seconds
            record.flops += cost.flops
            record.bytes_moved += cost.bytes_moved
        record.count += 1
        record.sim_seconds += seconds
        record.host_seconds += host_seconds
        self.stats.sim_seconds += seconds
        if self._clock_advance is not None and seconds:
            anchor = results or inputs
            self._clock_advance(seconds, anchor[0].device.index if anchor else None)
        if not plan.arm_checked:
            self.native.offer(op, plan)

    # ---- runners --------------------------------------------------------------------------------
    def _adapter_runner(self, op, plan: Plan, args: tuple, kwargs: dict):
        adapter = plan.adapter if self.adapters_enabled else None
        if adapter is not None and adapter.applies(args, kwargs):
            self._local.adapted = op  # after_op books this call as adapted
            return plan.adapter_runner
        plan.refused = plan.refused or self.stats.record(plan.name, "unsupported")
        plan.refused.count += 1
        why = f"unsupported in coverage table {plan.rule.where}"
        if plan.adapter is not None:
            why += f"; adapter {plan.adapter.name} does not apply to these arguments ({plan.adapter.description})"
        raise NotImplementedError(f"{plan.name} is not implemented on the {DEVICE} device ({why})")

    def _int64_runner(self, inner: Callable) -> Callable:
        policy, policies = self.int64, self.stats.policies

        def run(*args, **kwargs):
            if not policy.warned:
                policy.warn_once()
                self.native.sync_policies()  # the C++ fast path may now apply the policy itself
            out = inner(*args, **kwargs)
            for t in _tensors(out if isinstance(out, (list, tuple)) else [out]):
                if t.dtype == torch.int64 and policy.wrap_(t):
                    policies["int64_downcast"] += 1
            return out

        return run
