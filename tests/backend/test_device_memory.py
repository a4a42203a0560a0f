"""Allocator: accounting, 128-byte stick padding, capacity and out-of-memory, dtype deny-list."""

import pytest
import torch

from spyre_device import _C
from tests.backend.device_helpers import bare_device  # noqa: F401  (fixture)


def test_allocation_is_counted_in_whole_sticks_and_released(bare_device):
    before = torch.spyre.memory_stats()
    x = torch.empty(3, 10, dtype=torch.float16, device=bare_device)  # rows of 20 bytes
    after = torch.spyre.memory_stats()
    assert after["allocated_bytes.all.current"] - before["allocated_bytes.all.current"] == 3 * 128
    assert after["requested_bytes.all.current"] - before["requested_bytes.all.current"] == 60
    assert after["padding_bytes.all.current"] - before["padding_bytes.all.current"] == 3 * 128 - 60
    assert torch.spyre.memory_allocated() == after["allocated_bytes.all.current"]
    del x
    assert torch.spyre.memory_allocated() == before["allocated_bytes.all.current"]


def test_layout_reports_sticks_and_padding(bare_device):
    x = torch.empty(4, 100, dtype=torch.float32, device=bare_device)  # 400-byte rows -> 4 sticks
    assert torch.spyre.layout(x) == {
        "stick_bytes": 128,
        "rows": 4,
        "row_bytes": 400,
        "sticks_per_row": 4,
        "sticks": 16,
        "logical_bytes": 1600,
        "padded_bytes": 2048,
        "padding_bytes": 448,
    }
    # 64 fp16 values fill exactly one stick: no padding.
    assert torch.spyre.layout(torch.empty(2, 64, dtype=torch.float16, device=bare_device))["padding_bytes"] == 0


def test_padding_keeps_logical_strides_contiguous(bare_device):
    x = torch.arange(30.0).view(3, 10).to(bare_device)
    assert x.stride() == (10, 1) and x.is_contiguous()
    assert torch.equal(x.cpu(), torch.arange(30.0).view(3, 10))


def test_channels_last_pads_along_channels(bare_device):
    x = torch.empty(1, 3, 2, 2, device=bare_device, memory_format=torch.channels_last)
    assert x.is_contiguous(memory_format=torch.channels_last)
    layout = torch.spyre.layout(x)
    assert (layout["rows"], layout["row_bytes"]) == (4, 12)


def test_layout_rejects_host_tensors():
    with pytest.raises(RuntimeError, match="layout\\(\\) expects a spyre tensor"):
        torch.spyre.layout(torch.ones(2))


def test_peak_tracks_maximum_and_resets(bare_device):
    torch.spyre.reset_peak_memory_stats()
    base = torch.spyre.memory_allocated()
    x = torch.empty(1024, device=bare_device)
    del x
    assert torch.spyre.max_memory_allocated() == base + 4096
    torch.spyre.reset_peak_memory_stats()
    assert torch.spyre.max_memory_allocated() == torch.spyre.memory_allocated() == base


def test_allocation_over_capacity_raises_out_of_memory_and_the_process_survives(bare_device):
    original = torch.spyre.memory_capacity()
    torch.spyre.set_memory_capacity(torch.spyre.memory_allocated() + (1 << 20))
    try:
        kept = torch.ones(1024, device=bare_device)
        ooms = torch.spyre.memory_stats()["num_ooms"]
        with pytest.raises(torch.OutOfMemoryError, match=r"Spyre out of memory: tried to allocate 4\.00 MiB .* on spyre:0"):
            torch.empty(1 << 20, device=bare_device)
        assert torch.spyre.memory_stats()["num_ooms"] == ooms + 1
        # Nothing was lost: existing tensors and new small allocations still work.
        assert (kept + 1).sum().item() == 2048.0
    finally:
        torch.spyre.set_memory_capacity(original)
    assert torch.empty(1 << 20, device=bare_device).numel() == 1 << 20


def test_capacity_defaults_to_128_gib_and_is_reported():
    assert _C._default_memory_capacity() == 128 << 30
    assert torch.spyre.get_device_properties().total_memory == torch.spyre.memory_capacity()


def test_bad_capacity_value_is_rejected():
    with pytest.raises(ValueError, match="non-negative number of bytes"):
        torch.spyre.set_memory_capacity(-1)


def test_storage_resize_goes_through_the_allocator(bare_device):
    storage = torch.UntypedStorage(10, device=bare_device)
    before = torch.spyre.memory_allocated()
    storage.resize_(300)
    assert storage.nbytes() == 300
    assert torch.spyre.memory_allocated() - before == 384 - 128


def test_unsupported_dtype_is_refused_at_allocation_and_copy(bare_device):
    _C._set_unsupported_dtypes([torch.float64])
    assert _C._unsupported_dtypes() == [torch.float64]
    with pytest.raises(RuntimeError, match="^Spyre backend does not support dtype Double"):
        torch.empty(2, dtype=torch.float64, device=bare_device)
    with pytest.raises(RuntimeError, match="Spyre backend does not support dtype Double"):
        torch.ones(2, dtype=torch.float64).to(bare_device)
    with pytest.raises(RuntimeError, match="Spyre backend does not support dtype Double"):
        torch.ones(2, device=bare_device).double()
    # Other dtypes are unaffected, and the list can be cleared.
    assert torch.ones(2, dtype=torch.float32, device=bare_device).sum().item() == 2.0
    _C._set_unsupported_dtypes([])
    assert torch.ones(2, dtype=torch.float64, device=bare_device).dtype == torch.float64
