"""Collect upstream tests on spyre in a subprocess, through the testdefs device test base.

Runs ``pytest --collect-only -q`` in the checkout's ``test/`` directory with
``TORCH_TEST_DEVICES`` pointing at testdefs' test base and
``PYTORCH_TESTING_DEVICE_ONLY_FOR=privateuse1``, so the ids are the real instantiated spyre
variants (``test/test_x.py::TestXPRIVATEUSE1::test_y_spyre_float32``).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import testdefs

TEST_BASE = Path(testdefs.__file__).resolve().parent / "test_base.py"
_ERROR = re.compile(r"^ERROR (?:collecting )?(\S+\.py)(?: - (.*))?$")
_SECTION = re.compile(r"^_+ ERROR collecting (\S+\.py) _+$")


class PytestRunner(Protocol):
    """Runs ``pytest ARGS`` in ``cwd`` with the environment below; (returncode, stdout, stderr).

    The default starts a new interpreter; a caller collecting many times (the injection
    corpus) can pass one that forks a warm interpreter instead."""

    def __call__(self, args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str, str]: ...


def run_new_interpreter(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return done.returncode, done.stdout, done.stderr


@dataclass
class Collected:
    ids: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)  # file -> first error line
    returncode: int = 0


class CollectionFailed(Exception):
    pass


def collect(checkout: Path, files: list[str], rules_paths: list[Path] | None = None,
            timeout: float = 900.0, runner: PytestRunner | None = None) -> Collected:
    """Collect the given repo-relative test files (``test/test_x.py``) on spyre.

    With ``rules_paths`` the testdefs plugin and test base leave out excluded variants (what a
    full run would run); without, every variant is listed, so the caller can attribute each
    exclusion to its rule.
    """
    checkout = Path(checkout).resolve()  # pytest runs inside test/: a relative path would double up
    test_dir = checkout / "test"
    relative = [f.removeprefix("test/") for f in sorted(set(files)) if f.startswith("test/") and (checkout / f).is_file()]
    missing = sorted(set(files) - {"test/" + f for f in relative})
    result = Collected(errors={f: "file does not exist at the to-ref" for f in missing})
    if not relative:
        return result
    env = dict(os.environ, TORCH_TEST_DEVICES=str(TEST_BASE), PYTORCH_TESTING_DEVICE_ONLY_FOR="privateuse1",
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("RELAY_TESTDEFS", None)  # rules apply only when given here
    # one broken upstream file must not hide every other file's tests
    command = ["--collect-only", "-q", "--continue-on-collection-errors",
               "--rootdir", str(test_dir),
               "-p", "no:cacheprovider", "-o", "addopts=", "-o", "python_files=test_*.py *_test.py"]
    for path in rules_paths or []:
        command += ["--testdefs", str(Path(path).resolve())]
    command += relative
    try:
        returncode, stdout, stderr = (runner or run_new_interpreter)(command, test_dir, env, timeout)
    except subprocess.TimeoutExpired:
        raise CollectionFailed(f"collection on spyre did not finish within {timeout:g}s") from None
    result.returncode = returncode
    section: str | None = None  # the file whose collection error traceback is being read
    for line in stdout.splitlines():
        header = _SECTION.match(line.strip())
        if header:
            section = "test/" + header.group(1).removeprefix("test/")
            continue
        if section and line.startswith("E ") and section not in result.errors:
            result.errors[section] = line[1:].strip()  # the exception line, e.g. ModuleNotFoundError: ...
            continue
        line = line.strip()
        if "::" in line and not line.startswith(("ERROR", "FAILED")):
            result.ids.append("test/" + line)
            continue
        found = _ERROR.match(line)
        if found:
            result.errors.setdefault("test/" + found.group(1).removeprefix("test/"), found.group(2) or "collection error")
    if returncode not in (0, 1, 2, 5) or (returncode == 4):
        tail = (stderr or stdout).strip().splitlines()[-1:] or ["no output"]
        raise CollectionFailed(f"pytest --collect-only exited {returncode}: {tail[0]}")
    if returncode == 2 and not result.errors and not result.ids:
        tail = (stdout + stderr).strip().splitlines()[-1:] or ["no output"]
        raise CollectionFailed(f"pytest --collect-only failed: {tail[0]}")
    result.ids.sort()
    return result
