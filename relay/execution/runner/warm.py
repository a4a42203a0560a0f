"""Warm interpreters started ahead of need, so a run pays ``import torch`` (and op_db, and the device)
while it is still selecting, and pays it once for stage 4's collection and the tests.

The pipeline ``prewarm``s a fork server for the interpreter and environment its tests will run
with (each side's torch has its own); stage 4 collects in a fork of it (``collect_runner``) and
the shard runner that matches it ``take``s it for its test processes. Anything else (another
executor, a shard with a different interpreter) starts its own server as before.
"""
from __future__ import annotations

import threading
from pathlib import Path

from relay.execution.runner.process import TEST_DIR, ForkServer, device_env, run_in_fork


class WarmPool:
    """Idle fork servers by (interpreter, environment); taken servers belong to the taker."""

    def __init__(self) -> None:
        self._idle: list[ForkServer] = []
        self._lock = threading.Lock()

    def prewarm(self, python: str, env: dict[str, str], cwd: Path) -> ForkServer:
        """Start a server in the background (its owner ``discard``s it if no one took it)."""
        server = ForkServer(python, env, cwd).start()
        with self._lock:
            self._idle.append(server)
        return server

    def take(self, python: str, env: dict[str, str]) -> ForkServer | None:
        with self._lock:
            for server in self._idle:
                if self._matches(server, python, env):
                    self._idle.remove(server)
                    return server
        return None

    def give_back(self, server: ForkServer) -> None:
        if server.broken:
            server.close()
            return
        with self._lock:
            self._idle.append(server)

    def discard(self, server: ForkServer) -> None:
        """Close ``server`` if it is still idle here (a taker closes what it took)."""
        with self._lock:
            if server not in self._idle:
                return
            self._idle.remove(server)
        server.close()

    @staticmethod
    def _matches(server: ForkServer, python: str, env: dict[str, str]) -> bool:
        return not server.broken and server.python == python and server.env == env


POOL = WarmPool()  # one per process: the pipeline fills it, the local executor's shard runners take from it


class Prewarmed:
    """One run's warm interpreters, started before it selects; closed by the run if no shard took them."""

    def __init__(self, pool: WarmPool = POOL) -> None:
        self.pool, self.servers = pool, []
        self.runner = None  # stage 4's PytestRunner: a fork of the last one started (None: a new interpreter)

    def start(self, python: str, checkout: Path) -> None:
        """For tests run from ``checkout`` with ``python`` (the runner's environment for them)."""
        env = device_env(checkout)
        self.servers.append(self.pool.prewarm(python, env, checkout / TEST_DIR))
        self.runner = collect_runner(self.pool, python, env)

    def close(self) -> None:
        for server in self.servers:
            self.pool.discard(server)


# What the collection's environment must agree on with the warm interpreter's to fork it.
COLLECT_KEYS = ("TORCH_TEST_DEVICES", "PYTORCH_TESTING_DEVICE_ONLY_FOR", "RELAY_TESTDEFS")


def collect_runner(pool: WarmPool, python: str, env: dict[str, str]):
    """Stage 4's collection (a selector.stages.collect.PytestRunner) in a fork of the pool's warm
    server for ``python``/``env``, given back afterwards for the tests; a new interpreter when there
    is none or the collection asks for another environment."""
    from selector.stages.collect import run_new_interpreter  # the runner itself needs no selector

    def run(args: list[str], cwd: Path, wanted: dict[str, str], timeout: float) -> tuple[int, str, str]:
        same = all(wanted.get(key) == env.get(key) for key in COLLECT_KEYS)
        server = pool.take(python, env) if same else None
        if server is None:
            return run_new_interpreter(args, cwd, wanted, timeout)
        try:
            ran = run_in_fork(server, args, cwd, timeout)
            return (ran[0], ran[1], "") if ran is not None else run_new_interpreter(args, cwd, wanted, timeout)
        finally:
            pool.give_back(server)

    return run
