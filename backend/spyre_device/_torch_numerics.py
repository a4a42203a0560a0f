"""Numeric choices PyTorch makes per device type in Python, made for spyre as for the CPU.

Ops reach spyre's host fallback and run the CPU's kernels, so where PyTorch's own Python code
picks an accumulation policy by ``device.type`` it must pick the CPU's for spyre too; for an
unknown device it falls back to accumulating in the input dtype, which silently loses precision
(``F.linear_cross_entropy`` in bf16 differed from the CPU by up to 0.06).
"""

from __future__ import annotations

import torch

DEVICE_TYPE = "spyre"


def _linear_cross_entropy() -> None:
    try:
        from torch.nn.modules import linear_cross_entropy_options as options
    except ImportError:  # a torch without chunked linear_cross_entropy
        return
    defaults = getattr(options, "_AUTO_DEFAULTS", None)
    cls = getattr(options, "LinearCrossEntropyOptions", None)
    if not isinstance(defaults, dict) or cls is None or not hasattr(cls, "_resolve_auto_acc_dtype"):
        return
    for dtype in (torch.bfloat16, torch.float16):
        if ("cpu", dtype) in defaults:
            defaults.setdefault((DEVICE_TYPE, dtype), defaults[("cpu", dtype)])
    resolve = cls._resolve_auto_acc_dtype
    if getattr(resolve, "_spyre", False):
        return

    def resolve_as_cpu(dtype, device):
        if device is not None and device.type == DEVICE_TYPE:
            device = torch.device("cpu")
        return resolve(dtype, device)

    resolve_as_cpu._spyre = True
    cls._resolve_auto_acc_dtype = staticmethod(resolve_as_cpu)


def install() -> None:
    _linear_cross_entropy()
