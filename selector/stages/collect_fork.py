"""Collect each test file in its own process, forked from an interpreter that already imported torch.

Run by ``selector.stages.collect`` as ``python -m selector.stages.collect_fork REQUEST.json`` in
the collection's environment. The parent imports pytest, torch (which autoloads the device), the
device-generic test machinery and op_db once, then forks one child per file, ``workers`` at a
time; each child runs ``pytest.main([...options, --testdefs-report=<dir>/<n>.json, file])`` with
its output in ``<dir>/<n>.log``. Each file is collected as upstream's CI and the relay's runner
run it, alone in a fresh copy of the interpreter: what one file imports, or leaves changed
(``sys.modules``, torch's default dtype), cannot change what another collects.

The relay's runner forks its test processes the same way (``relay/execution/runner/forkserver.py``);
the selector keeps this small copy because it is a library that must not import the relay.

REQUEST.json: ``{"cwd": DIR, "options": [...], "files": [...], "reports": DIR, "workers": N,
"timeout": SECONDS}`` (``timeout`` per file). A file whose child ended without a report is left to
the caller, which reads the log.
"""
from __future__ import annotations

import gc
import importlib
import json
import os
import signal
import sys
import time

# op_db imports torch (which autoloads the device), common_utils and common_device_type with it.
PRELOAD = ("pytest", "torch.testing._internal.common_methods_invocations")


def preload() -> None:
    """Best effort: a module that fails here fails again in each child, which reports it against its file.
    Frozen out of the garbage collector's sight, so a child's collection does not walk (and copy) it."""
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - the children report it
            pass
    from importlib.metadata import entry_points

    for plugin in entry_points(group="pytest11"):
        try:
            plugin.load()
        except BaseException:  # noqa: BLE001 - as above
            pass
    gc.collect()
    gc.freeze()


def _child(cwd: str, argv: list[str], log_path: str, timeout: float) -> None:
    """In the forked child: never returns."""
    code = 3
    try:
        signal.alarm(max(1, int(timeout)))  # a file that hangs ends by SIGALRM; the caller names it
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.chdir(cwd)
        sys.path[0:0] = [cwd]  # as `python -m pytest` run in that directory would
        sys.argv = ["pytest", *argv]
        import pytest

        code = int(pytest.main(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - in the log; no report tells the caller it failed
        import traceback

        traceback.print_exc()
    finally:
        try:  # what a fresh interpreter does on its way out (the test base writes its report here)
            import atexit

            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def run(request: dict) -> int:
    """Fork one child per file, ``workers`` at a time; the highest exit status of them."""
    files, reports = request["files"], request["reports"]
    pending = list(enumerate(files))
    running: dict[int, tuple[str, float]] = {}
    seconds: dict[str, float] = {}
    worst = 0
    while pending or running:
        while pending and len(running) < max(1, int(request["workers"])):
            index, file = pending.pop(0)
            argv = [*request["options"], f"--testdefs-report={reports}/{index}.json", file]
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(request["cwd"], argv, f"{reports}/{index}.log", request["timeout"])
            running[pid] = (file, time.perf_counter())
        pid, status = os.wait()
        file, began = running.pop(pid)
        seconds[file] = time.perf_counter() - began
        worst = max(worst, os.WEXITSTATUS(status) if os.WIFEXITED(status) else 3)
    slowest = sorted(seconds.items(), key=lambda item: -item[1])[:10]  # for whoever profiles stage 4 next
    print("slowest files: " + ", ".join(f"{file} {took:.1f}s" for file, took in slowest), file=sys.stderr)
    return worst


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as handle:
        request = json.load(handle)
    started = time.perf_counter()
    preload()
    code = run(request)
    print(f"collected {len(request['files'])} files in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
