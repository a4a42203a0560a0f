"""One pytest process over some tests of one upstream file, watched by a watchdog.

The process is a fork of a warm interpreter (``relay.execution.runner.forkserver``: torch, op_db and the
device imported once per shard) or, when no fork server is given or it cannot start, a fresh
``python -m pytest``. pytest-timeout (signal method) interrupts a slow test inside the process
so the file goes on; the watchdog kills the whole process group when a test outlives that by
GRACE seconds (a hang in C code that no signal interrupts), when the shard's deadline passes or
when the runner is told to stop (a cancelled or interrupted run).
"""
from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import testdefs

GRACE = 10.0  # seconds past the per-test timeout before the watchdog kills the process
# Interpreter start and collection (importing torch and the OpInfo database takes seconds on a
# busy machine) get at least this long, whatever the per-test timeout.
COLLECT_TIMEOUT = 120.0
POLL = 0.1
STOP_POLL = 1.0  # seconds between asking should_stop (it may query the database)
OUTPUT_TAIL = 4000  # characters of process output kept for crash and collection-error messages
UPSTREAM_INI = Path(__file__).with_name("upstream.ini")
TEST_DIR = "test"  # upstream tests live in <checkout>/test and run from there
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
    killed: str | None = None  # "test_timeout" | "shard_timeout" | "stopped"
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


def repro_prefix(checkout: Path, rules: list[str] | tuple[str, ...] = (), python: str = sys.executable) -> str:
    """The shell command, up to the test id, that runs one upstream test on spyre as the runner
    did: in the checkout's test/ directory, with the device test base and the run's rules."""
    test_base = Path(testdefs.__file__).with_name("test_base.py")
    words = [f"cd {shlex.quote(str(Path(checkout).resolve() / TEST_DIR))} &&",
             f"TORCH_TEST_DEVICES={shlex.quote(str(test_base))}", "PYTORCH_TESTING_DEVICE_ONLY_FOR=privateuse1",
             shlex.quote(python), "-m", "pytest", *(f"--testdefs={shlex.quote(str(rule))}" for rule in rules)]
    return " ".join(words)


def repro_command(prefix: str, test_id: str) -> str:
    """``prefix`` (see repro_prefix) completed with one upstream id (test/<file>::<Class>::<test>)."""
    return f"{prefix} {shlex.quote(test_id.removeprefix(TEST_DIR + '/'))}"


try:  # loaded here, not in the forked child: dlopen after fork in a threaded parent can deadlock
    _LIBC = ctypes.CDLL("libc.so.6", use_errno=True)
except OSError:
    _LIBC = None
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """A new process group, and on Linux death with the worker that started it (no orphans)."""
    os.setsid()
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class _Spawned:
    """A ``python -m pytest`` process started for one session."""

    def __init__(self, python: str, argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> None:
        with open(log, "wb") as output:
            self.process = subprocess.Popen([python, "-m", "pytest", *argv], cwd=cwd, env=env, stdout=output,
                                            stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        self.pid = self.process.pid

    def poll(self) -> int | None:
        return self.process.poll()

    def kill(self) -> None:
        _killpg(self.pid)
        self.process.wait()


class ForkServer:
    """A warm interpreter (``python -m relay.execution.runner.forkserver``) that forks one child per session.

    One per shard and interpreter: the environment is fixed when it starts, because torch and
    the device test base read theirs at import time. ``start`` returns at once (the imports go on
    in the background: a server can warm up while the run is still selecting); ``launch`` waits
    for it and returns None when the server is not usable (it failed to start or died), and the
    caller spawns a plain process instead.
    """

    def __init__(self, python: str, env: dict[str, str], cwd: Path, *, start_timeout: float = COLLECT_TIMEOUT) -> None:
        self.python, self.env, self.cwd, self.start_timeout = python, env, cwd, start_timeout
        self.process: subprocess.Popen | None = None
        self.answers: queue.Queue = queue.Queue()
        self.broken = False
        self.ready = False
        self.started_at = 0.0

    def start(self) -> ForkServer:
        if self.process is None and not self.broken:
            self.started_at = time.monotonic()
            self.process = subprocess.Popen([self.python, "-m", "relay.execution.runner.forkserver"], cwd=self.cwd,
                                            env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL, text=True, bufsize=1, preexec_fn=die_with_parent)
            threading.Thread(target=self._read, args=(self.process.stdout, self.answers), daemon=True).start()
        return self

    def wait_ready(self) -> bool:
        """Wait for the preloading to end (at most ``start_timeout`` from the start); False: unusable."""
        if self.ready or self.broken:
            return self.ready
        self.start()
        answer = self._answer(self.started_at + self.start_timeout)
        if not (answer and answer.get("ready")):
            self.close()
            self.broken = True
            return False
        self.ready = True
        return True

    @staticmethod
    def _read(stream, answers: queue.Queue) -> None:
        for line in stream:
            answers.put(json.loads(line))
        answers.put(None)  # the server is gone

    def _answer(self, until: float) -> dict | None:
        try:
            return self.answers.get(timeout=max(0.0, until - time.monotonic()))
        except queue.Empty:
            return None

    def launch(self, argv: list[str], cwd: Path, log: Path) -> _Forked | None:
        if not self.wait_ready():
            return None
        try:
            self.process.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd), "log": str(log)}) + "\n")
            self.process.stdin.flush()
        except OSError:
            self.broken = True
            return None
        started = self._answer(time.monotonic() + 30)
        if not started or "pid" not in started:
            self.broken = True
            return None
        return _Forked(self, started["pid"])

    def close(self) -> None:
        if self.process is not None:
            _killpg(self.process.pid)
            self.process.wait()
            self.process = None
            self.ready = False


