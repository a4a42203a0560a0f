"""Roofline cost model: stick-granular bytes, compute vs memory bound, tiling, ring, fallbacks."""
import dataclasses

import pytest
import torch

import tests.backend.sim.sim_helpers as sim_helpers  # noqa: F401  (torch, and through its autoload the device, first)
from spyre_device.sim.constants import load_constants
from spyre_device.sim.cost import CostModel, padded_bytes


@pytest.fixture(scope="module")
def model():
    return CostModel(load_constants())


def test_padding_rounds_the_innermost_dimension_to_whole_sticks():
    assert padded_bytes((1000, 3), 4, 128) == 1000 * 128
    assert padded_bytes((3, 1000), 4, 128) == 3 * 4096  # 4000 B -> 32 sticks per row
    assert padded_bytes((64,), 2, 128) == 128  # exactly one fp16 stick
    assert padded_bytes((), 4, 128) == 128
    assert padded_bytes((0, 5), 4, 128) == 0


def test_elementwise_is_memory_bound_and_stick_granular(model):
    c = model.c
    narrow, wide = torch.empty(1000, 3), torch.empty(3, 1000)
    a = model.native("elementwise", 1, [narrow, narrow], [narrow])
    b = model.native("elementwise", 1, [wide, wide], [wide])
    assert a.bytes_moved == 3 * 1000 * 128 and b.bytes_moved == 3 * 3 * 4096
    assert a.seconds == pytest.approx(c.launch_seconds + a.bytes_moved / c.lpddr5_bytes_per_second)
    assert a.seconds > b.seconds  # same numel, ten times the sticks


def test_large_fp32_matmul_is_compute_bound_and_faster_in_reduced_precision(model):
    a, b, out = torch.empty(2048, 2048), torch.empty(2048, 2048), torch.empty(2048, 2048)
    full = model.native("matmul", 1, [a, b], [out], reduced_precision=False)
    reduced = model.native("matmul", 1, [a, b], [out], reduced_precision=True)
    assert full.flops == 2 * 2048 ** 3
    compute = full.flops / model.c.peak_flops_fp32
    assert compute > full.bytes_moved / model.c.lpddr5_bytes_per_second
    assert full.seconds == pytest.approx(model.c.launch_seconds + compute + full.ring_seconds)
    assert reduced.seconds < full.seconds


def test_right_operand_larger_than_the_scratchpads_restreams_the_left(model):
    usable = model.c.usable_scratchpad_bytes  # 32 MiB with the default constants
    a = torch.empty(256, 4096, dtype=torch.float16)
    fits = torch.empty(4096, int(usable // (4096 * 2)), dtype=torch.float16)
    spills = torch.empty(4096, int(3 * usable // (4096 * 2)), dtype=torch.float16)
    one = model.native("matmul", 1, [a, fits], [torch.empty(256, fits.shape[1], dtype=torch.float16)])
    three = model.native("matmul", 1, [a, spills], [torch.empty(256, spills.shape[1], dtype=torch.float16)])
    a_bytes = model.tensor_bytes(a)
    assert three.bytes_moved - model.tensor_bytes(spills) - 256 * spills.shape[1] * 2 == 3 * a_bytes
    assert one.bytes_moved - model.tensor_bytes(fits) - 256 * fits.shape[1] * 2 == a_bytes
    assert three.ring_seconds > one.ring_seconds


def test_reductions_pay_a_ring_combine(model):
    x = torch.empty(4096, 4096)
    reduced = model.native("reduction", 1, [x], [torch.empty(4096)])
    assert reduced.ring_seconds > 0 and reduced.flops == x.numel()


def test_fallback_pays_pcie_both_ways(model):
    c = model.c
    x = torch.empty(128, 256)
    t = model.fallback([x], [x])
    assert t.device_to_host_bytes == t.host_to_device_bytes == 128 * 1024
    assert t.seconds == pytest.approx(2 * 128 * 1024 / c.pcie_bytes_per_second + 2 * c.pcie_latency_seconds)


def test_constants_drive_the_result(model):
    faster = CostModel(dataclasses.replace(model.c, lpddr5_bytes_per_second=2 * model.c.lpddr5_bytes_per_second))
    x = torch.empty(1024, 1024)
    assert faster.native("elementwise", 1, [x], [x]).seconds < model.native("elementwise", 1, [x], [x]).seconds
