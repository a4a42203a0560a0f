"""Collect each test file in its own process, forked from an interpreter that already imported torch.

Run by ``selector.stages.collect`` as ``python -m selector.stages.collect_fork REQUEST.json`` in
the collection's environment. The parent imports pytest, torch (which autoloads the device), the
device-generic test machinery and op_db once, configures pytest with the request's options and
starts its session (``warm_pytest.PreparedSession``), then forks one child per file, ``workers``
at a time; each child collects its file in that session with ``--testdefs-report=<dir>/<n>.json``
and its output in ``<dir>/<n>.log``. Where pytest cannot be prepared so (a conftest that fails,
say), each child runs ``pytest.main([...options, file])`` instead, which reports the problem.
Each file is collected as upstream's CI and the relay's runner run it, alone in a fresh copy of
the interpreter: what one file imports, or leaves changed (``sys.modules``, torch's default
dtype), cannot change what another collects.

The relay's runner forks its test processes the same way; the part both share is
``testdefs/warm_pytest.py``.

With ``-`` instead of REQUEST.json it imports first and then reads the request file's path from
stdin (``collect.EarlyCollector``: the imports run while the selector's earlier stages do).

REQUEST.json: ``{"cwd": DIR, "options": [...], "files": [...], "reports": DIR, "workers": N,
"timeout": SECONDS}`` (``timeout`` per file). A file whose child ended without a report is left to
the caller, which reads the log.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

from testdefs.warm_pytest import PRELOAD, PreparedSession, preload, run_pytest_child

# Collecting only, the parent also imports the compile stack that a tenth of upstream's test files
# import (36 of v2.0.0's 564: dynamo, inductor's tests, functorch's): 57 s of the children's CPU
# where it was 68 s, with the same ids and errors on all 564. Not torch._inductor itself: it
# registers quantized_decomposed ops, which one file enumerates (test_vmap_registrations.py).
# The runner does not preload these: a test may check what importing torch leaves imported.
COLLECTION_PRELOAD = (*PRELOAD, "torch._dynamo", "functorch.compile")


def _child(request: dict, prepared: PreparedSession | None, index: int, file: str) -> None:
    """In the forked child: never returns. A file that hangs ends by SIGALRM; the caller names it."""
    report, log = f"{request['reports']}/{index}.json", f"{request['reports']}/{index}.log"
    alarm = lambda: signal.alarm(max(1, int(request["timeout"])))  # noqa: E731
    if prepared is not None:
        prepared.run_child([file], log, option_values={"testdefs_report": report}, prepare=alarm)
    else:
        run_pytest_child([*request["options"], f"--testdefs-report={report}", file], request["cwd"], log,
                         prepare=alarm)


def _traceback_entries_without_source() -> None:
    """Of a collection error only its exception lines are read (testdefs' report keeps the first);
    the source line pytest prints for each traceback entry cost it a read of the file and a parse
    of all of it (80 ms per error on upstream 2.0, a seventh of the collection). The children print
    ``???`` in its place, as pytest does when a source cannot be found."""
    from _pytest._code import code

    # pytest's own formatter (ExceptionInfoFormatter since pytest 9, FormattedExcinfo before); a
    # pytest without either method collects as before, only slower
    formatter = getattr(code, "ExceptionInfoFormatter", None) or getattr(code, "FormattedExcinfo", None)
    if hasattr(formatter, "_getentrysource"):
        formatter._getentrysource = lambda self, entry: None


def _size(cwd: str, file: str) -> int:
    try:
        return os.stat(os.path.join(cwd, file)).st_size
    except OSError:  # not there: its child says so
        return 0


def run(request: dict) -> int:
    """Fork one child per file, ``workers`` at a time; the highest exit status of them."""
    files = request["files"]
    # the report option makes testdefs' plugin take part; each child names its own file
    prepared, why = PreparedSession.prepare([*request["options"], f"--testdefs-report={request['reports']}/session.json"],
                                            request["cwd"])
    if prepared is None:
        print(f"pytest.main per file: {why}", file=sys.stderr)
    # the largest files first, so that a long one (test_unary_ufuncs.py: 6 s) is not left to run
    # alone at the end; reports keep the request's numbering
    pending = sorted(enumerate(files), key=lambda item: -_size(request["cwd"], item[1]))
    running: dict[int, tuple[str, float]] = {}
    seconds: dict[str, float] = {}
    worst = 0
    while pending or running:
        while pending and len(running) < max(1, int(request["workers"])):
            index, file = pending.pop(0)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(request, prepared, index, file)
            running[pid] = (file, time.perf_counter())
        pid, status = os.wait()
        file, began = running.pop(pid)
        seconds[file] = time.perf_counter() - began
        worst = max(worst, os.WEXITSTATUS(status) if os.WIFEXITED(status) else 3)
    slowest = sorted(seconds.items(), key=lambda item: -item[1])[:10]  # for whoever profiles stage 4 next
    print("slowest files: " + ", ".join(f"{file} {took:.1f}s" for file, took in slowest), file=sys.stderr)
    return worst


def main() -> int:
    started = time.perf_counter()
    preload(COLLECTION_PRELOAD)
    _traceback_entries_without_source()
    # started ahead (collect.EarlyCollector): the request's path comes on stdin, or nothing at all
    path = sys.stdin.readline().strip() if sys.argv[1] == "-" else sys.argv[1]
    if not path:
        return 0
    with open(path, encoding="utf-8") as handle:
        request = json.load(handle)
    code = run(request)
    print(f"collected {len(request['files'])} files in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
