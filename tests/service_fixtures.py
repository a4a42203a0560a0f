"""Real services for tests: redis-server, a throwaway PostgreSQL cluster, relay-cli workers; and
the one way a test runs any other program (``run_process``, ``start_process``).

Each service starts on a free port in a temporary directory and stops after. A program that cannot
be found fails the test with the package to install (scripts/ensure-system-deps.sh installs them).
Every fixture here starts processes, so a test using one (directly or through another fixture) is
`slow` (tests/tiers.py).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.tiers import starts_processes

POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")
STARTUP_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check, what: str, timeout: float = STARTUP_TIMEOUT, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    detail = f"\n--- log ---\n{log.read_text(errors='replace')[-3000:]}" if log and log.exists() else ""
    pytest.fail(f"{what} did not become ready within {timeout:g}s{detail}")


def require(program: str, package: str) -> str:
    found = shutil.which(program)
    if not found:
        pytest.fail(f"{program} not found on PATH: install the '{package}' package (scripts/ensure-system-deps.sh)")
    return found


class RedisServer:
    """A redis-server that tests may stop and start again on the same port (a broker outage)."""

    def __init__(self, workdir: Path) -> None:
        self.program = require("redis-server", "redis-server")
        self.port = free_port()
        self.workdir = workdir
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        log = self.workdir / "redis.log"
        self.process = subprocess.Popen(
            [self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir), "--logfile", str(log)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_for(self.ping, f"redis-server on port {self.port}", log=log)
        return self

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.port, socket_timeout=1).ping())
        except redis.exceptions.ConnectionError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.process = None


@pytest.fixture(scope="session")
@starts_processes
def redis_url(tmp_path_factory) -> str:
    """A redis-server for the whole session: ``redis://127.0.0.1:PORT/0``."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


@pytest.fixture
@starts_processes
def redis_server(tmp_path_factory) -> RedisServer:
    """A redis-server of this test's own, which the test may stop and restart."""
    server = RedisServer(tmp_path_factory.mktemp("redis-own")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
@starts_processes
def run_process():
    """``subprocess.run``, for a test that runs a program to its end (a CLI, pytest, a fresh interpreter)."""
    return subprocess.run


@pytest.fixture(scope="session")
@starts_processes
def start_process():
    """``subprocess.Popen``, for a test that talks to a program while it runs (a server it starts)."""
    return subprocess.Popen


def _as_postgres_user(command: list[str]) -> list[str]:
    # initdb and postgres refuse to run as root; run them as the postgres account instead.
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


@pytest.fixture(scope="session")
@starts_processes
def postgres_url() -> str:
    """A throwaway PostgreSQL 15 cluster: ``postgresql+psycopg://postgres@127.0.0.1:PORT/relay``."""
    initdb, pg_ctl = POSTGRES_BIN / "initdb", POSTGRES_BIN / "pg_ctl"
    if not initdb.exists():
        pytest.fail(f"{initdb} not found: install the 'postgresql-15' package (scripts/ensure-system-deps.sh)")
    workdir = Path(tempfile.mkdtemp(prefix="relay-pg-"))  # not under pytest's 0700 tmp: postgres must read it
    data, port = workdir / "data", free_port()
    if os.geteuid() == 0:
        shutil.chown(workdir, "postgres", "postgres")
    log = workdir / "postgres.log"
    subprocess.run(_as_postgres_user([str(initdb), "-D", str(data), "-U", "postgres", "--auth=trust",
                                      "-E", "UTF8", "--no-sync"]), check=True, capture_output=True)
    subprocess.run(_as_postgres_user([str(pg_ctl), "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o",
                                      f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1 -F", "start"]),
                   check=True, capture_output=True)
    try:
        subprocess.run(_as_postgres_user([str(POSTGRES_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(port),
                                          "-U", "postgres", "relay"]), check=True, capture_output=True)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/relay"
    finally:
        subprocess.run(_as_postgres_user([str(pg_ctl), "-D", str(data), "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(workdir, ignore_errors=True)


class WorkerProcess:
    """A real ``relay-cli worker`` in its own process group."""

    def __init__(self, process: subprocess.Popen, hostname: str, log: Path) -> None:
        self.process, self.hostname, self.log = process, hostname, log

    def wait_ready(self) -> WorkerProcess:
        def ready():
            if self.process.poll() is not None:
                pytest.fail(f"worker {self.hostname} exited with {self.process.returncode}:\n"
                            f"{self.log.read_text(errors='replace')[-3000:]}")
            return " ready." in self.log.read_text(errors="replace")
        wait_for(ready, f"celery worker {self.hostname}", log=self.log)
        return self

    def kill(self) -> None:
        """kill -9 of the worker and everything it started: a machine that vanished."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
@starts_processes
def celery_worker(tmp_path_factory):
    """Factory: ``celery_worker(broker_url, database_url=..., **options)`` starts a ready worker."""
    started: list[WorkerProcess] = []

    def start(broker_url: str, *, database_url: str, name: str | None = None, visibility_timeout: int = 3600,
              concurrency: int = 1, env: dict[str, str] | None = None) -> WorkerProcess:
        hostname = f"{name or 'worker'}{len(started)}@{socket.gethostname()}"
        workdir = tmp_path_factory.mktemp("worker")
        log = workdir / "worker.log"
        environ = {**os.environ, "RELAY_DATABASE_URL": database_url, "RELAY_DATA_DIR": str(workdir),
                   **(env or {})}
        process = subprocess.Popen(
            [sys.executable, "-m", "relay", "worker", "--broker", broker_url, "--hostname", hostname,
             "--concurrency", str(concurrency), "--visibility-timeout", str(visibility_timeout)],
            cwd=workdir, env=environ, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
        worker = WorkerProcess(process, hostname, log)
        started.append(worker)
        return worker.wait_ready()

    yield start
    for worker in started:
        worker.stop()
