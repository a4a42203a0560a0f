"""Collect upstream tests on spyre through the testdefs device test base, read from its JSON report.

Runs ``pytest --collect-only`` in the checkout's ``test/`` directory with ``TORCH_TEST_DEVICES``
pointing at testdefs' test base and ``PYTORCH_TESTING_DEVICE_ONLY_FOR=privateuse1``, so the ids
are the real instantiated spyre variants (``test/test_x.py::TestXPRIVATEUSE1::test_y_spyre_float32``).
The ids and each file's collection error come from testdefs' ``--testdefs-report``, not from
pytest's terminal output.

Each file is collected in its own pytest session and process. By default those are forks of one
interpreter that imported torch once (``collect_fork``), two at a time; the relay's run and the
injection corpus may pass their own ``PytestRunner`` (a fork of their warm interpreter), called
once per file.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
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


class EarlyCollector:
    """The forking collector (``collect_fork``) started before it is needed: its interpreter imports
    pytest, torch, the device and op_db (about 5 s on one core) while the selector's earlier
    stages run, then waits for its request on stdin. ``collect(..., early=...)`` hands it the
    request; ``close()`` ends it if nobody did. It starts in an empty directory, so nothing of the
    caller's working directory is importable while it imports."""

    def __init__(self) -> None:
        self._home = tempfile.TemporaryDirectory(prefix="selector-collector-")
        self._process: subprocess.Popen | None = subprocess.Popen(
            [sys.executable, "-m", "selector.stages.collect_fork", "-"], cwd=self._home.name, env=collect_env(),
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True)

    def take(self) -> subprocess.Popen | None:
        """The waiting process, once; None when it was taken or has ended (the caller starts its own)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is not None:  # it ended early (a crash in its imports)
            process.communicate()
            return None
        return process

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            _stop(process)
        self._home.cleanup()

    def __enter__(self) -> EarlyCollector:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _stop(process: subprocess.Popen) -> None:
    """End a collector and the children it forked (they share its process group)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.communicate()


def collect(checkout: Path, files: list[str], rules_paths: list[Path] | None = None,
            timeout: float = 900.0, runner: PytestRunner | None = None, workers: int = 2,
            early: EarlyCollector | None = None) -> Collected:
    """Collect the given repo-relative test files (``test/test_x.py``) on spyre.

    With ``rules_paths`` the testdefs plugin and test base leave out excluded variants (what a
    full run would run); without, every variant is listed, so the caller can attribute each
    exclusion to its rule. A file that fails to collect is reported in ``errors``, with the
    other files' tests collected all the same.

    Each file is collected in its own pytest session and process, as upstream's CI and the
    relay's runner run it: in one shared session what a file collects depended on the others (on
    upstream 2.0: ``jit`` test modules hidden by another file's ``jit``, two files of one basename,
    a default dtype left at float64). By default the processes are forks of one interpreter that
    imported torch once (``collect_fork``), ``workers`` at a time, that interpreter ``early``'s
    when one was started ahead; a caller's ``runner`` is called once per file, one at a time (a
    warm fork server serves one child at a time).
    """
    checkout = Path(checkout).resolve()  # pytest runs inside test/: a relative path would double up
    test_dir = checkout / "test"
    relative = [f.removeprefix("test/") for f in sorted(set(files)) if f.startswith("test/") and (checkout / f).is_file()]
    missing = sorted(set(files) - {"test/" + f for f in relative})
    result = Collected(errors={f: "file does not exist at the to-ref" for f in missing})
    if not relative:
        return result
    if runner is None:
        found = _collect_forked(test_dir, relative, rules_paths, timeout, workers, early)
    else:
        found = [_collect_once(runner, test_dir, file, rules_paths, timeout) for file in relative]
    if all(isinstance(part, str) for part in found):
        raise CollectionFailed(f"pytest --collect-only stopped without a report: {found[0]}")
    for file, part in zip(relative, found):
        if isinstance(part, str):
            result.errors["test/" + file] = f"pytest stopped before collecting: {part}"
        else:
            _merge(result, part)
    result.ids.sort()
    return result


