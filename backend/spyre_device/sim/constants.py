"""The cost model's constants: one YAML file, every value with its source or stated assumption."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

import pydantic

from .yaml_files import SimConfigError, load_model, node_line

DEFAULT_CONSTANTS = Path(__file__).with_name("constants.yaml")


class Constant(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    value: float = pydantic.Field(gt=0)
    unit: str
    source: str = pydantic.Field(min_length=8, description="citation or 'assumption: why'")


class ConstantsFile(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    schema_version: Literal[1]
    constants: dict[str, Constant]


@dataclasses.dataclass(frozen=True)
class Constants:
    """Flat, attribute-access view used on the hot path (no dict lookups per op)."""

    cores: int
    scratchpad_bytes_per_core: int
    scratchpad_usable_fraction: float
    stick_bytes: int
    clock_hz: float
    ring_bytes_per_cycle_per_direction: float
    ring_hop_cycles: float
    lpddr5_bytes_per_second: float
    pcie_bytes_per_second: float
    pcie_latency_seconds: float
    peak_ops_int8: float
    peak_flops_fp16: float
    peak_flops_fp32: float
    vector_flops: float
    launch_seconds: float
    path: str = ""

    @property
    def ring_bytes_per_second(self) -> float:
        """One direction of one ring link."""
        return self.ring_bytes_per_cycle_per_direction * self.clock_hz

    @property
    def usable_scratchpad_bytes(self) -> float:
        """Aggregate scratchpad space for resident tiles across all cores."""
        return self.cores * self.scratchpad_bytes_per_core * self.scratchpad_usable_fraction


_INTEGER_FIELDS = {"cores", "scratchpad_bytes_per_core", "stick_bytes"}


def load_constants(path: str | Path = DEFAULT_CONSTANTS) -> Constants:
    """Read and check a constants file; a missing, unknown or non-integral constant names its line."""
    parsed, root = load_model(path, ConstantsFile)
    wanted = [f.name for f in dataclasses.fields(Constants) if f.name != "path"]
    missing = [name for name in wanted if name not in parsed.constants]
    if missing:
        line = node_line(root, ("constants",)) or 1
        raise SimConfigError(f"{path}:{line}: constants: missing {', '.join(missing)}")
    unknown = sorted(set(parsed.constants) - set(wanted))
    if unknown:
        line = node_line(root, ("constants", unknown[0])) or 1
        raise SimConfigError(f"{path}:{line}: constants.{unknown[0]}: unknown constant (known: {', '.join(wanted)})")
    values = {}
    for name in wanted:
        value = parsed.constants[name].value
        if name in _INTEGER_FIELDS:
            if value != int(value):
                line = node_line(root, ("constants", name, "value")) or 1
                raise SimConfigError(f"{path}:{line}: constants.{name}.value: must be a whole number")
            value = int(value)
        values[name] = value
    return Constants(**values, path=str(path))
