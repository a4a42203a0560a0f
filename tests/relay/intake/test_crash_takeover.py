"""kill -9 of a relay mid-selection and mid-execution: the next relay takes the run over within the takeover
bound and completes it exactly once (one run, each test stored once, one completion callback).

Real processes throughout: two `relay-cli serve` processes one after the other on one database (SQLite,
and PostgreSQL as deployed),
a real git upstream whose tests take a while, a CRCR stand-in counting callbacks. The bound is short
here (RELAY_TAKEOVER_SECONDS=4: 2 s leases, a sweep every second); production's default is 120 s.
"""
from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
import uuid
from pathlib import Path

import git
import pytest
import requests
from sqlalchemy import func

from relay.runs import machine
from relay.storage import Event, TestResult, init_db, session_scope
from relay.storage.models import Lease
from tests.relay.intake.test_webhook_serve import RELAY_CLI, free_port, relay_env
from tests.relay.intake.webhook_helpers import SECRET, CrcrStandIn, post_event, upstream_pr, wait_for

TAKEOVER = 4.0
SLOW_TESTS = 6  # a second each: execution lasts long enough to be interrupted

pytestmark = pytest.mark.integration


def slow_upstream(root: Path) -> tuple[str, str]:
    """A git upstream whose v2.14.0 changes every test of a file whose tests sleep a second each."""
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", "Upstream").set_value("user", "email", "upstream@example.invalid")
    shas = []
    for tag, pause in (("v2.13.0", "0.9"), ("v2.14.0", "1.0")):
        body = "import time\n\n" + "".join(textwrap.dedent(f"""
            def test_slow_{i}():
                time.sleep({pause})
            """) for i in range(SLOW_TESTS))
        (root / "test").mkdir(exist_ok=True)
        (root / "test" / "test_takeover_slow.py").write_text(body)
        repo.index.add(["test/test_takeover_slow.py"])
        shas.append(repo.index.commit(f"release {tag}").hexsha)
        repo.create_tag(tag)
    return shas[0], shas[1]


class Relay:
    def __init__(self, start_process, env: dict, cwd: Path, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log.open("w")
        self.process = start_process([str(RELAY_CLI), "serve", "--port", str(self.port)], env=env, cwd=cwd,
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def wait_up(self) -> Relay:
        def up():
            assert self.process.poll() is None, "relay exited"
            try:
                return requests.get(f"{self.url}/healthz", timeout=1).ok
            except requests.ConnectionError:
                return False
        wait_for(up, timeout=90, interval=0.1)
        return self

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.log.close()


class Delivery:
    """What the database holds about one delivery and its run (the database may hold other tests' rows)."""

    def __init__(self, database_url: str, delivery_id: str) -> None:
        self.url, self.delivery_id = database_url, delivery_id

    def event(self) -> Event | None:
        with session_scope(self.url) as session:
            event = session.query(Event).filter_by(delivery_id=self.delivery_id).one_or_none()
            if event is not None:
                session.expunge(event)
            return event

    def run_status(self) -> str | None:
        event = self.event()
        return machine.status_of(self.url, event.run_id) if event and event.run_id else None

    def results(self) -> list[tuple[str, int]]:
        with session_scope(self.url) as session:
            return session.query(TestResult.test_id, func.count()).filter_by(run_id=self.event().run_id) \
                .group_by(TestResult.test_id).all()

    def leases(self) -> int:
        with session_scope(self.url) as session:
            return session.query(Lease).filter_by(name=f"event:{self.event().id}").count()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'relay.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.mark.parametrize("phase", ["selecting", "running"])
def test_a_killed_relay_s_run_is_taken_over_and_completed_exactly_once(tmp_path, phase, database_url,
                                                                      start_process):
    from_sha, to_sha = slow_upstream(tmp_path / "upstream")
    init_db(database_url)
    db = Delivery(database_url, f"crash-{phase}-{uuid.uuid4().hex}")
    with CrcrStandIn() as crcr:
        env = relay_env(tmp_path, RELAY_WEBHOOK_SECRET=SECRET, RELAY_UPSTREAM=str(tmp_path / "upstream"),
                        RELAY_DATABASE_URL=database_url, RELAY_CRCR_CALLBACK_URL=crcr.url,
                        RELAY_TAKEOVER_SECONDS=str(TAKEOVER))
        first = Relay(start_process, env, tmp_path, tmp_path / "relay-1.log").wait_up()
        second = None
        try:
            payload = upstream_pr("pull_request.synchronize")
            payload["pull_request"]["base"]["sha"], payload["pull_request"]["head"]["sha"] = from_sha, to_sha
            assert post_event(first.url, "pull_request", payload, delivery=db.delivery_id).status_code == 202
            wait_for(lambda: db.run_status() == phase, timeout=180, interval=0.02)
            if phase == "running":  # into the shard's tests (a second each; results are stored at its end)
                time.sleep(2.0)
            os.kill(first.process.pid, signal.SIGSTOP)  # freeze it first: what we saw is what it was doing
            assert db.run_status() == phase and db.results() == []
            first.kill()
            killed = time.monotonic()

            second = Relay(start_process, env, tmp_path, tmp_path / "relay-2.log").wait_up()
            wait_for(lambda: (db.event().note or "").startswith("taken over"), timeout=60, interval=0.1)
            taken_over_after = time.monotonic() - killed
            wait_for(lambda: db.run_status() in ("passed", "failed"), timeout=240, interval=0.2)
            wait_for(lambda: db.event().status == "processed", timeout=60)
            # The new owner releases the delivery once done (the dead relay's lease was taken over, not left).
            wait_for(lambda: db.leases() == 0, timeout=30)
        finally:
            for relay in (first, second):
                if relay is not None:
                    relay.stop()
            for pid in _shard_pids(tmp_path):  # the killed relay's orphaned test process, if still running
                os.kill(pid, signal.SIGKILL)

        # Exactly once: one run for the delivery, every selected test stored once, one completion callback.
        with session_scope(database_url) as session:
            assert session.query(Event).filter_by(run_id=db.event().run_id).count() == 1
        results = db.results()
        assert len(results) == SLOW_TESTS and {n for _, n in results} == {1}
        completed = [c for c in crcr.callbacks if c["workflow"]["status"] == "completed"]
        started = [c for c in crcr.callbacks if c["workflow"]["status"] == "in_progress"]
        assert len(completed) == 1 and len(started) == 1
        assert completed[0]["workflow"]["test_results"]["total"] == SLOW_TESTS
    log = (tmp_path / "relay-2.log").read_text()
    assert "taken over" in log and "Traceback" not in log
    print(f"{phase}: taken over {taken_over_after:.1f}s after kill -9 (bound {TAKEOVER:g}s + the new relay's start)")


def _shard_pids(tmp_path: Path) -> list[int]:
    """The pytest processes running this test's upstream file in this test's directories (the relay's children)."""
    found = subprocess.run(["pgrep", "-f", "test_takeover_slow"], capture_output=True, text=True)
    ours = []
    for pid in map(int, found.stdout.split()):
        try:
            if str(tmp_path) in os.readlink(f"/proc/{pid}/cwd"):
                ours.append(pid)
        except OSError:
            continue
    return ours
