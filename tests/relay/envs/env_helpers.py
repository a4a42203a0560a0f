"""Where the slow tests keep their per-torch environments: a per-user cache outside the clone, so
every clone and CI run on the same machine builds each environment once and then reuses it."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CPU_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")


def shared_cache_dir() -> Path:
    """``RELAY_TEST_ENV_CACHE``, else ``$XDG_CACHE_HOME/spyre-ci-relay`` (``~/.cache/spyre-ci-relay``)."""
    if os.environ.get("RELAY_TEST_ENV_CACHE"):
        return Path(os.environ["RELAY_TEST_ENV_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "spyre-ci-relay"


def cpu_wheel() -> Path:
    if not CPU_WHEEL.is_file():
        pytest.skip(f"needs the torch CPU wheel {CPU_WHEEL} (the machine's set-up provides it)")
    return CPU_WHEEL


def broken_backend(tmp_path: Path) -> Path:
    """A copy of backend/ with a compile error injected into one source file."""
    copy = tmp_path / "backend"
    shutil.copytree(REPO / "backend", copy, ignore=shutil.ignore_patterns("build", "*.so", "*.egg-info",
                                                                          "__pycache__"))
    source = copy / "csrc" / "generator.cpp"
    source.write_text("#error injected: this line stands for a torch API the backend no longer compiles against\n"
                      + source.read_text())
    return copy
