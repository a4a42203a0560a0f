"""Shared helpers for the testdefs tests (imported by name; tests/ directories are not packages)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from relay.cli import main
from tests.tiers import starts_processes

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
UPSTREAM = FIXTURES / "testdefs" / "upstream"
DEMO_RULES = FIXTURES / "testdefs" / "rules_demo_reuse.yaml"
DEMO_FILE = "test/test_demo_reuse.py"
TEST_BASE = REPO / "testdefs" / "test_base.py"
TORCH_SPYRE_CONFIG = FIXTURES / "torch-spyre" / "upstream_tests" / "test_view_ops_config.yaml"
TORCH_SPYRE_CONFIGS = FIXTURES / "torch-spyre"
SUBPROCESS_TIMEOUT = 600  # the CI machine is loaded; a slow run must not look like a failure


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def device_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    # CI: under it, torch's run_tests behaves as in PyTorch's own CI (XML reports through xmlrunner,
    # which a developer's machine lacks); these runs stand for a developer's local run.
    for name in ("PYTEST_ADDOPTS", "RELAY_TESTDEFS", "RELAY_TESTDEFS_REPORT", "TORCH_TEST_DEVICES",
                 "RELAY_TESTDEFS_TORCH_VERSION", "CI"):
        env.pop(name, None)
    env["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = "privateuse1"
    env["PYTORCH_PRINT_REPRO_ON_FAILURE"] = "0"
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def run_command(run_process):
    """``run_command(command, env, cwd=UPSTREAM)``: a program run to its end, its output captured."""
    def run(command: list[str], env: dict[str, str], cwd: Path = UPSTREAM) -> subprocess.CompletedProcess:
        return run_process(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)
    return run


@pytest.fixture(scope="session")
@starts_processes
def collecting_main():
    """relay-cli's ``main`` in this process, for the verbs that collect or run the upstream tests in pytest
    processes (``testdefs stale``, ``testdefs bootstrap``)."""
    return main


def pytest_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *args]


def read_report(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))
