"""Random number generation state of the spyre cards (one generator per card)."""

from __future__ import annotations

from typing import Any

import torch

from . import _C
from ._device import device_count, device_index


def _generator(device: Any = None) -> torch.Generator:
    return _C._default_generator(device_index(device))


def default_generators() -> tuple[torch.Generator, ...]:
    return tuple(_C._default_generator(i) for i in range(device_count()))


def manual_seed(seed: int, device: Any = None) -> None:
    """Seed the current (or given) card's generator."""
    _generator(device).manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for generator in default_generators():
        generator.manual_seed(int(seed))


def seed() -> None:
    _generator().seed()


def initial_seed() -> int:
    return _generator().initial_seed()


def get_rng_state(device: Any = None) -> torch.Tensor:
    return _generator(device).get_state()


def set_rng_state(state: torch.Tensor, device: Any = None) -> None:
    _generator(device).set_state(state)


def _is_in_bad_fork() -> bool:
    # Host memory survives fork, so a forked child can use the device.
    return False
