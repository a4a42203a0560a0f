"""Run pytest in forks of one warm interpreter: torch, op_db and the device are imported once.

An upstream test file pays seconds of imports before its first test. The relay's runner
(``relay/execution/runner/forkserver.py``) and the selector's stage-4 collection
(``selector/stages/collect_fork.py``) both import those modules once in a parent and fork one
child per pytest session: each child is a fresh copy of the warm interpreter, so what one file
imports or leaves changed (``sys.modules``, torch's default dtype) cannot reach another. This
module is the part they share; it imports nothing of the project, so both may use it.
"""
from __future__ import annotations

import gc
import importlib
import inspect
import os
import sys
import weakref
from collections.abc import Callable
from typing import NoReturn

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
    """Import what can be imported; returns the names that failed (their children will see why).

    Then the installed pytest plugins (each child would load them again, and rewrite their
    asserts), and freeze what is loaded out of the garbage collector's sight: pytest collects
    at exit, and a full collection over torch and op_db costs seconds per child (and copies
    every page the fork shared)."""
    failed = []
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - a child reports it against its tests; the parent must live
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
    _warm_pytest()
    gc.collect()
    gc.freeze()
    return failed


def _warm_pytest() -> None:
    """One pytest session over an empty directory, its output discarded: what every session
    imports and caches on its first run (pytest's own plugins, its option parser) is then
    inherited by each child instead of built again. Nothing is collected, so no test module,
    conftest or path is left behind."""
    import tempfile

    import pytest

    sys.stdout.flush()  # what the parent printed so far is not the warm-up's to discard
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with tempfile.TemporaryDirectory(prefix="warm-pytest-") as empty:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            os.close(null)
            try:
                pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", f"--rootdir={empty}", "-o", "addopts=",
                             empty])
            except BaseException:  # noqa: BLE001 - a warm-up only; each child runs its own session
                pass
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, saved_fd in zip((1, 2), saved):
            os.dup2(saved_fd, fd)
            os.close(saved_fd)


def run_pytest_child(argv: list[str], cwd: str, log: str, *, append: bool = False,
                     prepare: Callable[[], None] | None = None) -> NoReturn:
    """In a forked child: ``prepare()``, output to ``log``, ``pytest.main(argv)`` run in ``cwd`` as
    ``python -m pytest`` would, then exit with its status (3 when pytest itself could not run)."""
    code = 3
    _leave_parent_finalizers()
    try:
        if prepare is not None:
            prepare()
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.chdir(cwd)
        sys.path[0:0] = [cwd]
        sys.argv = ["pytest", *argv]
        import pytest

        code = int(pytest.main(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - in the log; the exit status tells the parent it failed
        import traceback

        traceback.print_exc()
        code = 3
    finally:
        try:  # what a fresh interpreter does on its way out (the test base writes its report here)
            import atexit

            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _leave_parent_finalizers() -> None:
    """Let the parent's ``weakref.finalize`` callbacks be the parent's: the child's exit skips them.

    Each preloaded ``torch.library.Library`` (over a hundred) unregisters its kernels at exit, and
    in a fork that rebuilt dispatch tables on copied pages: about 40 ms and 12,000 page faults
    per child, for a process that ends anyway. A finalizer the child itself registers still runs."""
    for finalizer in list(weakref.finalize._registry):  # noqa: SLF001 - the registry is the only list there is
        finalizer.atexit = False
