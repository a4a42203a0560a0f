"""Shared helpers for the simulator tests (``make setup`` installs the backend they import)."""
from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
import torch  # noqa: F401  (load torch, and through its autoload the device, before spyre_device)

REPO = Path(__file__).resolve().parents[3]
BACKEND = REPO / "backend"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def run_python(run_process):
    """``run_python(script, env)`` runs ``script`` in a fresh interpreter (settings are read once per
    process) and returns its stdout."""
    def run(script: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("SPYRE_")}
        full_env.update(env or {})
        proc = run_process([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                           env=full_env, timeout=timeout, cwd=REPO)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout
    return run
