"""Op coverage tables: which aten ops the simulated card runs, falls back on, or refuses.

A table is YAML data (``coverage/default.yaml``); this module validates it, checks that each op
appears once, and resolves an op to an :class:`OpRule`. Resolution is cached by the caller per
``OpOverload``, so tables are parsed once, never per op.
"""
from __future__ import annotations

import dataclasses
import enum
import re
import warnings
from pathlib import Path
from typing import Literal

import pydantic

from .yaml_files import SimConfigError, load_model, node_line

DEFAULT_COVERAGE = Path(__file__).parent / "coverage" / "default.yaml"
DEVICE = "spyre"
_OP_NAME = re.compile(r"^[a-z_][a-z0-9_]*(\.[A-Za-z0-9_]+)?$")


class Status(str, enum.Enum):
    NATIVE = "native"
    FALLBACK = "fallback"
    UNSUPPORTED = "unsupported"


CostKind = Literal["none", "elementwise", "reduction", "normalization", "matmul", "copy", "gather"]
OpName = pydantic.constr(pattern=_OP_NAME.pattern)


class Family(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    cost: CostKind
    flops_per_element: float = pydantic.Field(default=1.0, ge=0)
    native: list[OpName] = []
    fallback: list[OpName] = []
    unsupported: list[OpName] = []


TorchRelease = pydantic.constr(pattern=r"^\d+\.\d+(\.\d+)?$")


class TorchRange(pydantic.BaseModel):
    """The torch releases that have an op: ``added_in <= version < removed_in`` (either bound optional)."""

    model_config = pydantic.ConfigDict(extra="forbid")
    added_in: TorchRelease | None = None
    removed_in: TorchRelease | None = None

    def includes(self, version: tuple[int, ...]) -> bool:
        low = release_tuple(self.added_in) if self.added_in else None
        high = release_tuple(self.removed_in) if self.removed_in else None
        return (low is None or version >= low) and (high is None or version < high)


class CoverageFile(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    schema_version: Literal[1]
    name: str
    default: Status
    warn_on_fallback: bool = False
    families: dict[str, Family]
    # Ops that never reach the card themselves on this device: PyTorch decomposes them first, and
    # each op they become follows its own entry (`relay-cli backend coverage --verify` checks both).
    composite: list[OpName] = []
    # Ops only some torch versions have; each must also be listed in a family.
    torch_versions: dict[OpName, TorchRange] = {}


@dataclasses.dataclass(frozen=True)
class OpRule:
    """How one op behaves on the device; ``where`` is ``file:line`` of the entry (or the default)."""

    status: Status
    family: str | None
    cost: str
    flops_per_element: float
    where: str


@dataclasses.dataclass
class CoverageTable:
    name: str
    path: str
    default: OpRule
    warn_on_fallback: bool
    entries: dict[str, OpRule]
    composite: dict[str, str] = dataclasses.field(default_factory=dict)  # op -> file:line

    def is_composite(self, qualified_name: str) -> bool:
        return any(key in self.composite for key in lookup_names(qualified_name))

    def resolve(self, qualified_name: str) -> OpRule:
        """Rule for ``aten::name.overload`` (or ``name.overload`` / ``name``); see ``lookup_names``."""
        for key in lookup_names(qualified_name):
            rule = self.entries.get(key)
            if rule is not None:
                return rule
        return self.default

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Status}
        for rule in self.entries.values():
            out[rule.status.value] += 1
        return out


def lookup_names(qualified_name: str) -> list[str]:
    """Table keys that may describe an op, most specific first.

    The host fallback sees the ``out=`` overloads of structured ops (``pow.Tensor_Scalar_out``,
    ``sin.out``); they share the entry of their functional overload. The in-place form ``name_``
    shares the entry of ``name``.
    """
    name = qualified_name.split("::", 1)[-1]
    packet, _, overload = name.partition(".")
    overloads = [overload] if overload else []
    if overload == "out":
        overloads.append("default")
    elif overload.endswith("_out"):
        overloads.append(overload[: -len("_out")])
    packets = [packet]
    if packet.endswith("_") and not packet.endswith("__"):
        packets.append(packet[:-1])
    names = []
    for p in packets:
        names += [f"{p}.{o}" for o in overloads] + [p]
    return names


def release_tuple(version: str) -> tuple[int, ...]:
    """``2.14.1``, ``2.14.0a0+git1234`` or ``2.14.1+cu130`` -> ``(2, 14, 1)``/``(2, 14, 0)``: the release
    a build belongs to (a 2.14 nightly already lacks what 2.14 removed)."""
    match = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", version)
    if match is None:
        raise ValueError(f"not a torch version: {version!r}")
    return tuple(int(part or 0) for part in match.groups())


def installed_torch_version() -> str:
    import torch

    return torch.__version__


def load_coverage(path: str | Path = DEFAULT_COVERAGE, *, torch_version: str | None = None) -> CoverageTable:
    """Parse and check a coverage table; a duplicate op or bad field raises ``file:line`` errors.

    Entries that ``torch_versions`` says ``torch_version`` (default: the installed torch) lacks are
    left out, so the table resolves and checks the same ops the running torch has."""
    path = Path(path)
    parsed, root = load_model(path, CoverageFile)
    release = release_tuple(torch_version or installed_torch_version())
    entries: dict[str, OpRule] = {}
    for family_name, family in parsed.families.items():
        for status in Status:
            for index, op in enumerate(getattr(family, status.value)):
                line = node_line(root, ("families", family_name, status.value, index))
                where = f"{path.name}:{line}"
                if op in entries:
                    raise SimConfigError(
                        f"{path}:{line}: families.{family_name}.{status.value}: op {op!r} is already "
                        f"listed at {entries[op].where}; list each op once"
                    )
                entries[op] = OpRule(status, family_name, family.cost, family.flops_per_element, where)
    composite: dict[str, str] = {}
    for index, op in enumerate(parsed.composite):
        line = node_line(root, ("composite", index))
        if op in entries or op in composite:
            first = entries[op].where if op in entries else composite[op]
            raise SimConfigError(
                f"{path}:{line}: composite: op {op!r} is already listed at {first}; list each op once"
            )
        composite[op] = f"{path.name}:{line}"
    for op, span in parsed.torch_versions.items():
        if op not in entries:
            line = node_line(root, ("torch_versions", op))
            raise SimConfigError(f"{path}:{line}: torch_versions: op {op!r} is not listed in any family; "
                                 "list it in a family first")
        if not span.includes(release):
            del entries[op]
    default_line = node_line(root, ("default",))
    default = OpRule(parsed.default, None, "elementwise", 1.0, f"{path.name}:{default_line} (default)")
    return CoverageTable(parsed.name, str(path), default, parsed.warn_on_fallback, entries, composite)


def unknown_ops(table: CoverageTable) -> list[str]:
    """Entries naming no aten op of the installed torch (typos, or ops removed upstream)."""
    import torch

    missing = []
    listed = [(key, rule.where) for key, rule in table.entries.items()] + list(table.composite.items())
    for key, where in listed:
        packet, _, overload = key.partition(".")
        found = [p for p in (packet, packet + "_") if hasattr(torch.ops.aten, p)]
        if found and overload:
            found = [p for p in found if overload in getattr(torch.ops.aten, p).overloads()]
        if not found:
            missing.append(f"{key} ({where})")
    return missing


def warn_unknown_ops(table: CoverageTable) -> None:
    missing = unknown_ops(table)
    if missing:
        warnings.warn(
            f"spyre coverage table {table.path} names ops this torch does not have: {', '.join(missing)}",
            stacklevel=2,
        )
