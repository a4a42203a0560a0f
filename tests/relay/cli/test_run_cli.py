"""`relay-cli run` and `relay-cli worker`: mistakes are one line on stderr and exit 2."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.relay.upstream_helpers import make_upstream
from tests.tiers import starts_processes


def run_relay_cli(*args: str, cwd, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    environ.update(RELAY_DATA_DIR=str(cwd / "data"), **env)
    return subprocess.run([sys.executable, "-m", "relay", *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
@starts_processes
def relay_cli():
    """relay-cli in a subprocess, as a user runs it."""
    return run_relay_cli


def one_line_error(done: subprocess.CompletedProcess, *fragments: str) -> None:
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("relay-cli: error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    for fragment in fragments:
        assert fragment in errors[0]


@pytest.mark.parametrize(("args", "env", "fragments"), [
    (["--from", "2.13", "--to", "2.14"], {}, ["no upstream given", "--upstream"]),
    (["--from", "2.13", "--to", "2.14", "--upstream", "missing-dir"], {}, ["upstream path missing-dir does not exist"]),
    (["--from", "2.13", "--to", "2.14", "--upstream", ".", "--budget", "lots"], {}, ["--budget 'lots' is not a percentage"]),
    (["--from", "2.13", "--to", "2.14", "--upstream", ".", "--shards", "0"], {}, ["--shards must be at least 1"]),
    (["--from", "2.13", "--to", "2.14", "--upstream", ".", "--rules", "nope.yaml"], {}, ["rules path nope.yaml does not exist"]),
    (["--from", "2.13", "--to", "2.14", "--upstream", ".", "--executor", "celery"], {}, ["needs a broker", "RELAY_BROKER_URL"]),
    (["--from", "2.13", "--to", "2.14", "--upstream", ".", "--reruns", "-1"], {}, ["setting 'reruns'", "greater than or equal to 0"]),
    (["--from", "2.13", "--to", "2.14", "--upstream", "."], {"RELAY_TEST_TIMEOUT": "soon"},
     ["setting 'test_timeout'", "number"]),
])
def test_run_usage_errors(relay_cli, tmp_path, args, env, fragments):
    one_line_error(relay_cli("run", *args, cwd=tmp_path, **env), *fragments)


def test_run_without_from_is_an_argparse_usage_error(relay_cli, tmp_path):
    done = relay_cli("run", "--to", "2.14", cwd=tmp_path)
    assert done.returncode == 2 and "--from" in done.stderr


def test_unknown_ref_is_one_line_and_the_run_is_recorded_as_error(relay_cli, tmp_path):
    upstream = make_upstream(tmp_path / "upstream")
    done = relay_cli("run", "--from", "2.13", "--to", "9.99", "--upstream", str(upstream), cwd=tmp_path)
    one_line_error(done, "9.99")
    from relay.storage import Run, session_scope

    with session_scope(f"sqlite:///{tmp_path / 'data' / 'relay.db'}") as session:
        (run,) = session.query(Run).all()
        assert (run.status, run.to_ref) == ("error", "9.99") and "9.99" in run.error


def test_worker_needs_a_redis_broker(relay_cli, tmp_path):
    one_line_error(relay_cli("worker", cwd=tmp_path), "no broker configured")
    one_line_error(relay_cli("worker", "--broker", "amqp://localhost//", cwd=tmp_path), "is not a Redis URL")


@pytest.mark.parametrize(("flags", "env", "expected"), [
    ([], {}, ("local", None)),
    (["--broker", "redis://b:6379/0"], {}, ("celery", "redis://b:6379/0")),
    ([], {"RELAY_BROKER_URL": "redis://env:6379/0"}, ("celery", "redis://env:6379/0")),
    (["--executor", "local"], {"RELAY_BROKER_URL": "redis://env:6379/0"}, ("local", "redis://env:6379/0")),
])
def test_broker_selects_the_celery_executor(tmp_path, monkeypatch, flags, env, expected):
    from relay.cli import build_parser
    from relay.cli.run_cmd import settings_for

    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith("RELAY_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = build_parser().parse_args(["run", "--from", "2.13", "--to", "2.14", "--upstream", ".", *flags])
    settings = settings_for(args)
    assert (settings.executor, settings.broker_url) == expected
