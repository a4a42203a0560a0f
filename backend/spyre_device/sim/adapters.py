"""Device-specific rewrites: an op the card lacks, replaced by an equivalent form it runs natively.

Every adapter is declared once, in ``ADAPTERS`` below, with the condition under which it is exact,
the rewrite, and example inputs. The tests check each adapter against the original op on the CPU
using those examples; ``relay-cli backend adapters`` lists them.

A rewrite calls ordinary torch ops on the tensors it is given, so on the device the ops it uses
are dispatched, costed and counted like any other.
"""
from __future__ import annotations

import dataclasses
import numbers
from typing import Any, Callable

import torch

Args = tuple
Kwargs = dict


@dataclasses.dataclass(frozen=True)
class Adapter:
    name: str
    op: str  # "name.overload" as in the coverage table
    description: str
    applies: Callable[[Args, Kwargs], bool]
    rewrite: Callable[..., Any]
    examples: Callable[[], list[tuple[Args, Kwargs]]]  # CPU inputs for the equality tests

    def describe(self) -> dict[str, str]:
        return {"name": self.name, "op": f"aten::{self.op}", "description": self.description}


MAX_POW_EXPONENT = 4


def _small_integer_exponent(args: Args, kwargs: Kwargs) -> bool:
    exponent = args[1] if len(args) > 1 else kwargs.get("exponent")
    if isinstance(exponent, bool) or not isinstance(exponent, numbers.Real):
        return False
    if exponent != int(exponent) or abs(exponent) > MAX_POW_EXPONENT:
        return False
    # Integer tensors cannot take negative powers (torch raises); leave those to the original op.
    return exponent >= 0 or args[0].is_floating_point()


def _pow_by_multiplication(x: torch.Tensor, exponent: float) -> torch.Tensor:
    n = int(exponent)
    if n == 0:
        return torch.ones_like(x)
    if n == 1:
        return x.clone()  # a fresh tensor, never an alias of the input
    result = x
    for _ in range(abs(n) - 1):
        result = result * x
    return torch.reciprocal(result) if n < 0 else result


def _pow_examples() -> list[tuple[Args, Kwargs]]:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(17, 65, generator=gen) * 3
    cases: list[tuple[Args, Kwargs]] = [((x, float(n)), {}) for n in range(-MAX_POW_EXPONENT, MAX_POW_EXPONENT + 1)]
    cases.append(((x.half(), 3.0), {}))
    cases.append(((torch.arange(-6, 7, dtype=torch.int32), 3), {}))
    cases.append(((torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan")]), 3.0), {}))
    return cases


def _elementwise_examples() -> list[tuple[Args, Kwargs]]:
    gen = torch.Generator().manual_seed(1)
    x = torch.linspace(-8, 8, 257)
    return [((x,), {}), ((torch.randn(4, 130, generator=gen) * 5,), {}), ((x.half(),), {})]


def _hardsigmoid(x: torch.Tensor) -> torch.Tensor:
    return torch.clamp(x + 3.0, 0.0, 6.0) / 6.0


def _hardswish(x: torch.Tensor) -> torch.Tensor:
    return x * torch.clamp(x + 3.0, 0.0, 6.0) / 6.0


def _by_clamp(op: str, formula: str, rewrite: Callable[[torch.Tensor], torch.Tensor]) -> Adapter:
    """A float activation written as a clamp: exact for floating inputs, tried on the elementwise examples."""
    return Adapter(name=f"{op}_by_clamp", op=f"{op}.default", description=f"{op}(x) -> {formula}",
                   applies=lambda args, kwargs: args[0].is_floating_point(), rewrite=rewrite,
                   examples=_elementwise_examples)


ADAPTERS: tuple[Adapter, ...] = (
    Adapter(
        name="pow_small_integer_exponent",
        op="pow.Tensor_Scalar",
        description=f"pow(x, n) for integer-valued n in [-{MAX_POW_EXPONENT}, {MAX_POW_EXPONENT}] "
        "-> repeated multiplication (reciprocal for n < 0, ones for n = 0), as hf-adapters does for x**3",
        applies=_small_integer_exponent,
        rewrite=lambda x, exponent: _pow_by_multiplication(x, exponent),
        examples=_pow_examples,
    ),
    _by_clamp("hardswish", "x * clamp(x + 3, 0, 6) / 6", _hardswish),
    _by_clamp("hardsigmoid", "clamp(x + 3, 0, 6) / 6", _hardsigmoid),
)


def _index(adapters: tuple[Adapter, ...]) -> dict[str, Adapter]:
    by_op: dict[str, Adapter] = {}
    for adapter in adapters:
        if adapter.op in by_op:
            raise ValueError(f"two adapters for aten::{adapter.op}: {by_op[adapter.op].name}, {adapter.name}")
        by_op[adapter.op] = adapter
    return by_op


ADAPTERS_BY_OP = _index(ADAPTERS)


def adapter_for(qualified_name: str) -> Adapter | None:
    """The adapter declared for ``aten::name.overload`` or its functional form, if any."""
    from .coverage import lookup_names

    for name in lookup_names(qualified_name):
        if "." in name and name in ADAPTERS_BY_OP:
            return ADAPTERS_BY_OP[name]
    return None


def with_out(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """Run a functional rewrite for an ``out=`` overload: compute, then fill ``out``."""

    def run(*args, out=None, **kwargs):
        result = fn(*args, **kwargs)
        if out is None:
            return result
        if out.shape != result.shape:
            out.resize_(result.shape)
        out.copy_(result)
        return out

    return run


def original_op(adapter: Adapter) -> torch._ops.OpOverload:
    packet, _, overload = adapter.op.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")
