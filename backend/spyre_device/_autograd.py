"""Backward of a spyre graph runs on the thread that asked for it.

PyTorch's autograd engine gives every accelerator device a worker thread and hands each backward
to it: the calling thread wakes the worker, sleeps until the graph is done, and is woken again.
Spyre's work is synchronous host work, so the worker buys nothing, and the two wake-ups cost more
than a small backward itself (8x8 ``(x * 2).sum().backward()``: 83 us against 57 us on the calling
thread, load ~20; under heavy load a wake-up waits for a free core). PyTorch's documented switch,
``torch.autograd.set_multithreading_enabled(False)``, runs the graph on the calling thread; it is
thread-local, so it is set here only for the duration of a backward whose roots are on spyre, and
``torch.autograd.is_multithreading_enabled()`` reads as usual everywhere else (inside such a
backward, e.g. in a hook, it reads False).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.autograd.variable import Variable

DEVICE_TYPE = "spyre"


class CallingThreadEngine(torch._C._ImperativeEngine):
    """torch's engine, with a backward from spyre roots kept on the calling thread."""

    def __init__(self) -> None:
        super().__init__()
        # device -> whether it is spyre's: `device.type` builds the name of a PrivateUse1 device
        # each time, 3 us of a 50 us backward (a lookup by the device object: 0.7 us)
        self._on_spyre: dict[torch.device, bool] = {}

    def run_backward(self, roots, *args: Any, **kwargs: Any):
        # Every backward of the process passes here: a CPU root costs one `is_cpu` test.
        if torch._C._is_multithreading_enabled():
            for root in roots:
                if isinstance(root, torch.Tensor) and not root.is_cpu and self._is_spyre(root.device):
                    return self._on_calling_thread(roots, args, kwargs)
        return super().run_backward(roots, *args, **kwargs)

    def _is_spyre(self, device: torch.device) -> bool:
        known = self._on_spyre.get(device)
        if known is None:
            known = self._on_spyre[device] = device.type == DEVICE_TYPE
        return known

    def _on_calling_thread(self, roots, args: tuple, kwargs: dict):
        torch._C._set_multithreading_enabled(False)
        try:
            return super().run_backward(roots, *args, **kwargs)
        finally:
            torch._C._set_multithreading_enabled(True)


def install() -> None:
    """Make it torch's engine (``Variable._execution_engine``, the one ``backward`` and ``grad`` call)."""
    if not isinstance(Variable._execution_engine, CallingThreadEngine):
        Variable._execution_engine = CallingThreadEngine()
