"""relay-cli's dispatcher: help, usage errors, and user errors as one line with exit 2."""
import subprocess
import sys

import pytest

from tests.tiers import starts_processes


def run_relay_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relay", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture
@starts_processes
def relay_cli():
    """relay-cli in a subprocess, as a user runs it."""
    return run_relay_cli


def test_no_command_prints_help_and_exits_2(relay_cli) -> None:
    done = relay_cli()
    assert done.returncode == 2
    assert "usage: relay-cli" in done.stderr


def test_unknown_verb_is_a_usage_error(relay_cli) -> None:
    done = relay_cli("frobnicate")
    assert done.returncode == 2
    assert "invalid choice" in done.stderr

