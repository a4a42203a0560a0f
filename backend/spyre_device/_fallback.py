"""The host fallback: every aten op without a spyre kernel runs here.

Spyre tensors become zero-copy CPU aliases of the same host memory, the op runs
on the CPU, and outputs are mapped back: an output that *is* an input alias
(in-place / out=) becomes that original spyre tensor; an output sharing a spyre
input's memory (a view) becomes a spyre view of that storage; anything else is
copied into a new spyre tensor on the inputs' device.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import torch

from . import _C, hooks

DEVICE_TYPE = "spyre"
_HOST = torch.device("cpu")
# Ops that, as on CUDA, accept CPU index tensors next to device tensors.
_CPU_TENSORS_ALLOWED = frozenset(
    {"aten::index", "aten::index_put", "aten::index_put_", "aten::_index_put_impl_",
     "aten::_unsafe_index", "aten::_unsafe_index_put"}
)

# Ops whose composite kernel misbehaves on a non-CPU/CUDA backend, so they
# run on the host as one op (the CPU kernel, reached like any fallback op):
# * mse_loss, smooth_l1_loss and huber_loss call their out= variant with a
#   wrongly shaped result (a spurious resize warning); convolution and its
#   backward route other backends to convolution_overrideable, which nobody
#   implements.
# * native_layer_norm, native_group_norm and addr would run generic math
#   kernels that compute in bf16/fp16 where the CPU accumulates in fp32 (and
#   hide the op itself from the simulator's coverage table and cost model).
# * cummax, cummin, logcumsumexp and cholesky_solve would decompose into
#   CPU-only helpers (_cummax_helper, ...), hiding the op from the table.
_HOST_FUNCTIONAL_OPS = (
    "mse_loss", "smooth_l1_loss", "huber_loss", "convolution", "convolution_backward",
    "native_layer_norm", "native_group_norm", "addr",
    "cummax", "cummin", "logcumsumexp", "cholesky_solve",
)

_libraries: list[torch.library.Library] = []


@functools.lru_cache(maxsize=None)
def _has_generator_kwarg(op: torch._ops.OpOverload) -> bool:
    return any(a.name == "generator" and a.kwarg_only for a in op._schema.arguments)


def _is_tensor_type(t: Any) -> bool:
    return isinstance(t, torch.TensorType) or (
        isinstance(t, torch.OptionalType) and isinstance(t.getElementType(), torch.TensorType)
    )


@functools.lru_cache(maxsize=None)
def _argument_slots(op: torch._ops.OpOverload, kind: str) -> tuple[tuple[int, str, bool], ...]:
    """(position, name, kwarg_only) of ``op``'s arguments of one kind: "written"
    (self of in-place ops, out=) or "tensor" (Tensor-typed)."""
    def wanted(a: Any) -> bool:
        if kind == "written":
            return a.alias_info is not None and a.alias_info.is_write
        return _is_tensor_type(a.type)

    return tuple((i, a.name, a.kwarg_only) for i, a in enumerate(op._schema.arguments) if wanted(a))


class _OpInfo:
    """What the fallback needs to know about one ``OpOverload``, computed on its first call."""

    __slots__ = ("written", "tensor_slots", "has_generator", "cpu_tensors_allowed")

    def __init__(self, op: torch._ops.OpOverload) -> None:
        self.written = _argument_slots(op, "written")
        self.tensor_slots = _argument_slots(op, "tensor")
        self.has_generator = _has_generator_kwarg(op)
        self.cpu_tensors_allowed = op._schema.name in _CPU_TENSORS_ALLOWED


_op_infos: dict[Any, _OpInfo] = {}


def _op_info(op: torch._ops.OpOverload) -> _OpInfo:
    info = _op_infos.get(op)
    if info is None:
        info = _op_infos[op] = _OpInfo(op)
    return info


def _slot_value(args: tuple, kwargs: dict, slot: tuple[int, str, bool]) -> Any:
    i, name, kwarg_only = slot
    return args[i] if not kwarg_only and i < len(args) else kwargs.get(name)


def _written_tensors(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    for slot in _op_info(op).written:
        value = _slot_value(args, kwargs, slot)
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            _collect_tensors(value, found)
    return found


def _wrapped_number(value: bool | int | float | complex) -> torch.Tensor:
    if isinstance(value, bool):
        return _C._wrapped_bool(value)
    if isinstance(value, int):
        return _C._wrapped_int(value)
    if isinstance(value, float):
        return _C._wrapped_float(value)
    return _C._wrapped_complex(value)


def _rewrap_numbers(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Wrapped-number tensors reach a Python fallback as Python scalars: wrap them again."""
    fixed_args = None
    for slot in _op_info(op).tensor_slots:
        value = _slot_value(args, kwargs, slot)
        if not isinstance(value, (bool, int, float, complex)):
            continue
        i, name, kwarg_only = slot
        if not kwarg_only and i < len(args):
            fixed_args = fixed_args or list(args)
            fixed_args[i] = _wrapped_number(value)
        else:
            kwargs = {**kwargs, name: _wrapped_number(value)}
    return (tuple(fixed_args) if fixed_args is not None else args), kwargs


