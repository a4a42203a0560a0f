"""``torch.spyre.sim``: install the simulator into the device and query or steer it."""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Iterator

import torch

from . import stats as _stats
from .adapters import ADAPTERS
from .coverage import CoverageTable, load_coverage, warn_unknown_ops
from .engine import Simulator
from .repr_fix import install_repr_fix
from .settings import parse_dtypes, settings_from_env

_active: Simulator | None = None


def install() -> Simulator | None:
    """Called by the device's autoload: apply the ``SPYRE_*`` settings and hook every fallback op.

    Returns the simulator, or None when ``SPYRE_SIM=0``.
    """
    global _active
    settings = settings_from_env()
    device_module = torch.spyre
    device_module.sim = sys.modules[__package__]  # the API exists even when switched off
    if not settings.enabled:
        return None
    from spyre_device import _C, hooks  # the device package; imported here so pure parts need no build

    uninstall()
    _C._set_unsupported_dtypes([getattr(torch, name) for name in settings.unsupported_dtypes])

    get_stream, advance = torch._C._accelerator_getStream, getattr(_C, "_advance_stream_clock", None)

    def clock_advance(seconds: float, device_index: int | None) -> None:
        # The op ran on its tensors' card: advance that card's current stream. Called for every
        # op, so it skips the Python Stream wrappers when the extension offers the raw call.
        if advance is None:
            device_module.sim_clock_advance(seconds, device_module.current_stream(device_index))
            return
        s = get_stream(_C._current_device() if device_index is None else device_index)
        advance(s.device_index, s.stream_id, seconds)

    simulator = Simulator(settings, clock_advance=clock_advance, device_transfers=device_module.transfer_stats)
    install_repr_fix()
    warn_unknown_ops(simulator.coverage)
    hooks.register_op_hooks(simulator)
    _active = simulator
    return simulator


def uninstall() -> None:
    """Remove the hooks (ops then run on the host, uncosted) and lift the dtype deny list."""
    global _active
    if _active is None:
        return
    from spyre_device import _C, hooks

    hooks.unregister_op_hooks(_active)
    _active.forget_plans()
    _C._set_unsupported_dtypes([])
    _active = None


def simulator() -> Simulator:
    if _active is None:
        raise RuntimeError("the spyre simulator is not installed (SPYRE_SIM=0, or spyre_device not loaded)")
    return _active


def stats() -> dict:
    """Totals since start (or ``reset_stats``): per-op counts, simulated seconds, fallbacks, transfers.

    The result is plain JSON-serialisable data.
    """
    return simulator().stats.snapshot()


def reset_stats() -> None:
    simulator().stats.reset()
    simulator().forget_plans()  # plans hold references to the old per-op records


@contextlib.contextmanager
def capture() -> Iterator[_stats.Capture]:
    """``with torch.spyre.sim.capture() as c: ...`` then ``c.result`` holds what the block did."""
    with _stats.capture(simulator().stats) as holder:
        yield holder


def use_coverage(table: str | Path | CoverageTable) -> CoverageTable:
    """Switch the coverage table (a path or a loaded table); returns the table now in force."""
    if not isinstance(table, CoverageTable):
        table = load_coverage(table)
        warn_unknown_ops(table)
    simulator().use_coverage(table)
    return table


def coverage_table() -> CoverageTable:
    """The coverage table in force."""
    return simulator().coverage


def set_reduced_precision(enabled: bool) -> bool:
    """Switch fp16-class matmul accumulation; returns the previous setting."""
    sim = simulator()
    previous, sim.reduced_precision = sim.reduced_precision, bool(enabled)
    return previous


def reduced_precision() -> bool:
    return simulator().reduced_precision


@contextlib.contextmanager
def precision(reduced: bool) -> Iterator[None]:
    """Run a block with reduced precision on or off, restoring the previous setting."""
    previous = set_reduced_precision(reduced)
    try:
        yield
    finally:
        set_reduced_precision(previous)


def set_unsupported_dtypes(names: str | list[str]) -> None:
    """Replace the dtype deny list, e.g. ``"float64,complex128"``."""
    from spyre_device import _C

    if not isinstance(names, str):
        names = ",".join(names)
    _C._set_unsupported_dtypes([getattr(torch, n) for n in parse_dtypes(names, "set_unsupported_dtypes")])


def list_adapters() -> list[dict[str, str]]:
    """Name, replaced op and rewrite of every declared adapter."""
    return [adapter.describe() for adapter in ADAPTERS]
