"""Device management for torch.spyre: count, current device, properties."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from . import _C

DEVICE_TYPE = "spyre"
CORES = 32
SCRATCHPAD_BYTES_PER_CORE = 2 * 1024 * 1024
STICK_BYTES = 128


def device_index(device: Any = None, *, optional: bool = True) -> int:
    """Index of a spyre device given as None, int, str or torch.device; validated."""
    if device is None:
        return _C._current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != DEVICE_TYPE:
            raise ValueError(f"expected a spyre device, got {device}")
        if device.index is None:
            return _C._current_device()
        device = device.index
    if not isinstance(device, int):
        raise TypeError(f"expected a spyre device index, str or torch.device, got {type(device).__name__}")
    _C._check_device_index(device)
    return device


def is_available() -> bool:
    return _C._device_count() > 0


def is_initialized() -> bool:
    return True


def _lazy_init() -> None:
    """Nothing to initialise lazily: the runtime is ready once loaded."""


def device_count() -> int:
    return _C._device_count()


def current_device() -> int:
    return _C._current_device()


def set_device(device: Any) -> None:
    _C._set_device(device_index(device))


def synchronize(device: Any = None) -> None:
    """Wait for all work on the device (it runs synchronously) and release
    memory whose frees were deferred by ``Tensor.record_stream``."""
    _C._synchronize(device_index(device))


@dataclass(frozen=True)
class DeviceProperties:
    name: str
    index: int
    cores: int
    scratchpad_bytes_per_core: int
    stick_bytes: int
    total_memory: int
    memory: str = "LPDDR5 (simulated on host memory)"
    type: str = DEVICE_TYPE


def get_device_properties(device: Any = None) -> DeviceProperties:
    index = device_index(device)
    return DeviceProperties(
        name="IBM Spyre (simulated)",
        index=index,
        cores=CORES,
        scratchpad_bytes_per_core=SCRATCHPAD_BYTES_PER_CORE,
        stick_bytes=STICK_BYTES,
        total_memory=_C._memory_stats(index)["capacity_bytes"],
    )


def get_device_name(device: Any = None) -> str:
    return get_device_properties(device).name


class device:
    """Context manager that makes ``device`` the current spyre device."""

    def __init__(self, device: Any) -> None:
        self.index = device_index(device)
        self.previous = -1

    def __enter__(self) -> None:
        self.previous = _C._current_device()
        _C._set_device(self.index)

    def __exit__(self, *exc: object) -> None:
        _C._set_device(self.previous)
