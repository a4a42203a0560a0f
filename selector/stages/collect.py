"""Collect upstream tests on spyre through the testdefs device test base, read from its JSON report.

Runs ``pytest --collect-only`` in the checkout's ``test/`` directory with ``TORCH_TEST_DEVICES``
pointing at testdefs' test base and ``PYTORCH_TESTING_DEVICE_ONLY_FOR=privateuse1``, so the ids
are the real instantiated spyre variants (``test/test_x.py::TestXPRIVATEUSE1::test_y_spyre_float32``).
The ids and each file's collection error come from testdefs' ``--testdefs-report``, not from
pytest's terminal output.

Where pytest runs is the caller's choice (``PytestRunner``): a new interpreter by default; the
relay's run and the injection corpus pass one that forks an interpreter which already imported
torch and op_db.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import testdefs

TEST_BASE = Path(testdefs.__file__).resolve().parent / "test_base.py"
ADDRESS = re.compile(r"\b0x[0-9a-f]{8,}\b")


class PytestRunner(Protocol):
    """Runs ``pytest ARGS`` in ``cwd`` with the environment below; (returncode, stdout, stderr), or
    ``subprocess.TimeoutExpired``.

    The default starts a new interpreter; a caller with a warm interpreter whose environment is
    the device's (the relay's run, the injection corpus) can pass one that forks it instead."""

    def __call__(self, args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str, str]: ...


def run_new_interpreter(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def collect_env() -> dict[str, str]:
    """The collection's environment: the device test base, and rules only when given as arguments."""
    env = dict(os.environ, TORCH_TEST_DEVICES=str(TEST_BASE), PYTORCH_TESTING_DEVICE_ONLY_FOR="privateuse1",
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("RELAY_TESTDEFS", None)
    return env


@dataclass
class Collected:
    ids: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)  # file -> first error line
    returncode: int = 0


class CollectionFailed(Exception):
    pass


def collect(checkout: Path, files: list[str], rules_paths: list[Path] | None = None,
            timeout: float = 900.0, runner: PytestRunner | None = None, sessions: int = 1) -> Collected:
    """Collect the given repo-relative test files (``test/test_x.py``) on spyre.

    With ``rules_paths`` the testdefs plugin and test base leave out excluded variants (what a
    full run would run); without, every variant is listed, so the caller can attribute each
    exclusion to its rule. A file that fails to collect is reported in ``errors``, with the
    other files' tests collected all the same.

    ``sessions``: how many pytest sessions share the files (besides one per conftest subtree), side
    by side. The default is one: what a file collects can depend on the other files of its session
    (on upstream 2.0, 601 variants are collected in one composition and not in another: ``jit``
    test modules shadowed, a default dtype left changed, two files of one basename), so a split
    changes the selection; see docs/selector.md.
    """
    checkout = Path(checkout).resolve()  # pytest runs inside test/: a relative path would double up
    test_dir = checkout / "test"
    relative = [f.removeprefix("test/") for f in sorted(set(files)) if f.startswith("test/") and (checkout / f).is_file()]
    missing = sorted(set(files) - {"test/" + f for f in relative})
    result = Collected(errors={f: "file does not exist at the to-ref" for f in missing})
    if not relative:
        return result
    runner = runner or run_new_interpreter
    parts = split_files(test_dir, relative, sessions)
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:  # each session is its own process
        found = list(pool.map(lambda part: _collect_once(runner, test_dir, part, rules_paths, timeout), parts))
    if all(isinstance(part, str) for part in found):
        raise CollectionFailed(f"pytest --collect-only stopped without a report: {found[0]}")
    for files_of_part, part in zip(parts, found):
        if isinstance(part, str):
            result.errors.update({"test/" + f: f"pytest stopped before collecting: {part}" for f in files_of_part})
        else:
            _merge(result, part)
    result.ids.sort()
    return result


def split_files(test_dir: Path, relative: list[str], sessions: int) -> list[list[str]]:
    """The sessions that collect ``relative``: each subtree with its own conftest.py apart, so a
    conftest pytest cannot load stops only its own session (upstream 2.0's
    test/distributed/pipeline/sync/, which once stopped the whole release's session after it had
    imported hundreds of files); the other files in ``sessions`` sorted parts of about equal bytes
    (largest file first to the lightest part: size stands for import and collection time)."""
    groups = _by_conftest(test_dir, relative)
    shared = groups.pop("", [])
    if not shared:
        return [groups[key] for key in sorted(groups)]
    sizes = {f: (test_dir / f).stat().st_size for f in shared}
    parts: list[list[str]] = [[] for _ in range(max(1, min(sessions, len(shared))))]
    loads = [0] * len(parts)
    for file in sorted(shared, key=lambda f: (-sizes[f], f)):
        lightest = loads.index(min(loads))
        parts[lightest].append(file)
        loads[lightest] += sizes[file]
    return [sorted(part) for part in parts] + [groups[key] for key in sorted(groups)]


def _collect_once(runner: PytestRunner, test_dir: Path, relative: list[str], rules_paths: list[Path] | None,
                  timeout: float) -> Collected | str:
    """One pytest session over ``relative``; its last output line when it ended without a report."""
    with tempfile.TemporaryDirectory(prefix="selector-collect-") as tmp:
        report = Path(tmp, "report.json")
        # --opt=value: a separate value naming an existing file would count as a path for the rootdir
        argv = ["--collect-only", "-q", "--continue-on-collection-errors", f"--rootdir={test_dir}",
                f"--testdefs-report={report}", "-p", "no:cacheprovider", "-o", "addopts=",
                "-o", "python_files=test_*.py *_test.py"]
        argv += [f"--testdefs={Path(path).resolve()}" for path in rules_paths or []]
        argv += relative
        try:
            returncode, stdout, stderr = runner(argv, test_dir, collect_env(), timeout)
        except subprocess.TimeoutExpired:
            raise CollectionFailed(f"collection on spyre did not finish within {timeout:g}s") from None
        if not report.is_file():
            tail = (stdout + stderr).strip().splitlines()[-1:] or [f"exit status {returncode}"]
            return tail[0].strip()
        data = json.loads(report.read_text(encoding="utf-8"))
    found = Collected(returncode=returncode)
    # With rules the report also lists what the rules left out: the test base's variants it never
    # generated and the plugin's deselected ones. Only what pytest would run counts as collected.
    found.ids = ["test/" + test_id for test_id, decision in data["decisions"].items()
                 if decision.get("layer") == "pytest_plugin" and decision.get("mode") != "exclude"]
    for node, line in data.get("collection_error_lines", {}).items():
        # an object's address in upstream's exception text changes from run to run; the artifacts must not
        found.errors.setdefault("test/" + node.split("::", 1)[0], ADDRESS.sub("0x?", line))
    return found


def _merge(result: Collected, part: Collected) -> None:
    result.ids += part.ids
    for file, error in part.errors.items():
        result.errors.setdefault(file, error)
    result.returncode = max(result.returncode, part.returncode)


def _by_conftest(test_dir: Path, relative: list[str]) -> dict[str, list[str]]:
    """Files by the nearest directory below ``test_dir`` with a conftest.py ('' for none): the
    conftests a file's collection loads, beyond the one every file shares."""
    groups: dict[str, list[str]] = {}
    for file in relative:
        key = ""
        for parent in Path(file).parents:
            if str(parent) != "." and (test_dir / parent / "conftest.py").is_file():
                key = str(parent)
                break
        groups.setdefault(key, []).append(file)
    return groups