class _Forked:
    """A child of the fork server: its exit status arrives as an answer."""

    def __init__(self, server: ForkServer, pid: int) -> None:
        self.server, self.pid, self.returncode = server, pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                answer = self.server.answers.get_nowait()
            except queue.Empty:
                return None
            if answer is None:  # the server died; its children die with it (PDEATHSIG)
                self.server.broken = True
                self.returncode = -signal.SIGKILL
            else:
                self.returncode = answer["status"]
        return self.returncode

    def kill(self) -> None:
        _killpg(self.pid)
        while self.poll() is None:
            time.sleep(0.01)


def run_in_fork(server: ForkServer, argv: list[str], cwd: Path, timeout: float) -> tuple[int, str] | None:
    """(exit status, output) of ``pytest argv`` in ``cwd``, in a fork of ``server``; None when it
    cannot fork (it failed to start or died). After ``timeout`` seconds the child is killed and
    ``subprocess.TimeoutExpired`` raised."""
    with tempfile.TemporaryDirectory(prefix="relay-fork-") as tmp:
        log = Path(tmp, "output.log")
        log.touch()
        child = server.launch(argv, cwd, log)
        if child is None:
            return None
        deadline = time.monotonic() + timeout
        while child.poll() is None:
            if time.monotonic() > deadline:
                child.kill()
                raise subprocess.TimeoutExpired(argv, timeout)
            time.sleep(0.05)
        return child.returncode, log.read_text(errors="replace")


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_pytest(test_dir: Path, node_ids: list[str], *, env: dict[str, str], test_timeout: float,
               deadline: float, rules: list[str] | tuple[str, ...] = (), python: str = sys.executable,
               on_result=None, server: ForkServer | None = None,
               should_stop: Callable[[], bool] | None = None, fork_files: bool = False) -> PytestRun:
    """Run ``node_ids`` (relative to ``test_dir``) in one fresh process and collect its events.

    The process is a fork of ``server`` when it is given and usable, else a new ``python``.
    ``fork_files``: the session forks a child of itself per file (see pytest_plugin)."""
    files = list(dict.fromkeys(node.split("::", 1)[0] for node in node_ids))
    with tempfile.TemporaryDirectory(prefix="relay-pytest-") as tmp:
        report, select, log = Path(tmp, "report.jsonl"), Path(tmp, "select.json"), Path(tmp, "output.log")
        select.write_text(json.dumps(node_ids))
        report.touch()
        log.touch()
        argv = ["-p", "relay.execution.runner.pytest_plugin",
                "--relay-report", str(report), "--relay-select", str(select),
                "-c", str(UPSTREAM_INI), "--rootdir", str(test_dir), "-q", "-rN", "--tb=native",
                "-p", "no:cacheprovider", "-p", "no:randomly", "--continue-on-collection-errors"]
        if fork_files:
            argv.append("--relay-fork-files")
        if HAS_PYTEST_TIMEOUT:
            argv += [f"--timeout={test_timeout:g}", "--timeout-method=signal"]
        for path in rules:
            argv += ["--testdefs", str(path)]
        argv += files
        process = server.launch(argv, test_dir, log) if server is not None else None
        if process is None:
            process = _Spawned(python, argv, test_dir, env, log)
        run = _watch(process, report, test_timeout, deadline, on_result, should_stop or (lambda: False))
        run.output = output_tail(log)
    return run


def output_tail(log: Path) -> str:
    """The end of the process output, without faulthandler's list of loaded extension modules
    (long in a warm interpreter, and it would push the dying test's stack out of the tail)."""
    text = log.read_bytes()[-4 * OUTPUT_TAIL:].decode("utf-8", "replace")
    kept = [line for line in text.splitlines(keepends=True) if not line.startswith("Extension modules:")]
    return "".join(kept)[-OUTPUT_TAIL:]


def _watch(process, report: Path, test_timeout: float, deadline: float, on_result,
           should_stop: Callable[[], bool]) -> PytestRun:
    run = PytestRun()
    running_since = time.monotonic()  # collection counts as "running" against the per-test limit
    next_stop_check = time.monotonic() + STOP_POLL
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
            elif time.monotonic() >= next_stop_check:
                next_stop_check = time.monotonic() + STOP_POLL
                if should_stop():
                    run.killed = "stopped"
            if run.killed:
                process.kill()
                break
            time.sleep(POLL)
    run.returncode = process.poll()
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
