"""``torch.spyre``: the device module registered for the spyre device."""

from __future__ import annotations

import torch as _torch

from ._device import (  # noqa: F401
    _lazy_init,
    current_device,
    device,
    device_count,
    get_device_name,
    get_device_properties,
    is_available,
    is_initialized,
    set_device,
    synchronize,
)
from ._memory import (  # noqa: F401
    empty_cache,
    layout,
    max_memory_allocated,
    memory_allocated,
    memory_capacity,
    memory_reserved,
    memory_stats,
    reset_peak_memory_stats,
    reset_transfer_stats,
    set_memory_capacity,
    transfer_stats,
)
from ._random import (  # noqa: F401
    _is_in_bad_fork,
    default_generators,
    get_rng_state,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    set_rng_state,
)
from ._streams import (  # noqa: F401
    Event,
    Stream,
    current_stream,
    default_stream,
    set_stream,
    sim_clock,
    sim_clock_advance,
    stream,
)


def get_amp_supported_dtype() -> list[_torch.dtype]:
    """Autocast lower-precision dtypes (fp16-class compute)."""
    return [_torch.float16, _torch.bfloat16]
