"""Memory accounting of spyre cards: stats, capacity, stick layout, transfers."""

from __future__ import annotations

from typing import Any

import torch

from . import _C
from ._device import device_index


def memory_stats(device: Any = None) -> dict[str, int]:
    """Allocator counters (``allocated_bytes.all.current`` etc.); bytes are padded to sticks."""
    return dict(_C._memory_stats(device_index(device)))


def memory_allocated(device: Any = None) -> int:
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: Any = None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def reset_peak_memory_stats(device: Any = None) -> None:
    _C._reset_peak_memory_stats(device_index(device))


def memory_reserved(device: Any = None) -> int:
    """Host bytes the allocator holds for the card: live blocks, deferred frees and the cache."""
    return memory_stats(device)["reserved_bytes.all.current"]


def empty_cache() -> None:
    """Return every cached freed block to the host (as torch.accelerator.empty_cache())."""
    _C._empty_cache()


def memory_capacity(device: Any = None) -> int:
    return memory_stats(device)["capacity_bytes"]


def set_memory_capacity(nbytes: int, device: Any = None) -> None:
    """Override the card's capacity (default 128 GiB or SPYRE_MEMORY_CAPACITY)."""
    if not isinstance(nbytes, int) or nbytes < 0:
        raise ValueError(f"memory capacity must be a non-negative number of bytes, got {nbytes!r}")
    _C._set_memory_capacity(device_index(device), nbytes)


def layout(tensor: torch.Tensor) -> dict[str, int]:
    """Device layout of a spyre tensor: rows of the innermost dimension, whole
    128-byte sticks per row, sticks, logical/padded/padding bytes."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"layout() expects a tensor, got {type(tensor).__name__}")
    return dict(_C._layout(tensor))


def transfer_stats() -> dict[str, int]:
    """Bytes and counts of copies host->device, device->host and device->device."""
    return dict(_C._transfer_stats())


def reset_transfer_stats() -> None:
    _C._reset_transfer_stats()
