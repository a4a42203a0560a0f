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


# ---- the cache of small freed blocks -------------------------------------------------------------


def _cache_counters():
    s = torch.spyre.memory_stats()
    return {k: s[k] for k in ("allocated_bytes.all.current", "reserved_bytes.all.current", "cached_bytes.all.current",
                              "num_cache_hits", "num_host_allocs", "num_host_frees")}


def test_freed_small_block_is_cached_reused_and_released_by_empty_cache(bare_device):
    torch.spyre.empty_cache()
    base = _cache_counters()
    x = torch.empty(8, 8, device=bare_device)  # 8 rows of 32 bytes -> 8 sticks, 1 KiB
    ptr = x.data_ptr()
    held = _cache_counters()
    assert held["allocated_bytes.all.current"] - base["allocated_bytes.all.current"] == 1024
    assert held["reserved_bytes.all.current"] - base["reserved_bytes.all.current"] == 1024
    del x
    freed = _cache_counters()
    # No longer allocated, still reserved: the block waits in the cache.
    assert freed["allocated_bytes.all.current"] == base["allocated_bytes.all.current"]
    assert freed["reserved_bytes.all.current"] == held["reserved_bytes.all.current"]
    assert freed["cached_bytes.all.current"] == 1024
    assert freed["num_host_frees"] == base["num_host_frees"]
    y = torch.ones(8, 8, device=bare_device)
    assert y.data_ptr() == ptr  # the same block, not a new host allocation
    reused = _cache_counters()
    assert reused["num_cache_hits"] == freed["num_cache_hits"] + 1
    assert reused["num_host_allocs"] == freed["num_host_allocs"]
    assert reused["cached_bytes.all.current"] == 0
    assert y.sum().item() == 64.0
    del y
    cached_blocks = torch.spyre.memory_stats()["cached_blocks.all.current"]  # y's and sum()'s
    assert cached_blocks >= 1
    torch.spyre.empty_cache()
    emptied = _cache_counters()
    assert emptied["cached_bytes.all.current"] == 0
    assert emptied["reserved_bytes.all.current"] == base["reserved_bytes.all.current"]
    assert emptied["num_host_frees"] == base["num_host_frees"] + cached_blocks


def test_cached_blocks_serve_nearby_sizes_of_their_size_class(bare_device):
    torch.spyre.empty_cache()
    x = torch.empty(9, 32, device=bare_device)  # 9 sticks = 1152 bytes, in the 1280-byte class
    ptr = x.data_ptr()
    assert _C._memory_stats(0)["reserved_bytes.all.current"] >= 1280
    del x
    hits = torch.spyre.memory_stats()["num_cache_hits"]
    y = torch.empty(10, 32, device=bare_device)  # 10 sticks = 1280 bytes: same class
    assert y.data_ptr() == ptr
    assert torch.spyre.memory_stats()["num_cache_hits"] == hits + 1
    del y
    z = torch.empty(12, 32, device=bare_device)  # 1536 bytes: the next class, a new block
    assert z.data_ptr() != ptr
    del z
    torch.spyre.empty_cache()


def test_large_blocks_go_back_to_the_host_at_once(bare_device):
    torch.spyre.empty_cache()
    base = _cache_counters()
    x = torch.empty(1 << 19, device=bare_device)  # 2 MiB: above the cached sizes
    del x
    after = _cache_counters()
    assert after["cached_bytes.all.current"] == 0
    assert after["reserved_bytes.all.current"] == base["reserved_bytes.all.current"]
    assert after["num_host_frees"] == base["num_host_frees"] + 1


def test_block_used_by_a_recorded_stream_is_cached_only_after_that_stream_syncs(bare_device):
    torch.spyre.synchronize()
    torch.spyre.empty_cache()
    side = torch.spyre.Stream()
    x = torch.ones(1000, device=bare_device)
    ptr = x.data_ptr()
    x.record_stream(side)
    del x
    stats = torch.spyre.memory_stats()
    assert stats["pending_free_bytes.all.current"] == 4096
    assert stats["cached_bytes.all.current"] == 0
    # While the side stream may read it, the block is not handed out again.
    y = torch.empty(1000, device=bare_device)
    assert y.data_ptr() != ptr
    side.synchronize()
    stats = torch.spyre.memory_stats()
    assert stats["pending_free_bytes.all.current"] == 0
    assert stats["cached_bytes.all.current"] == 4096
    z = torch.empty(1000, device=bare_device)
    assert z.data_ptr() == ptr
    del y, z
    torch.spyre.empty_cache()


def test_accelerator_apis_see_the_cache_as_reserved_and_empty_it(bare_device):
    torch.accelerator.empty_cache()
    x = torch.empty(256, device=bare_device)
    del x
    assert torch.spyre.memory_stats()["cached_bytes.all.current"] == 1024
    assert torch.accelerator.memory_reserved() == torch.spyre.memory_reserved()
    assert torch.accelerator.memory_reserved() - torch.accelerator.memory_allocated() >= 1024
    free, total = torch.accelerator.get_memory_info()
    assert free == total - torch.spyre.memory_reserved()
    stats = torch.accelerator.memory_stats()
    assert stats["segment.all.current"] > stats["allocation.all.current"]  # a cached block is a segment
    torch.accelerator.empty_cache()
    assert torch.spyre.memory_stats()["cached_bytes.all.current"] == 0
    assert torch.accelerator.memory_reserved() == torch.spyre.memory_reserved()


def test_cache_yields_to_the_capacity(bare_device):
    torch.spyre.empty_cache()
    blocks = [torch.empty(1 << 14, device=bare_device) for _ in range(8)]  # 8 x 64 KiB
    del blocks
    assert torch.spyre.memory_stats()["cached_bytes.all.current"] == 8 << 16
    original = torch.spyre.memory_capacity()
    # Room for a new 512 KiB block only if the cache gives its 512 KiB back.
    torch.spyre.set_memory_capacity(torch.spyre.memory_reserved() + (256 << 10))
    try:
        x = torch.empty(1 << 17, device=bare_device)
        assert torch.spyre.memory_stats()["cached_bytes.all.current"] == 0
        assert torch.spyre.memory_reserved() <= torch.spyre.memory_capacity()
        del x
    finally:
        torch.spyre.set_memory_capacity(original)
    torch.spyre.empty_cache()