def _is_spyre(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and not x.is_cpu and x.device.type == DEVICE_TYPE


def _collect_tensors(values: Any, found: list[torch.Tensor]) -> None:
    """Tensors among ``values``, looking one list/tuple level deep (TensorList args)."""
    for v in values:
        if isinstance(v, torch.Tensor):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            _collect_tensors(v, found)


def _target_device(op: torch._ops.OpOverload, tensors: list[torch.Tensor], args: tuple,
                   kwargs: dict) -> torch.device:
    """The spyre device the op runs on; raises PyTorch's error for mixed devices."""
    spyre_device = None
    host_tensor = None
    for x in tensors:
        if x.is_cpu:
            if x.dim() > 0 and host_tensor is None:
                host_tensor = x
            continue
        device = x.device
        if device.type != DEVICE_TYPE:
            host_tensor = host_tensor if host_tensor is not None else x
        elif spyre_device is None:
            spyre_device = device
        elif device != spyre_device:
            _mixed(spyre_device, device)
    if spyre_device is None:
        for x in (*args, *kwargs.values()):
            if isinstance(x, torch.device) and x.type == DEVICE_TYPE:
                spyre_device = torch.device(DEVICE_TYPE, x.index if x.index is not None else _C._current_device())
                break
        else:
            spyre_device = torch.device(DEVICE_TYPE, _C._current_device())
    if host_tensor is not None and not _op_info(op).cpu_tensors_allowed:
        _mixed(spyre_device, host_tensor.device)
    return spyre_device


def _mixed(a: torch.device, b: torch.device) -> None:
    raise RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!"
    )


