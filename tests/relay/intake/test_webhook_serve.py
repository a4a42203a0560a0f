"""`relay-cli serve` as users start it, the WSGI entry point, and trigger policy files."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from relay.errors import UserError
from relay.intake.policy import load_policy
from tests.relay.intake.webhook_helpers import SECRET, fixture, post_event, wait_for

RELAY_CLI = Path(sys.executable).parent / "relay-cli"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def relay_env(tmp_path, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    env.update(RELAY_DATA_DIR=str(tmp_path / "data"), **extra)
    return env


def test_serve_answers_signed_deliveries_with_the_secret_from_a_file(tmp_path, start_process):
    secret_file = tmp_path / "webhook-secret"
    secret_file.write_text(SECRET + "\n")
    port = free_port()
    process = start_process([str(RELAY_CLI), "serve", "--port", str(port), "--sweep-interval", "0"],
                            env=relay_env(tmp_path, RELAY_WEBHOOK_SECRET_FILE=str(secret_file)),
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        def up():
            assert process.poll() is None, process.stdout.read()
            try:
                return requests.get(f"{url}/healthz", timeout=1).ok
            except requests.ConnectionError:
                return False
        wait_for(up, timeout=60)
        assert post_event(url, "ping", fixture("ping")).json()["status"] == "pong"
        assert post_event(url, "ping", fixture("ping"), secret="wrong").status_code == 401
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=20)
    assert SECRET not in output  # never logged
    assert (tmp_path / "data" / "relay.db").exists()


def test_serve_without_a_secret_is_one_clear_line(tmp_path, run_process):
    result = run_process([str(RELAY_CLI), "serve", "--port", str(free_port())], env=relay_env(tmp_path),
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "relay-cli: error: no webhook secret configured (set RELAY_WEBHOOK_SECRET or RELAY_WEBHOOK_SECRET_FILE)"]


def test_wsgi_entry_builds_the_app_from_the_environment(tmp_path, run_process):
    code = ("import relay.intake.wsgi, json; c = relay.intake.wsgi.app.test_client(); "
            "print(c.get('/healthz').status_code, c.post('/webhook/github', data=b'{}').status_code)")
    result = run_process([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=relay_env(tmp_path, RELAY_WEBHOOK_SECRET=SECRET), cwd=tmp_path)
    assert result.stdout.split() == ["200", "401"], result.stderr


def test_policy_file_overrides_defaults(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text("repositories: [pytorch/pytorch, torch-spyre/pytorch-mirror]\ncheck_runs: always\n")
    policy = load_policy(path)
    assert policy.watches("Torch-Spyre/pytorch-mirror") and policy.wants_check_run(())
    assert policy.branch_allowed("release/2.14") and not policy.branch_allowed("feature/x")


@pytest.mark.parametrize("text,expected", [
    ("repositories: [a/b\n", "policy.yaml:2: not valid YAML"),
    ("check_runs: sometimes\n", "field 'check_runs'"),
    ("repos: [a/b]\n", "field 'repos'"),
    ("- a/b\n", "expected a mapping"),
])
def test_bad_policy_file_is_one_clear_error(tmp_path, text, expected):
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as error:
        load_policy(path)
    assert expected in str(error.value)
