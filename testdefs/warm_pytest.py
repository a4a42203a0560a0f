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
    back_with_huge_pages()
    return failed


MADV_COLLAPSE = 25  # linux/mman.h, Linux 6.1 and later
HUGE_PAGE = 2 << 20


def back_with_huge_pages() -> int:
    """Back this process's heap with 2 MiB pages now (``madvise(MADV_COLLAPSE)``); the bytes it moved.

    A fork copies one page-table entry per 4 KiB page of heap and the child's exit frees them: with
    torch and op_db loaded (about 300 MiB of heap) that cost 8 ms in the parent and 10 ms at the
    child's exit, on each of the 564 files stage 4 collects on upstream 2.0. A 2 MiB page is one
    entry until a child writes to it, and then only that entry is split. Where the kernel cannot
    (another system, huge pages turned off) nothing changes and 0 is returned."""
    import ctypes

    try:
        with open("/proc/self/maps", encoding="ascii") as maps:
            lines = maps.readlines()
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return 0
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    moved = 0
    for line in lines:
        # start-end perms offset device inode [path]: private anonymous memory, the heap included
        fields = line.split()
        if fields[1] != "rw-p" or fields[4] != "0" or fields[5:] not in ([], ["[heap]"]):
            continue
        start, end = (int(bound, 16) for bound in fields[0].split("-"))
        first, last = -(-start // HUGE_PAGE) * HUGE_PAGE, end // HUGE_PAGE * HUGE_PAGE
        if last > first and madvise(first, last - first, MADV_COLLAPSE) == 0:
            moved += last - first
    return moved


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
    try:
        _start_child(log, append=append, prepare=prepare)
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
        _exit_as_a_fresh_interpreter(code)


class PreparedSession:
    """pytest configured and its session started once in the parent; each forked child collects
    or runs its own paths in that session and ends it.

    Option parsing, plugins, the ini file, the rootdir's conftest and the session's start cost
    each ``pytest.main`` about 30 ms of CPU, a fifth of collecting upstream 2.0's test files.
    A child ends the session as ``pytest.main`` would (``pytest_sessionfinish``, unconfigure),
    so plugins report as usual; what a child imports or changes stays in the child. Made by
    ``prepare``; children by ``run_child`` right after ``os.fork()``."""

    def __init__(self, config, session) -> None:
        self.config, self.session = config, session

    @classmethod
    def prepare(cls, options: list[str], cwd: str) -> tuple[PreparedSession | None, str]:
        """Configure pytest with ``options`` (no paths) in ``cwd``, which becomes this process's
        working directory, as ``python -m pytest`` run there. Output is not captured (the children
        write straight to their logs). ``(None, why)`` when pytest cannot be set up this way (an
        invalid option, a conftest that fails, a pytest without these internals): the caller then
        runs ``pytest.main`` per child, which reports the problem where it always did."""
        import pytest

        try:
            from _pytest.config import _prepareconfig
        except ImportError as exc:
            return None, f"this pytest has no _prepareconfig: {exc}"
        os.chdir(cwd)
        sys.path[0:0] = [cwd]
        sys.argv = ["pytest", *options]
        os.environ["PYTEST_VERSION"] = pytest.__version__  # as pytest.main sets it for conftests and plugins
        config = None
        try:
            config = _prepareconfig([*options, "--capture=no"])
            session = pytest.Session.from_config(config)
            config._do_configure()  # noqa: SLF001 - pytest's own start of a session, split at the fork
            config.hook.pytest_sessionstart(session=session)
        except BaseException as exc:  # noqa: BLE001 - each child's own pytest.main will say what it is
            if config is not None:
                config._ensure_unconfigure()  # noqa: SLF001
            return None, f"{type(exc).__name__}: {exc}"
        return cls(config, session), ""

    def run_child(self, paths: list[str], log: str, *, option_values: dict[str, object] | None = None,
                  prepare: Callable[[], None] | None = None) -> NoReturn:
        """In a forked child: ``prepare()``, output to ``log``, the session over ``paths`` with
        ``option_values`` set on ``config.option``, ended as ``pytest.main`` ends it; then exit with
        its status."""
        import pytest

        config, session = self.config, self.session
        code = 3
        try:
            _start_child(log, append=False, prepare=prepare)
            for name, value in (option_values or {}).items():
                setattr(config.option, name, value)
            config.args = list(paths)
            session.exitstatus = _collect_and_run(config, session)
        except pytest.UsageError as exc:  # e.g. a path that is not there: pytest.main's message
            for message in exc.args:
                print(f"ERROR: {message}\n", file=sys.stderr)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        except BaseException:  # noqa: BLE001 - in the log; the exit status tells the parent it failed
            import traceback

            traceback.print_exc()
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        try:
            config.hook.pytest_sessionfinish(session=session, exitstatus=session.exitstatus)
            config._ensure_unconfigure()  # noqa: SLF001
            code = int(session.exitstatus)
        except BaseException:  # noqa: BLE001 - as above
            import traceback

            traceback.print_exc()
        finally:
            _exit_as_a_fresh_interpreter(code)


def _collect_and_run(config, session) -> int:
    """What ``pytest.main`` does between a session's start and its finish, and its exit status."""
    import pytest

    try:
        config.hook.pytest_collection(session=session)
        config.hook.pytest_runtestloop(session=session)
    except session.Failed:
        return pytest.ExitCode.TESTS_FAILED
    except (KeyboardInterrupt, pytest.exit.Exception) as exc:
        returncode = getattr(exc, "returncode", None)
        return returncode if returncode is not None else pytest.ExitCode.INTERRUPTED
    if session.testsfailed:
        return pytest.ExitCode.TESTS_FAILED
    if session.testscollected == 0:
        return pytest.ExitCode.NO_TESTS_COLLECTED
    return pytest.ExitCode.OK


def _start_child(log: str, *, append: bool, prepare: Callable[[], None] | None) -> None:
    """What a forked child does first: the parent's finalizers left to it, ``prepare()``, output to ``log``."""
    _leave_parent_finalizers()
    if prepare is not None:
        prepare()
    _output_to(log, append=append)


def _output_to(log: str, *, append: bool) -> None:
    """The child's stdout and stderr to ``log``, stdin from /dev/null; a fatal error's traceback too."""
    import faulthandler

    fd = os.open(log, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    if faulthandler.is_enabled():  # pytest pointed it at a copy of the parent's stderr
        faulthandler.enable(file=sys.stderr)


def _exit_as_a_fresh_interpreter(code: int) -> NoReturn:
    """What a fresh interpreter does on its way out (the test base writes its report here), then
    exit without the parent's cleanup."""
    try:
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