class _HostCall:
    """One op's host-side arguments and the bookkeeping to map results back."""

    def __init__(self, spyre_tensors: list[torch.Tensor]) -> None:
        self.spyre = spyre_tensors
        self.aliases = _C._host_aliases(spyre_tensors) if spyre_tensors else []
        self.alias_of = {id(t): a for t, a in zip(spyre_tensors, self.aliases)}
        self.original_of = {id(a): t for t, a in zip(spyre_tensors, self.aliases)}
        self._storage_owner: dict[int, torch.Tensor] | None = None

    def to_host(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return self.alias_of.get(id(value), value)
        if value is None or isinstance(value, (int, float, bool)):
            return value
        if isinstance(value, (list, tuple)):
            return type(value)(self.to_host(v) for v in value)
        if isinstance(value, torch.device) and value.type == DEVICE_TYPE:
            return _HOST
        if isinstance(value, torch.Generator) and value.device.type == DEVICE_TYPE:
            return _C._host_generator(value)
        return value

    def storage_owner(self) -> dict[int, torch.Tensor]:
        """Host storage pointer -> the spyre tensor whose memory it is."""
        if self._storage_owner is None:
            self._storage_owner = {}
            for t, a in zip(self.spyre, self.aliases):
                ptr = a.untyped_storage().data_ptr()
                if ptr:
                    self._storage_owner.setdefault(ptr, t)
        return self._storage_owner

    def sync_written(self, written: list[torch.Tensor], device: torch.device) -> None:
        """Mirror a resize an out= kernel applied to a host alias onto its spyre tensor."""
        for original in written:
            alias = self.alias_of.get(id(original))
            if alias is None:
                continue
            # The common case, an out= tensor of the right size: same data, same geometry. Checked
            # first because building the storage objects below costs more than the op itself.
            if alias.data_ptr() == original.data_ptr() and alias.shape == original.shape and (
                alias.stride() == original.stride()
            ):
                continue
            if alias.untyped_storage().data_ptr() != original.untyped_storage().data_ptr():
                original.set_(_C._adopt_host_tensor(alias, device.index))
            elif alias.shape != original.shape or alias.stride() != original.stride() or (
                alias.storage_offset() != original.storage_offset()
            ):
                original.set_(original.untyped_storage(), alias.storage_offset(), alias.shape, alias.stride())

    def to_device(self, out: Any, device: torch.device) -> Any:
        if isinstance(out, torch.Tensor):
            if not out.is_cpu:
                return out
            original = self.original_of.get(id(out))
            if original is not None:
                return original
            if out._is_zerotensor():  # _efficientzerotensor (e.g. sgn's gradient): no storage to adopt
                return torch.zeros(out.shape, dtype=out.dtype, device=device)
            ptr = out.untyped_storage().data_ptr()
            base = self.storage_owner().get(ptr) if ptr and self.spyre else None
            if base is not None:
                return _C._device_view(base, out)
            return _C._adopt_host_tensor(out, device.index)
        if isinstance(out, (list, tuple)):
            return type(out)(self.to_device(o, device) for o in out)
        return out


def _run(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    active = hooks.active_hooks()
    replacement = None
    if active:
        with hooks.inside_hooks():
            for hook in active:
                candidate = hook.before_op(op, args, kwargs)
                if replacement is None and candidate is not None:
                    replacement = candidate

    tensors: list[torch.Tensor] = []
    _collect_tensors(args, tensors)
    _collect_tensors(kwargs.values(), tensors)
    device = _target_device(op, tensors, args, kwargs)
    call = _HostCall([t for t in tensors if not t.is_cpu])
    to_host = call.to_host
    host_args = tuple([to_host(a) for a in args])
    host_args, host_kwargs = _rewrap_numbers(op, host_args, {k: to_host(v) for k, v in kwargs.items()} if kwargs else kwargs)
    info = _op_info(op)
    if info.has_generator and host_kwargs.get("generator") is None:
        host_kwargs = {**host_kwargs, "generator": _C._host_generator(_C._default_generator(device.index))}

    started = time.perf_counter()
    host_out = (replacement or op)(*host_args, **host_kwargs)
    host_seconds = time.perf_counter() - started

    if info.written:
        call.sync_written(_written_tensors(op, args, kwargs), device)
    outputs = call.to_device(host_out, device)

    if active:
        with hooks.inside_hooks():
            for hook in active:
                hook.after_op(op, args, kwargs, outputs, host_seconds)
    return outputs


# The C++ fallback (csrc/host_fallback.cpp) owns the PrivateUse1 key and runs most ops without
# entering Python; what needs Python's judgement (mixed devices, CPU index tensors, factories, hooks
# other than the simulator, ops the simulator must decide per call) it redispatches to this key.
_PYTHON_KEY = "PrivateUse2"


def install() -> None:
    """Register the fallbacks (once per process): C++ for PrivateUse1, this module's behind it."""
    if _libraries:
        return
    fallback = torch.library.Library("_", "IMPL")
    fallback.fallback(_run, _PYTHON_KEY)
    direct = torch.library.Library("aten", "IMPL")
    for name in _HOST_FUNCTIONAL_OPS:
        op = getattr(torch.ops.aten, name).default
        direct.impl(op, functools.partial(_run, op), _PYTHON_KEY)
    _libraries.extend([fallback, direct])
    _C._install_host_fallback(list(_HOST_FUNCTIONAL_OPS))
    hooks.sync_native_mode()
