"""The merged ``global`` sections: what the device supports, and the tolerances that follow from it."""
from __future__ import annotations

from dataclasses import dataclass, field

from testdefs.matching import op_matches
from testdefs.schema import Category, OpSpec, Precision


@dataclass(frozen=True)
class Tolerance:
    atol: float | None
    rtol: float | None
    source: str  # 'file:line' of the entry or global item giving it

    @classmethod
    def of(cls, precision: Precision, source: str) -> Tolerance:
        return cls(precision.atol, precision.rtol, source)


@dataclass
class GlobalConfig:
    """The merged ``global`` sections: what the device supports."""

    supported_dtypes: dict[str, tuple[Precision | None, str]] = field(default_factory=dict)  # name -> (precision, ref)
    supported_ops: dict[str, tuple[OpSpec, str]] = field(default_factory=dict)  # name -> (spec, ref)
    exclude_unsupported: bool = False
    ref: str | None = None  # 'file:line' of the (first) global section

    def dtype_names(self) -> list[str]:
        return list(self.supported_dtypes)

    def op_spec(self, op: str) -> tuple[OpSpec, str] | None:
        """The supported_ops item covering ``op`` (``div`` covers ``div.floor_rounding``), longest name first."""
        for name in sorted(self.supported_ops, key=len, reverse=True):
            if op_matches(name, op):
                return self.supported_ops[name]
        return None

    def op_dtypes(self, op: str) -> list[str]:
        """Dtypes an op supports: its own list (within the global one, when both are given), else the global one."""
        found = self.op_spec(op)
        if found and found[0].dtypes:
            own = [d.name for d in found[0].dtypes]
            return [d for d in own if d in self.supported_dtypes] if self.supported_dtypes else own
        return self.dtype_names()

    def tolerance(self, op: str | None, dtype: str | None) -> Tolerance | None:
        found = self.op_spec(op) if op else None
        if found:
            spec, ref = found
            for item in spec.dtypes:
                if item.name == dtype and item.precision:
                    return Tolerance.of(item.precision, ref)
            if spec.precision:
                return Tolerance.of(spec.precision, ref)
        if dtype in self.supported_dtypes:
            precision, ref = self.supported_dtypes[dtype]
            if precision:
                return Tolerance.of(precision, ref)
        return None

    def unsupported(self, dtypes: tuple[str, ...], op: str | None) -> tuple[Category, str] | None:
        """Why a variant is outside what the device supports, or None."""
        return self.unsupported_op(op) or self.unsupported_dtype(dtypes, op)

    def unsupported_op(self, op: str | None) -> tuple[Category, str] | None:
        if op is not None and self.supported_ops and self.op_spec(op) is None:
            return Category.unsupported_op, f"op {op} is not in global.supported_ops"
        return None

    def unsupported_dtype(self, dtypes: tuple[str, ...], op: str | None) -> tuple[Category, str] | None:
        """A dtype outside the op's own dtype list (when the op has one), else outside the global list."""
        allowed = self.op_dtypes(op) if op is not None else self.dtype_names()
        outside = [d for d in dtypes if allowed and d not in allowed]
        if outside:
            scope = f"op {op}" if op is not None and self.op_spec(op) and self.op_spec(op)[0].dtypes else "the device"
            return Category.unsupported_dtype, f"dtype {', '.join(outside)} is not supported by {scope} (global)"
        return None
