"""Shared helpers for the spyre device tests (imported by test_device_*.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from spyre_device import _C, hooks


@pytest.fixture(scope="session")
def run_python(run_process):
    """``run_python(code, **env)`` runs ``code`` in a fresh interpreter (device settings are read at start-up)."""
    def run(code: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("SPYRE_")}
        full_env.update(env)
        return run_process([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                           timeout=timeout, env=full_env)
    return run


@pytest.fixture
def bare_device():
    """The device without the simulator's op hooks and dtype policy, restored afterwards,
    so these tests see the device's own semantics whatever the simulator decides."""
    saved_hooks = hooks.registered_op_hooks()
    saved_dtypes = _C._unsupported_dtypes()
    for hook in saved_hooks:
        hooks.unregister_op_hooks(hook)
    _C._set_unsupported_dtypes([])
    try:
        yield torch.device("spyre", 0)
    finally:
        for hook in hooks.registered_op_hooks():
            hooks.unregister_op_hooks(hook)
        for hook in saved_hooks:
            hooks.register_op_hooks(hook)
        _C._set_unsupported_dtypes(saved_dtypes)
