"""One pytest subprocess over some tests of one upstream file, watched by a watchdog.

pytest-timeout (signal method) interrupts a slow test inside the process so the file goes on;
the watchdog kills the whole process group when a test outlives that by GRACE seconds (a hang
in C code that no signal interrupts) or when the shard's deadline passes.
"""
from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import testdefs

GRACE = 10.0  # seconds past the per-test timeout before the watchdog kills the process
# Interpreter start and collection (importing torch and the OpInfo database takes seconds on a
# busy machine) get at least this long, whatever the per-test timeout.
COLLECT_TIMEOUT = 120.0
POLL = 0.1
OUTPUT_TAIL = 4000  # characters of process output kept for crash and collection-error messages
UPSTREAM_INI = Path(__file__).with_name("upstream.ini")
HAS_PYTEST_TIMEOUT = importlib.util.find_spec("pytest_timeout") is not None


@dataclass
class PytestRun:
    """What one subprocess reported before it finished, crashed or was killed."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # node id -> result event
    collected: list[str] | None = None  # None: collection never finished
    missing: list[str] = field(default_factory=list)  # requested ids that do not exist
    collect_errors: dict[str, str] = field(default_factory=dict)  # file -> why it failed to collect
    running: str | None = None  # started, no result: the test a crash or kill interrupted
    finished: bool = False  # pytest reached sessionfinish
    exitstatus: int | None = None
    returncode: int | None = None
    killed: str | None = None  # "test_timeout" | "shard_timeout"
    output: str = ""

    @property
    def death(self) -> str:
        """How the interpreter ended, for a crash message."""
        code = self.returncode
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with status {code} before pytest finished"


def device_env(checkout: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment upstream tests need to run on spyre, without the checkout's own torch."""
    env = dict(os.environ)
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        env.pop(name, None)
    checkout = checkout.resolve()
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
            if p and not Path(p).resolve().is_relative_to(checkout)]
    # The relay itself must stay importable (the report plugin) even when run from a source tree.
    relay_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([*kept, relay_root])
    test_base = Path(testdefs.__file__).with_name("test_base.py")
    if test_base.exists():
        env["TORCH_TEST_DEVICES"] = str(test_base)
    env["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = "privateuse1"
    env["PYTHONFAULTHANDLER"] = "1"  # a crash prints the Python stack into the output tail
    env.update(extra or {})
    return env


try:  # loaded here, not in the forked child: dlopen after fork in a threaded parent can deadlock
    _LIBC = ctypes.CDLL("libc.so.6", use_errno=True)
except OSError:
    _LIBC = None
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """A new process group, and on Linux death with the worker that started it (no orphans)."""
    os.setsid()
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def run_pytest(test_dir: Path, node_ids: list[str], *, env: dict[str, str], test_timeout: float,
               deadline: float, rules: list[str] | tuple[str, ...] = (), python: str = sys.executable,
               on_result=None) -> PytestRun:
    """Run ``node_ids`` (relative to ``test_dir``) in one fresh interpreter and collect its events."""
    files = list(dict.fromkeys(node.split("::", 1)[0] for node in node_ids))
    with tempfile.TemporaryDirectory(prefix="relay-pytest-") as tmp:
        report, select, log = Path(tmp, "report.jsonl"), Path(tmp, "select.json"), Path(tmp, "output.log")
        select.write_text(json.dumps(node_ids))
        report.touch()
        command = [python, "-m", "pytest", "-p", "relay.execution.runner.pytest_plugin",
                   "--relay-report", str(report), "--relay-select", str(select),
                   "-c", str(UPSTREAM_INI), "--rootdir", str(test_dir), "-q", "-rN",
                   "-p", "no:cacheprovider", "-p", "no:randomly"]
        if HAS_PYTEST_TIMEOUT:
            command += [f"--timeout={test_timeout:g}", "--timeout-method=signal"]
        for path in rules:
            command += ["--testdefs", str(path)]
        command += files
        with open(log, "wb") as output:
            process = subprocess.Popen(command, cwd=test_dir, env=env, stdout=output,
                                       stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
            run = _watch(process, report, test_timeout, deadline, on_result)
        run.output = log.read_bytes()[-OUTPUT_TAIL:].decode("utf-8", "replace")
    return run


def _watch(process: subprocess.Popen, report: Path, test_timeout: float, deadline: float,
           on_result) -> PytestRun:
    run = PytestRun()
    running_since = time.monotonic()  # collection counts as "running" against the per-test limit
    with open(report, encoding="utf-8") as events:
        pending = ""
        while True:
            returncode = process.poll()
            pending += events.read()
            *lines, pending = pending.split("\n")
            for line in lines:
                if _apply(run, json.loads(line), on_result):
                    running_since = time.monotonic()
            if returncode is not None:
                break
            limit = test_timeout if run.collected is not None else max(test_timeout, COLLECT_TIMEOUT)
            if time.monotonic() - running_since > limit + GRACE:
                run.killed = "test_timeout"
            elif time.time() > deadline:
                run.killed = "shard_timeout"
            if run.killed:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                break
            time.sleep(POLL)
    run.returncode = process.returncode
    return run


def _apply(run: PytestRun, event: dict[str, Any], on_result) -> bool:
    """Fold one event into ``run``; True when a test started or ended (the watchdog resets)."""
    kind = event["event"]
    if kind == "collected":
        run.collected = event["ids"]
    elif kind == "missing":
        run.missing = event["ids"]
    elif kind == "collect_error":
        run.collect_errors[event["file"]] = event["text"] or ""
    elif kind == "start":
        run.running = event["id"]
        return True
    elif kind == "result":
        run.results[event["id"]] = event
        run.running = None
        if on_result:
            on_result(event)
        return True
    elif kind == "finish":
        run.finished, run.exitstatus = True, event["exitstatus"]
    return False
