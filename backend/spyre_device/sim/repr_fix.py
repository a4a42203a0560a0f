"""Printing spyre tensors while float64 is denied.

``torch._tensor_str`` formats floating tensors by converting them to float64 on their own
device, which the card refuses. Like torch-spyre's spyre-aware repr, format spyre tensors
from a host copy; the printed device suffix still says spyre.
"""
from __future__ import annotations

import torch._tensor_str as tensor_str

_original = tensor_str.tensor_totype


def _tensor_totype(t):
    if t.device.type == "spyre":
        t = t.cpu()
    return _original(t)


def install_repr_fix() -> None:
    tensor_str.tensor_totype = _tensor_totype
