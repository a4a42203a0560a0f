"""The simulator's op hooks: decide each op's fate, cost it, count it.

``spyre_device.hooks`` calls ``before_op`` for every aten op the C++ extension does not implement
(raise to refuse it, return a callable to run instead of it on the host, or None to run it as is)
and ``after_op`` once it has run. Everything that depends only on the op, such as its coverage rule, adapter
and stats record, is resolved once per ``OpOverload`` and cached in a ``Plan``; per call
the hooks only look at the arguments.
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


class Simulator:
    def __init__(
        self,
        settings: SimSettings,
        clock_advance: Callable[[float, int], None] | None = None,
        device_transfers: Callable[[], dict] | None = None,
    ) -> None:
        self.settings = settings
        self.cost = CostModel(load_constants(settings.constants))
        self.int64 = Int64Policy(settings.int64)
        self.reduced_precision = settings.reduced_precision
        self.adapters_enabled = settings.adapters
        self.stats = SimStats(device_transfers)
        self._clock_advance = clock_advance
        self._plans: dict[Any, Plan] = {}
        self._local = threading.local()  # .adapted: op whose adapter runs between before_op and after_op
        self.use_coverage(load_coverage(settings.coverage))

    # ---- configuration -------------------------------------------------------------------------
    def use_coverage(self, table: CoverageTable) -> None:
        self.coverage = table
        self.warn_fallback = (
            table.warn_on_fallback if self.settings.warn_fallback is None else self.settings.warn_fallback
        )
        self._plans.clear()  # rules are cached per op

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
            policy.warn_once()
            out = inner(*args, **kwargs)
            for t in _tensors(out if isinstance(out, (list, tuple)) else [out]):
                if t.dtype == torch.int64 and policy.wrap_(t):
                    policies["int64_downcast"] += 1
            return out

        return run