def _options(test_dir: Path, rules_paths: list[Path] | None) -> list[str]:
    # --opt=value: a separate value naming an existing file would count as a path for the rootdir.
    # --assert=plain: rewriting asserts changes what a failing test says, not what is collected, and
    # parsing each test module for it cost a tenth of the collection (same ids and errors on upstream 2.0).
    options = ["--collect-only", "-q", "--assert=plain", "--continue-on-collection-errors", f"--rootdir={test_dir}",
               "-p", "no:cacheprovider", "-o", "addopts=", "-o", "python_files=test_*.py *_test.py"]
    return options + [f"--testdefs={Path(path).resolve()}" for path in rules_paths or []]


def _collect_forked(test_dir: Path, relative: list[str], rules_paths: list[Path] | None, timeout: float,
                    workers: int, early: EarlyCollector | None = None) -> list[Collected | str]:
    """Every file in its own fork of one warm interpreter (``collect_fork``, ``early``'s if it is
    waiting); per file its result or the last line of its output when it ended without a report."""
    with tempfile.TemporaryDirectory(prefix="selector-collect-") as tmp:
        request = Path(tmp, "request.json")
        request.write_text(json.dumps({"cwd": str(test_dir), "options": _options(test_dir, rules_paths),
                                       "files": relative, "reports": tmp, "workers": workers,
                                       "timeout": timeout}), encoding="utf-8")
        process = early.take() if early is not None else None
        handed = f"{request}\n" if process is not None else None
        if process is None:
            process = subprocess.Popen([sys.executable, "-m", "selector.stages.collect_fork", str(request)],
                                       cwd=test_dir, env=collect_env(), stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, stderr = process.communicate(input=handed, timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            raise CollectionFailed(f"collection on spyre did not finish within {timeout:g}s") from None
        if process.returncode < 0:  # killed (out of memory, say): the files it did not reach have no
            # report, which must not be kept in the collection cache as their errors
            raise CollectionFailed(f"the collecting process was killed (signal {-process.returncode})")
        found: list[Collected | str] = []
        for index, file in enumerate(relative):
            report, log = Path(tmp, f"{index}.json"), Path(tmp, f"{index}.log")
            if report.is_file():
                found.append(_read_report(report, 0, test_dir, file))
            else:
                output = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else stderr
                tail = output.strip().splitlines()[-1:] or ["ended without output (killed, or out of time)"]
                found.append(tail[0].strip())
    return found


def _collect_once(runner: PytestRunner, test_dir: Path, file: str, rules_paths: list[Path] | None,
                  timeout: float) -> Collected | str:
    """One pytest session over ``file`` through the caller's runner; its last output line when it
    ended without a report."""
    with tempfile.TemporaryDirectory(prefix="selector-collect-") as tmp:
        report = Path(tmp, "report.json")
        argv = [*_options(test_dir, rules_paths), f"--testdefs-report={report}", file]
        try:
            returncode, stdout, stderr = runner(argv, test_dir, collect_env(), timeout)
        except subprocess.TimeoutExpired:
            raise CollectionFailed(f"collection on spyre did not finish within {timeout:g}s") from None
        if not report.is_file():
            tail = (stdout + stderr).strip().splitlines()[-1:] or [f"exit status {returncode}"]
            return tail[0].strip()
        return _read_report(report, returncode, test_dir, file)


def _read_report(report: Path, returncode: int, test_dir: Path, file: str) -> Collected:
    """One file's session report: its ids, and its first collection error as the file's. The error's
    node may be a directory on the way to the file (its conftest failed to load)."""
    data = json.loads(report.read_text(encoding="utf-8"))
    found = Collected(returncode=returncode)
    # With rules the report also lists what the rules left out: the test base's variants it never
    # generated and the plugin's deselected ones. Only what pytest would run counts as collected.
    found.ids = ["test/" + test_id for test_id, decision in data["decisions"].items()
                 if decision.get("layer") == "pytest_plugin" and decision.get("mode") != "exclude"]
    for line in data.get("collection_error_lines", {}).values():
        # an object's address in upstream's exception text changes from run to run, and the checkout's
        # path from machine to machine (paths in it are written relative to it); the artifacts must not
        line = ADDRESS.sub("0x?", line).replace(f"{test_dir.parent}/", "")
        found.errors.setdefault("test/" + file, line)
    return found


def _merge(result: Collected, part: Collected) -> None:
    result.ids += part.ids
    for file, error in part.errors.items():
        result.errors.setdefault(file, error)
    result.returncode = max(result.returncode, part.returncode)
