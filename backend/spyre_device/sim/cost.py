"""Roofline cost model: the simulated duration of one op on the card.

    duration = launch + max(flops / peak, bytes_moved / LPDDR5 bandwidth) + ring time

* Bytes are stick-granular: every row of a tensor's innermost dimension occupies whole 128-byte
  sticks on the device, so a (1000, 3) fp32 tensor moves 1000 sticks, not 12 kB.
* Matrix-class ops run on the PE arrays (peak by dtype, fp16-class when reduced precision is on);
  everything else runs on the vector units.
* Matmul tiling: the right operand is spread over the 32 scratchpads; when it exceeds their usable
  space it is processed in ``passes`` resident slices and the left operand is re-streamed from
  LPDDR5 once per pass. The left operand's sticks are broadcast around the bi-directional ring.
* Reductions combine per-core partial results around the ring.
* Fallback ops pay PCIe transfers both ways instead (host compute is not simulated).

All numbers come from :mod:`constants` (``constants.yaml``); docs/simulator.md explains each term.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import torch

from .constants import Constants

_FP16_CLASS = (torch.float16, torch.bfloat16)
_INT8_CLASS = (torch.int8, torch.uint8)


class OpCost(NamedTuple):
    seconds: float
    flops: float
    bytes_moved: int
    ring_seconds: float = 0.0


class TransferCost(NamedTuple):
    seconds: float
    device_to_host_bytes: int
    host_to_device_bytes: int


def padded_bytes(shape: Sequence[int], itemsize: int, stick: int) -> int:
    """Device bytes of a dense tensor: the innermost dimension rounded up to whole sticks."""
    if not shape:
        return stick  # a scalar still occupies one stick
    rows = math.prod(shape[:-1])
    if rows == 0 or shape[-1] == 0:
        return 0
    return rows * (-(-shape[-1] * itemsize // stick) * stick)


class CostModel:
    def __init__(self, constants: Constants) -> None:
        self.c = constants
        self._stick = constants.stick_bytes
        self._ring_latency = (constants.cores // 2) * constants.ring_hop_cycles / constants.clock_hz
        # Broadcasting around a bi-directional ring: each link direction carries half the traffic.
        self._ring_broadcast_bw = 2 * constants.ring_bytes_per_second

    def tensor_bytes(self, t: torch.Tensor) -> int:
        """``padded_bytes`` of a tensor, without building shape tuples (called for every operand)."""
        if t.dim() == 0:
            return self._stick
        last = t.size(-1)
        if last == 0:
            return 0
        stick = self._stick
        return (t.numel() // last) * (-(-last * t.element_size() // stick) * stick)

    def matrix_peak(self, dtype: torch.dtype, reduced_precision: bool) -> float:
        if dtype in _INT8_CLASS:
            return self.c.peak_ops_int8
        if dtype in _FP16_CLASS or reduced_precision:
            return self.c.peak_flops_fp16
        return self.c.peak_flops_fp32

    def native(
        self,
        kind: str,
        flops_per_element: float,
        inputs: Sequence[torch.Tensor],
        outputs: Sequence[torch.Tensor],
        reduced_precision: bool = False,
    ) -> OpCost:
        if kind == "none":
            return OpCost(0.0, 0.0, 0)
        if kind == "matmul":
            return self._matmul(inputs, outputs, reduced_precision)
        tensor_bytes = self.tensor_bytes
        in_bytes = 0
        for t in inputs:
            in_bytes += tensor_bytes(t)
        out_bytes = 0
        for t in outputs:
            out_bytes += tensor_bytes(t)
        ring = 0.0
        if kind == "copy":
            flops = 0.0
            moved = in_bytes + out_bytes if outputs else 0
            if outputs and inputs and _aliases(outputs[0], inputs[0]):
                moved = 0  # a view: metadata only
        elif kind == "gather":
            flops = 0.0
            moved = out_bytes * 2 + sum(self.tensor_bytes(t) for t in inputs[1:])
        elif kind == "reduction":
            flops = flops_per_element * sum(t.numel() for t in inputs[:1])
            moved = in_bytes + out_bytes
            ring = out_bytes * (self.c.cores - 1) / (self.c.cores * self._ring_broadcast_bw) + self._ring_latency
        elif kind == "normalization":
            flops = flops_per_element * sum(t.numel() for t in inputs[:1])
            # A row that does not fit on chip is read twice: once for statistics, once to normalise.
            first = self.tensor_bytes(inputs[0]) if inputs else 0
            reread = first if first > self.c.usable_scratchpad_bytes else 0
            moved = in_bytes + reread + out_bytes
        else:  # elementwise
            flops = flops_per_element * sum(t.numel() for t in outputs)
            moved = in_bytes + out_bytes
        seconds = self.c.launch_seconds + max(flops / self.c.vector_flops, moved / self.c.lpddr5_bytes_per_second)
        return OpCost(seconds + ring, flops, moved, ring)

    def _matmul(self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor], reduced: bool) -> OpCost:
        operands = [t for t in inputs if t.dim() >= 1]
        if len(operands) < 2 or not outputs:
            return OpCost(self.c.launch_seconds, 0.0, 0)
        a, b = operands[-2], operands[-1]
        bias_bytes = sum(self.tensor_bytes(t) for t in operands[:-2])
        out = outputs[0]
        flops = 2.0 * out.numel() * a.shape[-1]
        a_bytes, b_bytes, c_bytes = self.tensor_bytes(a), self.tensor_bytes(b), self.tensor_bytes(out)
        passes = max(1, math.ceil(b_bytes / self.c.usable_scratchpad_bytes))
        moved = a_bytes * passes + b_bytes + c_bytes + bias_bytes
        ring = a_bytes * passes / self._ring_broadcast_bw + self._ring_latency
        compute = flops / self.matrix_peak(a.dtype, reduced)
        memory = moved / self.c.lpddr5_bytes_per_second
        return OpCost(self.c.launch_seconds + max(compute, memory) + ring, flops, moved, ring)

    def fallback(self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> TransferCost:
        """Inputs go to the host, results come back: PCIe both ways, one DMA setup per direction."""
        down = sum(self.tensor_bytes(t) for t in inputs)
        up = sum(self.tensor_bytes(t) for t in outputs)
        seconds = (down + up) / self.c.pcie_bytes_per_second + 2 * self.c.pcie_latency_seconds
        return TransferCost(seconds, down, up)


def _aliases(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return False
