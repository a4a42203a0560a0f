"""spyre: an OpenReg-style PrivateUse1 PyTorch device simulating IBM's Spyre card.

``import torch`` loads this package through the ``torch.backends`` entry point
(``_autoload``), so ``torch.device("spyre")`` and ``torch.spyre`` work without
importing it by name. With ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``, ``import
spyre_device`` does the same.
"""

from __future__ import annotations

import importlib
import os
import sys

from spyre_device.errors import ConfigError

# torch is imported inside the functions: `import spyre_device` before torch
# makes torch's own autoload call back into this (then partial) module.

DEVICE_TYPE = "spyre"

_registered = False
_loaded = False


def _validate_environment() -> None:
    raw = os.environ.get("SPYRE_DEVICE_COUNT", "").strip()
    if raw and not (raw.isdigit() and 1 <= int(raw) <= 64):
        raise ConfigError(f"SPYRE_DEVICE_COUNT must be an integer from 1 to 64, got {raw!r}")


def _register() -> None:
    """Make PrivateUse1 the `spyre` device: kernels, fallback, torch.spyre, Tensor.spyre()."""
    global _registered
    import torch  # may run _autoload through the entry point and register first

    if _registered:
        return
    _validate_environment()
    from . import _C  # loading it registers the allocator, guard, hooks and kernels

    try:
        _C._default_memory_capacity()  # the C++ side parses SPYRE_MEMORY_CAPACITY
    except RuntimeError as err:
        raise ConfigError(str(err)) from None
    torch.utils.rename_privateuse1_backend(DEVICE_TYPE)
    from . import _autograd, _fallback, _torch_numerics, api

    torch._register_device_module(DEVICE_TYPE, api)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )
    _fallback.install()
    _torch_numerics.install()
    _autograd.install()
    _registered = True


def _autoload() -> None:
    """Entry point of the ``torch.backends`` group; also run on ``import spyre_device``."""
    global _loaded
    _register()
    if _loaded:
        return
    _loaded = True
    try:
        simulator = importlib.import_module("spyre_device.sim")
    except ModuleNotFoundError as err:
        if err.name != "spyre_device.sim":
            raise
        return
    simulator.install()


def _autoload_or_exit() -> None:
    """``_autoload`` at import: a bad SPYRE_* setting is one line on stderr and exit status 2, not
    torch's "Failed to load the backend extension" traceback wrapped around the real message."""
    try:
        _autoload()
    except ConfigError as err:
        sys.stderr.write(f"spyre: {err} (fix the setting, or unset it for the default)\n")
        raise SystemExit(2) from None


_autoload_or_exit()
