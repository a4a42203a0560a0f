"""`relay-cli dashboard` as a user starts it: a real process serving real HTTP."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest
import requests

from dashboard.cli import DEFAULT_HOST, DEFAULT_PORT, bind_address
from relay.errors import UserError
from tests.dashboard.dashboard_fixtures import seeded  # noqa: F401
from tests.service_fixtures import free_port, wait_for

RELAY_CLI = [sys.executable, "-m", "relay"]


def cli_env(database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    return {**env, "RELAY_DATABASE_URL": database_url}


def test_serves_pages_and_api_until_interrupted(seeded, tmp_path, start_process) -> None:
    port = free_port()
    process = start_process([*RELAY_CLI, "dashboard", "--port", str(port)], cwd=tmp_path,
                            env=cli_env(seeded.url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return requests.get(f"{base}/api/health", timeout=2).ok
        except requests.ConnectionError:
            return process.poll() is not None and pytest.fail(f"dashboard exited: {process.stderr.read()}")

    try:
        wait_for(up, "relay-cli dashboard")
        runs = requests.get(f"{base}/api/runs", timeout=5).json()
        assert runs["total"] == len(seeded.run_ids) + 1
        page = requests.get(f"{base}/runs/{seeded.latest_run_id}", timeout=5)
        assert page.ok and "Fix &lt;script&gt;alert(" in page.text
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert f"serving http://127.0.0.1:{port}/" in out


def test_busy_port_is_one_line_and_exit_2(seeded, tmp_path, run_process) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_process([*RELAY_CLI, "dashboard", "--port", str(port)], cwd=tmp_path,
                           env=cli_env(seeded.url), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"relay-cli: error: cannot listen on 127.0.0.1:{port}: Address already in use "
        "(pick another --port or stop what uses it)"]


def test_unreachable_database_is_one_line_and_exit_2(tmp_path, run_process) -> None:
    done = run_process([*RELAY_CLI, "dashboard", "--port", "0"], cwd=tmp_path,
                       env=cli_env("postgresql+psycopg://nobody@127.0.0.1:1/none"),
                       capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    # psycopg's own message may add a second hint line; what matters is no traceback and a clear first line
    assert done.stderr.startswith("relay-cli: error: cannot open database postgresql+psycopg://nobody@127.0.0.1:1")
    assert "Traceback" not in done.stderr and "RELAY_DATABASE_URL" in done.stderr


def test_bind_address_precedence() -> None:
    assert bind_address(None, None, None) == (DEFAULT_HOST, DEFAULT_PORT)
    assert bind_address(None, None, "http://0.0.0.0:9000/") == ("0.0.0.0", 9000)
    assert bind_address("127.0.0.2", 9100, "http://0.0.0.0:9000/") == ("127.0.0.2", 9100)
    with pytest.raises(UserError, match="--port must be 0..65535"):
        bind_address(None, 70000, None)
    with pytest.raises(UserError, match="invalid port"):
        bind_address(None, None, "http://host:notaport/")
