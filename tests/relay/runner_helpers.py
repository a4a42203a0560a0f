"""Small upstream-like checkouts for runner tests: a test/ directory of plain pytest files.

Plain files (no torch import) keep these tests fast; the device-generic path is covered by
the pipeline test on the demo upstream.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

OUTCOMES_FILE = '''
import os
import pytest

def test_passes():
    assert sum([1, 1]) == 2

def test_fails():
    raise NotImplementedError("aten::frobnicate is not implemented for spyre")

def test_errors_in_setup(broken_fixture):
    pass

@pytest.fixture
def broken_fixture():
    raise RuntimeError("fixture broke")

@pytest.mark.skip(reason="not for this device")
def test_skipped():
    pass

@pytest.mark.xfail(reason="known gap", strict=False)
def test_xfails():
    assert False

@pytest.mark.xfail(reason="was broken", strict=False)
def test_xpasses():
    pass

@pytest.mark.xfail(reason="was broken", strict=True)
def test_strict_xpasses():
    pass
'''

CRASH_FILE = '''
import os

def test_before_crash():
    pass

def test_aborts():
    os.abort()

def test_after_crash():
    pass
'''

HANG_FILE = '''
import time

def test_hangs():
    time.sleep(600)

def test_after_hang():
    pass
'''

# A hang no signal can interrupt: SIGALRM is blocked, so only the watchdog ends it.
UNINTERRUPTIBLE_HANG_FILE = '''
import signal
import time

def test_blocks_signals_and_hangs():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(600)

def test_after_blocked_hang():
    pass
'''

# Fails on its first run only: the counter file lives beside the test file.
FLAKY_FILE = '''
from pathlib import Path

COUNTER = Path(__file__).with_name("flaky-count")

def test_flaky():
    runs = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(runs + 1))
    assert runs >= 1, "first run fails"

def test_always_fails():
    assert 0.1 + 0.2 == 0.3, "Tensor-likes are not close!"
'''

IMPORT_ERROR_FILE = '''
import no_such_module_anywhere

def test_never_runs():
    pass
'''


def make_checkout(root: Path, files: dict[str, str]) -> Path:
    """A checkout at ``root`` with ``test/<name>`` for each entry; returns ``root``."""
    (root / "test").mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        (root / "test" / name).write_text(textwrap.dedent(body))
    return root


def ids(file: str, *names: str) -> list[str]:
    return [f"test/{file}::{name}" for name in names]
