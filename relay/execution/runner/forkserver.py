"""A warm test interpreter: imports torch, the OpInfo database and the device once, then forks
one child per pytest session.

Started by the runner with the interpreter and environment of the tests
(``python -m relay.execution.runner.forkserver``). Each request on stdin is one JSON line
``{"argv": [...], "cwd": DIR, "log": FILE}``; the server forks, the child becomes its own
process group (so the watchdog can kill it and whatever it started), sends its output to
``log`` and runs ``pytest.main(argv)``. The server answers ``{"pid": N}`` at once and
``{"pid": N, "status": S}`` when the child has ended (``S`` as ``Popen.returncode``: negative
for a signal). A child is a fresh copy of the warm interpreter, so per-file isolation and
fresh-process re-runs cost a fork, not an ``import torch``.

Preloading is best effort: a module that does not import here is imported (and fails) in the
child, where the failure is reported against the tests like any other.
"""
from __future__ import annotations

import gc
import importlib
import inspect
import json
import os
import sys

from relay.execution.runner.process import die_with_parent

# What every upstream test file pays for before its first test: torch (which autoloads the
# device through its torch.backends entry point), the device-generic test machinery and op_db.
PRELOAD = (
    "pytest",
    "torch",
    "torch.testing._internal.common_utils",
    "torch.testing._internal.common_device_type",
    "torch.testing._internal.common_methods_invocations",
)


def preload(modules=PRELOAD) -> list[str]:
    """Import what can be imported; the names that failed (their children will see why).

    Then the installed pytest plugins (each child would load them again, and rewrite their
    asserts), and freeze what is loaded out of the garbage collector's sight: pytest collects
    at exit, and a full collection over torch and op_db costs seconds per child (and copies
    every page the fork shared)."""
    failed = []
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - a child reports it properly, the server must live
            failed.append(name)
    from importlib.metadata import entry_points

    for plugin in entry_points(group="pytest11"):
        try:
            plugin.load()
        except BaseException:  # noqa: BLE001 - as above
            failed.append(plugin.value)
    # inspect.getmodule's first lookup by file scans every loaded module (pytest does it for each
    # failure's source): done once here, each child inherits the map instead of rebuilding it.
    inspect.getmodule(preload.__code__)
    gc.collect()
    gc.freeze()
    return failed


def _child(request: dict, answers_fd: int) -> None:
    """In the forked child: never returns."""
    code = 3
    try:
        die_with_parent()
        os.close(answers_fd)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.chdir(request["cwd"])
        sys.path[0:0] = [request["cwd"]]  # as `python -m pytest` run in that directory would
        sys.argv = ["pytest", *request["argv"]]
        import pytest

        code = int(pytest.main(request["argv"]))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported in the log, the exit status says it failed
        import traceback

        traceback.print_exc()
        code = 3
    finally:
        try:  # what a fresh interpreter does on its way out (e.g. the test base's report)
            import atexit

            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _status(wait_status: int) -> int:
    return -os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else os.WEXITSTATUS(wait_status)


def serve(requests, answers) -> None:
    """One child at a time: the runner drives a shard sequentially."""
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        answers.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, answers.fileno())
        answers.write(json.dumps({"pid": pid}) + "\n")
        answers.flush()
        _, wait_status = os.waitpid(pid, 0)
        answers.write(json.dumps({"pid": pid, "status": _status(wait_status)}) + "\n")
        answers.flush()


def main() -> int:
    failed = preload()
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # stray prints of preloaded modules must not corrupt the answers
    answers.write(json.dumps({"ready": True, "preload_failed": failed}) + "\n")
    answers.flush()
    serve(sys.stdin, answers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
