"""Simulator semantics of the spyre device: op coverage, dtype policy, cost model, adapters.

Installed by the device's autoload (``install()``) and exposed as ``torch.spyre.sim``.
See docs/simulator.md.
"""
from .api import (
    capture,
    coverage_table,
    install,
    list_adapters,
    precision,
    reduced_precision,
    reset_stats,
    set_reduced_precision,
    set_unsupported_dtypes,
    simulator,
    stats,
    uninstall,
    use_coverage,
)
from .coverage import CoverageTable, Status, load_coverage
from .yaml_files import SimConfigError

__all__ = [
    "CoverageTable",
    "SimConfigError",
    "Status",
    "capture",
    "coverage_table",
    "install",
    "list_adapters",
    "load_coverage",
    "precision",
    "reduced_precision",
    "reset_stats",
    "set_reduced_precision",
    "set_unsupported_dtypes",
    "simulator",
    "stats",
    "uninstall",
    "use_coverage",
]
