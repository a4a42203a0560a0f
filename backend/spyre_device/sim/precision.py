"""Numeric policies of the card: fp16-class matmul accumulation and int64 down-casting.

Reduced precision (on by default, as Spyre computes in an fp16-class format): an fp32 matmul is
computed from operands rounded to ``MANTISSA_BITS`` mantissa bits, accumulating along K one stick
(64 values) at a time and rounding the running sum after every stick. The exponent range stays
fp32's, so nothing overflows that would not overflow in fp32.

Error bound (unit roundoff u = 2**-(MANTISSA_BITS + 1)): for every output element
    |C_reduced - C_exact| <= (ceil(K / 64) + 2) * u * (|A| @ |B|)
which ``error_bound`` returns and the tests check.
"""
from __future__ import annotations

import math
import threading
import warnings

import torch

MANTISSA_BITS = 10  # IEEE fp16 has 10; Spyre's own fp16 format is not public (see docs/simulator.md)
CHUNK = 64  # values accumulated exactly before the running sum is rounded: one fp16 stick
UNIT_ROUNDOFF = 2.0 ** -(MANTISSA_BITS + 1)


def round_mantissa(x: torch.Tensor, bits: int = MANTISSA_BITS) -> torch.Tensor:
    """Round fp32 values to ``bits`` mantissa bits (nearest, ties to even); NaN and inf unchanged."""
    drop = 23 - bits
    raw = x.contiguous().view(torch.int32)
    lsb = (raw >> drop) & 1
    rounded = ((raw + ((1 << (drop - 1)) - 1) + lsb) & ~((1 << drop) - 1)).view(torch.float32)
    return torch.where(torch.isfinite(x), rounded, x)


# Veltkamp splitting: c - (c - x) with c = x * (2**(23 - bits) + 1) rounds x to ``bits`` mantissa
# bits using three float ops (fast), valid for finite |x| well below fp32's max.
_SPLITTER = float(2 ** (23 - MANTISSA_BITS) + 1)
_FAST_LIMIT = 2.0**45  # operands below this keep every partial sum far from overflowing the splitter


def _round_fast(x: torch.Tensor) -> torch.Tensor:
    # c + (x - c) is bit for bit c - (c - x): round-to-nearest-even is symmetric, fl(x - c) == -fl(c - x).
    c = x * _SPLITTER
    return c.add_(x - c)


def _fast_path_ok(*operands: torch.Tensor) -> bool:
    return all(t.numel() == 0 or bool(t.abs().amax() < _FAST_LIMIT) for t in operands)  # NaN compares False


def _native_matmul():
    """The extension's fused kernel (csrc/reduced_matmul.cpp), or None without a built extension."""
    try:
        from spyre_device import _C
    except ImportError:
        return None
    return getattr(_C, "_reduced_matmul", None)


def fp16_class_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` (2-D or batched 3-D, fp32) with rounded operands and per-stick accumulation.

    The fast path is the extension's kernel (csrc/reduced_matmul.cpp: per stick one rank-64
    ``addmm_`` and one fused rounding pass, bit for bit the reference model in the tests); this
    module keeps the exact bitwise path for infinities, NaN and huge values, and a plain-torch
    path for other dtypes or a process without the extension."""
    native = _native_matmul()
    if native is not None and a.dtype == b.dtype == torch.float32:
        result = native(a, b)
        if result is not None:
            return result
    if not _fast_path_ok(a, b):  # infinities, NaN or huge values: exact bitwise rounding
        return _chunked(round_mantissa(a), round_mantissa(b), round_mantissa)
    return _chunked(_round_fast(a), _round_fast(b), _round_fast)


def _chunked(a: torch.Tensor, b: torch.Tensor, rnd) -> torch.Tensor:
    acc = None
    for start in range(0, max(a.shape[-1], 1), CHUNK):
        part = torch.matmul(a[..., start : start + CHUNK], b[..., start : start + CHUNK, :])
        acc = rnd(part if acc is None else acc + part)
    return acc


def error_bound(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Elementwise bound on |fp16_class_matmul(a, b) - a @ b| (see module docstring)."""
    chunks = math.ceil(a.shape[-1] / CHUNK)
    return (chunks + 2) * UNIT_ROUNDOFF * torch.matmul(a.abs(), b.abs())


def _mm(a, b):
    return fp16_class_matmul(a, b)


def _addmm(bias, a, b, *, beta=1, alpha=1):
    result = beta * bias + alpha * fp16_class_matmul(a, b)
    return _round_fast(result) if _fast_path_ok(result) else round_mantissa(result)


# Matmul-class overloads computed at fp16-class precision when reduced precision is on.
REDUCED_PRECISION_KERNELS = {
    "mm.default": _mm,
    "bmm.default": _mm,
    "addmm.default": _addmm,
    "baddbmm.default": _addmm,
}


def wants_reduced_precision(args: tuple) -> bool:
    """Only fp32 operands change: fp16/bf16 already are fp16-class, integers are exact."""
    return any(isinstance(t, torch.Tensor) and t.dtype == torch.float32 for t in args)


class Int64Policy:
    """int64 on the card: ``downcast`` (values wrap to int32, one warning per process) or ``native``."""

    MODES = ("downcast", "native")

    def __init__(self, mode: str = "downcast") -> None:
        if mode not in self.MODES:
            raise ValueError(f"SPYRE_INT64 must be one of {', '.join(self.MODES)}, not {mode!r}")
        self.mode = mode
        self._warned = False
        self._lock = threading.Lock()

    @property
    def downcast(self) -> bool:
        return self.mode == "downcast"

    def wrap_(self, t: torch.Tensor) -> bool:
        """Wrap an int64 tensor's values into int32 range in place (two's complement), as the card
        stores them; True when a value changed."""
        if t.dtype != torch.int64 or not self.downcast or t.numel() == 0:
            return False
        self.warn_once()
        narrowed = t.to(torch.int32).to(torch.int64)
        if torch.equal(narrowed, t):
            return False
        try:
            t.copy_(narrowed)
        except RuntimeError:  # an overlapping view (e.g. expanded): its base holds the values
            return False
        return True

    @property
    def warned(self) -> bool:
        return self._warned

    def warn_once(self) -> None:
        with self._lock:
            if self._warned:
                return
            self._warned = True
        warnings.warn(
            "spyre: int64 tensors are stored as int32 on the device; values outside the int32 range "
            "wrap (set SPYRE_INT64=native to keep 64-bit values). This warning is shown once per process.",
            UserWarning,
            stacklevel=3,
        )
