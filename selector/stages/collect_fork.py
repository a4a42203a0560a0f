"""Collect each test file in its own process, forked from an interpreter that already imported torch.

Run by ``selector.stages.collect`` as ``python -m selector.stages.collect_fork REQUEST.json`` in
the collection's environment. The parent imports pytest, torch (which autoloads the device), the
device-generic test machinery and op_db once, then forks one child per file, ``workers`` at a
time; each child runs ``pytest.main([...options, --testdefs-report=<dir>/<n>.json, file])`` with
its output in ``<dir>/<n>.log``. Each file is collected as upstream's CI and the relay's runner
run it, alone in a fresh copy of the interpreter: what one file imports, or leaves changed
(``sys.modules``, torch's default dtype), cannot change what another collects.

The relay's runner forks its test processes the same way; the part both share is
``testdefs/warm_pytest.py``.

REQUEST.json: ``{"cwd": DIR, "options": [...], "files": [...], "reports": DIR, "workers": N,
"timeout": SECONDS, "preload": [[...], ...]}`` (``timeout`` per file; ``preload``, per file, the
shared torch modules its import preamble names: files importing one are collected from a fork
that imported it once, see ``_plan``). A file whose child ended without a report is left to the
caller, which reads the log.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

from testdefs.warm_pytest import preload, run_pytest_child


def _child(request: dict, index: int) -> None:
    """In the forked child: collect file ``index``; never returns. A file that hangs ends by SIGALRM;
    the caller names it."""
    reports = request["reports"]
    argv = [*request["options"], f"--testdefs-report={reports}/{index}.json", request["files"][index]]
    run_pytest_child(argv, request["cwd"], f"{reports}/{index}.log",
                     prepare=lambda: signal.alarm(max(1, int(request["timeout"]))))


def run(request: dict) -> int:
    """Collect every file, ``workers`` at a time; the highest exit status of them."""
    worst, seconds = _run_units(request, _plan(request, list(range(len(request["files"])))),
                                max(1, int(request["workers"])))
    slowest = sorted(seconds.items(), key=lambda item: -item[1])[:10]  # for whoever profiles stage 4 next
    print("slowest: " + ", ".join(f"{name} {took:.1f}s" for name, took in slowest), file=sys.stderr)
    return worst


Unit = tuple[str | None, list[int]]  # (module a zygote imports first, or None for one file; file indexes)


def _plan(request: dict, members: list[int], tried: frozenset[str] = frozenset()) -> list[Unit]:
    """How to collect ``members``: the module most of them import (``preload``, per file) and not
    yet imported here, with the files importing it, again and again; then the other files one by
    one. A zygote plans its own files the same way, so a file is collected under a chain of forks
    that imported only modules it imports itself (``tried``: those the chain imported, or failed
    to). Largest units first."""
    preload = request.get("preload") or [[] for _ in request["files"]]
    wanted = {index: {name for name in preload[index] if name not in sys.modules and name not in tried}
              for index in members}
    units: list[Unit] = []
    rest = list(members)
    while True:
        counts: dict[str, int] = {}
        for index in rest:
            for name in wanted[index]:
                counts[name] = counts.get(name, 0) + 1
        count, name = max(((count, name) for name, count in counts.items()), default=(0, ""))
        if count < 2:
            break
        units.append((name, [index for index in rest if name in wanted[index]]))
        rest = [index for index in rest if name not in wanted[index]]
    units.sort(key=lambda unit: -len(unit[1]))
    return units + [(None, [index]) for index in rest]


def _run_units(request: dict, units: list[Unit], workers: int,
               tried: frozenset[str] = frozenset()) -> tuple[int, dict]:
    """Run each unit in a fork, ``workers`` at a time (``tried``: as for ``_plan``)."""
    pending = list(units)
    running: dict[int, tuple] = {}  # pid -> (label, start, unit)
    seconds: dict[str, float] = {}
    worst = 0
    while pending or running:
        while pending and len(running) < workers:
            module, members = unit = pending.pop(0)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                if module is not None:
                    _zygote(request, module, members, tried)
                _child(request, members[0])
            label = request["files"][members[0]] if module is None else f"{len(members)} files importing {module}"
            running[pid] = (label, time.perf_counter(), unit)
        pid, status = os.wait()
        label, began, (module, members) = running.pop(pid)
        seconds[label] = time.perf_counter() - began
        if module is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == STATE_CHANGED:
            pending += [(None, [index]) for index in members]
            continue
        worst = max(worst, os.WEXITSTATUS(status) if os.WIFEXITED(status) else 3)
    return worst, seconds


# A zygote whose imports changed process-wide state: its files are collected the plain way instead.
STATE_CHANGED = 75


def _zygote(request: dict, module: str, members: list[int], tried: frozenset[str]) -> None:
    """In a forked child: import ``module``, collect ``members`` (planned again from here), exit.
    A module that changes process-wide state on import would do so before pytest starts rather
    than during the file's import, which can change what is collected: then exit STATE_CHANGED
    and let the parent collect those files the plain way."""
    code = 3
    try:
        before = _process_state()
        preload((module,))
        if _process_state() != before:
            code = STATE_CHANGED
        else:
            chain = tried | {module}
            code, _ = _run_units(request, _plan(request, members, chain), 1, chain)
    finally:
        os._exit(code)


def _process_state() -> tuple:
    """What an import may change that pytest and the test base see: torch's defaults and modes, the
    interpreter's argv, path and environment."""
    import torch

    return (torch.get_default_dtype(), str(torch.get_default_device()), torch.is_grad_enabled(),
            torch.are_deterministic_algorithms_enabled(), list(sys.argv), list(sys.path), dict(os.environ))


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
